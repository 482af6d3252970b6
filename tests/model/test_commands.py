"""Each command and fact where the rules say no, or say nothing: deterministic, one by one."""

from __future__ import annotations

import attrs
import pytest
from pyrsistent import pset

from flume.core.actions import (
    ActionName,
    EndAgent,
    Event,
    GatherTidyFacts,
    KeepPlace,
    Report,
    SendPrompt,
    SendTell,
    StartAgent,
)
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, SessionId, Sha, StageName
from flume.core.observations import (
    ActionFailed,
    Activity,
    AgentExited,
    AgentStateSeen,
    Author,
    BranchHead,
    ChecksFailed,
    DropAsked,
    Launched,
    NeedsSaid,
    PaneOutput,
    ProceedAsked,
    RetryAsked,
    SetupFinished,
    StopAsked,
    SubmitAsked,
    Tick,
    TidyAsked,
    Told,
    TranscriptEntry,
    TranscriptUnreadable,
    TurnEnded,
    Usage,
    WorktreeMade,
)
from flume.core.place import (
    Life,
    Place,
    Short,
    ShortCause,
    TidyGathering,
    TidyNotWanted,
    Working,
    evolve,
    is_quiet,
)
from flume.core.step import pending, step
from tests.model.test_rules import (
    FIX,
    SESSION,
    S,
    launch,
    made,
    run,
    started,
    submitting,
    typed,
    working,
)

OTHER = SessionId("s9")


def waiting() -> Place:
    """A working fix whose agent now waits."""
    return step(
        S, working(), AgentStateSeen(at=Instant(5), session=SESSION, activity=Activity.WAITING)
    ).place


@pytest.mark.parametrize(
    ("seen", "says"),
    [
        (Told(at=Instant(9), text="  "), "the tell is empty"),
        (NeedsSaid(at=Instant(9), words=" "), "the words are empty"),
        (ProceedAsked(at=Instant(9)), "does not wait on your word"),
        (RetryAsked(at=Instant(9)), "has not stopped short"),
        (SubmitAsked(at=Instant(9)), "does not land"),
        (Launched(at=Instant(9), launch=launch(), kind=FIX), "already launched"),
    ],
)
def test_refusals_of_a_working_place(seen: object, says: str) -> None:
    """Commands the rules forbid for a working fix are refused, naming why."""
    with pytest.raises(UsageError, match=says):
        step(S, working(), seen)  # type: ignore[arg-type]


def test_refusals_of_a_dropped_place() -> None:
    """A dropped place takes no stop, no needs, no second drop, and no submit."""
    dropped = step(S, working(), DropAsked(at=Instant(5))).place
    for seen, says in (
        (StopAsked(at=Instant(6)), "no agent"),
        (NeedsSaid(at=Instant(6), words="x"), "no stage"),
        (DropAsked(at=Instant(6)), "is dropped"),
        (RetryAsked(at=Instant(6)), "was dropped"),
    ):
        with pytest.raises(UsageError, match=says):
            step(S, dropped, seen)


def test_submit_outside_a_running_stage_is_refused() -> None:
    """A submit stage that stopped short takes no submit until it is retried."""
    place = submitting()
    short = step(S, place, NeedsSaid(at=Instant(30), words="?", session=SessionId("s2"))).place  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="is not running"):
        step(S, short, SubmitAsked(at=Instant(31)))


def test_stop_ends_the_agent_and_the_stage_waits() -> None:
    """stop: the agent is ended and the stage is short, stopped, until a retry."""
    decided = step(S, working(), StopAsked(at=Instant(5)))
    assert EndAgent(session=SESSION, reason="stopped by the caller") in decided.actions
    assert isinstance(decided.place.stage.phase, Short)
    assert decided.place.stage.phase.cause is ShortCause.STOPPED


@pytest.mark.parametrize(
    "seen",
    [
        WorktreeMade(
            at=Instant(9), path="/elsewhere", branch=BranchName("fix/typo"), head=Sha("x")
        ),
        SetupFinished(at=Instant(9), ok=False, output="late"),
        AgentStateSeen(at=Instant(9), session=OTHER, activity=Activity.ASKING),
        TranscriptEntry(at=Instant(9), session=OTHER, author=Author.PERSON),
        PaneOutput(at=Instant(9), session=OTHER, last_output_at=Instant(9)),
        AgentExited(at=Instant(9), session=OTHER),
        BranchHead(at=Instant(9), branch=BranchName("other"), sha=Sha("x")),
        TranscriptUnreadable(at=Instant(9), session=OTHER),
        TranscriptUnreadable(at=Instant(9), session=SESSION, count=0),
        ChecksFailed(at=Instant(9), reason="no submission"),
        ActionFailed(at=Instant(9), action=ActionName.SEND_PROMPT, output="pane gone"),
    ],
    ids=lambda seen: type(seen).__name__,
)
def test_facts_about_something_else_change_nothing_that_matters(seen: object) -> None:
    """Facts of another session, branch or path, or with nothing to say, leave the stage be."""
    place = working()
    decided = step(S, place, seen)  # type: ignore[arg-type]
    assert decided.place.stage == place.stage
    assert decided.place.agent == attrs.evolve(place.agent, activity=decided.place.agent.activity)  # type: ignore[arg-type]
    assert not any(isinstance(a, SendPrompt | EndAgent) for a in decided.actions)


def test_an_agent_of_an_old_attempt_is_ended() -> None:
    """An agent reported for another attempt than the current one is ended at once."""
    place = run(made()).place
    decided = step(S, place, started(attempt=7, session="s7"))
    assert decided.actions == (
        EndAgent(session=SessionId("s7"), reason="not the agent of the place's current stage"),
    )


def test_an_agent_started_after_its_stop_is_ended_even_across_a_restart() -> None:
    """R4: a start carried out after the stop that took it back is ended, asked again till seen.

    Found by the no-silent-wait machine: the stray's end lost to a restart, a retry started a
    second agent in the same worktree. The retry's start waits for the stray's exit.
    """
    place = run(made()).place
    stopped = step(S, place, StopAsked(at=Instant(3))).place
    decided = step(S, stopped, started(attempt=1, session="late"))
    end = EndAgent(session=SessionId("late"), reason="not the agent of the place's current stage")
    assert decided.actions == (end,)
    assert end in pending(decided.place)  # asked again after a restart
    retried = step(S, decided.place, RetryAsked(at=Instant(4))).place
    assert not any(isinstance(a, StartAgent) for a in step(S, retried, Tick(at=Instant(5))).actions)
    exited = step(S, retried, AgentExited(at=Instant(6), session=SessionId("late")))
    assert exited.place.strays == pset()
    assert end not in pending(exited.place)
    assert any(isinstance(a, StartAgent) for a in exited.actions)


def test_unreadable_lines_are_counted() -> None:
    """Unreadable lines of the live agent are skipped, counted and reported."""
    decided = step(S, working(), TranscriptUnreadable(at=Instant(6), session=SESSION, count=3))
    assert decided.place.unreadable == 3
    assert [a.event for a in decided.actions if isinstance(a, Report)] == [Event.UNREADABLE]


def test_a_turns_end_is_reported_with_its_tokens_and_changes_nothing_else() -> None:
    """Two messages' usage summed; the report names each kind; the place counts the spending.

    The place moves its clock and counts what the turn spent; a linear kind's stage, gated by
    a deliverable, stays as it was.
    """
    usage = Usage(input=3, output=40, cache_read=1000) + Usage(output=2, cache_creation=50)
    assert usage == Usage(input=3, output=42, cache_read=1000, cache_creation=50)
    place = working()
    decided = step(S, place, TurnEnded(at=Instant(7), session=SESSION, usage=usage))
    counted = attrs.evolve(place.spent, turns=1, tokens=1095)
    assert decided.place == evolve(
        place,
        now=Instant(7),
        spent=counted,
        stage=attrs.evolve(place.stage, turns=1),
    )
    assert decided.actions == (
        Report(
            event=Event.TURN_ENDED,
            text=(
                "turn ended: 1095 tokens (input 3, output 42, cache read 1000, cache written 50)"
            ),
            stage=StageName("code"),
        ),
    )
    unknown = step(S, place, TurnEnded(at=Instant(2), session=None))
    assert unknown.place == evolve(
        place,
        spent=attrs.evolve(place.spent, turns=1, unreported=1),
        stage=attrs.evolve(place.stage, turns=1),
    )
    assert [a.text for a in unknown.actions if isinstance(a, Report)] == [
        "turn ended: usage not reported"
    ]


def test_an_agent_that_exits_mid_stage_stops_it_short() -> None:
    """The agent exits before its deliverable: the stage stops short, cause agent-exited."""
    decided = step(S, working(), AgentExited(at=Instant(6), session=SESSION))
    assert isinstance(decided.place.stage.phase, Short)
    assert decided.place.stage.phase.cause is ShortCause.AGENT_EXITED


def test_a_tell_is_sent_once_more_then_reported_lost() -> None:
    """A tell missing from the transcript is sent a second time, then reported lost."""
    place = step(S, waiting(), Told(at=Instant(6), text="also the docs")).place
    assert place.sending is not None
    again = step(S, place, Tick(at=Instant(40)))
    assert [a.send for a in again.actions if isinstance(a, SendTell)] == [2]
    lost = step(S, again.place, Tick(at=Instant(80)))
    assert [a.event for a in lost.actions if isinstance(a, Report)] == [Event.TELL_LOST]
    assert lost.place.sending is None


def test_a_tell_resend_waits_while_the_agent_works() -> None:
    """The tell's deadline passes while the agent works: no second send until it waits."""
    place = step(S, waiting(), Told(at=Instant(6), text="x")).place
    busy = step(
        S, place, AgentStateSeen(at=Instant(7), session=SESSION, activity=Activity.WORKING)
    ).place
    assert not step(S, busy, Tick(at=Instant(60))).actions


def test_an_agent_exiting_with_a_tell_in_flight_drops_it() -> None:
    """The agent exits with a tell unconfirmed and one held: both are reported dropped."""
    place = step(S, waiting(), Told(at=Instant(6), text="one")).place
    place = step(
        S, place, AgentStateSeen(at=Instant(7), session=SESSION, activity=Activity.WORKING)
    ).place
    place = step(S, place, Told(at=Instant(8), text="two")).place
    decided = step(S, place, AgentExited(at=Instant(9), session=SESSION))
    dropped = [
        a for a in decided.actions if isinstance(a, Report) and a.event is Event.TELL_DROPPED
    ]
    assert len(dropped) == 2


def test_resends_wait_for_a_busy_agent_and_the_ready_deadline_for_a_dialog() -> None:
    """A missing prompt is not resent while the agent works; nothing is typed into a dialog."""
    place = run(made(), started()).place
    ready = step(
        S, place, AgentStateSeen(at=Instant(3), session=SESSION, activity=Activity.WAITING)
    ).place
    busy = step(
        S, ready, AgentStateSeen(at=Instant(4), session=SESSION, activity=Activity.WORKING)
    ).place
    assert not any(isinstance(a, SendPrompt) for a in step(S, busy, Tick(at=Instant(100))).actions)


def test_quiet_needs_no_held_tells() -> None:
    """An agent with a tell held for it is not quiet, however still it is."""
    place = step(S, waiting(), Told(at=Instant(6), text="x")).place
    assert not is_quiet(evolve(place, now=Instant(10_000)))
    assert is_quiet(evolve(place, sending=None, agent=None, now=Instant(0)))


def test_an_older_hook_report_is_ignored() -> None:
    """A hook report older than the one the agent's state came from changes nothing."""
    place = step(
        S, working(), AgentStateSeen(at=Instant(10), session=SESSION, activity=Activity.ASKING)
    ).place
    stale = step(
        S, place, AgentStateSeen(at=Instant(8), session=SESSION, activity=Activity.WAITING)
    ).place
    assert stale.agent is not None
    assert stale.agent.activity is Activity.ASKING


def test_transcript_lines_move_the_quiet_clock() -> None:
    """A later transcript line of the same activity moves when the agent was last seen."""
    place = working()
    later = step(S, place, typed("more", at=30)).place
    assert later.agent is not None
    assert later.agent.last_output_at == 30


def test_failures_of_tidy_actions_let_tidy_ask_again() -> None:
    """A failed removal is reported and tidy is no longer waiting on facts."""
    place = evolve(working(), tidy=TidyGathering())
    decided = step(
        S, place, ActionFailed(at=Instant(9), action=ActionName.REMOVE_WORKTREE, output="busy")
    )
    assert decided.place.tidy == TidyNotWanted()


def test_setup_that_succeeds_twice_changes_nothing() -> None:
    """A second SetupFinished after the place is ready is ignored."""
    place = run(made(), SetupFinished(at=Instant(2), ok=True), setup=(("make",),)).place
    assert step(S, place, SetupFinished(at=Instant(3), ok=False)).place.ready


def test_tidy_asked_of_a_place_in_flight_or_tidied() -> None:
    """A place in flight is kept and named; a tidied one has nothing left to tidy."""
    decided = step(S, working(), TidyAsked(at=Instant(5)))
    assert [type(a) for a in decided.actions] == [KeepPlace]
    tidied = evolve(working(), life=Life.TIDIED)
    assert step(S, tidied, TidyAsked(at=Instant(5))).actions == ()


def test_a_dropped_place_gathers_facts_only_once() -> None:
    """While tidy waits on its facts, it does not ask again."""
    place = step(S, run(made()).place, DropAsked(at=Instant(2)))
    asks = [a for a in place.actions if isinstance(a, GatherTidyFacts)]
    assert len(asks) == 1
    assert not any(
        isinstance(a, GatherTidyFacts) for a in step(S, place.place, Tick(at=Instant(3))).actions
    )


def test_a_working_stage_is_working() -> None:
    """The helper places are what they say."""
    assert isinstance(working().stage.phase, Working)
    assert waiting().agent.activity is Activity.WAITING  # type: ignore[union-attr]
    assert StageName("code") == working().stage.name


def test_a_slow_agent_is_sent_its_prompt_at_the_ready_deadline() -> None:
    """No word that the agent takes input by ready_seconds: send anyway; the transcript judges."""
    place = run(made(), started()).place
    assert not step(S, place, Tick(at=Instant(30))).actions
    late = step(S, place, Tick(at=Instant(2 + S.ready_seconds)))
    assert [a.send for a in late.actions if isinstance(a, SendPrompt)] == [1]


def test_a_line_that_adds_nothing_leaves_the_agent_as_it_was() -> None:
    """A line of the same activity at the same instant changes nothing of the agent."""
    place = working()
    again = step(S, place, typed("more", at=4)).place
    assert again.agent == place.agent


def test_only_a_launch_starts_a_place() -> None:
    """With no place yet, anything but a launch is a usage error."""
    with pytest.raises(UsageError, match="nothing has been launched"):
        step(S, None, Tick(at=Instant(0)))
