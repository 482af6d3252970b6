"""R11 status: what ``flume status --json`` says of a place, as a pure projection of its state.

Theory of operation: nothing here decides; it reads the place. "flume keeps only the live state
of the places it runs": the view holds no history beyond the stages completed, and where each
attempt's chat is kept (TRANSCRIPT-KEPT: the seed wants every attempt's chat replayable).

Rule ids: R11.
"""

from __future__ import annotations

import enum
from typing import assert_never

import attrs
from pyrsistent import pvector
from pyrsistent.typing import PVector

from flume.core.applies import answer_command, question_words, unlanded_words
from flume.core.choices import AgentName
from flume.core.ids import (
    BranchName,
    Instant,
    KindName,
    PlaceName,
    SessionId,
    Sha,
    StageName,
    WorkName,
)
from flume.core.kinds import (
    Block,
    Budgets,
    Loop,
    Orchestrate,
    Parallel,
    Sequence,
    Step,
    describe_deliverable,
    is_workflow,
    lane_names,
)
from flume.core.launch import followed_by
from flume.core.observations import Activity, AnswerGiven
from flume.core.place import (
    AwaitingInput,
    AwaitingWord,
    Delivered,
    Delivering,
    Fanned,
    Finalizing,
    Judging,
    LaneState,
    Life,
    Merging,
    Paused,
    Place,
    Queued,
    Short,
    StagePhase,
    Starting,
    Submission,
    Working,
    accepts,
    current_step,
    has_deliverable,
    lanes_in_order,
    open_question,
    resolve_command,
    restore_command,
)
from flume.core.transcripts import current_transcript, found
from flume.core.workflow.budget import budget_words, caps
from flume.core.workflow.lanes import children


class PhaseWord(enum.StrEnum):
    """The stage's phase in one word; once the place is no longer active, its life (R11).

    A ``str``: it equals its word (``status.phase == "working"``), as when it was one.
    """

    WAITS_WORD = "waits-word"  #: the stage waits on the caller's word
    QUEUED = "queued"  #: the stage starts once the place is ready and no agent is live
    STARTING = "starting"  #: the agent is being started
    DELIVERING = "delivering"  #: the agent started; its prompt is not yet found delivered
    WORKING = "working"  #: the agent works toward the deliverable
    DELIVERED = "delivered"  #: the deliverable exists; the stage ends once the agent is quiet
    SHORT = "short"  #: the stage stopped short
    JUDGING = "judging"  #: the agent's turn ended; its step's gate is being read
    PAUSED = "paused"  #: the run waits on a person (approve, resume, raise, resolve)
    LANES = "lanes"  #: a parallel block's lanes run, each a place of its own
    MERGING = "merging"  #: the lanes' branches are being merged into the run's
    FINALIZING = "finalizing"  #: the body is done: the branch is pushed, its PR opened
    FINISHED = "finished"  #: the place's last stage is done
    DROPPED = "dropped"  #: the caller abandoned the work
    TIDIED = "tidied"  #: the place's worktree is gone


#: The word for a place no longer active: its life.
_LIFE_WORDS = {
    Life.FINISHED: PhaseWord.FINISHED,
    Life.DROPPED: PhaseWord.DROPPED,
    Life.TIDIED: PhaseWord.TIDIED,
}


@attrs.frozen(kw_only=True)
class BlockView:
    """One named block of a workflow's tree, as status shows it, in the order it runs.

    ``path``: its name under the loops and parallels around it (``review-loop/review``).
    ``state``: ``not run``, ``done``, or, for the block the run is in, the stage's phase word
    (a loop running: ``running``); a loop that ran out of passes: ``max``. ``runs``: a step's
    passed attempts; ``passes``: the passes a loop began, of ``max``. ``gate``: a step's gate.
    """

    path: str
    block: str
    state: str
    runs: int | None = None
    passes: int | None = None
    max: int | None = None
    gate: str | None = None
    #: A lane's place (``<kind>--<name>+<lane>``), where its branch's block runs.
    lane: str | None = None
    #: A spawned child's goal (``flume spawn --goal``).
    goal: str | None = None
    #: A child's last news, as its lead was told it.
    news: str | None = None


@attrs.frozen(kw_only=True)
class TranscriptView:
    """One attempt whose agent's transcript flume found, as status shows it (TRANSCRIPT-KEPT).

    ``key``: the attempt's place in the tree (``review-loop@2/review``; a step's name if no
    loop); ``agent``: the program it ran; ``path``: its transcript, the agent's own file.
    """

    key: str
    stage: StageName
    attempt: int
    agent: AgentName
    session: SessionId
    path: str


@attrs.frozen(kw_only=True)
class ChildAsking:
    """A child's question its lead has not answered, as its run shows it, and since when."""

    lane: str
    place: PlaceName
    #: The question, as its news said it (with the command that answers it).
    question: str
    since: Instant


@attrs.frozen(kw_only=True)
class BudgetCap:
    """A budget the run sets, by the name ``flume raise`` gives it: what was spent, and its cap."""

    name: str
    spent: int
    cap: int


@attrs.frozen(kw_only=True)
class QuestionView:
    """A question the place waits on a person's answer to: its id, its words, its options."""

    id: str
    text: str
    options: PVector[str] = attrs.field(factory=pvector)


@attrs.frozen(kw_only=True)
class PlaceStatus:
    """One place as status shows it (R11)."""

    place: PlaceName
    name: WorkName
    repository: str
    path: str
    kind: KindName
    branch: BranchName
    base: BranchName
    mark: str | None
    life: Life
    stage: StageName
    attempt: int
    #: How many times the current attempt's prompt was sent (at most two).
    sends: int
    #: The stage's phase in one word; once the place is no longer active, its life.
    phase: PhaseWord
    agent: Activity
    deliverable: str
    deliverable_exists: bool
    submission: Submission
    submission_note: str
    #: Tasks ticked and their total, for a change; None otherwise.
    tasks: tuple[int, int] | None
    #: For a committed OpenSpec change: ``valid`` or ``invalid`` as its CLI said, or ``skipped``
    #: when no CLI could validate it; None before a committed change is seen.
    validation: str | None
    #: Why the stage stopped short, and the words, when it did.
    short_cause: str | None
    needs: str | None
    waits_on_caller: bool
    completed: PVector[StageName]
    tells_held: int
    updated_at: Instant
    #: The state folder of the host whose supervisor carries the place, when it is not the
    #: host asking (HOST-OWNS-PLACE); None for this host's places.
    host: str | None = None
    #: What keeps the host's supervisor from carrying the place on, and the way out (a journal
    #: it cannot write, or cannot read whole), as the supervisor said; None when nothing does.
    fault: str | None = None
    #: A workflow's fields, absent for a kind of Steps in a Sequence with no budgets: the
    #: attempt's key in the tree (``review-loop@2/review``), when it is not the stage's name.
    key: str | None = None
    #: Why the run is paused, in words, and the command that lets it go on.
    paused: str | None = None
    #: An orchestrate child's open question, which its lead answers (not a pause of the run).
    asking: str | None = None
    paused_words: str | None = None
    resolve: str | None = None
    #: The budgets set, what the run spent of them, in words; the loops that ran out of passes.
    budgets: str | None = None
    turns_spent: int | None = None
    tokens_spent: int | None = None
    maxed: PVector[str] = attrs.field(factory=pvector)
    #: The kind's tree, each named block's state (a workflow's place only).
    tree: PVector[BlockView] = attrs.field(factory=pvector)
    #: The last progress a step's agent reported (``flume progress``).
    progress: str | None = None
    #: Finalize: the head the remote holds the run's branch at, and the pull request's address.
    pushed: Sha | None = None
    pr_url: str | None = None
    #: The current attempt's transcript, once found; every attempt's whose was found, in the
    #: order their agents started (absent until one is: an old journal's status is unchanged).
    transcript: str | None = None
    transcripts: PVector[TranscriptView] = attrs.field(factory=pvector)
    #: The gates a person passed (``flume pass``), each ``key#attempt: their words``.
    passes: PVector[str] = attrs.field(factory=pvector)
    #: What tidy kept of the place, each with why (R10: "flume names it").
    kept: PVector[str] = attrs.field(factory=pvector)
    #: A finished run whose work is on its branch, not landed: where, and how to land it.
    unlanded: str | None = None
    #: The children whose questions its lead has not answered, each since when
    #: (WF-CHILD-ASKING-SURFACES).
    children_asking: PVector[ChildAsking] = attrs.field(factory=pvector)
    #: Each budget the run sets, spent of its cap, by the name ``flume raise`` raises it by.
    caps: PVector[BudgetCap] = attrs.field(factory=pvector)
    #: The question the place waits on a person's answer to (``flume answer``), if any.
    question: QuestionView | None = None


def phase_word(phase: StagePhase) -> PhaseWord:  # noqa: C901, PLR0911, PLR0912 (one arm per phase)
    """The phase in one word."""
    match phase:
        case AwaitingWord():
            return PhaseWord.WAITS_WORD
        case Queued():
            return PhaseWord.QUEUED
        case Starting():
            return PhaseWord.STARTING
        case AwaitingInput() | Delivering():
            return PhaseWord.DELIVERING
        case Working():
            return PhaseWord.WORKING
        case Delivered():
            return PhaseWord.DELIVERED
        case Short():
            return PhaseWord.SHORT
        case Judging():
            return PhaseWord.JUDGING
        case Paused():
            return PhaseWord.PAUSED
        case Fanned():
            return PhaseWord.LANES
        case Merging():
            return PhaseWord.MERGING
        case Finalizing():
            return PhaseWord.FINALIZING
        case _:
            assert_never(phase)


def status(place: Place, *, agent_known: bool = True, here: str | None = None) -> PlaceStatus:
    """R11: the place's status; ``agent_known`` is False when the supervisor is not running.

    ``here`` is the asking host's id (None: a host that never launched): a place another host
    launched names that host's state folder.
    """
    agent = place.agent
    owner = place.launch.host
    if agent is None or place.life in {Life.DROPPED, Life.TIDIED}:
        activity = Activity.STOPPED
    elif not agent_known:
        activity = Activity.UNKNOWN
    else:
        activity = agent.activity
    phase = place.stage.phase
    step = current_step(place)
    finished = place.life in {Life.FINISHED, Life.TIDIED} and place.stage.key in place.completed
    view = PlaceStatus(
        place=place.launch.place,
        name=place.launch.name,
        repository=place.launch.repository,
        path=place.path,
        kind=place.kind.name,
        branch=place.branch,
        base=place.launch.base,
        mark=place.launch.mark,
        life=place.life,
        stage=place.stage.name,
        attempt=place.stage.attempt,
        sends=place.stage.sends,
        phase=phase_word(phase)
        if place.life in {Life.MAKING, Life.ACTIVE}
        else _LIFE_WORDS[place.life],
        agent=activity,
        deliverable=describe_deliverable(step.deliverable),
        # STAGE-DELIVERABLE-SINCE-START: a stage not yet started (waiting on the word, or
        # queued behind the agent being ended) has made nothing, whatever its head shows.
        deliverable_exists=finished
        or (not isinstance(phase, AwaitingWord | Queued) and has_deliverable(place)),
        submission=_submission(place),
        submission_note=place.submission_note,
        tasks=place.tasks,
        validation=_validation(place),
        short_cause=phase.cause.value if isinstance(phase, Short) else None,
        needs=phase.words if isinstance(phase, Short) else None,
        waits_on_caller=isinstance(phase, AwaitingWord),
        completed=place.completed,
        tells_held=len(place.held) + (1 if place.sending is not None else 0),
        updated_at=place.now,
        host=owner.state if owner is not None and not followed_by(place.launch, here) else None,
    )
    return _with_persons(_with_transcripts(_with_workflow(view, place), place), place)


def _with_persons(view: PlaceStatus, place: Place) -> PlaceStatus:
    """What a person must see on the place's row: passes, what tidy kept, work not landed.

    And a run's children asking their lead (WF-CHILD-ASKING-SURFACES). Absent where none: an
    old journal's status is unchanged.
    """
    if place.passes:
        view = attrs.evolve(
            view,
            passes=pvector(f"{each.key}#{each.attempt}: {each.why}" for each in place.passes),
        )
    if place.kept:
        view = attrs.evolve(view, kept=place.kept)
    unlanded = unlanded_words(place)
    if unlanded is not None:
        view = attrs.evolve(view, unlanded=unlanded)
    asking = [
        ChildAsking(lane=run.lane, place=run.place, question=run.asking, since=run.asking_since)
        for run in lanes_in_order(place)
        if run.asking and run.asking_since is not None and run.state is LaneState.RUNNING
    ]
    if asking:
        view = attrs.evolve(view, children_asking=pvector(asking))
    if place.budgets != Budgets():
        found = caps(place.budgets, place.spent, place.stage.turns, place.now)
        view = attrs.evolve(
            view,
            caps=pvector(BudgetCap(name=name, spent=used, cap=cap) for name, used, cap in found),
        )
    asked = open_question(place)
    if asked is not None and asked.answer is None and not place.launch.led:
        view = attrs.evolve(
            view, question=QuestionView(id=asked.id, text=asked.text, options=asked.options)
        )
    return view


def _child_paused(view: PlaceStatus, place: Place) -> PlaceStatus:
    """WF-CHILD-PAUSE-SURFACES: the first child paused or stopped short shows on its run."""
    for run in children(place):
        if run.paused and run.state is LaneState.RUNNING:
            return attrs.evolve(
                view,
                paused="child-paused",
                paused_words=f"child {run.lane} ({run.place}) {run.paused}",
                resolve=f"see flume status {run.place}, and resolve it there",
            )
    return view


def _with_transcripts(view: PlaceStatus, place: Place) -> PlaceStatus:
    """TRANSCRIPT-KEPT: the transcripts found, the current attempt's and every attempt's."""
    kept = found(place)
    if not kept:
        return view
    return attrs.evolve(
        view,
        transcript=current_transcript(place),
        transcripts=pvector(
            TranscriptView(
                key=attempt.key,
                stage=attempt.stage,
                attempt=attempt.attempt,
                agent=attempt.agent,
                session=attempt.session,
                path=attempt.transcript or "",
            )
            for attempt in kept
        ),
    )


def _waits_on(view: PlaceStatus, place: Place) -> PlaceStatus:
    """What the place waits on a person for, named with the command that lets it go on.

    WF-PAUSE-HAS-A-WAY-OUT: a pause; a finished place's branch a person deleted (with the
    command that restores it, WF-NO-LOST-COMMIT); a question the caller answers (its asker
    running, an answer taken); a child's, by the lead; a child paused, on its run.
    """
    phase = place.stage.phase
    asked = open_question(place)
    if asked is not None and (asked.answer is not None or not accepts(phase, AnswerGiven)):
        # Stopped short (or paused) since: an answer would be refused, the stage's own state
        # is what waits on the caller.
        asked = None
    if place.vanished is not None and place.life is Life.FINISHED:
        return attrs.evolve(
            view,
            paused="branch-gone",
            paused_words=f"its branch {place.branch} was deleted after it finished",
            resolve=restore_command(place, place.vanished),
        )
    if isinstance(phase, Paused):
        return attrs.evolve(
            view,
            paused=phase.cause.value,
            paused_words=phase.words,
            resolve=resolve_command(place, phase),
        )
    if asked is not None and place.launch.led and not asked.overdue:
        # WF-ASK-ONE-ANSWERER: the lead of its run answers it.
        return attrs.evolve(view, asking=question_words(asked))
    if asked is not None:
        # WF-ASK-PAUSES-WITHOUT-LEAD: the run waits on the caller's answer, its asker live.
        return attrs.evolve(
            view,
            paused="question",
            paused_words=question_words(asked),
            resolve=answer_command(place, asked),
        )
    return _child_paused(view, place)


def _with_workflow(view: PlaceStatus, place: Place) -> PlaceStatus:
    """The fields only a workflow's place carries: none for a kind of Steps with no budgets."""
    if place.stage.key != place.stage.name:
        view = attrs.evolve(view, key=place.stage.key)
    view = _waits_on(view, place)
    if place.progress:
        view = attrs.evolve(view, progress=place.progress)
    if place.budgets != Budgets():
        view = attrs.evolve(
            view,
            budgets=budget_words(place.budgets, place.spent, place.now),
            turns_spent=place.spent.turns,
            tokens_spent=place.spent.tokens,
        )
    if place.maxed:
        view = attrs.evolve(view, maxed=place.maxed)
    if is_workflow(place.kind):
        view = attrs.evolve(view, tree=pvector(tree_of(place)))
    if place.pushed is not None:
        view = attrs.evolve(view, pushed=place.pushed)
    if place.pr_opened:
        view = attrs.evolve(view, pr_url=place.pr_url)
    return view


def _segments(key: str) -> list[tuple[str, int | None]]:
    """A key's segments: each loop with its pass, then the step (``review-loop@2/review``)."""
    found: list[tuple[str, int | None]] = []
    for segment in key.split("/"):
        name, _, number = segment.partition("@")
        found.append((name, int(number) if number else None))
    return found


#: What the tree is drawn from: the segments of each completed stage's key, of the current
#: stage's (none once the place is not active), and the loops that ran out of passes.
_Seen = tuple[list[list[tuple[str, int | None]]], list[tuple[str, int | None]], set[str]]


def tree_of(place: Place) -> list[BlockView]:
    """Each named block of the place's kind, its state from the stages completed and current."""
    done = [_segments(key) for key in place.completed]
    current = _segments(place.stage.key) if place.life is Life.ACTIVE else []
    seen: _Seen = (done, current, {each.partition("@")[0] for each in place.maxed})
    views: list[BlockView] = []
    _walk(place, place.kind.body, "", seen, views)
    return views


def _walk(place: Place, block: Block, path: str, seen: _Seen, views: list[BlockView]) -> None:
    match block:
        case Sequence(blocks=inner):
            for each in inner:
                _walk(place, each, path, seen, views)
        case Step():
            views.append(_step_view(place, block, path, seen))
        case Loop(name=name, body=body):
            views.append(_loop_view(block, path, seen))
            _walk(place, body, f"{path}{name}/", seen, views)
        case Parallel():
            views.extend(_parallel_views(place, block, path, seen))
        case Orchestrate():
            views.extend(_orchestrate_views(place, block, path, seen))
        case _:
            assert_never(block)


def _orchestrate_views(place: Place, block: Orchestrate, path: str, seen: _Seen) -> list[BlockView]:
    """An orchestrate block, its lead, then each child: where it stands, its place, its news."""
    done, current, _maxed = seen
    here = bool(current) and current[-1][0] == block.lead.name
    if here:
        state = "running"
    else:
        state = "done" if any(key[-1][0] == block.lead.name for key in done) else "not run"
    views = [BlockView(path=f"{path}{block.name}", block="orchestrate", state=state)]
    views.append(_step_view(place, block.lead, f"{path}{block.name}/", seen))
    shown = here or state == "done"
    views.extend(
        BlockView(
            path=f"{path}{block.name}/{run.lane}",
            block="child" if run.kind is None else "run",
            state=run.state.value,
            lane=run.place,
            goal=run.goal or None,
            news=run.note or None,
        )
        for run in (lanes_in_order(place) if shown and place.lanes_key else [])
    )
    return views


def _parallel_views(place: Place, parallel: Parallel, path: str, seen: _Seen) -> list[BlockView]:
    """A parallel block, then each of its lanes: where it stands, and the place it runs in."""
    done, current, _maxed = seen
    here = bool(current) and current[-1][0] == parallel.name
    if here:
        state = str(phase_word(place.stage.phase))
    else:
        state = "done" if any(key[-1][0] == parallel.name for key in done) else "not run"
    views = [BlockView(path=f"{path}{parallel.name}", block="parallel", state=state)]
    for lane in lane_names(parallel):
        run = place.lanes.get(lane) if here or state == "done" else None
        views.append(
            BlockView(
                path=f"{path}{parallel.name}/{lane}",
                block="lane",
                state=run.state.value if run is not None else state,
                lane=run.place if run is not None else None,
            )
        )
    return views


def _step_view(place: Place, step: Step, path: str, seen: _Seen) -> BlockView:
    done, current, _maxed = seen
    runs = sum(1 for key in done if key[-1][0] == step.name)
    if current and current[-1][0] == step.name:
        state = str(phase_word(place.stage.phase))
    else:
        state = "done" if runs else "not run"
    gate = describe_deliverable(step.deliverable)
    return BlockView(path=f"{path}{step.name}", block="step", state=state, runs=runs, gate=gate)


def _loop_view(loop: Loop, path: str, seen: _Seen) -> BlockView:
    done, current, maxed = seen
    begun = [n for key in [*done, current] for name, n in key if name == loop.name and n]
    if any(name == loop.name for name, _ in current):
        state = "running"
    elif loop.name in maxed:
        state = "max"
    else:
        state = "done" if begun else "not run"
    passes = max(begun, default=0)
    return BlockView(
        path=f"{path}{loop.name}", block="loop", state=state, passes=passes, max=loop.max
    )


def _submission(place: Place) -> Submission:
    """Where the submission stands; a blocked landing tried again is still blocked until answered.

    LAND-BASE-BLOCKED-WAITS: while flume tries a landing the base's state blocked again, the
    caller still sees the wait and its way out, not a plain ``submitted``.
    """
    if place.submission is Submission.SUBMITTED and place.land_blocked:
        return Submission.BLOCKED
    return place.submission


def _validation(place: Place) -> str | None:
    """What the OpenSpec CLI said of the committed change, in one word."""
    change = place.change
    if change is None or not change.written:
        return None
    return {True: "valid", False: "invalid", None: "skipped"}[change.valid]
