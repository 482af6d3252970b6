"""``step``: the one entry point into the core, and ``replay``, its fold.

Theory of operation: ``step`` routes an observation to the rule module that owns it, then
:func:`settle` applies :data:`FOLLOW_UPS`, the follow-ups every observation may trigger, in their
order. It decides nothing itself. Which caller's command a stage's phase accepts is the table
:data:`flume.core.place.ACCEPTS`, which the commands' rules read. :func:`_route` has one arm per
observation type, closed by ``assert_never`` so mypy flags a type without a rule; the totality
test enumerates every type against every phase, and every command against the table. Time only
moves forward: a fact stamped earlier than the last one seen (a clock stepping back) does not
turn the place's clock back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import assert_never

import attrs

from flume.core import deadlines, delivery, stage, tell, tidy, transcripts
from flume.core.actions import (
    Action,
    EndAgent,
    Event,
    GatherTidyFacts,
    Land,
    Report,
    StartAgent,
)
from flume.core.errors import UsageError, refused
from flume.core.ids import Instant
from flume.core.observations import (
    ActionFailed,
    Activity,
    AgentExited,
    AgentReady,
    AgentStarted,
    AgentStateSeen,
    AnswerGiven,
    ApproveAsked,
    AskSaid,
    BranchDeleted,
    BranchHead,
    BranchVanished,
    BudgetRaised,
    ChangeSeen,
    ChecksFailed,
    ChildNews,
    ComposeSaid,
    DropAsked,
    GateRead,
    Landed,
    LandingBlocked,
    LandingHeld,
    LaneEnded,
    LanesMerged,
    Launched,
    MergeConflicted,
    MergeRefused,
    NeedsSaid,
    Notified,
    NotifySaid,
    Observation,
    PaneOutput,
    PassAsked,
    ProceedAsked,
    ProgressSaid,
    PromptTyped,
    PromptUnwritten,
    PROpened,
    Pushed,
    ReportSeen,
    ResolveAsked,
    ResumeAsked,
    RetryAsked,
    SetupFinished,
    SpawnSaid,
    StopAsked,
    SubmitAsked,
    Tick,
    TidyAsked,
    TidyFactsSeen,
    Told,
    TranscriptEntry,
    TranscriptFound,
    TranscriptUnreadable,
    TurnEnded,
    Usage,
    WorktreeLost,
    WorktreeMade,
    WorktreeRemoved,
)
from flume.core.place import (
    Finalizing,
    Judging,
    Life,
    Outcome,
    Place,
    Short,
    Starting,
    Submission,
    TidyGathering,
    current_step,
    evolve,
    finalize_action,
)
from flume.core.settings import Settings
from flume.core.workflow import finalize, gates, lanes, messages, orchestrate

#: A follow-up: a rule any observation may trigger, given the place after the observation's own.
FollowUp = Callable[[Settings, Place, Instant], Outcome]

#: The follow-ups, run in this order after every observation's own rule, each on the place the
#: one before it left. The order lets one step finish what the rules chain, rather than leave it
#: to the next observation; it is also the order of the actions a step returns (traces print it):
#:
#: 1. ``check_deliverable`` first: the evidence just seen (a commit, a landing) moves a Working
#:    stage to Delivered before anything else looks at the stage.
#:    ``judge_evidence`` with it: a workflow step judging a deliverable gate at its turn's end
#:    passes on the evidence just seen (or, its window gone by, is told once or pauses), and a
#:    paused attempt whose deliverable is seen passes; both before the next stage may start.
#: 2. ``end_when_quiet`` next, so a stage whose agent is already quiet ends in the step that found
#:    its deliverable; it queues the next stage, or finishes the place (landed: tidy is wanted).
#: 3. ``start_when_free`` after the end, so the next stage starts in the same step when no agent
#:    is left to wait for (R4: an agent still ending holds it back).
#: 4. ``land_again`` acts on a Working stage whose landing is blocked, which no other follow-up
#:    makes or leaves; it sits with the stage's rules, so its Land comes before any send.
#: 5. ``gather_when_free`` after ``end_when_quiet``, so finished landed work asks for tidy's
#:    facts in the step it finished, once no agent lives.
#: 6. ``pause_when_spent`` before any send: a stage over a budget (its active minutes moved on)
#:    pauses, and nothing more is sent to its agent; then ``nudge_when_stalled``, which may send
#:    the one nudge of a silent agent (or pause it), before the tells' own deadlines; and
#:    ``judge_when_waiting``, which reads the gate of an agent long found waiting.
#: 7. The sends last, on the phase the stage's rules left. The prompt's deadlines
#:    (``check_deadlines``) before the tells': a stage whose prompt was missing twice stops short
#:    there, and its held tells may go in that step (``flush`` itself never sends a tell before
#:    the prompt is found). The tell in flight (``check_deadline``: sent again, or found lost)
#:    before the next held one (``flush``), since tells go one at a time.
FOLLOW_UPS: tuple[FollowUp, ...] = (
    stage.check_deliverable,
    gates.judge_evidence,
    stage.end_when_quiet,
    stage.start_when_free,
    lanes.fan_when_free,
    orchestrate.enter_when_started,
    orchestrate.launch_when_free,
    orchestrate.join_when_ready,
    stage.land_again,
    tidy.gather_when_free,
    gates.pause_when_spent,
    gates.nudge_when_stalled,
    gates.judge_when_waiting,
    messages.overdue_when_unanswered,
    delivery.check_deadlines,
    tell.check_deadline,
    tell.flush,
)


@attrs.frozen(kw_only=True)
class Decision:
    """What ``step`` decided: the place's next state and the actions for the shell."""

    place: Place
    actions: tuple[Action, ...] = ()


def _unreadable(place: Place, seen: TranscriptUnreadable) -> Outcome:
    """Unreadable transcript lines are skipped and counted, never fatal."""
    if place.agent is None or place.agent.session != seen.session or seen.count < 1:
        return place, ()
    report = Report(
        event=Event.UNREADABLE,
        text=f"{seen.count} transcript line(s) could not be read and were skipped",
        stage=place.stage.name,
    )
    return evolve(place, unreadable=place.unreadable + seen.count), (report,)


def usage_words(usage: Usage | None) -> str:
    """A turn's usage in words: its tokens in all and each kind, or that none was reported."""
    if usage is None:
        return "usage not reported"
    return (
        f"{usage.total} tokens (input {usage.input}, output {usage.output}, "
        f"cache read {usage.cache_read}, cache written {usage.cache_creation})"
    )


def _turn_ended(place: Place, seen: TurnEnded) -> Decision:
    """TURN-ENDED-ONLY-REPORTED: a turn's end is reported with its usage; gates judge on it.

    No follow-up runs: a stage gated by one of the five deliverables is as it was (its spending
    counted), and the one action is the report; a workflow gate's stage asks for its reading
    or pauses (:func:`flume.core.workflow.gates.on_turn_ended`).
    """
    report = Report(
        event=Event.TURN_ENDED,
        text=f"turn ended: {usage_words(seen.usage)}",
        stage=place.stage.name,
    )
    place, actions = gates.on_turn_ended(place, seen, report)
    return Decision(place=place, actions=actions)


def _launched_again(place: Place, seen: Launched) -> Outcome:
    del seen
    name = place.launch.place
    raise refused(
        "name",
        f"{name} is already launched in {place.launch.repository}",
        "choose another name, or drop and tidy the place first",
    )


def _route(place: Place, seen: Observation) -> Outcome:  # noqa: C901, PLR0911, PLR0912, PLR0915 (one arm per observation type)
    """Hand ``seen`` to the rule that owns it; every observation type has exactly one arm."""
    match seen:
        case Launched():
            return _launched_again(place, seen)
        case Told(text=text, step=named):
            stage.at_step(place, named, "tell")
            return tell.on_told(place, text, place.now)
        case StopAsked():
            return stage.on_stop(place)
        case RetryAsked(words=words, step=named):
            if lanes.relaunches(place):
                # WF-JOIN-ALL: the run paused on a lane's unfinished end launches it again.
                return lanes.on_lane_retry(place, seen)
            stage.at_step(place, named, "retry")
            return stage.on_retry(place, words)
        case DropAsked():
            place, dropped = stage.on_drop(place)
            place, orders = lanes.drop_lanes(place)
            return place, (*dropped, *orders)
        case ProceedAsked():
            return stage.on_proceed(place)
        case SubmitAsked(session=session):
            return stage.on_submit(place, session)
        case NeedsSaid(words=words, session=session):
            return stage.on_needs(place, words, session)
        case TidyAsked(force=force):
            return tidy.on_tidy_asked(place, force=force)
        case WorktreeMade():
            return stage.on_worktree_made(place, seen)
        case SetupFinished():
            return stage.on_setup(place, seen)
        case ActionFailed():
            return stage.on_action_failed(place, seen)
        case AgentStarted():
            return stage.on_agent_started(place, seen)
        case AgentReady(at=at, session=session):
            ready = AgentStateSeen(at=at, session=session, activity=Activity.WAITING)
            return stage.on_agent_state(place, ready)
        case PromptTyped():
            return delivery.on_prompt_typed(place, seen)
        case PromptUnwritten():
            return delivery.on_prompt_unwritten(place, seen)
        case AgentStateSeen():
            return stage.on_agent_state(place, seen)
        case TranscriptEntry():
            place, actions = stage.on_transcript(place, seen)
            return transcripts.on_entry(place, seen.session), actions
        case TranscriptUnreadable():
            return _unreadable(place, seen)
        case TranscriptFound():
            return transcripts.on_transcript_found(place, seen)
        case PaneOutput():
            return stage.on_pane_output(place, seen)
        case AgentExited():
            return stage.on_agent_exited(place, seen)
        case BranchHead():
            return stage.on_branch_head(place, seen)
        case WorktreeLost():
            return stage.on_worktree_lost(place, seen)
        case BranchVanished():
            return stage.on_branch_vanished(place, seen)
        case ChangeSeen():
            return stage.on_change(place, seen)
        case ReportSeen():
            return stage.on_report(place, seen)
        case ChecksFailed():
            return stage.on_checks_failed(place, seen, place.now)
        case LandingBlocked():
            return stage.on_landing_blocked(place, seen)
        case LandingHeld():
            return stage.on_landing_held(place, seen)
        case Landed():
            return stage.on_landed(place, seen)
        case TidyFactsSeen():
            return tidy.on_facts(place, seen)
        case WorktreeRemoved():
            # The removal decides nothing: tidy's next look makes the place tidied once it finds
            # nothing left (TIDY-DONE-ON-FACTS).
            return place, ()
        case BranchDeleted():
            return tidy.on_branch_deleted(place, seen)
        case ApproveAsked():
            return gates.on_approve(place, seen)
        case PassAsked(step=named):
            stage.at_step(place, named, "pass")
            return gates.on_pass(place, seen)
        case ResumeAsked():
            return gates.on_resume(place, seen)
        case ResolveAsked():
            return lanes.on_resolve(place, seen)
        case LaneEnded():
            if lanes.children(place):
                return orchestrate.on_child_ended(place, seen)
            return lanes.on_lane_ended(place, seen)
        case LanesMerged():
            return orchestrate.on_lanes_merged(place, seen)
        case MergeConflicted():
            return lanes.on_merge_conflicted(place, seen)
        case MergeRefused():
            return lanes.on_merge_refused(place, seen)
        case ProgressSaid():
            return messages.on_progress(place, seen)
        case AskSaid():
            return messages.on_ask(place, seen)
        case AnswerGiven():
            return messages.on_answer(place, seen)
        case SpawnSaid():
            return orchestrate.on_spawn(place, seen)
        case NotifySaid():
            return orchestrate.on_notify(place, seen)
        case ComposeSaid():
            return orchestrate.on_compose(place, seen)
        case ChildNews():
            return orchestrate.on_child_news(place, seen)
        case Notified():
            return orchestrate.on_notified(place, seen)
        case Pushed():
            return finalize.on_pushed(place, seen)
        case PROpened():
            return finalize.on_pr_opened(place, seen)
        case BudgetRaised():
            return gates.on_raise(place, seen)
        case GateRead():
            return gates.on_gate_read(place, seen)
        case Tick() | TurnEnded():
            return place, ()
        case _:
            assert_never(seen)


def step(settings: Settings, place: Place | None, seen: Observation) -> Decision:
    """Fold one observation into the place: the next state and the actions it calls for.

    ``settings`` serve a launch that names none; from then on the place lives by the settings it
    was launched with, so its replay depends on its journal alone.

    Raises :class:`UsageError` when ``seen`` is a caller's command the rules refuse; then
    nothing is to be journaled or done.
    """
    if place is None:
        if isinstance(seen, Launched):
            launched, actions = stage.launch(seen, settings)
            return Decision(place=launched, actions=actions)
        raise UsageError.one(
            "place",
            "nothing has been launched here",
            "the first observation of a place is its launch",
        )
    now = Instant(max(place.now, seen.at))
    if now != place.now:
        place = evolve(place, now=now)
    if isinstance(seen, TurnEnded):
        return _turn_ended(place, seen)
    place, actions = _route(place, seen)
    place, follow = settle(place.settings, place, now)
    return Decision(place=place, actions=(*actions, *follow))


def settle(settings: Settings, place: Place, now: Instant) -> Outcome:
    """The second half of every step: :data:`FOLLOW_UPS`, in their order."""
    actions: list[Action] = []
    for follow_up in FOLLOW_UPS:
        place, more = follow_up(settings, place, now)
        actions.extend(more)
    return place, tuple(actions)


def next_deadline(place: Place) -> Instant | None:
    """NEXT-DEADLINE: the first instant at which a ``Tick`` changes the place; None: none will.

    A ``Tick`` changes a place when it calls for an action or changes its state beyond its
    clock. Time alone changes a place only at the instants its rules compare the clock with
    (:func:`flume.core.deadlines.thresholds`), so a ``Tick`` is tried now (a place some
    follow-up would still move) and then at each of those instants to come, in order; the first
    that changes the place is the deadline. Until it, a ``Tick`` changes nothing, and a shell
    that keeps the places' deadlines in order need look at no place before its own: a new
    observation makes another place, with a deadline of its own.
    """
    if _ticks_change(place, place.now):
        return place.now
    later = sorted({at for at in deadlines.thresholds(place) if at > place.now})
    return next((at for at in later if _ticks_change(place, at)), None)


def _ticks_change(place: Place, at: Instant) -> bool:
    """A ``Tick`` at ``at`` calls for an action, or changes the place beyond its clock."""
    decision = step(place.settings, place, Tick(at=at))
    return bool(decision.actions) or evolve(decision.place, now=place.now) != place


def pending(place: Place) -> tuple[Action, ...]:
    """RESTART-PENDING: the actions whose effects the place still waits to observe.

    A shell that restarts replays the journal and performs these again: the journal holds every
    observation that asked for them, and no observation yet of what they did. Each is safe to
    perform twice, because the shell observes before it acts (a worktree already made is
    reported made; an agent already started for the stage attempt is found, not started again).
    Prompts and tells are not here: their deadlines send them again, at most twice (R5, R6).
    """
    found: list[Action] = []
    phase = place.stage.phase
    short = isinstance(phase, Short)
    if (
        (not place.made or place.rebuilding)
        and not short
        and place.life in {Life.MAKING, Life.ACTIVE}
    ):
        found.append(stage.make_worktree(place))
    elif not place.made and place.life is Life.DROPPED:
        # Dropped before its worktree was seen made: it may have been made before a crash.
        found.append(attrs.evolve(stage.make_worktree(place), look_only=True))
    elif place.made and not place.ready and not short and place.life in {Life.MAKING, Life.ACTIVE}:
        found.append(stage.run_setup(place))
    if place.life is Life.ACTIVE and isinstance(phase, Starting) and place.agent is None:
        found.extend(stage.archive_before(place, current_step(place)))
        found.append(
            StartAgent(
                path=place.path,
                stage=place.stage.name,
                attempt=place.stage.attempt,
                agent=stage.agent_for(place, current_step(place)),
                sandbox=current_step(place).sandbox,
            ),
        )
    if place.life is Life.ACTIVE and isinstance(phase, Judging) and not gates.is_evidence(place):
        found.append(gates.judge_gate(place))
    if place.agent is not None and place.agent.ending:
        found.append(EndAgent(session=place.agent.session, reason="ending before a restart"))
    found.extend(stage.end_stray(session) for session in sorted(place.strays))
    if place.life is Life.ACTIVE and place.submission is Submission.SUBMITTED:
        found.append(stage.land(place))
    found.extend(orchestrate.pending(place))
    found.extend(lanes.pending(place))
    act = finalize_action(place)
    # Finalize's land is pending as a submission is, above: once.
    if (
        place.life is Life.ACTIVE
        and isinstance(phase, Finalizing)
        and act is not None
        and not isinstance(act, Land)
    ):
        found.append(act)
    if isinstance(place.tidy, TidyGathering):
        found.append(
            GatherTidyFacts(
                path=place.path,
                branch=place.branch,
                base=place.launch.base,
                force=place.tidy.force,
            ),
        )
    return tuple(found)


def replay(settings: Settings, observations: Iterable[Observation]) -> Place:
    """The place a journal describes: the fold of :func:`step` over its observations.

    A journal holds only what ``step`` accepted, so a refusal here means the journal was
    edited by hand, and it is raised.
    """
    place: Place | None = None
    for seen in observations:
        place = step(settings, place, seen).place
    if place is None:
        raise UsageError.one(
            "journal", "the journal is empty", "a place's journal starts with its launch"
        )
    return place


@attrs.frozen(kw_only=True)
class TraceRow:
    """One observation of a simulation and what came of it: a decision or a refusal."""

    seen: Observation
    decision: Decision | None
    refusal: UsageError | None


def trace(settings: Settings, observations: Iterable[Observation]) -> Iterator[TraceRow]:
    """Run ``step`` over ``observations``, going on past refused commands, as a dry run does."""
    place: Place | None = None
    for seen in observations:
        try:
            decision = step(settings, place, seen)
        except UsageError as error:
            yield TraceRow(seen=seen, decision=None, refusal=error)
            continue
        place = decision.place
        yield TraceRow(seen=seen, decision=decision, refusal=None)
