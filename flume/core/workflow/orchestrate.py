"""Orchestrate blocks: a lead agent supervising children, each child a lane.

Theory of operation. The lead is the run's own step: its agent works in the run's worktree, its
prompt delivered and its gate judged as any step's. Its children are lanes (places of their own,
:mod:`flume.core.workflow.lanes`): the block's static branches from its entry, children of the
template step only when the lead runs ``flume spawn --goal``. The run learns of its children only
from observations the shell journals into its journal: ``LaneEnded`` when one ends, ``ChildNews``
for the rest (started, asked, progress, paused, stopped short), so its replay depends on its journal
alone. Each piece of news goes to the lead as a tell; its lead's words go to a child (``flume
notify``) as ``Notified`` in the child's journal.

The rules:

- WF-CHILDREN-CAP: the lead spawns at most ``max`` children of the template, none over a
  spent budget; at most ``cap`` children have a live agent at once, the rest wait in order.
  A spawn past either is refused, journaling nothing, its reason printed to the lead.
- WF-SPAWN-ONCE: a spawn whose goal is one a child of the block was spawned with starts no
  second child: that child is named to the lead (journaled, changing nothing). A lead retried
  after its agent was lost runs its prompt again from the start and spawns what it spawned
  before; the run goes on where it left off, and the children it had count once against
  ``max``.
- WF-LEAD-WAITS-JOIN: the lead's gate is not judged (at a turn's end, nor on its agent found
  waiting), nor does its stage end on quiet, until every child is terminal, the finished ones
  merged into the run's branch (``merge``, in order, while the lead waits), and the lead's
  transcript holds the tell that says so. Then the block ends on the lead's gate.
- WF-CHILD-NEWS-BATCHED: news of children reaches the lead unasked, each piece once; pieces
  that come while one is held join it, so N pieces that come while the lead works cost one send.
- WF-CHILD-PAUSE-SURFACES: a child paused or stopped short is news for the lead and shows on
  the run's status, named, with the command that resolves it.
- WF-LEAD-HEARS-OPEN-QUESTIONS: a child's question is news told once, to the lead attempt then
  live; a lead tried again (a fresh agent) reads each question still open in its prompt, on
  its child's line, whatever news came after it (``delivery.render_prompt``).
- WF-DROP-CASCADES: a dropped run drops its running children (their agents end) and never
  launches those that wait; tidy keeps every child's commits not merged.
- WF-DEPTH-CAP: ``flume compose`` starts a child run, a place of its own running the lead's
  fragment, one level deeper; runs nest 2 deep at most (the block's ``compose`` depth, never
  over 2): a fragment whose lead may compose is refused, and its budgets never exceed its slice.
- WF-BUDGET-RESERVE: a composed run's slice (``--turns``, ``--tokens``) is reserved from the
  run's budgets when it is composed (counted as spent; refused unless it fits with room left)
  and released for what the child run really spent when it ends. The child run's own budgets
  are the slice; lanes inside it each may spend what it has left (as any run's lanes), so lanes
  side by side can pass the slice before the child run pauses at its next step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs
from pyrsistent import pmap, pvector

from flume.core import tell
from flume.core.actions import Action, Event, LaunchLane, NotifyLane, Report
from flume.core.applies import question_words
from flume.core.errors import UsageError, refused
from flume.core.ids import Instant, PlaceName, SessionId
from flume.core.kinds import (
    MAX_DEPTH,
    Merge,
    Orchestrate,
    all_sandboxed,
    blocks_of,
    child_kind,
    lane_names,
)
from flume.core.observations import (
    Activity,
    ChildNews,
    ComposeSaid,
    LaneEnded,
    LanesMerged,
    Notified,
    NotifySaid,
    SpawnSaid,
)
from flume.core.place import (
    AwaitingWord,
    JoinStage,
    LaneRun,
    LaneState,
    Life,
    Merging,
    Outcome,
    Paused,
    Place,
    Queued,
    Short,
    Tell,
    Working,
    accepts,
    evolve,
    is_live,
    lanes_in_order,
    leading,
    merge_action,
    resolve_command,
)
from flume.core.settings import Settings
from flume.core.workflow import budget
from flume.core.workflow.lanes import (
    children,
    children_merging,
    is_merging,
    lane_launch,
    lane_run,
    tidy_orders,
)
from flume.core.workflow.lanes import (
    on_lanes_merged as on_parallel_merged,
)
from flume.core.workflow.messages import may

#: The most characters a goal or a lead's words may hold.
MOST_WORDS = 4000

#: The prefix of a child's news id that says it paused or stopped short.
PAUSED = "paused:"
#: The id of a child's news that its question was answered (``answered:q1``), and of the
#: question itself (``q1``, or ``q1#2`` asked again after its answer was lost).
ANSWERED = "answered:"
_QUESTION = re.compile(r"q[0-9]+(#[0-9]+)?")

_TERMINAL = frozenset({LaneState.FINISHED, LaneState.ENDED})


def _entered(place: Place, block: Orchestrate) -> Place:
    """The block at this key, entered: its static branches wait, cut from the run's head now."""
    if place.lanes_key == place.stage.key:
        return place
    runs = {lane: lane_run(place, lane, index) for index, lane in enumerate(lane_names(block))}
    return evolve(
        place,
        lanes=pmap(runs),
        lanes_key=place.stage.key,
        entry=place.head,
        finished_lanes=pvector(),
        merging=pvector(),
        join=JoinStage.OPEN,
        join_tell=None,
    )


def enter_when_started(settings: Settings, place: Place, now: Instant) -> Outcome:
    """An orchestrate block is entered once its lead's stage runs: its static children start."""
    del settings, now
    block = leading(place)
    if (
        block is None
        or place.lanes_key == place.stage.key
        or place.life is not Life.ACTIVE
        or not place.ready
        or place.head is None
        or isinstance(place.stage.phase, AwaitingWord | Queued)
    ):
        return place, ()
    place = _entered(place, block)
    return _launch_more(place, block)


def launch_when_free(settings: Settings, place: Place, now: Instant) -> Outcome:
    """WF-CHILDREN-CAP, WF-NO-SILENT-WAIT: waiting children start once nothing holds them.

    Room under the cap, budget left, and the lead's stage running (not paused, not stopped
    short, not waiting to start): a child held by a spent budget starts once a raise lets the
    lead go on, not only when another child ends or the lead spawns.
    """
    del settings, now
    block = leading(place)
    phase = place.stage.phase
    if (
        block is None
        or place.life is not Life.ACTIVE
        or place.lanes_key != place.stage.key
        or place.join is not JoinStage.OPEN
        or isinstance(phase, Paused | Short | AwaitingWord | Queued)
        or not any(run.state is LaneState.WAITING for run in place.lanes.values())
    ):
        return place, ()
    return _launch_more(place, block)


def _launch_more(place: Place, block: Orchestrate) -> Outcome:
    """WF-CHILDREN-CAP: waiting children start, in order, while fewer than ``cap`` run."""
    if budget.spent_budget(place.budgets, place.spent, 0, place.now) is not None:
        return place, ()
    running = sum(1 for run in place.lanes.values() if run.state is LaneState.RUNNING)
    room = (block.cap or len(place.lanes)) - running
    actions: list[Action] = []
    for run in lanes_in_order(place):
        if room <= 0:
            break
        if run.state is not LaneState.WAITING:
            continue
        started = attrs.evolve(run, state=LaneState.RUNNING)
        place = evolve(place, lanes=place.lanes.set(run.lane, started))
        room -= 1
        actions.append(launch_child(place, block, started))
        actions.append(
            Report(
                event=Event.LANE_LAUNCHED,
                text=f"child {run.lane} launched: {run.place} on {run.branch}",
                stage=place.stage.name,
            )
        )
    return place, tuple(actions)


def launch_child(place: Place, block: Orchestrate, run: LaneRun) -> LaunchLane:
    """The launch of child ``run``: the run's, named ``<name>+<child>``, based on its branch.

    A composed run runs its fragment, named as the run's kind (its place and branch the run's
    name and its own), one level deeper, its budgets the slice reserved for it (no wider than
    the fragment's own), cut from the run's head or base.
    """
    if run.kind is None:
        kind = child_kind(place.kind, block, run.lane, run.agent)
        if block.lead.sandbox and run.lane not in lane_names(block):
            kind = all_sandboxed(kind)  # a spawned child runs its sandboxed lead's goal
        return lane_launch(place, run.lane, kind, goal=run.goal, led=True)
    own = run.kind.budgets
    budgets = attrs.evolve(
        own,
        turns=min(own.turns or run.reserved_turns, run.reserved_turns),
        tokens=min(own.tokens or run.reserved_tokens, run.reserved_tokens),
    )
    kind = attrs.evolve(
        run.kind,
        name=place.kind.name,
        prefix=place.kind.prefix,
        finalize=None,
        budgets=budgets,
        fenced=run.kind.fenced or place.kind.fenced,
    )
    if block.lead.sandbox:
        kind = all_sandboxed(kind)  # a composed run runs its sandboxed lead's fragment
    launch = lane_launch(place, run.lane, kind, goal=run.goal, led=True)
    deeper = attrs.evolve(launch.launch, depth=place.launch.depth + 1)
    start = place.start if run.from_base else place.entry
    return attrs.evolve(launch, launch=deeper, kind=kind, start=start)


def answerer(
    run: Place | None, session: SessionId | None, *, elsewhere: bool = False
) -> tuple[bool, bool]:
    """WF-ASK-ONE-ANSWERER for a child's question: the session is its lead; no lead lives.

    ``run`` is the place that launched the child. With no live lead at an orchestrate block
    there (it paused, or went past the block), the caller answers. ``elsewhere``: the child is
    a fleet place and its run is not here, but on the host that launched it (WF-SPREAD): who
    answers is judged there, and here nobody does.
    """
    if run is None and elsewhere:
        return False, False
    if run is None or leading(run) is None or not is_live(run):
        return False, True
    return run.agent is not None and run.agent.session == session, False


def spread_child(run: Place, name: str) -> LaneRun | None:
    """The run's child ``name`` (its place) if it is a fleet place (WF-SPREAD), else None."""
    return next((each for each in run.lanes.values() if each.place == name and each.spread), None)


def spread_answerer(run: Place, name: str, session: SessionId | None) -> tuple[bool, bool]:
    """WF-ASK-ONE-ANSWERER for a child on another host, judged here, at its run.

    Whether the answer is the live lead's, or a person's while no lead lives; either is
    carried to the child's host, which takes it as judged. Anyone else is refused here (exit
    1), as the child's rules would refuse them.
    """
    by_lead, no_lead = answerer(run, session)
    if not (by_lead or no_lead):
        raise refused(
            "answer",
            f"a question of {name} goes to the lead of {run.launch.place}, the nearest lead "
            "above it",
            "the lead answers it, from its own session (you may, while no lead of it is live)",
        )
    return by_lead, no_lead


def _lead_command(
    place: Place, edge: str, session: object, command: type[SpawnSaid | NotifySaid | ComposeSaid]
) -> Orchestrate:
    """The lead's command ``edge``: its block, once the edges, the agent and the run allow it."""
    name = place.launch.place
    block = leading(place)
    if (
        place.life is not Life.ACTIVE
        or not accepts(place.stage.phase, command)
        or not is_live(place)
    ):
        raise refused(
            edge,
            f"no lead of {name} is running",
            f"flume {edge} is for the lead of a running orchestrate block",
        )
    if block is None:
        raise refused(
            edge,
            f"step {place.stage.key} of {name} is no orchestrate block's lead",
            f"only a lead may {edge}; a step may progress or ask",
        )
    may(place, edge, session)
    return block


def on_spawn(place: Place, seen: SpawnSaid) -> Outcome:
    """WF-CHILDREN-CAP: a child of the template, its goal the lead's, within max and budget."""
    block = _lead_command(place, "spawn", seen.session, SpawnSaid)
    template = block.template
    assert template is not None  # noqa: S101 (a lead that may spawn has a template: kinds checks)
    goal = seen.goal.strip()
    if not goal or len(goal) > MOST_WORDS:
        raise refused(
            "spawn", f"the goal is empty or over {MOST_WORDS} characters", "say what it builds"
        )
    if place.join is not JoinStage.OPEN and place.lanes_key == place.stage.key:
        raise refused(
            "spawn",
            f"every child of {block.name} is terminal and joined",
            "write your verdict",
        )
    place = _entered(place, block)
    if spawned_child(place, goal) is not None:
        return place, ()
    static = set(lane_names(block))
    spawned = sum(1 for lane in place.lanes if lane not in static)
    if spawned >= block.max:
        raise refused(
            "spawn",
            f"{block.name} may spawn {block.max} {template.name} children at most, and "
            f"{spawned} are spawned",
            "give more to a child that runs (flume notify), or wait for the children you have",
        )
    spent = budget.spent_budget(place.budgets, place.spent, 0, place.now)
    if spent is not None:
        raise refused("spawn", f"the run's budget {spent} is spent", "no child starts over it")
    lane = f"{template.name}-{spawned + 1}"
    run = lane_run(place, lane, len(place.lanes), goal=goal, agent=seen.agent)
    place = evolve(place, lanes=place.lanes.set(lane, attrs.evolve(run, spawned=goal)))
    report = Report(
        event=Event.SPAWNED,
        text=f"{place.stage.key} spawned {lane} ({spawned + 1} of {block.max}): {goal}",
        stage=place.stage.name,
    )
    place, launched = _launch_more(place, block)
    return place, (report, *launched)


def spawned_child(place: Place, goal: str) -> LaneRun | None:
    """WF-SPAWN-ONCE: the child of the run's current block its lead spawned with ``goal``."""
    if place.lanes_key != place.stage.key:
        return None
    goal = goal.strip()
    return next((run for run in place.lanes.values() if run.spawned == goal), None)


def on_compose(place: Place, seen: ComposeSaid) -> Outcome:
    """WF-DEPTH-CAP, WF-BUDGET-RESERVE: a child run of the lead's fragment, its slice reserved."""
    block = _lead_command(place, "compose", seen.session, ComposeSaid)
    name = place.launch.place
    depth = place.launch.depth + 1
    deepest = min(block.compose_depth, MAX_DEPTH)
    if depth > deepest:
        raise refused(
            "compose",
            f"a run composed by {name} would be at depth {depth}, and runs nest {deepest} deep "
            "at most",
            "do the work here, or spawn a child of the block's template",
        )
    if place.join is not JoinStage.OPEN and place.lanes_key == place.stage.key:
        raise refused(
            "compose", f"every child of {block.name} is terminal and joined", "write your verdict"
        )
    place = _entered(place, block)
    composed = sum(1 for run in place.lanes.values() if run.kind is not None)
    if composed >= block.compose_runs:
        raise refused(
            "compose",
            f"{block.name} may compose {block.compose_runs} runs, and {composed} are composed",
            "spawn a child of the block's template instead",
        )
    fragment = seen.kind
    if any(
        isinstance(each, Orchestrate) and each.compose_runs for each in blocks_of(fragment.body)
    ):
        raise refused(
            "compose",
            f"the fragment {fragment.name} lets its lead compose, which would nest runs "
            f"{depth + 1} deep",
            "leave compose out of the fragment's orchestrate block",
        )
    if seen.turns < 1 or seen.tokens < 1:
        raise refused("compose", "a slice is at least 1 turn and 1 token", "give --turns, --tokens")
    _reserve(place, seen.turns, seen.tokens)
    lane = f"run-{composed + 1}"
    run = attrs.evolve(
        lane_run(place, lane, len(place.lanes), goal=place.launch.brief),
        kind=fragment,
        reserved_turns=seen.turns,
        reserved_tokens=seen.tokens,
        from_base=seen.base,
    )
    spent = attrs.evolve(
        place.spent,
        turns=place.spent.turns + seen.turns,
        tokens=place.spent.tokens + seen.tokens,
    )
    place = evolve(place, lanes=place.lanes.set(lane, run), spent=spent)
    report = Report(
        event=Event.COMPOSED,
        text=f"{place.stage.key} composed {lane} ({fragment.name}, depth {depth}), reserving "
        f"{seen.turns} turns and {seen.tokens} tokens",
        stage=place.stage.name,
    )
    place, launched = _launch_more(place, block)
    return place, (report, *launched)


def _reserve(place: Place, turns: int, tokens: int) -> None:
    """WF-BUDGET-RESERVE: the slice fits what the run has not spent nor reserved, with room."""
    budgets, spent = place.budgets, place.spent
    for what, cap, used, asked in (
        ("turns", budgets.turns, spent.turns, turns),
        ("tokens", budgets.tokens, spent.tokens, tokens),
    ):
        if cap is not None and used + asked >= cap:
            raise refused(
                "compose",
                f"the run cannot reserve {asked} {what}: {used} of its {cap} are spent or "
                "reserved already",
                f"ask for fewer {what}, or raise the run's budget (flume raise)",
            )


def on_notify(place: Place, seen: NotifySaid) -> Outcome:
    """A lead's words for a child, or all: one running is told, one waiting reads them first."""
    block = _lead_command(place, "notify", seen.session, NotifySaid)
    text = seen.text.strip()
    if not text or len(text) > MOST_WORDS:
        raise refused(
            "notify", f"the words are empty or over {MOST_WORDS} characters", "say it shorter"
        )
    runs = children(place)
    if seen.to != "all" and seen.to not in {run.lane for run in runs}:
        names = ", ".join(run.lane for run in runs) or "none yet"
        raise UsageError.one(
            "to",
            f"{block.name} has no child {seen.to!r} (its children: {names})",
            "name a child, or all",
        )
    targets = [
        run
        for run in runs
        if (seen.to in {"all", run.lane}) and run.state in {LaneState.WAITING, LaneState.RUNNING}
    ]
    if not targets:
        raise refused(
            "notify",
            f"no child of {block.name} named {seen.to} is running or waiting",
            "a child that ended hears nothing more",
        )
    words = f"Your lead says:\n\n{text}"
    actions: list[Action] = []
    lanes = place.lanes
    for run in targets:
        if run.state is LaneState.RUNNING:
            noted = attrs.evolve(run, notes=run.notes.append(words))
            lanes = lanes.set(run.lane, noted)
            actions.append(_notify(place, noted, len(noted.notes) - 1))
        else:
            lanes = lanes.set(run.lane, attrs.evolve(run, goal=f"{run.goal}\n\n{words}".strip()))
    report = Report(
        event=Event.NOTIFIED,
        text=f"{place.stage.key} told {', '.join(run.lane for run in targets)}: {text}",
        stage=place.stage.name,
    )
    return evolve(place, lanes=lanes), (report, *actions)


def _notify(place: Place, run: LaneRun, index: int) -> NotifyLane:
    """The ``index``-th note of child ``run``, for its journal."""
    return NotifyLane(
        repository=place.launch.repository,
        place=run.place,
        text=run.notes[index],
        id=f"{place.launch.place}#{run.lane}#{index + 1}",
        spread=run.spread,
    )


def on_notified(place: Place, seen: Notified) -> Outcome:
    """A child's lead's words: told to its live agent, or read in its prompt when it starts.

    Each note once: one asked again after its run's restart is passed over.
    """
    if place.life not in {Life.MAKING, Life.ACTIVE} or (seen.id and seen.id in place.notified):
        return place, ()
    if seen.id:
        place = evolve(place, notified=place.notified.add(seen.id))
    try:
        return tell.on_told(place, seen.text, seen.at)
    except UsageError:
        # No agent to tell yet, or it asks a person: its next prompt reads the words.
        return evolve(place, notes=place.notes.append(seen.text)), ()


def _tell_lead(place: Place, text: str, now: Instant) -> Place:
    """WF-CHILD-NEWS-BATCHED: news joins the lead's held news tell, or is held as a new one."""
    agent = place.agent
    if agent is None or agent.ending:
        return place
    last = place.held[-1] if place.held else None
    if last is not None and last.number == place.news_tell:
        joined = attrs.evolve(last, text=f"{last.text}\n{text}")
        return evolve(place, held=place.held.set(len(place.held) - 1, joined))
    number = place.tells_given + 1
    held = Tell(number=number, text=f"News of your children:\n{text}", asked_at=now)
    return evolve(place, held=place.held.append(held), tells_given=number, news_tell=number)


def on_child_news(place: Place, seen: ChildNews) -> Outcome:
    """A child's news, once each: shown on the run, and told to the lead."""
    run = place.lanes.get(seen.lane)
    if run is None or not children(place) or seen.id in run.news:
        return place, ()
    # WF-CHILD-PAUSE-SURFACES: a pause shows on the run until the child's next news.
    paused = seen.text if seen.id.startswith(PAUSED) else ""
    noted = attrs.evolve(run, news=run.news.add(seen.id), note=seen.text, paused=paused)
    if seen.id.startswith(ANSWERED):
        # WF-CHILD-ASKING-SURFACES: answered (by the lead itself): the run no longer shows it,
        # and the lead, who gave the answer, is not told of it.
        noted = attrs.evolve(noted, note=run.note, asking="", asking_since=None)
        place = evolve(place, lanes=place.lanes.set(seen.lane, noted))
        report = Report(event=Event.CHILD, text=f"{seen.lane}: {seen.text}", stage=place.stage.name)
        return place, (report,)
    if _QUESTION.fullmatch(seen.id):
        # WF-CHILD-ASKING-SURFACES: the question shows on the run, with since when, until the
        # child's news says it was answered.
        noted = attrs.evolve(noted, asking=seen.text, asking_since=seen.at)
    place = evolve(place, lanes=place.lanes.set(seen.lane, noted))
    place = _tell_lead(place, f"- {seen.lane}: {seen.text}", seen.at)
    report = Report(event=Event.CHILD, text=f"{seen.lane}: {seen.text}", stage=place.stage.name)
    return place, (report,)


def on_child_ended(place: Place, seen: LaneEnded) -> Outcome:
    """A running child ended: its spend counted, its lead told, the next waiting one started."""
    block = leading(place)
    run = place.lanes.get(seen.lane)
    if block is None or run is None or run.state is not LaneState.RUNNING or not children(place):
        return place, ()
    state = LaneState.FINISHED if seen.finished else LaneState.ENDED
    how = f"finished at {seen.head}" if seen.finished else "ended unfinished (dropped)"
    ended = attrs.evolve(
        run, state=state, head=seen.head, note=how, paused="", asking="", asking_since=None
    )
    # WF-BUDGET-RESERVE: a composed run's slice, counted as spent, is released for its spend.
    spent = attrs.evolve(
        place.spent,
        turns=place.spent.turns + seen.turns - run.reserved_turns,
        tokens=place.spent.tokens + seen.tokens - run.reserved_tokens,
    )
    place = evolve(place, lanes=place.lanes.set(seen.lane, ended), spent=spent)
    if seen.finished:
        place = evolve(place, finished_lanes=place.finished_lanes.append(seen.lane))
    place = _tell_lead(place, f"- {seen.lane}: {how}", seen.at)
    report = Report(event=Event.LANE_ENDED, text=f"child {seen.lane} {how}", stage=place.stage.name)
    place, launched = _launch_more(place, block)
    return place, (report, *launched)


def join_when_ready(settings: Settings, place: Place, now: Instant) -> Outcome:
    """WF-LEAD-WAITS-JOIN: every child terminal, the lead waiting: merge, then tell the lead.

    Only once the lead ended a turn (its spawns are in) and nothing is held or in flight for it:
    the merge runs in its worktree while it waits.
    """
    del settings, now
    block = leading(place)
    agent = place.agent
    if (
        block is None
        or place.life is not Life.ACTIVE
        or place.join is not JoinStage.OPEN
        or place.lanes_key != place.stage.key
        or not isinstance(place.stage.phase, Working)
        or place.stage.turns < 1
        or agent is None
        or agent.ending
        or agent.activity is not Activity.WAITING
        or place.held
        or place.sending is not None
        or any(run.state not in _TERMINAL for run in place.lanes.values())
    ):
        return place, ()
    finished = [run.lane for run in lanes_in_order(place) if run.state is LaneState.FINISHED]
    match block.merge:
        case Merge.MERGE:
            chosen = finished
        case Merge.PICK:
            chosen = list(place.finished_lanes[:1])
        case _:
            chosen = []
    place = evolve(place, merging=pvector(chosen))
    if not chosen:
        return _told(place, block)
    place = evolve(place, join=JoinStage.MERGING)
    return place, (merge_action(place),)


def on_lanes_merged(place: Place, seen: LanesMerged) -> Outcome:
    """The lanes or children asked for are merged: the lead told, or the block goes on.

    An orchestrate block's: a merge that conflicted, resolved by hand while its lead was
    paused, asks the lead again; its children merged, the lead is told. Else a parallel's.
    """
    if not is_merging(place):
        return place, ()
    if leading(place) is not None and isinstance(place.stage.phase, Merging):
        # An orchestrate's merge that conflicted, resolved by hand: its lead is asked again.
        return requeue_lead(evolve(place, head=seen.head))
    if children_merging(place):
        return on_children_merged(place, seen)
    return on_parallel_merged(place, seen)


def on_children_merged(place: Place, seen: LanesMerged) -> Outcome:
    """The finished children are merged (:func:`children_merging` held): the lead is told."""
    block = leading(place)
    assert block is not None  # noqa: S101 (asked only while merging at an orchestrate)
    return _told(evolve(place, head=seen.head), block)


def _told(place: Place, block: Orchestrate) -> Outcome:
    """The join is met: the lead is told every child is terminal, and to write its verdict."""
    runs = lanes_in_order(place)
    said = "\n".join(f"- {run.lane}: {run.state.value}" for run in runs) or "- none was spawned"
    merged = ", ".join(place.merging) or "none"
    text = (
        f"All children of {block.name} are terminal:\n{said}\n"
        f"Merged into {place.branch}: {merged}. Write your verdict now."
    )
    report = Report(
        event=Event.JOINED,
        text=f"every child of {block.name} is terminal; merged: {merged}; the lead is told",
        stage=place.stage.name,
    )
    orders = tidy_children(place)
    if is_live(place) and place.agent is not None:
        number = place.tells_given + 1
        held = Tell(number=number, text=text, asked_at=place.now)
        place = evolve(
            place,
            held=place.held.append(held),
            tells_given=number,
            join=JoinStage.TOLD,
            join_tell=number,
        )
        return place, (report, *orders)
    # No lead lives (it paused meanwhile): its next attempt is told in its prompt.
    run = attrs.evolve(place.stage, words=text)
    return evolve(place, join=JoinStage.TOLD, join_tell=None, stage=run), (report, *orders)


def tidy_children(place: Place) -> tuple[Action, ...]:
    """WF-TIDY-LANES for children: tidy each one that finished (tidy keeps what is unmerged)."""
    return tidy_orders(place)


def requeue_lead(place: Place) -> Outcome:
    """A merge resolved by hand while the lead was paused: its next attempt writes the verdict."""
    block = leading(place)
    assert block is not None  # noqa: S101 (asked only at an orchestrate's lead)
    run = attrs.evolve(place.stage, phase=Queued(), attempt=place.stage.attempt + 1)
    # _told sets the join told: the lead's next attempt is told in its prompt.
    return _told(evolve(place, stage=run), block)


def pending(place: Place) -> tuple[Action, ...]:
    """RESTART-PENDING for children: launches asked and perhaps never carried out; the merge."""
    block = leading(place)
    if block is None or place.life is not Life.ACTIVE or not children(place):
        return ()
    running = [run for run in lanes_in_order(place) if run.state is LaneState.RUNNING]
    found: list[Action] = [launch_child(place, block, run) for run in running]
    found.extend(_notify(place, run, index) for run in running for index in range(len(run.notes)))
    if place.join is JoinStage.MERGING:
        found.append(merge_action(place))
    return tuple(found)


def children_news(run: Place, places: Mapping[PlaceName, Place], now: Instant) -> list[ChildNews]:
    """What the run's lead is to hear of its running children, from their places as they stand.

    Each piece once (its id): started; each gate passed; each question open (with the command
    that answers it); the last progress; paused or stopped short (with what resolves it), and
    going on again after. Only the places the run named, launched by it from this entry. A
    child of a block that spreads is heard of only through the fleet (WF-SPREAD), whose host
    reads its news as :func:`news_of` says.
    """
    told: list[ChildNews] = []
    for lane in children(run):
        found = places.get(lane.place)
        if (
            lane.state is not LaneState.RUNNING
            or lane.spread
            or found is None
            or found.launch.parent != run.launch.place
            or found.start != (run.start if lane.from_base else run.entry)
        ):
            continue
        told.extend(
            ChildNews(at=now, lane=lane.lane, id=ident, text=text)
            for ident, text in news_of(lane, found)
            if ident not in lane.news
        )
    return told


def news_of(lane: LaneRun, child: Place) -> list[tuple[str, str]]:
    """A child's news as (id, words), in the order the lead hears it.

    ``lane`` is the child as its run knows it: the news told already (``news``) and whether it
    was last told paused (``paused``), which the news after a pause says it goes on again.
    """
    news: list[tuple[str, str]] = []
    name = child.launch.place
    if child.attempts:
        news.append(("started", f"started ({name})"))
    news.extend((f"passed:{key}", f"passed the gate of {key}") for key in child.completed)
    news.extend(
        (
            question.id if not question.lost else f"{question.id}#{question.lost + 1}",
            (
                f"asks {question_words(question)}. Answer it: "
                f'flume answer {name} {question.id} "<your answer>"'
            ),
        )
        for question in child.questions
        if question.answer is None
    )
    news.extend(
        (
            f"{ANSWERED}{question.id}" + (f"#{question.lost + 1}" if question.lost else ""),
            f"{question.id} answered",
        )
        for question in child.questions
        if question.answer is not None
    )
    if child.progress:
        news.append((f"progress:{child.progress[:200]}", f"progress: {child.progress}"))
    phase = child.stage.phase
    stopped = f"{child.stage.key}#{child.stage.attempt}"
    if isinstance(phase, Paused):
        news.append(
            (
                f"{PAUSED}{stopped}:{phase.cause.value}",
                f"paused ({phase.cause.value}): {phase.words}; {resolve_command(child, phase)}",
            )
        )
    elif isinstance(phase, Short):
        news.append(
            (
                f"{PAUSED}{stopped}:{phase.cause.value}",
                f"stopped short ({phase.cause.value}): {phase.words}; flume retry {name}",
            )
        )
    elif lane.paused:
        news.append((f"resumed:{len(lane.news)}", "goes on again"))
    return news
