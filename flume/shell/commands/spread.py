"""A spread block's lanes and children (WF-SPREAD), shell side: what the fleet asks of a host.

Theory of operation. A lane of a block that spreads is a fleet place: the run's host hands its
launch to the fleet (:mod:`flume.shell.store.outbox`), and whichever host takes it journals it
there as its run's host would have journaled it here (:func:`launch`), with a board of its own
and a copy of its base (the run's branch) cut where the lane was. From then on the two hosts
speak only through the fleet, and each side's flume decides as it always does (the fleet's
worker wakes the host's supervisor after each):

- on the lane's host, the lane's end and its news are read from its own place with the core's
  own meanings (:func:`ended`, :func:`news`), and what its run orders it, tells it or answers
  it is journaled in its journal as the run's host would have (:func:`order`, :func:`notify`,
  :func:`answer`);
- on the run's host, what the fleet brings of the lane is journaled in the run's journal
  (:func:`tell_run`): the news its lead hears, and its end, each once and only for the lane
  the run named (a later pass names its lanes anew), under the journal's lock.

A lane's base on its host is a copy of the run's branch (the host has no run of its own there):
made at the lane's entry commit when the host has no branch of that name, moved on from the
fleet's remote (fast-forward only) before the lane is tidied, so tidy finds its work merged
there and lets its branch go (R10), and removed once no place of the host stands on it and the
remote holds it (:func:`release_base`). A branch of that name checked out here (the run's own,
when the lane was carried on its run's host) is never moved nor removed.
"""

from __future__ import annotations

import functools
from pathlib import Path

import attrs
from pyrsistent import pset

from flume.core.actions import ActionName, LaneOrder, NotifyLane, OrderLane
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, PlaceName, Sha
from flume.core.launch import place_path
from flume.core.observations import (
    ActionFailed,
    AnswerGiven,
    ChildNews,
    LaneEnded,
    Launched,
    Observation,
)
from flume.core.place import LaneRun, LaneState, Life, Place
from flume.core.settings import Settings
from flume.core.step import step
from flume.core.workflow.lanes import children, lane_ended
from flume.core.workflow.orchestrate import news_of
from flume.shell.perform import gates, lanes, launcher
from flume.shell.store import codec, places
from flume.shell.tools import git


def _place(name: str, clone: Path) -> Place | None:
    """The place ``name`` of the clone, as its journal stands; None when it has none."""
    try:
        return places.find(name, clone, Settings()).place
    except UsageError:
        return None


# --- on the lane's host ---------------------------------------------------------------------


def launch(line: str, clone: Path, carried: Sha | None) -> BranchName:
    """Journal the lane the fleet handed this host, in its clone; its branch.

    ``line`` is the lane's launch as its run's host would have journaled it; here it is this
    host's (HOST-OWNS-PLACE), in this clone, with a board of its own, and cut at ``carried``
    when another host carried it before (FLEET-CARRIED-HEAD). Its base, the run's branch, is
    made at the lane's entry commit when this clone has no branch of that name. Raises
    :class:`UsageError` as a launch does when the lane cannot be launched here.
    """
    seen = codec.decode(line)
    if not isinstance(seen, Launched) or seen.launch.parent is None:
        raise UsageError.one(
            "launch", "the fleet handed this host no lane's launch", "update flume on the hosts"
        )
    launch = attrs.evolve(seen.launch, repository=str(clone), host=places.host(), carried=carried)
    board = gates.board_of(place_path(launch), launch.place)
    seen = attrs.evolve(seen, launch=launch, board=str(board))
    made = step(seen.settings or Settings(), None, seen).place
    if seen.start is not None and git.resolve(clone, launch.base) is None:
        git.run(clone, "update-ref", f"refs/heads/{launch.base}", seen.start, "")
    launcher.launch_lane(seen, own_board=True)
    return made.branch


def is_led(line: str) -> bool:
    """The lane whose launch ``line`` is, is an orchestrate block's child (its lead hears it)."""
    seen = codec.decode(line)
    return isinstance(seen, Launched) and seen.launch.led


def ended(name: str, clone: Path, now: Instant) -> LaneEnded | None:
    """The lane's end as its run is to be told it, once it ended here; None while it runs."""
    found = _place(name, clone)
    if found is None:
        return None
    return lane_ended(found.launch.lane, found, now)


def news(name: str, clone: Path, told: frozenset[str], paused: str) -> list[tuple[str, str]]:
    """A led child's news not told yet, as (id, words): what its lead is to hear, in order.

    ``told``: the ids told its run already; ``paused``: the words of the pause last told, if
    the last piece told was one (the next says it goes on again).
    """
    found = _place(name, clone)
    if found is None or not found.launch.led:
        return []
    lane = LaneRun(
        lane=found.launch.lane,
        place=found.launch.place,
        branch=found.branch,
        news=pset(told),
        paused=paused,
    )
    return [(ident, text) for ident, text in news_of(lane, found) if ident not in told]


def order(name: str, clone: Path, what: str, now: Instant) -> str:
    """What the lane's run orders it (``drop`` or ``tidy``), journaled as its run would have.

    Before a tidy, the lane's base here follows the fleet's remote, where its run pushed the
    branch its lanes were merged into. What it says, for the worker's log.
    """
    given = LaneOrder(what)
    found = _place(name, clone)
    if found is None:
        return f"{name} has no journal here: {what} not given"
    if given is LaneOrder.TIDY:
        follow_base(clone, found.launch.base)
    lanes.order(OrderLane(repository=str(clone), place=PlaceName(name), order=given), now)
    return f"{name} ordered {what} by its run"


def notify(name: str, clone: Path, text: str, ident: str, now: Instant) -> None:
    """A lead's words for its child here, journaled once (their id) as its lead's host would."""
    lanes.notify(NotifyLane(repository=str(clone), place=PlaceName(name), text=text, id=ident), now)


def answer(  # noqa: PLR0913 (each is one thing an answer carries)
    name: str, clone: Path, question: str, text: str, *, by_lead: bool, no_lead: bool, now: Instant
) -> str:
    """The answer to the child's question, as its run's host judged who gave it; journaled here.

    Raises :class:`UsageError` as ``flume answer`` does when the child's rules refuse it.
    """
    found = places.find(name, clone, Settings())
    seen = AnswerGiven(at=now, question=question, text=text, by_lead=by_lead, no_lead=no_lead)
    decision = places.give(found, seen, Settings())
    return (
        f"{decision.place.launch.place}: question {question} answered; the answer goes to the "
        "agent that asked, once it waits"
    )


def journal_of(clone: Path, name: str) -> Path:
    """The place's journal in the clone."""
    return places.journals_dir(clone) / name / places.JOURNAL


@attrs.frozen(kw_only=True)
class LaneFacts:
    """A lane's branch, base and head, as they stood before its tidy."""

    branch: BranchName
    base: BranchName
    head: Sha | None


def lane_facts(name: str, clone: Path) -> LaneFacts | None:
    """The lane's branch, base and head here; None when it has no journal."""
    found = _place(name, clone)
    if found is None:
        return None
    return LaneFacts(branch=found.branch, base=found.launch.base, head=found.head)


def let_go(clone: Path, lane: LaneFacts) -> str:
    """Once the lane is tidied here: what its host kept for it goes where nothing is lost.

    Its branch leaves the fleet's remote, if the run's branch there holds it (with a lease at
    the head it ended at: a branch moved since stays), and the copy of its base this host made
    goes (:func:`release_base`). What it says.
    """
    remote = git.fleet_remote(clone)
    said: list[str] = []
    if remote is not None and lane.head is not None:
        base = git.commit(clone, f"refs/remotes/{remote}/{lane.base}")
        if base is not None and git.holds(clone, base, lane.head):
            ran = git.delete_pushed(clone, remote, lane.branch, lane.head)
            if ran.ok:
                said.append(f"{lane.branch} left {remote}, whose {lane.base} holds it")
    released = release_base(clone, lane.base)
    if released:
        said.append(released)
    return "; ".join(said)


def is_tidied(name: str, clone: Path) -> bool:
    """The place is tidied here (or has no journal left)."""
    found = _place(name, clone)
    return found is None or found.life is Life.TIDIED


def follow_base(clone: Path, base: BranchName) -> None:
    """The lane's base here, a copy of its run's branch, moved on to the remote's (fast-forward).

    Never a branch checked out here (the run's own, on the run's host), never backwards.
    """
    remote = git.fleet_remote(clone)
    if remote is None or git.checked_out(clone, base):
        return
    tracking = f"refs/remotes/{remote}/{base}"
    git.fetch(clone, remote, f"+refs/heads/{base}:{tracking}")
    there, here = git.commit(clone, tracking), git.resolve(clone, base)
    if there is None or here is None or there == here:
        return
    if git.is_ancestor(clone, here, there):
        git.run(clone, "update-ref", f"refs/heads/{base}", there, here)


def release_base(clone: Path, base: BranchName) -> str | None:
    """The copy of a run's branch this host made as its lanes' base, removed once unused.

    Only while no place of the clone still stands on it (as its base or its branch), it is
    checked out nowhere, and the fleet's remote holds it (nothing is lost). What it says, or
    None when it stays.
    """
    remote = git.fleet_remote(clone)
    here = git.resolve(clone, base)
    if remote is None or here is None or git.checked_out(clone, base):
        return None
    for found in places.places_of(clone, Settings()):
        place = found.place
        standing = place is not None and place.life is not Life.TIDIED
        if standing and place is not None and base in {place.launch.base, place.branch}:
            return None
    there = git.commit(clone, f"refs/remotes/{remote}/{base}")
    if there is None or not git.is_ancestor(clone, here, there):
        return None
    git.run(clone, "update-ref", "-d", f"refs/heads/{base}", here)
    return f"the copy of {base} its spread lanes stood on is removed here ({remote} holds it)"


# --- on the run's host ----------------------------------------------------------------------


def tell_run(  # noqa: PLR0913 (each is one thing the fleet brings)
    clone: Path,
    run: str,
    lane: str,
    name: str,
    now: Instant,
    *,
    told: list[tuple[str, str]],
    end: LaneEnded | None = None,
    failed: str = "",
) -> int:
    """Journal in the run's journal what the fleet brings of its lane: news, its end; how many.

    Each only while the run's lane ``lane`` is the place ``name`` and runs; each piece of news
    once (its id), in the order brought, and only for a child of an orchestrate block.
    ``failed``: the lane could not be launched, said so, and it ended unfinished. Under the
    journal's lock, judged on the run as it stands then.
    """
    path = journal_of(clone, run)
    if not path.is_file():
        return 0

    def running(place: Place, ident: str | None) -> bool:
        found = place.lanes.get(lane)
        if found is None or found.place != name or found.state is not LaneState.RUNNING:
            return False
        return ident is None or (
            ident not in found.news and any(each.lane == lane for each in children(place))
        )

    brought: list[tuple[Observation, str | None]] = [
        (ChildNews(at=now, lane=lane, id=ident, text=text), ident) for ident, text in told
    ]
    if failed:
        output = f"lane {lane} cannot be launched: {failed}"
        brought.append((ActionFailed(at=now, action=ActionName.LAUNCH_LANE, output=output), None))
        brought.append((LaneEnded(at=now, lane=lane, finished=False), None))
    elif end is not None:
        brought.append((attrs.evolve(end, at=now, lane=lane), None))
    given = 0
    for seen, ident in brought:
        wanted = functools.partial(running, ident=ident)
        if places.command_if(path, seen, Settings(), wanted) is not None:
            given += 1
    return given
