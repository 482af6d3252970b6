"""Example tests, one or more per rule, in the manner of h11's test_state.py."""

from __future__ import annotations

import attrs
import pytest
from pyrsistent import pset, pvector

from flume.core.actions import (
    ActionName,
    DeleteBranch,
    EndAgent,
    Event,
    GatherTidyFacts,
    KeepBranch,
    KeepPlace,
    MakeWorktree,
    RemoveWorktree,
    Report,
    RunSetup,
    SendPrompt,
    StartAgent,
)
from flume.core.delivery import (
    infer_activity,
    is_typed_by_user,
    render_prompt,
)
from flume.core.errors import UsageError
from flume.core.ids import (
    BranchName,
    Instant,
    KindName,
    Marker,
    SessionId,
    Sha,
    StageName,
    WorkName,
)
from flume.core.kinds import BUILTIN_KINDS, Commit, Kind, ReportFile, Sequence, Step, check_kind
from flume.core.launch import MAX_BRIEF_BYTES, Launch, Panes, check_launch
from flume.core.observations import (
    ActionFailed,
    Activity,
    AgentExited,
    AgentReady,
    AgentStarted,
    AgentStateSeen,
    Author,
    BranchFacts,
    BranchHead,
    ChangeSeen,
    ChecksFailed,
    DropAsked,
    Landed,
    Launched,
    NeedsSaid,
    PaneOutput,
    PromptTyped,
    PromptUnwritten,
    RetryAsked,
    SetupFinished,
    SubmitAsked,
    Tick,
    TidyAsked,
    TidyFactsSeen,
    Told,
    TranscriptEntry,
    WorktreeFacts,
    WorktreeMade,
)
from flume.core.place import Life, Place, Short, ShortCause, Working, evolve
from flume.core.settings import Settings
from flume.core.status import status
from flume.core.step import Decision, replay, step
from flume.core.tidy import plan

S = Settings(quiet_seconds=5, confirm_seconds=30, ready_seconds=60)
FIX = BUILTIN_KINDS[KindName("fix")]
SESSION = SessionId("s1")


def launch(**changes: object) -> Launch:
    """A valid fix launch, with ``changes``."""
    fields: dict[str, object] = {
        "repository": "/src/app",
        "kind": KindName("fix"),
        "name": WorkName("typo"),
        "brief": "Mend the greeting.",
        "base": BranchName("main"),
    }
    fields.update(changes)
    return Launch(**fields)  # type: ignore[arg-type]


def run(*seen: object, kind: Kind = FIX, setup: tuple[tuple[str, ...], ...] = ()) -> Decision:
    """Launch a fix and feed ``seen`` in turn; the last decision."""
    at = Instant(0.0)
    decision = step(
        S,
        None,
        Launched(
            at=at,
            launch=launch(kind=kind.name),
            kind=kind,
            setup=pvector(pvector(a) for a in setup),
        ),
    )
    for observation in seen:
        decision = step(S, decision.place, observation)  # type: ignore[arg-type]
    return decision


def made(at: float = 1.0) -> WorktreeMade:
    """The fix's worktree made."""
    return WorktreeMade(
        at=Instant(at),
        path="/src/app/places/fix--typo",
        branch=BranchName("fix/typo"),
        head=Sha("a1"),
    )


def started(at: float = 2.0, attempt: int = 1, session: str = "s1") -> AgentStarted:
    """The code stage's agent started."""
    return AgentStarted(
        at=Instant(at),
        stage=StageName("code"),
        attempt=attempt,
        session=SessionId(session),
        pane="%1",
    )


def typed(text: str, at: float = 4.0, session: str = "s1") -> TranscriptEntry:
    """A line typed by the user."""
    return TranscriptEntry(
        at=Instant(at),
        session=SessionId(session),
        author=Author.PERSON,
        text=text,
    )


def working() -> Place:
    """A fix whose code stage's prompt was delivered."""
    return run(
        made(),
        started(),
        AgentReady(at=Instant(3.0), session=SESSION),
        typed("[flume:fix--typo:code:1]"),
    ).place


def committed_and_waiting() -> Place:
    """A working fix whose agent committed at 10 and has waited since 11."""
    place = step(
        S, working(), BranchHead(at=Instant(10), branch=BranchName("fix/typo"), sha=Sha("b2"))
    ).place
    return step(
        S, place, AgentStateSeen(at=Instant(11), session=SESSION, activity=Activity.WAITING)
    ).place


# --- R1: the launch and the place -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("", "empty"),
        ("a/b", "'/'"),
        ("..", "'..'"),
        ("a..b", "'..'"),
        ("-rf", "starts with '-'"),
        ("two words", "space"),
        ("bell\x07", "control character"),
        ("x.lock", ".lock"),
        ("dot.", "ends in '.'"),
        ("x" * 65, "over 64"),
        ("naïve", "outside letters"),
        ("a:b", "outside letters"),
    ],
)
def test_r1_unsafe_names_are_refused(name: str, says: str) -> None:
    """A name unsafe as a path segment or ref component is refused, saying why and how to mend."""
    with pytest.raises(UsageError) as caught:
        check_launch(launch(name=name), FIX)
    assert caught.value.exit_status == 2
    assert says in str(caught.value)
    assert "use 1-64 letters" in str(caught.value)


def test_r1_a_safe_launch_asks_for_its_worktree() -> None:
    """A good launch asks for places/<kind>--<name> on <prefix>/<name> cut from the base."""
    decision = run()
    assert (
        MakeWorktree(
            repository="/src/app",
            path="/src/app/places/fix--typo",
            branch=BranchName("fix/typo"),
            base=BranchName("main"),
        )
        in decision.actions
    )
    assert decision.place.life is Life.MAKING


def test_r1_question_places_are_on_sounding_branches() -> None:
    """The question kind's prefix is sounding/."""
    question = BUILTIN_KINDS[KindName("question")]
    decision = step(
        S, None, Launched(at=Instant(0), launch=launch(kind=question.name), kind=question)
    )
    assert decision.place.branch == "sounding/typo"
    assert decision.place.path == "/src/app/places/question--typo"


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"brief": ""}, "the brief is empty"),
        ({"brief": " \n\t"}, "the brief is empty"),
        ({"brief": "é" * (MAX_BRIEF_BYTES // 2 + 1)}, "over the limit"),
        ({"base": ""}, "no branch is named"),
        ({"base": "ma in"}, "space"),
        ({"base": "a..b"}, "'..'"),
        ({"base": "-x"}, "starts with '-'"),
        ({"base": "x.lock"}, ".lock"),
        ({"repository": "relative/path"}, "not an absolute path"),
        ({"kind": KindName("change")}, "carries 'fix'"),
        ({"waits": pset([StageName("nope")])}, "has no stage nope"),
        ({"mark": "bad mark"}, "is not a mark"),
    ],
)
def test_r1_bad_launch_fields_are_refused(changes: dict[str, object], says: str) -> None:
    """Each bad field is named with what is wrong."""
    with pytest.raises(UsageError) as caught:
        check_launch(launch(**changes), FIX)
    assert says in str(caught.value)


def test_a_brief_of_exactly_one_mebibyte_is_taken() -> None:
    """The 1 MiB limit is inclusive and counted in UTF-8 bytes."""
    check_launch(launch(brief="x" * MAX_BRIEF_BYTES), FIX)


def test_every_problem_is_named_at_once() -> None:
    """A launch with several problems hears of all of them."""
    with pytest.raises(UsageError) as caught:
        check_launch(launch(name="a/b", brief="", base="-x"), FIX)
    assert len(caught.value.problems) == 3


@pytest.mark.parametrize(
    ("stages", "says"),
    [
        ([], "no stage"),
        ([("a", "Do $brief", Commit()), ("a", "Do $brief", Commit())], "declared twice"),
        ([("a", "Do $nonsense", Commit())], "unknown field $nonsense"),
        ([("a", "Costs $5", Commit())], "'$$'"),
        ([("a", "   ", Commit())], "prompt is empty"),
        ([("a", "Do $brief", ReportFile(path="../out.md"))], "not a plain path"),
        ([("a", "Do $brief", ReportFile(path="/etc/x"))], "not a plain path"),
        ([("Bad Name", "Do $brief", Commit())], "is not a name flume takes"),
    ],
)
def test_bad_declared_kinds_are_refused(stages: list[tuple[str, str, object]], says: str) -> None:
    """A declared kind's problems are named: stages, prompts and report paths."""
    kind = Kind(
        name=KindName("crew"),
        prefix="crew",
        body=Sequence(
            blocks=pvector(
                Step(name=StageName(n), prompt=p, deliverable=d)  # type: ignore[arg-type]
                for n, p, d in stages
            ),
        ),
    )
    with pytest.raises(UsageError) as caught:
        check_kind(kind)
    assert says in str(caught.value)


def test_builtin_kinds_are_sound() -> None:
    """The built-in kinds pass their own checks, with the stages of DESIGN.md §5."""
    for kind in BUILTIN_KINDS.values():
        check_kind(kind)
    assert [s.name for s in FIX.body.blocks] == ["code", "submit"]  # type: ignore[union-attr]


# --- R2: setup -----------------------------------------------------------------------------------


def test_r2_setup_runs_before_any_agent_and_its_failure_stops_short() -> None:
    """The declared setup runs once the worktree exists; a failure stops short with its output."""
    decision = run(made(), setup=(("uv", "sync"),))
    assert any(isinstance(a, RunSetup) for a in decision.actions)
    assert not any(isinstance(a, StartAgent) for a in decision.actions)
    failed = step(S, decision.place, SetupFinished(at=Instant(2), ok=False, output="no uv"))
    assert isinstance(failed.place.stage.phase, Short)
    assert failed.place.stage.phase.cause is ShortCause.SETUP_FAILED
    assert "no uv" in failed.place.stage.phase.words
    again = step(S, failed.place, RetryAsked(at=Instant(3)))
    assert any(isinstance(a, RunSetup) for a in again.actions)
    ok = step(S, again.place, SetupFinished(at=Instant(4), ok=True))
    assert any(isinstance(a, StartAgent) for a in ok.actions)


# --- R5: delivery ---------------------------------------------------------------------------------


def test_r5_the_prompt_is_sent_when_the_agent_takes_input() -> None:
    """Nothing is sent before the agent takes input; then the prompt goes, marker last."""
    decision = run(made(), started())
    assert not any(isinstance(a, SendPrompt) for a in decision.actions)
    ready = step(S, decision.place, AgentReady(at=Instant(3), session=SESSION))
    (send,) = [a for a in ready.actions if isinstance(a, SendPrompt)]
    assert send.send == 1
    assert send.text.endswith("[flume:fix--typo:code:1]")
    assert "Mend the greeting." in send.text


def _typed(at: float, send: int) -> PromptTyped:
    """The pane shows send ``send`` of the code stage's first prompt typed."""
    return PromptTyped(
        at=Instant(at), session=SESSION, marker=Marker("flume:fix--typo:code:1"), send=send
    )


def test_r5_resend_once_then_never_began() -> None:
    """Missing: send once more; missing again: never began; never a third send."""
    place = run(made(), started(), AgentReady(at=Instant(3), session=SESSION), _typed(3, 1)).place
    second = step(S, place, Tick(at=Instant(33)))
    assert [a.send for a in second.actions if isinstance(a, SendPrompt)] == [2]
    second = step(S, second.place, _typed(33, 2))
    third = step(S, second.place, Tick(at=Instant(63)))
    assert not any(isinstance(a, SendPrompt) for a in third.actions)
    assert (
        Report(event=Event.NEVER_BEGAN, text=third.place.stage.phase.words, stage=StageName("code"))
        in third.actions
    )  # type: ignore[union-attr]
    assert any(isinstance(a, EndAgent) for a in third.actions)
    later = step(S, third.place, Tick(at=Instant(1000)))
    assert not any(isinstance(a, SendPrompt) for a in later.actions)


def test_r5_a_send_never_shown_typed_is_typed_once_more_as_the_same_send() -> None:
    """A send decided but never shown typed (the shell died before pasting) is typed again.

    It stays the same send; a typing the pane has shown is never repeated, and a retyped send
    still missing is followed by the second send, then by "never began".
    """
    place = run(made(), started(), AgentReady(at=Instant(3), session=SESSION)).place
    # Another send's mark, or another stage's, says nothing about this one.
    assert step(S, place, _typed(4, 2)).place.stage == place.stage
    retyped = step(S, place, Tick(at=Instant(33)))
    assert [a.send for a in retyped.actions if isinstance(a, SendPrompt)] == [1]
    assert any(isinstance(a, Report) and a.event is Event.PROMPT_RETYPED for a in retyped.actions)
    assert retyped.place.stage.sends == 1
    typed = step(S, retyped.place, _typed(34, 1)).place
    assert step(S, typed, _typed(35, 1)).place.stage == typed.stage  # shown twice: one typing
    second = step(S, typed, Tick(at=Instant(64)))
    assert [a.send for a in second.actions if isinstance(a, SendPrompt)] == [2]
    # The second send was never shown typed either: typed once more, then never began.
    again = step(S, second.place, Tick(at=Instant(95)))
    assert [a.send for a in again.actions if isinstance(a, SendPrompt)] == [2]
    last = step(S, again.place, Tick(at=Instant(126)))
    assert not any(isinstance(a, SendPrompt) for a in last.actions)
    assert any(isinstance(a, Report) and a.event is Event.NEVER_BEGAN for a in last.actions)


def test_r5_a_retype_or_resend_waits_while_the_agent_works() -> None:
    """Typed into a busy agent the prompt would queue behind its work: both wait for it."""
    place = run(made(), started(), AgentReady(at=Instant(3), session=SESSION)).place
    working = AgentStateSeen(at=Instant(4), session=SESSION, activity=Activity.WORKING)
    busy = step(S, place, working).place
    assert not any(isinstance(a, SendPrompt) for a in step(S, busy, Tick(at=Instant(40))).actions)
    typed = step(S, busy, _typed(5, 1)).place
    assert not any(isinstance(a, SendPrompt) for a in step(S, typed, Tick(at=Instant(40))).actions)


@pytest.mark.parametrize(
    ("author", "typed_by_user"),
    [
        (Author.PERSON, True),
        (Author.AGENT, False),
        (Author.TOOL, False),
        (Author.SYSTEM, False),
    ],
)
def test_r5_only_lines_typed_by_the_user_count(author: Author, typed_by_user: bool) -> None:
    """Only a person's line counts: a tool's result, the agent's or its program's text never do.

    Which of Claude Code's lines a person wrote is tests/integration/test_transcript_words.py's.
    """
    entry = TranscriptEntry(
        at=Instant(0), session=SESSION, author=author, text="[flume:fix--typo:code:1]"
    )
    assert is_typed_by_user(entry) is typed_by_user
    place = run(made(), started(), AgentReady(at=Instant(3), session=SESSION)).place
    seen = step(S, place, attrs.evolve(entry, at=Instant(4))).place
    assert isinstance(seen.stage.phase, Working) is typed_by_user


def test_r5_a_turn_ended_by_the_program_is_not_typed_and_waits() -> None:
    """A note of the program's that ends the turn (an interrupt's): not typed, the agent waits.

    A typed prompt that only quotes such a note is still typed.
    """
    note = "[Request interrupted by user]"
    entry = TranscriptEntry(
        at=Instant(0), session=SESSION, author=Author.SYSTEM, text=note, ends_turn=True
    )
    assert not is_typed_by_user(entry)
    assert infer_activity(entry, Activity.WORKING) is Activity.WAITING
    quoting = typed(f"Why did I see {note}? Go on. [flume:fix--typo:code:1]")
    assert is_typed_by_user(quoting)
    assert infer_activity(quoting, Activity.WAITING) is Activity.WORKING
    place = run(made(), started(), AgentReady(at=Instant(3), session=SESSION)).place
    assert step(S, place, attrs.evolve(entry, at=Instant(4))).place.stage == place.stage


def test_r5_a_wrapped_long_paste_counts() -> None:
    """A long paste stored inside <pasted_content> still holds the marker, and counts."""
    place = run(made(), started(), AgentReady(at=Instant(3), session=SESSION)).place
    wrapped = typed(
        '\n\n<pasted_content id="a1">\n...[flume:fix--typo:code:1]\n</pasted_content id="a1">\n'
    )
    assert isinstance(step(S, place, wrapped).place.stage.phase, Working)


def test_r5_another_sessions_line_does_not_count() -> None:
    """A line of another session, even typed and marked, proves nothing for this agent."""
    place = run(made(), started(), AgentReady(at=Instant(3), session=SESSION)).place
    other = step(S, place, typed("[flume:fix--typo:code:1]", session="s9"))
    assert not isinstance(other.place.stage.phase, Working)


def _delivered(actions: tuple[object, ...]) -> list[Report]:
    return [a for a in actions if isinstance(a, Report) and a.event is Event.PROMPT_DELIVERED]


def test_r5_a_prompt_read_after_needs_is_still_delivered_once() -> None:
    """The agent ran ``flume needs`` before its prompt's line was read: delivered all the same.

    The stage stays short; a second copy of the prompt in the transcript reports nothing more.
    """
    place = run(made(), started(), AgentReady(at=Instant(3), session=SESSION)).place
    short = step(S, place, NeedsSaid(at=Instant(4), words="the API key")).place
    late = step(S, short, typed("[flume:fix--typo:code:1]", at=5))
    (report,) = _delivered(late.actions)
    assert report.stage == "code"
    assert report.text == "the transcript holds the prompt, found after the stage stopped short"
    assert late.place.stage.phase == short.stage.phase
    again = step(S, late.place, typed("[flume:fix--typo:code:1]", at=6))
    assert _delivered(again.actions) == []


def test_r5_a_prompt_read_after_a_retry_is_reported_for_its_own_stage() -> None:
    """The stopped agent's prompt, read after the retry moved the stage on, is its own."""
    place = run(made(), started(), AgentReady(at=Instant(3), session=SESSION)).place
    short = step(S, place, NeedsSaid(at=Instant(4), words="the API key")).place
    retried = step(S, short, RetryAsked(at=Instant(5), words="here it is")).place
    assert retried.agent is not None
    assert retried.agent.session == SESSION
    late = step(S, retried, typed("[flume:fix--typo:code:1]", at=6))
    (report,) = _delivered(late.actions)
    assert report.text == "the transcript holds the prompt, found after the stage moved on"
    assert late.place.stage == retried.stage


def test_r5_the_marker_typed_before_any_send_proves_nothing() -> None:
    """A line holding the marker before the prompt was sent is no delivery of it."""
    place = run(made(), started()).place
    early = step(S, place, typed("[flume:fix--typo:code:1]", at=3))
    assert _delivered(early.actions) == []
    assert early.place.agent is not None
    assert not early.place.agent.proven


def test_r5_prompt_holds_the_retry_words() -> None:
    """A retried stage's prompt carries the caller's words whole."""
    place = working()
    short = step(S, place, NeedsSaid(at=Instant(5), words="which greeting?")).place
    retried = step(S, short, RetryAsked(at=Instant(6), words="the one in hello.py")).place
    assert "the one in hello.py" in render_prompt(retried)
    assert render_prompt(retried).endswith("[flume:fix--typo:code:2]")


# --- R6: tells ------------------------------------------------------------------------------------


def test_r6_a_tell_to_an_asking_agent_is_refused_with_nothing_typed() -> None:
    """The agent asks a person: the tell is refused, exit status 1, naming flume attach."""
    place = step(
        S, working(), AgentStateSeen(at=Instant(5), session=SESSION, activity=Activity.ASKING)
    ).place
    with pytest.raises(UsageError) as caught:
        step(S, place, Told(at=Instant(6), text="hurry"))
    assert caught.value.exit_status == 1
    assert "flume attach fix--typo" in str(caught.value)


def test_r6_a_tell_to_a_printed_agent_is_refused_with_nothing_typed() -> None:
    """An agent the caller runs in a terminal of their own: flume cannot type, so it refuses."""
    place = working()
    printed = attrs.evolve(place.launch.agent, panes=Panes.PRINT)
    place = evolve(place, launch=attrs.evolve(place.launch, agent=printed))
    with pytest.raises(UsageError) as caught:
        step(S, place, Told(at=Instant(6), text="hurry"))
    assert caught.value.exit_status == 1
    assert "--panes print" in str(caught.value)


@pytest.mark.parametrize(
    ("status", "last_words", "says"),
    [
        (None, "", "the agent exited before"),
        (3, "", "the agent exited (exit status 3) before"),
        (1, "error: unknown option '--efort'\n", "Its pane showed last:\nerror: unknown option"),
    ],
)
def test_r7_an_agent_gone_before_its_deliverable_stops_short_saying_why(
    status: int | None, last_words: str, says: str
) -> None:
    """An agent that exits mid-stage stops it short; its status and last screen are kept."""
    gone = AgentExited(at=Instant(6), session=SESSION, status=status, last_words=last_words)
    place = step(S, working(), gone).place
    assert isinstance(place.stage.phase, Short)
    assert place.stage.phase.cause is ShortCause.AGENT_EXITED
    assert says in place.stage.phase.words


def test_r6_a_tell_with_no_live_agent_is_refused() -> None:
    """Before any agent starts, a tell is refused."""
    with pytest.raises(UsageError, match="no agent is live"):
        step(S, run(made()).place, Told(at=Instant(2), text="hello"))


# --- R7: stage end --------------------------------------------------------------------------------


def test_r7_a_quiet_pane_without_a_deliverable_ends_nothing() -> None:
    """An agent waiting an hour with no commit is not done."""
    place = step(
        S, working(), AgentStateSeen(at=Instant(5), session=SESSION, activity=Activity.WAITING)
    ).place
    later = step(S, place, Tick(at=Instant(3600)))
    assert later.place.stage.name == "code"
    assert isinstance(later.place.stage.phase, Working)


def test_r7_a_commit_ends_the_stage_once_quiet() -> None:
    """A new commit, then the agent waits quietly: the stage ends and its agent is ended."""
    place = committed_and_waiting()
    place = step(
        S, place, PaneOutput(at=Instant(11), session=SESSION, last_output_at=Instant(11))
    ).place
    early = step(S, place, Tick(at=Instant(13)))
    assert early.place.stage.name == "code"
    done = step(S, early.place, Tick(at=Instant(17)))
    assert done.place.stage.name == "submit"
    assert EndAgent(session=SESSION, reason="stage code is done") in done.actions
    assert not any(isinstance(a, StartAgent) for a in done.actions)


def test_r7_the_head_the_stage_started_on_is_no_deliverable() -> None:
    """A head seen again at the stage's start commit does not count as new."""
    place = step(
        S, working(), BranchHead(at=Instant(10), branch=BranchName("fix/typo"), sha=Sha("a1"))
    ).place
    assert isinstance(place.stage.phase, Working)


# --- R10: tidy ------------------------------------------------------------------------------------


def test_r10_a_landed_clean_fix_loses_place_and_branch() -> None:
    """Landed, clean, main holds every commit: remove the worktree, delete the branch."""
    actions = plan(
        kind=FIX.name,
        life=Life.FINISHED,
        made=True,
        worktree=WorktreeFacts(path="/p", exists=True, made_by_flume=True),
        branch=BranchFacts(name=BranchName("fix/x"), exists=True, base=BranchName("main")),
        force=False,
    )
    assert actions == (
        RemoveWorktree(path="/p"),
        DeleteBranch(branch=BranchName("fix/x"), base=BranchName("main")),
    )


def test_r10_a_branch_ahead_of_base_is_kept_and_named() -> None:
    """The kept branch says how many commits its base lacks."""
    actions = plan(
        kind=FIX.name,
        life=Life.FINISHED,
        made=True,
        worktree=WorktreeFacts(path="/p", exists=True, made_by_flume=True),
        branch=BranchFacts(
            name=BranchName("fix/x"), exists=True, base=BranchName("main"), base_lacks=2
        ),
        force=True,
    )
    assert (
        KeepBranch(branch=BranchName("fix/x"), reason="fix/x holds 2 commits main lacks: kept")
        in actions
    )


@pytest.mark.parametrize("kind", ["fix", "question", "crew"])
def test_r10_dropped_work_with_an_empty_branch_loses_it(kind: str) -> None:
    """A dropped fix, question or declared kind whose branch holds nothing new loses it too.

    TIDY-DROPPED-EMPTY-BRANCH-GOES: kept, it would only block the name from launching again.
    """
    branch = BranchFacts(
        name=BranchName(f"{kind}/x"), exists=True, base=BranchName("main"), head=Sha("a1")
    )
    actions = plan(
        kind=KindName(kind),
        life=Life.DROPPED,
        made=True,
        worktree=WorktreeFacts(path="/p", exists=True, made_by_flume=True),
        branch=branch,
        force=False,
    )
    assert actions == (
        RemoveWorktree(path="/p"),
        DeleteBranch(branch=branch.name, base=BranchName("main"), head_was=Sha("a1")),
    )


def test_r10_dropped_work_keeps_a_branch_with_commits_and_names_them() -> None:
    """A dropped fix whose branch holds a commit main lacks keeps it, saying so."""
    actions = plan(
        kind=FIX.name,
        life=Life.DROPPED,
        made=True,
        worktree=WorktreeFacts(path="/p", exists=True, made_by_flume=True),
        branch=BranchFacts(
            name=BranchName("fix/x"), exists=True, base=BranchName("main"), base_lacks=1
        ),
        force=True,
    )
    assert actions == (
        RemoveWorktree(path="/p"),
        KeepBranch(branch=BranchName("fix/x"), reason="fix/x holds 1 commit main lacks: kept"),
    )


@pytest.mark.parametrize(
    ("lacks", "reason"),
    [
        (0, "a dropped change keeps its branch: kept"),
        (2, "a dropped change keeps its branch; 2 commits main lacks: kept"),
    ],
)
def test_r10_a_dropped_change_keeps_its_branch_whatever_it_holds(lacks: int, reason: str) -> None:
    """The seed: "removes the dropped change's place and keeps its branch"."""
    actions = plan(
        kind=KindName("change"),
        life=Life.DROPPED,
        made=True,
        worktree=WorktreeFacts(path="/p", exists=True, made_by_flume=True),
        branch=BranchFacts(
            name=BranchName("change/x"), exists=True, base=BranchName("main"), base_lacks=lacks
        ),
        force=False,
    )
    assert actions == (
        RemoveWorktree(path="/p"),
        KeepBranch(branch=BranchName("change/x"), reason=reason),
    )


def test_r10_a_hand_made_worktree_is_never_touched() -> None:
    """Even with force, a worktree flume did not make is kept."""
    actions = plan(
        kind=FIX.name,
        life=Life.FINISHED,
        made=False,
        worktree=WorktreeFacts(path="/p", exists=True, made_by_flume=False),
        branch=BranchFacts(name=BranchName("mine"), exists=True, base=BranchName("main")),
        force=True,
    )
    assert all(isinstance(a, KeepPlace | KeepBranch) for a in actions)


def test_r10_a_dirty_place_needs_force() -> None:
    """Uncommitted changes keep the place, and say how to let it go."""
    facts = WorktreeFacts(path="/p", exists=True, made_by_flume=True, dirty=True, untracked=True)
    branch = BranchFacts(name=BranchName("fix/x"), exists=True, base=BranchName("main"))
    kept = plan(
        kind=FIX.name, life=Life.DROPPED, made=True, worktree=facts, branch=branch, force=False
    )
    assert isinstance(kept[0], KeepPlace)
    assert "uncommitted changes and untracked files" in kept[0].reason
    assert "--force" in kept[0].reason
    forced = plan(
        kind=FIX.name, life=Life.DROPPED, made=True, worktree=facts, branch=branch, force=True
    )
    assert forced[0] == RemoveWorktree(path="/p", force=True)
    # The branch holds nothing main lacks: the forced changes were never committed to it.
    assert forced[1] == DeleteBranch(branch=BranchName("fix/x"), base=BranchName("main"))


# --- R11: status ----------------------------------------------------------------------------------


def test_r11_a_stage_that_never_started_has_no_deliverable() -> None:
    """Setup failed: the branch has a head, but the code stage never began, so nothing is new."""
    failed = run(made(), setup=(("false",),))
    failed = step(S, failed.place, SetupFinished(at=Instant(2), ok=False, output="no"))
    assert failed.place.head is not None
    assert not status(failed.place).deliverable_exists


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (None, None),
        (ChangeSeen(at=Instant(5), written=False, head=Sha("b")), None),
        (ChangeSeen(at=Instant(5), written=True, head=Sha("b"), valid=True), "valid"),
        (ChangeSeen(at=Instant(5), written=True, head=Sha("b"), valid=False), "invalid"),
        (ChangeSeen(at=Instant(5), written=True, head=Sha("b"), valid=None), "skipped"),
    ],
)
def test_r11_status_says_whether_the_openspec_cli_validated_the_change(
    change: ChangeSeen | None, says: str | None
) -> None:
    """Without the OpenSpec CLI flume reads the change's files itself, and says so."""
    assert status(evolve(working(), change=change)).validation == says


def test_r11_status_says_unknown_when_the_supervisor_is_down() -> None:
    """Read from the journal alone, a live agent's state is unknown."""
    place = working()
    assert status(place).agent is Activity.WORKING
    assert status(place, agent_known=False).agent is Activity.UNKNOWN
    assert status(run().place).agent is Activity.STOPPED


def test_replay_is_the_fold_of_step() -> None:
    """Replay over a journal gives the place step built, and refuses an empty journal."""
    seen = [made(), started(), AgentReady(at=Instant(3), session=SESSION)]
    launched = Launched(at=Instant(0), launch=launch(), kind=FIX)
    assert replay(S, [launched, *seen]) == run(*seen).place
    with pytest.raises(UsageError):
        replay(S, [])


def test_place_changes_name_every_field_of_place() -> None:
    """The typed evolve's field list is Place's, so no field can be missed or misspelt."""
    import attrs  # noqa: PLC0415 (only this test looks at the record's fields)

    from flume.core.place import PlaceChanges, evolve  # noqa: PLC0415

    assert set(PlaceChanges.__annotations__) == {field.name for field in attrs.fields(Place)}
    place = working()
    moved = evolve(place, now=Instant(99.0), tells_given=4)
    assert moved == attrs.evolve(place, now=Instant(99.0), tells_given=4)
    assert place.now != moved.now


# --- regressions from review: each a rule that once broke ------------------------------------


def _ended_fix_code() -> Place:
    """A fix whose code stage committed and ended; its agent is being ended."""
    return step(S, committed_and_waiting(), Tick(at=Instant(20))).place


def test_tidy_waits_for_the_agent_and_deletes_only_the_counted_head() -> None:
    """Tidy asks for facts only once the agent is gone, and deletes only the counted head."""
    dropped = step(S, working(), DropAsked(at=Instant(5)))
    assert not any(isinstance(a, GatherTidyFacts) for a in dropped.actions)
    gone = step(S, dropped.place, AgentExited(at=Instant(6), session=SESSION))
    assert any(isinstance(a, GatherTidyFacts) for a in gone.actions)
    facts = TidyFactsSeen(
        at=Instant(7),
        worktree=WorktreeFacts(path="/src/app/places/fix--typo", exists=True, made_by_flume=True),
        branch=BranchFacts(
            name=BranchName("fix/typo"), exists=True, base=BranchName("main"), head=Sha("a1")
        ),
    )
    decided = step(S, gone.place, facts)
    assert RemoveWorktree(path="/src/app/places/fix--typo") in decided.actions
    # A dropped fix whose branch holds nothing main lacks loses it, at the counted head only.
    assert (
        DeleteBranch(branch=BranchName("fix/typo"), base=BranchName("main"), head_was=Sha("a1"))
        in decided.actions
    )
    finished_plan = plan(
        kind=FIX.name,
        life=Life.FINISHED,
        made=True,
        worktree=facts.worktree,
        branch=facts.branch,
        force=False,
    )
    assert (
        DeleteBranch(branch=BranchName("fix/typo"), base=BranchName("main"), head_was=Sha("a1"))
        in finished_plan
    )


def test_tidy_takes_no_facts_about_another_path_and_no_force_from_the_shell() -> None:
    """Facts for a worktree not the place's are ignored; force is only the caller's word."""
    place = step(
        S,
        step(S, working(), DropAsked(at=Instant(5))).place,
        AgentExited(at=Instant(6), session=SESSION),
    ).place
    elsewhere = TidyFactsSeen(
        at=Instant(7),
        worktree=WorktreeFacts(
            path="/src/app/places/fix--someone-else", exists=True, made_by_flume=True, dirty=True
        ),
        branch=BranchFacts(name=BranchName("fix/typo"), exists=True, base=BranchName("main")),
    )
    assert not any(isinstance(a, RemoveWorktree) for a in step(S, place, elsewhere).actions)
    dirty = attrs.evolve(
        elsewhere, worktree=attrs.evolve(elsewhere.worktree, path="/src/app/places/fix--typo")
    )
    kept = step(S, place, dirty)
    assert not any(isinstance(a, RemoveWorktree) for a in kept.actions)
    assert any(isinstance(a, KeepPlace) for a in kept.actions)
    forced = step(S, kept.place, TidyAsked(at=Instant(8), force=True))
    again = step(S, forced.place, attrs.evolve(dirty, at=Instant(9)))
    assert RemoveWorktree(path="/src/app/places/fix--typo", force=True) in again.actions


def test_a_landing_counts_only_while_a_landing_stage_works() -> None:
    """A landing seen in the code stage is not the submit stage's deliverable."""
    early = step(S, working(), Landed(at=Instant(5), base_sha=Sha("c3")))
    assert early.place.landed_at is None
    assert not early.actions


SUBMIT_SESSION = SessionId("s2")


def submitting() -> Place:
    """A fix's submit stage, its prompt delivered, its branch handed to the lander."""
    place = step(S, _ended_fix_code(), AgentExited(at=Instant(21), session=SESSION)).place
    started_submit = AgentStarted(
        at=Instant(22), stage=StageName("submit"), attempt=1, session=SUBMIT_SESSION, pane="%2"
    )
    place = step(S, place, started_submit).place
    place = step(S, place, AgentReady(at=Instant(23), session=SUBMIT_SESSION)).place
    place = step(S, place, typed("[flume:fix--typo:submit:1]", at=24, session="s2")).place
    return step(S, place, SubmitAsked(at=Instant(25), session=SUBMIT_SESSION)).place


def test_failed_checks_of_a_printed_agent_are_reported_not_told() -> None:
    """A printed agent's terminal is not flume's to type into: failed checks are only reported.

    A tell there would be refused, and a refusal while folding a journal line would leave the
    place's journal unreadable.
    """
    place = submitting()
    printed = attrs.evolve(place.launch.agent, panes=Panes.PRINT)
    place = evolve(place, launch=attrs.evolve(place.launch, agent=printed))
    for seen in (
        ChecksFailed(at=Instant(26), reason="tests failed", output="1 failed"),
        ActionFailed(at=Instant(26), action=ActionName.LAND, output="no lander"),
    ):
        decided = step(S, place, seen)
        assert decided.place.submission.value == "checks-failed"
        assert not decided.place.held
        events = [a.event for a in decided.actions if isinstance(a, Report)]
        assert Event.CHECKS_FAILED in events


def test_retry_after_a_submission_lets_the_agent_submit_again() -> None:
    """A submit stage that stopped short after submitting can submit again once retried."""
    place = step(
        S, submitting(), NeedsSaid(at=Instant(26), words="conflict", session=SUBMIT_SESSION)
    ).place
    place = step(S, place, RetryAsked(at=Instant(27))).place
    assert place.submission.value == "none"


def test_a_commit_before_the_prompt_is_delivered_ends_nothing() -> None:
    """A head that moves while the agent is still starting is not the stage's deliverable."""
    place = run(made(), started()).place
    moved = step(S, place, BranchHead(at=Instant(3), branch=BranchName("fix/typo"), sha=Sha("b2")))
    assert not any(isinstance(a, Report) and a.event is Event.DELIVERABLE for a in moved.actions)


def test_no_prompt_is_typed_into_an_asking_agent() -> None:
    """The agent shows a dialog at start: the ready deadline passes and nothing is typed."""
    place = run(made(), started()).place
    asking = step(
        S, place, AgentStateSeen(at=Instant(3), session=SESSION, activity=Activity.ASKING)
    ).place
    later = step(S, asking, Tick(at=Instant(500)))
    assert not any(isinstance(a, SendPrompt) for a in later.actions)


def test_a_place_lives_by_the_settings_it_was_launched_with() -> None:
    """A launch that carries its settings replays the same whatever settings replay is given."""
    journal = [
        Launched(at=Instant(0), launch=launch(), kind=FIX, settings=S),
        made(),
        started(),
        AgentReady(at=Instant(3), session=SESSION),
        Tick(at=Instant(45)),
    ]
    assert replay(S, journal) == replay(Settings(confirm_seconds=60), journal)


def test_a_repeated_start_of_the_live_agent_ends_nothing() -> None:
    """The same AgentStarted seen twice (a restart's replay) is one agent, not a second."""
    place = run(made(), started()).place
    assert step(S, place, started(at=2.5)).actions == ()


def test_a_stale_failure_does_not_stop_a_working_stage() -> None:
    """A late report that making the worktree failed changes nothing once work is under way."""
    place = working()
    decided = step(
        S, place, ActionFailed(at=Instant(9), action=ActionName.MAKE_WORKTREE, output="late")
    )
    assert isinstance(decided.place.stage.phase, Working)


def test_an_older_line_does_not_override_a_newer_hook() -> None:
    """A transcript line older than an ASKING report leaves the agent asking; tells refused."""
    place = step(
        S, working(), AgentStateSeen(at=Instant(10), session=SESSION, activity=Activity.ASKING)
    ).place
    old = TranscriptEntry(at=Instant(8), session=SESSION, author=Author.TOOL)
    place = step(S, place, old).place
    assert place.agent is not None
    assert place.agent.activity is Activity.ASKING
    with pytest.raises(UsageError):
        step(S, place, Told(at=Instant(11), text="go"))


def test_needs_from_another_session_is_refused() -> None:
    """Flume needs run by something not the live agent does not stop the stage."""
    with pytest.raises(UsageError, match="not the live agent"):
        step(S, working(), NeedsSaid(at=Instant(5), words="x", session=SessionId("s9")))


def test_a_launch_names_a_known_kind() -> None:
    """A kind is declared or built in, the declared one first; any other is a usage error."""
    from flume.core.kinds import known_kind  # noqa: PLC0415 (only this test resolves kinds)

    assert known_kind("fix", {}) == FIX
    mine = Kind(
        name=KindName("fix"),
        prefix="mend",
        body=Sequence(
            blocks=pvector([Step(name=StageName("code"), prompt="$brief", deliverable=Commit())])
        ),
    )
    assert known_kind("fix", {KindName("fix"): mine}) == mine
    with pytest.raises(UsageError) as caught:
        known_kind("chore", {})
    assert caught.value.exit_status == 2
    assert "use one of change, fix, question" in str(caught.value)


def _unwritten(at: float, send: int, session: str = "s1") -> PromptUnwritten:
    """The pane's own mark (a printed agent's file) shows send ``send`` never made."""
    return PromptUnwritten(
        at=Instant(at),
        session=SessionId(session),
        marker=Marker("flume:fix--typo:code:1"),
        send=send,
    )


def test_r5_a_send_the_pane_shows_never_made_is_typed_at_once() -> None:
    """DELIVERY-UNWRITTEN-NOW: no waiting for the window; once only, and only for this send."""
    place = run(made(), started(), AgentReady(at=Instant(3), session=SESSION)).place
    # Another send's, another session's, or another stage's mark says nothing of this one.
    assert step(S, place, _unwritten(4, 2)).place.stage == place.stage
    assert step(S, place, _unwritten(4, 1, session="s9")).place.stage == place.stage
    other = attrs.evolve(_unwritten(4, 1), marker=Marker("flume:fix--typo:code:2"))
    assert step(S, place, other).place.stage == place.stage
    now = step(S, place, _unwritten(4, 1))
    assert [a.send for a in now.actions if isinstance(a, SendPrompt)] == [1]
    assert any(isinstance(a, Report) and a.event is Event.PROMPT_RETYPED for a in now.actions)
    assert now.place.stage.sends == 1
    # Retyped: the mark read again before the write is seen does not type it a third time.
    assert not step(S, now.place, _unwritten(5, 1)).actions
    # Shown typed already: never typed again.
    typed = step(S, place, _typed(4, 1)).place
    assert not step(S, typed, _unwritten(5, 1)).actions
    # An agent being ended, or a dropped place, is not typed into.
    dropped = step(S, place, DropAsked(at=Instant(4))).place
    assert not any(isinstance(a, SendPrompt) for a in step(S, dropped, _unwritten(5, 1)).actions)
