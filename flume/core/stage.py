"""R1-R4, R7-R9: the place's life from launch to its last stage, stop short, retry, stop, drop.

Theory of operation. A launch asks for the worktree (R1); once it is observed made, the
repository's setup runs (R2); once that is observed done, stages run one after another in that one
place (R3), each with a fresh agent started only when no agent is live (R4). "A stage ends when
its deliverable exists, made since the stage started: flume waits until the agent is quiet, ends
it and starts the next stage, unless that stage waits on its caller's word. A stage never ends
because its pane went quiet." (R7). An agent that runs ``flume needs`` stops its stage short, and
no next stage starts (R8). ``retry`` starts a short stage again with a fresh agent and the
caller's words; ``stop`` ends an agent and its stage waits for a retry; ``drop`` abandons the
work (R9).

Every handler returns the next place and the actions it decided; ``step.settle`` then applies the
follow-ups any observation can trigger (a deliverable found, a quiet agent, a free place), some of
them here. Which command a stage's phase accepts is the table ``place.ACCEPTS``, which the
commands' rules here consult.

A place is its worktree on its branch: one deleted under a place in flight (the folder removed,
the branch deleted by hand) stops its stage short, named, with the way out, and no agent starts
there again until it is whole.

Rule ids: R1, R2, R3, R4, R7, R8, R9, STAGE-NEVER-ON-QUIET, STAGE-DELIVERABLE-SINCE-START,
STAGE-ENDS-WHEN-QUIET, STAGE-WAITS-WORD, RETRY-FRESH-AGENT, STOP-WAITS-RETRY, DROP-ENDS-WORK,
LAND-BASE-BLOCKED-WAITS, PLACE-LOST-STOPS-SHORT, START-ONLY-IN-PLACE.
"""

from __future__ import annotations

import attrs
from pyrsistent import pvector

from flume.core import delivery, tell, transcripts
from flume.core.actions import (
    Action,
    ActionName,
    ArchiveVerdict,
    EndAgent,
    Event,
    Land,
    MakeWorktree,
    Report,
    RunSetup,
    StartAgent,
)
from flume.core.applies import refuse
from flume.core.errors import UsageError, refused
from flume.core.ids import Instant, SessionId, StageName
from flume.core.kinds import (
    Commit,
    Kind,
    Landing,
    Step,
    Verdict,
    block_name,
    blocks_of,
    parallels,
    stage_named,
    steps,
)
from flume.core.launch import AgentSettings, Panes, check_launch, place_branch, place_path
from flume.core.observations import (
    ActionFailed,
    Activity,
    AgentExited,
    AgentStarted,
    AgentStateSeen,
    BranchHead,
    BranchVanished,
    ChangeSeen,
    ChecksFailed,
    Landed,
    LandingBlocked,
    LandingHeld,
    Launched,
    NeedsSaid,
    PaneOutput,
    ProceedAsked,
    ReportSeen,
    RetryAsked,
    SetupFinished,
    StopAsked,
    SubmitAsked,
    TranscriptEntry,
    WorktreeLost,
    WorktreeMade,
)
from flume.core.place import (
    Agent,
    AwaitingInput,
    AwaitingWord,
    Delivered,
    Delivering,
    Finalizing,
    JoinStage,
    Judging,
    Life,
    Merging,
    Outcome,
    PauseCause,
    Paused,
    Place,
    Queued,
    Short,
    ShortCause,
    StageRun,
    Starting,
    Submission,
    TidyNotWanted,
    Working,
    accepts,
    current_step,
    evolve,
    finalize_action,
    has_deliverable,
    holds_work,
    in_workflow,
    is_live,
    is_quiet,
    leading,
    merge_action,
    resolve_command,
    restore_command,
    want_tidy,
    with_activity,
)
from flume.core.settings import LAND_RETRY_MOST_SECONDS, LAND_RETRY_SECONDS, RETRIES, Settings
from flume.core.workflow import budget, tree
from flume.core.workflow.budget import Spent
from flume.core.workflow.tree import Position

#: The phases in which a stage's agent is running toward its deliverable.
_RUNNING = (AwaitingInput, Delivering, Working, Judging)


def _name(place: Place) -> str:
    return place.launch.place


def _new_stage(  # noqa: PLR0913 (the stage's fields, each a keyword)
    place: Place,
    step: Step,
    now: Instant,
    *,
    attempt: int = 1,
    words: str = "",
    position: Position | None = None,
) -> StageRun:
    """STAGE-WAITS-WORD: a stage that waits on the caller's word does not start without it.

    ``position``: where in the kind's tree it runs; None: where the current stage runs.
    """
    waits = step.waits_on_caller or step.name in place.launch.waits
    return StageRun(
        name=step.name,
        attempt=attempt,
        started_at=now,
        start_head=place.head,
        words=words,
        phase=AwaitingWord() if waits else Queued(),
        position=position if position is not None else place.stage.position,
    )


def _block_step(kind: Kind, name: StageName) -> Step:
    """The step called ``name``; a parallel block's stage, as a step that ends on a commit.

    A parallel's stage never starts an agent of its own unless asked to merge
    (:func:`flume.core.place.current_step`); here only its name and that it waits on no word
    are read.
    """
    try:
        return stage_named(kind, name)
    except KeyError:
        if name not in parallels(kind.body):
            raise
        return Step(name=name, prompt="merge", deliverable=Commit())


def launch(seen: Launched, settings: Settings) -> Outcome:
    """R1: a checked launch asks for its worktree, ``places/<kind>--<name>``.

    The place keeps the launch's settings (or ``settings`` when the launch names none) for its
    whole life, so that replaying its journal gives the same place whatever the caller passes.
    """
    check_launch(seen.launch, seen.kind)
    if not seen.board and any(isinstance(s.deliverable, Verdict) for s in steps(seen.kind.body)):
        # WF-VERDICT-SINCE-DELIVERY needs the board: with none, no verdict could be archived
        # before its step starts, nor read where the step was told to write it.
        raise UsageError.one(
            "board",
            f"kind {seen.kind.name} has a verdict gate, and the launch names no blackboard",
            "launch it with flume launch, which makes the place's board",
        )
    position = tree.first(seen.kind.body)
    first = _block_step(seen.kind, position.step)
    path = place_path(seen.launch)
    branch = place_branch(seen.kind, seen.launch.name)
    place = Place(
        launch=seen.launch,
        kind=seen.kind,
        path=path,
        branch=branch,
        setup=seen.setup,
        life=Life.MAKING,
        now=seen.at,
        settings=seen.settings or settings,
        copy=seen.copy,
        start=seen.start,
        board=seen.board,
        tests=seen.tests,
        budgets=seen.kind.budgets,
        spent=Spent(began_at=seen.at),
        stage=StageRun(
            name=first.name,
            attempt=1,
            started_at=seen.at,
            start_head=None,
            words="",
            phase=Queued(),
        ),
    )
    place = evolve(place, stage=_new_stage(place, first, seen.at, position=position))
    actions = (
        Report(event=Event.LAUNCHED, text=f"{_name(place)} launched on {branch}"),
        make_worktree(place),
    )
    return place, actions


def make_worktree(place: Place) -> MakeWorktree:
    """R1: the action that makes the place's worktree, on its branch cut from the launch's base.

    FLEET-CARRIED-HEAD: a fleet place carried again on another host is cut at the head its lost
    host last pushed, so its work goes on from there; its ``start`` stays the base's revision at
    launch, so the lander still carries every commit made since onto the base. PLACE-REBUILT:
    a worktree removed under the place and retried is added again on its branch as it stands.
    """
    carried = place.launch.carried
    return MakeWorktree(
        repository=place.launch.repository,
        path=place.path,
        branch=place.branch,
        base=place.launch.base,
        start=carried if carried is not None else place.start,
        again=place.rebuilding,
        head=place.head if place.rebuilding else None,
    )


def run_setup(place: Place) -> RunSetup:
    """R2: the action that makes the place ready, as its repository declared at launch."""
    return RunSetup(
        path=place.path,
        commands=place.setup,
        source=place.launch.repository,
        copy=place.copy,
    )


def on_worktree_made(place: Place, seen: WorktreeMade) -> Outcome:
    """R2: the worktree exists; the repository's own setup makes it ready."""
    if (
        (place.made and not place.rebuilding)
        or seen.path != place.path
        or seen.branch != place.branch
    ):
        return place, ()
    again = " again on its branch, its commits kept," if place.rebuilding else ""
    place = evolve(place, made=True, head=seen.head, rebuilding=False)
    report = Report(
        event=Event.PLACE_MADE, text=f"worktree {place.path} made{again} at {seen.head}"
    )
    if place.life in {Life.DROPPED, Life.TIDIED}:
        # Made for work already dropped (a make in flight, or seen after a restart): tidy
        # looks again, even at a place it had found nothing of, so the worktree is not left.
        return evolve(place, life=Life.DROPPED, tidy=want_tidy(place.tidy)), (report,)
    if place.setup or place.copy:
        return place, (report, run_setup(place))
    return evolve(place, ready=True, life=Life.ACTIVE), (report,)


def on_setup(place: Place, seen: SetupFinished) -> Outcome:
    """R2: "A failed setup is a stop short with its output, not a half-made place"."""
    if (
        not place.made
        or place.ready
        or place.life not in {Life.MAKING, Life.ACTIVE}
        or place.worktree_gone
    ):
        return place, ()
    if seen.ok:
        return evolve(place, ready=True, life=Life.ACTIVE), ()
    words = f"the repository's setup failed:\n{seen.output}".rstrip()
    return _short(evolve(place, life=Life.ACTIVE), ShortCause.SETUP_FAILED, words)


def _short(place: Place, cause: ShortCause, words: str) -> Outcome:
    """R8: the stage stops short; no next stage starts until a retry."""
    stage = attrs.evolve(place.stage, phase=Short(cause=cause, words=words))
    event = Event.SETUP_FAILED if cause is ShortCause.SETUP_FAILED else Event.STOPPED_SHORT
    # A stage stopped short waits on a person: its time is not the run's active time.
    place = evolve(place, stage=stage, spent=budget.paused_from(place.spent, place.now))
    return place, (Report(event=event, text=words, stage=stage.name),)


def on_agent_started(place: Place, seen: AgentStarted) -> Outcome:
    """R4: the agent asked for is now live; any other agent is ended at once.

    The agent taken is one of the place's attempts, kept with its transcript (TRANSCRIPT-KEPT).
    """
    phase = place.stage.phase
    if (
        isinstance(phase, Starting)
        and place.agent is None
        and seen.stage == place.stage.name
        and seen.attempt == place.stage.attempt
    ):
        agent = Agent(
            session=seen.session,
            stage=seen.stage,
            key=place.stage.key,
            attempt=seen.attempt,
            pane=seen.pane,
            activity=Activity.UNKNOWN,
            activity_since=seen.at,
            last_output_at=seen.at,
            said_at=seen.at,
        )
        stage = attrs.evolve(place.stage, phase=AwaitingInput(session=seen.session, since=seen.at))
        return transcripts.begun(evolve(place, agent=agent, stage=stage), agent), ()
    if place.agent is not None and place.agent.session == seen.session:
        return place, ()
    # Kept until its exit is seen: a restart before the end is carried out asks it again.
    place = evolve(place, strays=place.strays.add(seen.session))
    return place, (end_stray(seen.session),)


def end_stray(session: SessionId) -> EndAgent:
    """R4: the end of an agent started for no stage the place runs now."""
    return EndAgent(session=session, reason="not the agent of the place's current stage")


def on_agent_state(place: Place, seen: AgentStateSeen) -> Outcome:
    """A hook or the registry said what the agent does; readiness sends the first prompt."""
    agent = place.agent
    if agent is None or agent.session != seen.session:
        return place, ()
    if seen.at < agent.activity_since:
        return place, ()
    place = evolve(place, agent=with_activity(agent, seen.activity, seen.at))
    if seen.activity is Activity.WAITING:
        return delivery.on_agent_ready(place, seen.session)
    return place, ()


def on_transcript(place: Place, seen: TranscriptEntry) -> Outcome:
    """A transcript line of the live agent: delivery, tells, and what the agent is doing."""
    agent = place.agent
    if agent is None or agent.session != seen.session:
        return place, ()
    # A hook's word is more precise than a line's hint: a line older than the hook's report
    # does not override it (a line written before a permission dialog opened, read after).
    inferred = delivery.infer_activity(seen, agent.activity)
    activity = inferred if seen.at >= agent.activity_since else agent.activity
    latest = Instant(max(agent.last_output_at, seen.at))
    said = Instant(max(agent.said_at, seen.at))
    if activity is not agent.activity:
        agent = attrs.evolve(
            agent,
            activity=activity,
            activity_since=seen.at,
            last_output_at=latest,
            said_at=said,
        )
    elif latest != agent.last_output_at or said != agent.said_at:
        agent = attrs.evolve(agent, last_output_at=latest, said_at=said)
    if agent is not place.agent:
        place = evolve(place, agent=agent)
    place, delivered = delivery.on_prompt_line(place, seen)
    place, told = tell.on_tell_line(place, seen)
    return place, (*delivered, *told)


def on_pane_output(place: Place, seen: PaneOutput) -> Outcome:
    """The pane showed output: it moves the quiet clock and nothing else (STAGE-NEVER-ON-QUIET)."""
    agent = place.agent
    if agent is None or agent.session != seen.session:
        return place, ()
    latest = Instant(max(agent.last_output_at, seen.last_output_at))
    return evolve(place, agent=attrs.evolve(agent, last_output_at=latest)), ()


def on_agent_exited(place: Place, seen: AgentExited) -> Outcome:
    """The agent is gone; a stage still working toward its deliverable stops short.

    WF-RETRY-EXITED: in a workflow, an attempt whose agent exited on its own (not ended by
    flume or a person) before its gate was met is tried again with a fresh agent while the
    step's retries last ("retry attempts per step (default 2)"), the cause named; then it stops
    short. A kind of stages keeps the seed's stop short at once.
    """
    if seen.session in place.strays:
        return evolve(place, strays=place.strays.remove(seen.session)), ()
    agent = place.agent
    if agent is None or agent.session != seen.session:
        return place, ()
    place, dropped = tell.drop_all(evolve(place, agent=None), "the agent exited")
    if agent.ending or not isinstance(place.stage.phase, _RUNNING) or place.life is not Life.ACTIVE:
        return place, dropped
    status = "" if seen.status is None else f" (exit status {seen.status})"
    shown = seen.last_words.rstrip()
    run = place.stage
    most = place.budgets.retries if place.budgets.retries is not None else RETRIES
    fresh = not (isinstance(run.phase, Judging) or place.worktree_gone or place.branch_gone)
    if in_workflow(place) and fresh and run.retried < most:
        said = f"the agent of {run.key} (attempt {run.attempt}) exited{status}"
        if shown.strip():
            said = f"{said}; its pane showed last:\n{shown}"
        return _retry_exited(place, said, most, dropped)
    words = f"the agent exited{status} before the stage's deliverable existed; retry the stage"
    if in_workflow(place) and run.retried:
        words = f"{words} (it was tried again {run.retried} times already)"
    if shown.strip():
        words = f"{words}. Its pane showed last:\n{shown}"
    place, short = _short(place, ShortCause.AGENT_EXITED, words)
    return place, (*dropped, *short)


def _retry_exited(place: Place, said: str, most: int, before: tuple[Action, ...]) -> Outcome:
    """WF-RETRY-EXITED: the step starts again with a fresh agent, the exit named in its prompt."""
    run = place.stage
    again = attrs.evolve(
        _new_stage(place, current_step(place), place.now, attempt=run.attempt + 1, words=said),
        phase=Queued(),
        retried=run.retried + 1,
        resolving=run.resolving,
    )
    place = evolve(place, stage=again)
    report = Report(
        event=Event.RETRIED,
        text=f"{said}; tried again with a fresh agent (attempt {again.attempt}, retry "
        f"{again.retried} of {most})",
        stage=again.name,
    )
    return place, (*before, report)


def on_branch_head(place: Place, seen: BranchHead) -> Outcome:
    """The branch's head, the evidence for a new commit; a branch deleted by hand is back."""
    if seen.branch != place.branch:
        return place, ()
    place = evolve(place, head=seen.sha)
    if not place.branch_gone:
        return place, ()
    place = evolve(place, branch_gone=False, vanished=None)
    phase = place.stage.phase
    if (
        place.life is not Life.ACTIVE
        or not isinstance(phase, Short)
        or phase.cause is not ShortCause.BRANCH_GONE
    ):
        return place, ()
    words = f"its branch {place.branch} is back at {seen.sha}: flume retry {_name(place)} to go on"
    return _short(place, ShortCause.BRANCH_GONE, words)


def _in_flight(place: Place) -> bool:
    """The place was made and its work goes on: what vanishes from under it stops it short."""
    return place.made and place.life in {Life.MAKING, Life.ACTIVE}


def on_worktree_lost(place: Place, seen: WorktreeLost) -> Outcome:
    """PLACE-LOST-STOPS-SHORT: a worktree deleted under a place in flight stops it short, named.

    Its agent is ended (it would write into a plain folder, where git resolves to the main
    repository); no agent starts there until a retry adds it again from its branch, kept at its
    head (PLACE-REBUILT). The other way out is to drop the work and tidy.
    """
    if seen.path != place.path or place.worktree_gone or place.rebuilding or not _in_flight(place):
        return place, ()
    place = evolve(place, worktree_gone=True, life=Life.ACTIVE)
    how = f" ({seen.how})" if seen.how else ""
    head = place.head or "<its last commit>"
    restore = restore_command(place, head)
    first = f"restore its branch ({restore}), then " if place.branch_gone else ""
    words = (
        f"its worktree {place.path} is gone{how}: no agent starts there until {first}flume "
        f"retry {_name(place)} adds it again from its branch {place.branch} at {head}, its "
        f"commits kept; or flume drop {_name(place)}, then flume tidy"
    )
    return _stop_lost(place, ShortCause.WORKTREE_GONE, words)


def on_branch_vanished(place: Place, seen: BranchVanished) -> Outcome:
    """PLACE-LOST-STOPS-SHORT: a branch deleted under a place in flight stops it short, named.

    The agent's next commit would make the branch anew with none of its history; the way out
    names the commit flume last saw it at, to restore it from.
    """
    if seen.branch != place.branch or place.branch_gone:
        return place, ()
    if place.head is not None and (
        holds_work(place) or (place.worktree_gone and _in_flight(place))
    ):
        return _finished_branch_gone(place)
    if place.worktree_gone or not _in_flight(place):
        return place, ()
    place = evolve(place, branch_gone=True, life=Life.ACTIVE)
    # A made place always has a head (its worktree was seen made at one).
    head = place.head or "<its last commit>"
    restore = f"restore it with {restore_command(place, head)}"
    words = (
        f"its branch {place.branch} was deleted: {restore}, then flume retry {_name(place)}; "
        f"or flume drop {_name(place)}, then flume tidy"
    )
    return _stop_lost(place, ShortCause.BRANCH_GONE, words)


def _finished_branch_gone(place: Place) -> Outcome:
    """WF-NO-LOST-COMMIT: a finished place's branch deleted is named at once, with its restore.

    A lane that finished waits for its run to merge it: its branch holds its work. Deleted by
    a person, it is named when it happens (not only when the merge fails), with the exact
    command that restores it at the head it finished at. So is the branch of a place whose
    worktree was lost already (stopped short, it waits for a drop), and of a dropped place
    before it is tidied (its unmerged commits are what tidy would keep).
    """
    head = place.head
    assert head is not None  # noqa: S101 (asked only with a head)
    place = evolve(place, branch_gone=True, vanished=head)
    when = {Life.FINISHED: "after it finished", Life.DROPPED: "after it was dropped"}.get(
        place.life, "after its worktree"
    )
    words = (
        f"its branch {place.branch} was deleted {when}, its work with it: restore it with "
        f"{restore_command(place, head)}"
    )
    return place, (Report(event=Event.BRANCH_GONE, text=words, stage=place.stage.name),)


def _stop_lost(place: Place, cause: ShortCause, words: str) -> Outcome:
    """End the agent of a place that lost its worktree or branch; its stage stops short."""
    place, ended = _end_agent(place, "its place is gone")
    place, dropped = tell.drop_all(place, "its place is gone")
    place, short = _short(place, cause, words)
    return place, (*ended, *dropped, *short)


def on_change(place: Place, seen: ChangeSeen) -> Outcome:
    """The OpenSpec change's files: committed ones are evidence; the working tree feeds status."""
    if seen.head is None:
        # Live from the working tree: what status shows as the agent ticks.
        tasks = (seen.ticked, seen.total) if seen.total else place.tasks
        return evolve(place, tasks=tasks), ()
    # A commit read later than the working tree is no newer than it: it sets the count only
    # when no live count was seen.
    tasks = place.tasks or ((seen.ticked, seen.total) if seen.total else None)
    return evolve(place, change=seen, tasks=tasks), ()


def on_report(place: Place, seen: ReportSeen) -> Outcome:
    """A report file and when it was last written."""
    return evolve(place, reports=place.reports.set(seen.path, seen.modified_at)), ()


def on_landed(place: Place, seen: Landed) -> Outcome:
    """The base holds the branch's work; it counts while a stage that lands is working."""
    finalizing = isinstance(place.stage.phase, Finalizing) and place.submission in {
        Submission.SUBMITTED,
        Submission.BLOCKED,
    }
    if (
        place.landed_at is not None
        or place.life is not Life.ACTIVE
        or not (
            finalizing
            or (
                isinstance(current_step(place).deliverable, Landing)
                and isinstance(place.stage.phase, Working)
            )
        )
    ):
        return place, ()
    place = evolve(
        place,
        landed_at=seen.at,
        change_archived=seen.change_archived,
        submission=Submission.LANDED,
        submission_note=f"{place.launch.base} at {seen.base_sha}",
    )
    report = Report(
        event=Event.LANDED,
        text=f"{place.branch} landed on {place.launch.base} at {seen.base_sha}",
        stage=place.stage.name,
    )
    if finalizing:
        # Finalize's land is its last act: the run finishes, and tidy is wanted.
        place, finished = finish_place(place)
        return place, (report, *finished)
    return place, (report,)


def _check_session(place: Place, session: SessionId | None, command: str) -> None:
    """A command an agent runs must come from the place's live agent, when the shell knows."""
    if session is not None and (place.agent is None or place.agent.session != session):
        raise refused(
            command,
            f"session {session} is not the live agent of {_name(place)}",
            f"flume {command} is for the agent of the place's running stage",
        )


def on_needs(place: Place, words: str, session: SessionId | None = None) -> Outcome:
    """R8: the agent stops short with its words; no next stage starts."""
    _check_session(place, session, "needs")
    if place.life is not Life.ACTIVE or not accepts(place.stage.phase, NeedsSaid):
        raise refused(
            "needs",
            f"no stage of {_name(place)} is running",
            "flume needs is for the agent of a running stage",
        )
    if not words.strip():
        raise refused("needs", "the words are empty", "say what you need to go on")
    return _short(place, ShortCause.NEEDS, words)


def on_stop(place: Place) -> Outcome:
    """STOP-WAITS-RETRY: end the agent that went the wrong way; its stage waits for a retry."""
    if place.life is not Life.ACTIVE or not accepts(place.stage.phase, StopAsked):
        raise refuse(place, "stop", "a stop", said=f"no agent of {_name(place)} is running")
    place, actions = _end_agent(place, "stopped by the caller")
    place, short = _short(place, ShortCause.STOPPED, "stopped by the caller; retry to go on")
    return place, (*actions, *short)


def at_step(place: Place, named: str, verb: str) -> None:
    """STEP-NAMED: a command naming a step is for the step the place is at, or it is refused.

    ``named`` is the step's key (``review-loop@2/review``: that pass only), the key without
    its passes (``review-loop/review``, the tree's path: any pass) or its name (``review``);
    empty names none. A tell
    written for the review that reaches the fix, because the run moved on meanwhile, is refused
    with nothing journaled, rather than given to an agent it was not meant for.
    """
    run = place.stage
    if not named or named in {run.key, run.name, passless(run.key)}:
        return
    known = {block_name(block) for block in blocks_of(place.kind.body)}
    if any(part.partition("@")[0] not in known for part in named.split("/")):
        names = ", ".join(sorted(found.name for found in steps(place.kind.body)))
        raise UsageError.one(
            "step",
            f"{_name(place)}'s kind {place.kind.name} has no step {named!r}",
            f"name one of its steps ({names}), or its key as flume status shows it",
        )
    raise refused(
        "step",
        f"{_name(place)} is at step {run.key}, not {named}: the {verb} was for another step",
        f"see where it is with flume status {_name(place)}, then {verb} the step it is at",
    )


def passless(key: str) -> str:
    """A key without its loops' passes: ``review-loop@2/review`` is ``review-loop/review``."""
    return "/".join(part.split("@", 1)[0] for part in key.split("/"))


def on_retry(place: Place, words: str) -> Outcome:
    """RETRY-FRESH-AGENT: the short stage starts again with a fresh agent and the caller's words.

    PLACE-REBUILT: a place whose worktree was removed gets it again first, on its branch as it
    stands (its branch gone too, the retry is refused until it is restored).
    """
    if place.life is not Life.ACTIVE or not accepts(place.stage.phase, RetryAsked):
        what = (
            "nothing to retry"
            if place.life is not Life.ACTIVE
            else f"stage {place.stage.name} of {_name(place)} has not stopped short; nothing "
            "to retry"
        )
        raise refuse(place, "retry", "a retry", said=what)
    if place.branch_gone:
        head = place.head or "<its last commit>"
        raise refused(
            "retry",
            f"the branch {place.branch} of {_name(place)} is gone",
            f"restore it ({restore_command(place, head)}), then flume retry {_name(place)}",
        )
    if place.worktree_gone:
        place = evolve(place, worktree_gone=False, ready=False, rebuilding=True)
    if place.join is JoinStage.MERGING and leading(place) is not None:
        # WF-NO-SILENT-WAIT: a lead tried again while its children's merge was asked (lost with
        # its worktree, or failed before the stop): merged again once the new lead waits; a
        # merge is idempotent, and one seen after this is not taken for the join's.
        place = evolve(place, join=JoinStage.OPEN)
    # An end asked before and not seen (it failed: AGENT-END-FAILED-NAMED) is asked again.
    again = _ask_end_again(place, "the stage is retried")
    place = evolve(place, end_failed=False)
    place, actions = _end_agent(place, "the stage is retried")
    actions = (*again, *actions)
    place = evolve(place, spent=budget.resumed_at(place.spent, place.now))
    if place.submission is not Submission.LANDED:
        place = evolve(place, submission=Submission.NONE)
    stage = _new_stage(
        place, current_step(place), place.now, attempt=place.stage.attempt + 1, words=words
    )
    stage = attrs.evolve(stage, phase=Queued())
    place = evolve(place, stage=stage)
    with_words = " with the caller's words" if words.strip() else ""
    retried = Report(
        event=Event.RETRIED,
        text=f"stage {stage.name} retried{with_words} (attempt {stage.attempt})",
        stage=stage.name,
    )
    if not place.made or place.rebuilding:
        redo: tuple[Action, ...] = (make_worktree(place),)
    elif not place.ready:
        redo = (run_setup(place),)
    else:
        redo = ()
    return place, (*actions, retried, *redo)


def on_drop(place: Place) -> Outcome:
    """DROP-ENDS-WORK: abandon the work; its agent ends and tidy follows (R10)."""
    if place.life in {Life.DROPPED, Life.TIDIED} or place.landed_at is not None:
        state = "landed" if place.landed_at is not None else place.life.value
        raise refused("drop", f"{_name(place)} is {state}", "nothing to drop; tidy cleans it up")
    place, ended = _end_agent(place, "the work was dropped")
    place, dropped = tell.drop_all(place, "the work was dropped")
    # Tidy at once, made or not: with nothing made, it finds nothing to remove and is done.
    place = evolve(place, life=Life.DROPPED, tidy=want_tidy(place.tidy))
    actions: tuple[Action, ...] = (
        *ended,
        *dropped,
        Report(event=Event.DROPPED, text=f"{_name(place)} dropped", stage=place.stage.name),
    )
    return place, actions


def on_proceed(place: Place) -> Outcome:
    """STAGE-WAITS-WORD: the caller's word releases a stage that waits on it."""
    if place.life not in {Life.MAKING, Life.ACTIVE} or not accepts(place.stage.phase, ProceedAsked):
        raise refuse(
            place,
            "proceed",
            "your word",
            said=f"stage {place.stage.name} of {_name(place)} does not wait on your word",
        )
    # Queued, it starts when free: start_when_free sets its start (time and head) then.
    stage = attrs.evolve(place.stage, phase=Queued())
    report = Report(
        event=Event.PROCEEDED,
        text=f"the caller's word released stage {stage.name}",
        stage=stage.name,
    )
    return evolve(place, stage=stage), (report,)


def on_submit(place: Place, session: SessionId | None = None) -> Outcome:
    """The submit stage's agent hands the branch to the lander."""
    _check_session(place, session, "submit")
    step = current_step(place)
    if place.life is not Life.ACTIVE or not isinstance(step.deliverable, Landing):
        raise refused(
            "submit",
            f"stage {place.stage.name} of {_name(place)} does not land",
            "flume submit belongs to a stage whose deliverable is the landing",
        )
    if not accepts(place.stage.phase, SubmitAsked):
        raise refused(
            "submit",
            f"stage {place.stage.name} of {_name(place)} is not running",
            "retry the stage first",
        )
    if place.submission in {Submission.SUBMITTED, Submission.LANDED}:
        raise refused(
            "submit",
            f"{_name(place)} is already {place.submission.value}",
            "wait for the lander's answer in flume status",
        )
    place = evolve(
        place,
        submission=Submission.SUBMITTED,
        submission_note="",
        land_retry_at=None,
        land_blocked=0,
    )
    actions = (
        Report(
            event=Event.SUBMITTED,
            text=f"{place.branch} handed to the lander for {place.launch.base}",
            stage=place.stage.name,
        ),
        land(place),
    )
    return place, actions


def land(place: Place) -> Land:
    """The landing of the place's own commits: those after the base's revision at launch."""
    return Land(
        path=place.path,
        branch=place.branch,
        base=place.launch.base,
        start=place.start,
        reviewed=place.reviewed,
    )


def on_checks_failed(place: Place, seen: ChecksFailed, now: Instant) -> Outcome:
    """The lander refused the submission; its output goes back to the agent to mend."""
    if place.submission is not Submission.SUBMITTED:
        return place, ()
    place = evolve(
        place,
        submission=Submission.CHECKS_FAILED,
        submission_note=seen.reason,
    )
    report = Report(event=Event.CHECKS_FAILED, text=seen.reason, stage=place.stage.name)
    if isinstance(place.stage.phase, Finalizing):
        # Finalize's land, with no agent to mend it: a person's, named; resumed, it lands again.
        paused = Paused(
            cause=PauseCause.FINALIZE_FAILED,
            words=f"landing failed: {seen.reason}\n{seen.output}".rstrip(),
            finish=True,
        )
        place = evolve(place, finalize_failures=place.finalize_failures + 1)
        place, pausing = pause_stage(place, paused)
        return place, (report, *pausing)
    # Only a tell the rules would take goes back: a printed agent's terminal is not flume's to
    # type into, and one asking a person must not have its question answered (R6).
    if (
        not is_live(place)
        or place.agent is None
        or place.agent.activity is Activity.ASKING
        or place.launch.agent.panes is Panes.PRINT
    ):
        return place, (report,)
    words = (
        f"flume submit: the submission's checks failed ({seen.reason}).\n\n{seen.output}\n\n"
        "Mend the cause, commit, and run `flume submit` again."
    )
    place, held = tell.on_told(place, words.strip(), now)
    return place, (report, *held)


def on_landing_blocked(place: Place, seen: LandingBlocked) -> Outcome:
    """LAND-BASE-BLOCKED-WAITS: the base repository's state, not the branch, kept it from landing.

    The submission waits, named in status with git's words and the way out, which are a
    person's to take: nothing goes to the agent (its checks did not fail, and a lock may be a
    person's). The landing is tried again after a wait that doubles with each block in a row.
    """
    if place.submission is not Submission.SUBMITTED:
        return place, ()
    blocked = place.land_blocked + 1
    wait = min(LAND_RETRY_MOST_SECONDS, LAND_RETRY_SECONDS * 2 ** min(blocked - 1, 16))
    note = "\n".join(part for part in (seen.reason, seen.way_out, seen.output.strip()) if part)
    said_before = place.land_blocked > 0 and note == place.submission_note
    place = evolve(
        place,
        submission=Submission.BLOCKED,
        submission_note=note,
        land_blocked=blocked,
        land_retry_at=Instant(seen.at + wait),
    )
    if said_before:
        return place, ()
    report = Report(event=Event.LANDING_BLOCKED, text=note, stage=place.stage.name)
    return place, (report,)


def on_landing_held(place: Place, seen: LandingHeld) -> Outcome:
    """LAND-HELD-FOR-A-PERSON: a fenced run's change to what runs outside waits on a person.

    "Nothing the agent wrote runs outside": ``.flume.toml`` (its setup and checks run on the
    host), a kind file, hooks, an agent's project settings, written in a sandbox, do not reach
    the base with no person in between. The run pauses (``approval``), naming the files; a
    person reads them and approves the head held (``flume approve``), and it lands as it was
    read: a head moved since is held again.
    """
    if place.submission is not Submission.SUBMITTED:
        return place, ()
    files = ", ".join(seen.files)
    finalizing = isinstance(place.stage.phase, Finalizing)
    place = evolve(
        place,
        submission=Submission.HELD,
        submission_note=f"held for a person: it changes {files}",
    )
    paused = Paused(
        cause=PauseCause.APPROVAL,
        words=(
            f"its change touches what runs outside the sandbox ({files}): read it "
            f"(git diff {place.launch.base}...{seen.head}) before it lands"
        ),
        landing=seen.head,
        again=not finalizing,
        finish=finalizing,
    )
    held = Report(
        event=Event.LANDING_HELD,
        text=f"{place.branch} held before landing: it changes what runs outside the sandbox, "
        f"{files}",
        stage=place.stage.name,
    )
    place, pausing = pause_stage(place, paused)
    return place, (held, *pausing)


def land_again(settings: Settings, place: Place, now: Instant) -> Outcome:
    """LAND-BASE-BLOCKED-WAITS: a landing the base's state blocked is tried again in its time."""
    del settings
    retry_at = place.land_retry_at
    if (
        place.life is not Life.ACTIVE
        or place.submission is not Submission.BLOCKED
        or not isinstance(place.stage.phase, Working | Finalizing)
        or retry_at is None
        or now < retry_at
    ):
        return place, ()
    place = evolve(place, submission=Submission.SUBMITTED, land_retry_at=None)
    return place, (land(place),)


def _stopped_by_failure(place: Place, seen: ActionFailed) -> Outcome | None:
    """The stage an action's failure stops short, if any: what it waited on failed.

    AGENT-END-FAILED-NAMED: an agent's end that failed, with a stage queued behind it, stops that
    stage short, naming the agent and the way out (R4 keeps the next agent from starting).
    """
    pending = {
        ActionName.MAKE_WORKTREE: not place.made or place.rebuilding,
        ActionName.RUN_SETUP: place.made and not place.ready,
        ActionName.START_AGENT: isinstance(place.stage.phase, Starting),
        # A verdict not moved aside could pass the new attempt: it does not start.
        ActionName.ARCHIVE_VERDICT: isinstance(place.stage.phase, Starting),
        # A gate that cannot be read cannot be judged: the stage waits, named, for a retry.
        ActionName.JUDGE_GATE: isinstance(place.stage.phase, Judging),
    }
    gone = place.worktree_gone or place.branch_gone
    if pending.get(seen.action, False) and place.life in {Life.MAKING, Life.ACTIVE} and not gone:
        place = evolve(place, life=Life.ACTIVE)
        words = f"{seen.action.value} failed: {seen.output}".rstrip()
        place, ended = _end_agent(place, words)
        place, short = _short(place, ShortCause.FAILED, words)
        return place, (*ended, *short)
    if seen.action is ActionName.END_AGENT and _held_by_an_agent(place):
        # WF-NO-SILENT-WAIT: the queued stage would wait for ever on an agent that does not
        # end, saying nothing; the retry asks its end again.
        why = f": {seen.output}" if seen.output.strip() else ""
        words = (
            f"flume could not end {_ending_words(place)} before stage {place.stage.name} "
            f"starts{why}; close it, then flume retry {_name(place)}"
        )
        return _short(evolve(place, end_failed=False), ShortCause.FAILED, words)
    if seen.action is ActionName.END_AGENT and _to_end(place):
        # No stage waits on it yet: the end is asked again once one does (start_when_free).
        return evolve(place, end_failed=True), ()
    return None


def on_action_failed(place: Place, seen: ActionFailed) -> Outcome:
    """An action failed: the core decides what it means, as for anything else seen."""
    report = Report(
        event=Event.FAILED,
        text=f"{seen.action.value} failed (status {seen.status}): {seen.output}".rstrip(),
        stage=place.stage.name,
    )
    stopped = _stopped_by_failure(place, seen)
    if stopped is not None:
        place, actions = stopped
        return place, (report, *actions)
    gone = place.worktree_gone or place.branch_gone
    merging = (isinstance(place.stage.phase, Merging) and not place.stage.resolving) or (
        leading(place) is not None and place.join is JoinStage.MERGING
    )
    if seen.action is ActionName.MERGE_LANES and place.life is Life.ACTIVE and merging and not gone:
        # (A place whose worktree or branch went stands stopped short, naming its way out: a
        # merge that failed for it pauses nothing over that.)
        # WF-NO-SILENT-WAIT: a merge git would not even start (a file in the way, the worktree
        # gone) waits on a person, named as what it is, never as a conflict; resumed once
        # mended, flume merges again.
        paused = Paused(
            cause=PauseCause.MERGE_FAILED,
            words=f"merging the lanes into {place.branch} failed: {seen.output}".rstrip(),
            again=True,
        )
        place, pausing = pause_stage(place, paused)
        return place, (report, *pausing)
    if (
        seen.action in {ActionName.PUSH, ActionName.OPEN_PR}
        and place.life is Life.ACTIVE
        and isinstance(place.stage.phase, Finalizing)
    ):
        # WF-FINALIZE-ONCE: a push or PR command that failed waits on a person, with its words;
        # resumed, only what is not done is asked for again.
        what = "pushing" if seen.action is ActionName.PUSH else "the pull request command"
        paused = Paused(
            cause=PauseCause.FINALIZE_FAILED,
            words=f"{what} failed: {seen.output}".rstrip(),
            finish=True,
        )
        place = evolve(place, finalize_failures=place.finalize_failures + 1)
        place, pausing = pause_stage(place, paused)
        return place, (report, *pausing)
    if seen.action is ActionName.LAND and place.submission is Submission.SUBMITTED:
        checks = ChecksFailed(at=seen.at, reason="the lander failed", output=seen.output)
        return on_checks_failed(place, checks, seen.at)
    if seen.action in {
        ActionName.REMOVE_WORKTREE,
        ActionName.DELETE_BRANCH,
        ActionName.GATHER_TIDY_FACTS,
    }:
        # Tidy stops here, whatever it was about to look at next: a failure that would come
        # again must not make it loop. ``flume tidy`` asks again.
        return evolve(place, tidy=TidyNotWanted()), (report,)
    return place, (report,)


def _to_end(place: Place) -> bool:
    """An agent asked to end is not yet seen gone: the place's own, or a stray."""
    return (place.agent is not None and place.agent.ending) or bool(place.strays)


def _held_by_an_agent(place: Place) -> bool:
    """A queued stage of an active place waits for an agent asked to end, or a stray's end."""
    return place.life is Life.ACTIVE and isinstance(place.stage.phase, Queued) and _to_end(place)


def _ending_words(place: Place) -> str:
    """The agents a queued stage waits on, in words: the place's agent (its pane), strays."""
    agent = place.agent
    named = [] if agent is None or not agent.ending else [f"the agent in pane {agent.pane}"]
    named += [f"the stray agent {session}" for session in sorted(place.strays)]
    return " and ".join(named)


def _ask_end_again(place: Place, reason: str) -> tuple[Action, ...]:
    """Every end asked for and not yet seen, asked again (after an end that failed)."""
    agent = place.agent
    again: list[Action] = []
    if agent is not None and agent.ending:
        again.append(EndAgent(session=agent.session, reason=reason))
    again.extend(end_stray(session) for session in sorted(place.strays))
    return tuple(again)


def _end_agent(place: Place, reason: str) -> Outcome:
    """Ask the live agent to end; no new agent starts until it is observed gone (R4)."""
    agent = place.agent
    if agent is None or agent.ending:
        return place, ()
    place = evolve(place, agent=attrs.evolve(agent, ending=True))
    return place, (EndAgent(session=agent.session, reason=reason),)


def check_deliverable(settings: Settings, place: Place, now: Instant) -> Outcome:
    """STAGE-DELIVERABLE-SINCE-START: the stage's deliverable, made since it started, exists.

    STAGE-AFTER-DELIVERY: only a stage whose prompt the transcript holds can reach its
    deliverable; whatever appears before that is not this stage's agent's work.
    """
    del settings
    if place.life is not Life.ACTIVE or not isinstance(place.stage.phase, Working):
        return place, ()
    if not has_deliverable(place):
        return place, ()
    stage = attrs.evolve(place.stage, phase=Delivered(at=now))
    report = Report(
        event=Event.DELIVERABLE,
        text=f"the deliverable of stage {stage.name} exists; waiting until the agent is quiet",
        stage=stage.name,
    )
    return evolve(place, stage=stage), (report,)


def end_when_quiet(settings: Settings, place: Place, now: Instant) -> Outcome:
    """STAGE-ENDS-WHEN-QUIET: with the deliverable made, the stage ends once the agent is quiet.

    "A stage never ends because its pane went quiet": only a ``Delivered`` stage ends here.
    """
    del settings  # the place holds its own: is_quiet reads them there
    if (
        place.life is not Life.ACTIVE
        or not isinstance(place.stage.phase, Delivered)
        or not is_quiet(place)
    ):
        return place, ()
    return finish_stage(place, now, done=False)


def finish_stage(place: Place, now: Instant, *, done: bool) -> Outcome:
    """The current stage passed: its agent ends, and the run goes where the tree says next.

    ``done``: its verdict said done (a loop whose ``until`` step it is ends at once,
    WF-LOOP-EXITS-ON-DONE). The next stage is queued (or waits on the caller's word); a loop
    out of passes is reported (WF-LOOP-CAP) and, ``on_max = "pause"``, pauses the run before
    the next stage; past the last stage, the place is finished.
    """
    ended_key = place.stage.key
    ended_name = place.stage.name
    place, actions = _end_agent(place, f"stage {ended_key} is done")
    if place.stage.resolving:
        # The merge step's agent committed: the lanes' merge is asked again (WF-MERGE-ORDER).
        run = attrs.evolve(place.stage, resolving=False, phase=Merging(since=now))
        place = evolve(place, stage=run)
        return place, (*actions, merge_action(place))
    place = evolve(place, completed=place.completed.append(StageName(ended_key)))
    ended = Report(event=Event.STAGE_ENDED, text=f"stage {ended_key} ended", stage=ended_name)
    position = place.stage.position or tree.Position(step=ended_name)
    went = tree.advance(place.kind.body, position, done=done)
    maxed: list[Action] = []
    for each in went.maxed:
        place = evolve(place, maxed=place.maxed.append(f"{each.loop}@{each.passes}"))
        then = "the run pauses" if each.pause else "the run goes on"
        maxed.append(
            Report(
                event=Event.LOOP_MAX,
                text=f"loop {each.loop} ran its {each.passes} passes without done; {then}",
                stage=ended_name,
            )
        )
    pause = went.pauses
    if pause is not None and went.position is not None:
        following = _block_step(place.kind, went.position.step)
        if isinstance(_new_stage(place, following, now).phase, AwaitingWord):
            # The stage after the loop waits on the caller's word already: that is the pause.
            pause = None
    if went.position is None and pause is None:
        place, finished = finish_place(place)
        return place, (*actions, ended, *maxed, *finished)
    if went.position is None:
        # Paused at the loop's max with nothing after it: resumed, the run finishes.
        stage = attrs.evolve(place.stage, position=position)
    else:
        following = _block_step(place.kind, went.position.step)
        stage = _new_stage(place, following, now, position=went.position)
    place = evolve(place, stage=stage)
    if pause is not None:
        paused = Paused(
            cause=PauseCause.LOOP_MAX,
            words=f"loop {pause.loop} ran its {pause.passes} passes without done",
            finish=went.position is None,
        )
        place, pausing = pause_stage(place, paused)
        return place, (*actions, ended, *maxed, *pausing)
    if isinstance(stage.phase, AwaitingWord):
        waits = Report(
            event=Event.STAGE_WAITS,
            text=f"stage {stage.key} waits on the caller's word (flume proceed {_name(place)})",
            stage=stage.name,
        )
        return place, (*actions, ended, *maxed, waits)
    return place, (*actions, ended, *maxed)


def finish_place(place: Place) -> Outcome:
    """The last stage passed: the place is finished (landed: tidy is wanted).

    A kind that finalizes finishes only once each finalize act is observed done: until then
    it stands ``Finalizing`` and asks for the next (:func:`flume.core.place.finalize_action`).
    """
    act = finalize_action(place)
    if act is not None:
        place = evolve(place, stage=attrs.evolve(place.stage, phase=Finalizing(since=place.now)))
        if isinstance(act, Land):
            # ``land = true``: submitted as a submit stage's work is, with no agent to mend it.
            place = evolve(place, submission=Submission.SUBMITTED, submission_note="")
        return place, (act,)
    place = evolve(place, life=Life.FINISHED)
    finished = Report(event=Event.FINISHED, text=f"{_name(place)} finished", stage=place.stage.name)
    if place.landed_at is None:
        return place, (finished,)
    return evolve(place, tidy=want_tidy(place.tidy)), (finished,)


def pause_stage(place: Place, paused: Paused) -> Outcome:
    """WF-NO-SILENT-WAIT: the stage pauses, named, with the command that resolves it.

    Its agent, if one lives, is ended (WF-BUDGET-PAUSES: no agent works on past a pause); the
    pause's time is not active time.
    """
    place, ended = _end_agent(place, f"the run pauses: {paused.cause.value}")
    stage = attrs.evolve(place.stage, phase=paused)
    place = evolve(place, stage=stage, spent=budget.paused_from(place.spent, place.now))
    report = Report(
        event=Event.PAUSED,
        text=f"{_name(place)} paused at {stage.key} ({paused.cause.value}): {paused.words}; "
        f"{resolve_command(place, paused)}",
        stage=stage.name,
    )
    return place, (*ended, report)


def _startable(place: Place) -> bool:
    """The stage is queued for an agent: a step's, or a parallel's merge step, to resolve.

    A merge step's agent is asked by ``flume resolve --agent`` (merging), or again by a resume
    once one did not merge (queued).
    """
    if place.stage.resolving:
        return isinstance(place.stage.phase, Merging | Queued)
    return isinstance(place.stage.phase, Queued) and place.stage.name not in parallels(
        place.kind.body
    )


def start_when_free(settings: Settings, place: Place, now: Instant) -> Outcome:
    """R4: a queued stage starts a fresh agent once the place is ready and no agent is live.

    Nor a stray one: an agent started for no stage the place runs now is ended first.

    START-ONLY-IN-PLACE: never in a place whose worktree or branch is gone (the shell checks
    again, just before the start, that the folder is the place's worktree on its branch).
    """
    del settings
    if place.end_failed and not _to_end(place):
        place = evolve(place, end_failed=False)  # what would not end is gone since
    if place.end_failed and _held_by_an_agent(place):
        # AGENT-END-FAILED-NAMED: an end that failed while no stage waited on it is asked again
        # now that one does; failing again, it stops this stage short, named.
        reason = f"its end failed; stage {place.stage.name} waits on it"
        return evolve(place, end_failed=False), _ask_end_again(place, reason)
    if (
        place.life is not Life.ACTIVE
        or place.worktree_gone
        or place.branch_gone
        or not place.ready
        or place.agent is not None
        or place.strays
        or not _startable(place)
    ):
        return place, ()
    spent = budget.spent_budget(place.budgets, place.spent, 0, now)
    if spent is not None:
        # WF-BUDGET-PAUSES: over a budget, no agent is started; the stage waits, queued.
        paused = Paused(cause=PauseCause.BUDGET, words=f"budget {spent} spent", spent=spent)
        return pause_stage(place, paused)
    # "Made since the stage started": the stage starts with its agent, once the previous agent
    # is gone (R4), so nothing its predecessor did can pass for this stage's deliverable.
    stage = attrs.evolve(
        place.stage, phase=Starting(since=now), started_at=now, start_head=place.head, turns=0
    )
    step = current_step(place)
    start = StartAgent(
        path=place.path,
        stage=stage.name,
        attempt=stage.attempt,
        agent=agent_for(place, step),
        sandbox=step.sandbox,
    )
    report = Report(
        event=Event.STAGE_STARTED,
        text=f"stage {stage.key} starts (attempt {stage.attempt})",
        stage=stage.name,
    )
    return evolve(place, stage=stage), (report, *archive_before(place, step), start)


def archive_before(place: Place, step: Step) -> tuple[Action, ...]:
    """WF-VERDICT-SINCE-DELIVERY: a verdict step's old verdict, moved aside before its start.

    The verdict an earlier attempt wrote is archived before this attempt's agent starts (and
    again before a restart starts it: moving nothing is safe), so only one written after its
    prompt can pass its gate.
    """
    if not isinstance(step.deliverable, Verdict) or not place.board:
        return ()
    earlier = place.verdicts.get(step.name, "earlier")
    return (ArchiveVerdict(board=place.board, stage=step.name, archive_as=earlier),)


def agent_for(place: Place, step: Step) -> AgentSettings:
    """The agent a step runs: the launch's, or the one the step names (its model, if named)."""
    if step.agent is None:
        return place.launch.agent
    model = step.agent.model if step.agent.model is not None else place.launch.agent.model
    if step.agent.agent is place.launch.agent.agent:
        return attrs.evolve(place.launch.agent, model=model)
    # Another agent than the launch's: its own flags would not be this one's.
    return attrs.evolve(
        place.launch.agent, agent=step.agent.agent, model=step.agent.model, flags=pvector()
    )
