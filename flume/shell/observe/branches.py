"""Branch heads, and a worktree or branch a person removed under a place in flight."""

from __future__ import annotations

import collections
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from flume.core.ids import BranchName, Instant, Sha
from flume.core.observations import BranchHead, BranchVanished, Observation, WorktreeLost
from flume.core.place import Life, Place
from flume.shell.agents import fencerefs, sandbox
from flume.shell.agents.fencerefs import Mirror
from flume.shell.store.follower import Followed
from flume.shell.tools import git
from flume.shell.tools.notify import SAFETY_SECONDS, Notify


class BranchHeads:
    """Every place's branch head, from one ``git for-each-ref`` per repository a tick.

    It also sees what a person deleted under a place in flight: its worktree (a ``stat`` of the
    folder's ``.git``, no process: made when ``notify`` says the folder or its ``.git`` changed,
    or it cannot watch them, and at least every :data:`~flume.shell.tools.notify.SAFETY_SECONDS`)
    and its branch (absent from the heads). A sandboxed agent's
    commits are carried to its real branch first (:func:`sandbox.settle`); which live agents
    are fenced is looked up once a session.
    """

    def __init__(self, notify: Notify | None = None) -> None:
        self._mirrors: dict[str, Mirror | None] = {}
        #: Which files changed; without one, every worktree is looked at every tick.
        self.notify = notify
        #: Each worktree found whole, and when it was last looked at.
        self._whole: dict[str, float] = {}

    def observe(
        self, followed: Sequence[Followed], now: Instant
    ) -> Iterator[tuple[Followed, Observation]]:
        """A ``BranchHead`` for each made place whose branch moved; what was lost, named."""
        by_repository: dict[str, list[Followed]] = collections.defaultdict(list)
        for each in followed:
            place = each.place
            if place is not None and place.made and place.life is not Life.TIDIED:
                by_repository[place.launch.repository].append(each)
        whole: dict[str, float] = {}
        for repository, group in by_repository.items():
            folder = Path(repository)
            heads = git.heads(folder)
            for each in group:
                assert each.place is not None  # noqa: S101 (grouped above)
                self._carried(each.place, heads)
            for each in group:
                place = each.place
                assert place is not None  # noqa: S101 (grouped above)
                lost = self._lost(place, now, whole) if _in_flight(place) else None
                if lost is not None:
                    yield each, WorktreeLost(at=now, path=place.path, how=lost)
                    continue
                seen = _seen(folder, place, heads, now)
                if seen is not None:
                    yield each, seen
        self._whole = whole

    def _lost(self, place: Place, now: Instant, whole: dict[str, float]) -> str | None:
        """How a place in flight lost its worktree, if it did, looked at only when it may have."""
        if place.worktree_gone:
            return None
        looked = self._whole.get(place.path)
        if (
            self.notify is None
            or looked is None
            or not 0 <= now - looked < SAFETY_SECONDS
            # Both asked, so both are taken: the folder (in its parent) and its ``.git``.
            or any(
                [
                    self.notify.changed_in(*os.path.split(place.path)),
                    self.notify.changed_in(place.path, ".git"),
                ]
            )
        ):
            how = _worktree_lost(place)
            if how is None:
                whole[place.path] = now
            return how
        whole[place.path] = looked
        return None

    def _carried(self, place: Place, heads: dict[BranchName, Sha]) -> None:
        """A live fenced agent's commits carried to its real branch: two small files read."""
        if place.agent is None:
            return
        session = place.agent.session
        if session not in self._mirrors:
            if len(self._mirrors) > _MIRRORS_KEPT:
                self._mirrors.clear()
            self._mirrors[session] = sandbox.mirror_of(session)
        mirror = self._mirrors[session]
        if mirror is None:
            return
        head = heads.get(place.branch)
        moved = fencerefs.settle(mirror, head)
        if moved is not None and moved != head:
            heads[place.branch] = moved


#: How many sessions' mirrors are remembered before all are forgotten (and looked up again).
_MIRRORS_KEPT = 4096


def _in_flight(place: Place) -> bool:
    return place.made and place.life in {Life.MAKING, Life.ACTIVE}


def _holds_work(place: Place) -> bool:
    """A finished place whose branch is its work's only home: not landed, not tidied."""
    return place.made and place.life is Life.FINISHED and place.landed_at is None


def _worktree_lost(place: Place) -> str | None:
    """How the place's worktree is gone, or None while its folder holds a worktree."""
    path = Path(place.path)
    if not path.exists():
        return "its folder is gone"
    if not (path / ".git").exists():
        return "its folder holds no worktree: git there is the main repository's"
    return None


def _seen(
    repository: Path, place: Place, heads: dict[BranchName, Sha], now: Instant
) -> Observation | None:
    """What changed of the place's branch since its state, if anything."""
    head = heads.get(place.branch)
    if head is None:
        # A branch absent from a listing that holds others, and absent when asked again: gone.
        # Under a place in flight, or a finished one whose branch still holds its work (a lane
        # its run has yet to merge): named at once (WF-NO-LOST-COMMIT).
        vanished = (
            bool(heads)
            and (_in_flight(place) or _holds_work(place))
            and not place.branch_gone
            and git.resolve(repository, place.branch) is None
        )
        return BranchVanished(at=now, branch=place.branch) if vanished else None
    if place.branch_gone:
        # Back: restored by a person, or made anew by a commit with none of its history, which
        # is not the place's branch (its last head is not in it) and is not reported.
        if place.head is None or git.is_ancestor(repository, place.head, head):
            return BranchHead(at=now, branch=place.branch, sha=head)
        return None
    if head != place.head:
        return BranchHead(at=now, branch=place.branch, sha=head)
    return None
