"""Branch heads, and a worktree or branch a person removed under a place in flight."""

from __future__ import annotations

import collections
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from flume.core.ids import BranchName, Instant, Sha
from flume.core.observations import BranchHead, BranchVanished, Observation, WorktreeLost
from flume.core.place import Life, Place, holds_work
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
        #: Each repository's branch heads as last listed, and when (with ``notify`` only).
        self._heads: dict[str, tuple[float, dict[BranchName, Sha]]] = {}
        #: Each repository's common git folder, once asked.
        self._commons: dict[str, str | None] = {}
        #: Each branch's folder of loose refs, by (common git folder, branch).
        self._folders: dict[tuple[str, str], str] = {}
        #: The places whose branch said nothing new at the last look, by journal.
        self._settled: dict[Path, Place] = {}

    def observe(
        self, followed: Sequence[Followed], now: Instant
    ) -> Iterator[tuple[Followed, Observation]]:
        """A ``BranchHead`` for each made place whose branch moved; what was lost, named.

        With ``notify``, a repository's branches are listed again only when a folder of its
        places' refs (or its ``packed-refs``) changed, or every
        :data:`~flume.shell.tools.notify.SAFETY_SECONDS`; between, only places that changed
        since their last look are compared with the heads last listed.
        """
        by_repository: dict[str, list[Followed]] = collections.defaultdict(list)
        for each in followed:
            place = each.place
            if place is not None and place.made and place.life is not Life.TIDIED:
                by_repository[place.launch.repository].append(each)
        whole: dict[str, float] = {}
        settled: dict[Path, Place] = {}
        for repository, group in by_repository.items():
            folder = Path(repository)
            listed = self._listed(repository, group, now)
            heads = git.heads(folder) if listed is None else listed
            if listed is None and self.notify is not None:
                self._heads[repository] = (now, heads)
            for each in group:
                place = each.place
                assert place is not None  # noqa: S101 (grouped above)
                moved = self._carried(place, heads)
                lost = self._lost(place, now, whole) if _in_flight(place) else None
                if lost is not None:
                    yield each, WorktreeLost(at=now, path=place.path, how=lost)
                    continue
                if listed is not None and not moved and self._settled.get(each.journal) is place:
                    settled[each.journal] = place  # the same place against the same heads
                    continue
                seen = _seen(folder, place, heads, now)
                if seen is not None:
                    yield each, seen
                else:
                    settled[each.journal] = place
        self._whole = whole
        self._settled = settled
        for gone in self._heads.keys() - by_repository.keys():
            del self._heads[gone]

    def _listed(
        self, repository: str, group: Sequence[Followed], now: Instant
    ) -> dict[BranchName, Sha] | None:
        """The heads last listed, while no event says a branch of the group may have moved.

        None: list them again (no events to ask, a folder not watched, an event, or the safety
        net's time). Each folder is asked (so its events are taken) whatever the others say.
        """
        kept = self._heads.get(repository)
        notify = self.notify
        if notify is None or kept is None or not 0 <= now - kept[0] < SAFETY_SECONDS:
            return None
        common = self._common(repository)
        if common is None:
            return None
        folders = {
            self._ref_folder(common, each.place.branch) for each in group if each.place is not None
        }
        changed = [notify.taken(folder) != set() for folder in sorted(folders)]
        changed.append(notify.changed_in(common, "packed-refs"))
        return None if any(changed) else kept[1]

    def _ref_folder(self, common: str, branch: str) -> str:
        """The folder that holds the branch's loose ref (its events say it moved)."""
        folder = self._folders.get((common, branch))
        if folder is None:
            if len(self._folders) > _FOLDERS_KEPT:
                self._folders.clear()
            ref = os.path.join(common, "refs", "heads", branch)  # noqa: PTH118 (a string)
            folder = self._folders[common, branch] = os.path.dirname(ref)  # noqa: PTH120
        return folder

    def _common(self, repository: str) -> str | None:
        """The repository's common git folder (where its refs are), asked once."""
        if repository not in self._commons:
            try:
                self._commons[repository] = str(git.common_dir(Path(repository)))
            except git.GitError:
                self._commons[repository] = None
        return self._commons[repository]

    def _lost(self, place: Place, now: Instant, whole: dict[str, float]) -> str | None:
        """How a place in flight lost its worktree, if it did, looked at only when it may have.

        Not while it is added again (PLACE-REBUILT): its worktree is absent until made, and its
        branch is looked at meanwhile, so a branch deleted with it is named at once.
        """
        if place.worktree_gone or place.rebuilding:
            return None
        looked = self._whole.get(place.path)
        notify = self.notify
        if (
            notify is not None
            and looked is not None
            and 0 <= now - looked < SAFETY_SECONDS
            and notify.quiet(place.path)
            and notify.quiet(os.path.dirname(place.path))  # noqa: PTH120 (a string: asked often)
        ):
            whole[place.path] = looked  # nothing changed in either folder: nothing to take
            return None
        if (
            notify is None
            or looked is None
            or not 0 <= now - looked < SAFETY_SECONDS
            # Both asked, so both are taken: the folder (in its parent) and its ``.git``.
            or any(
                [
                    notify.changed_in(*os.path.split(place.path)),
                    notify.changed_in(place.path, ".git"),
                ]
            )
        ):
            how = _worktree_lost(place)
            if how is None:
                whole[place.path] = now
            return how
        whole[place.path] = looked
        return None

    def _carried(self, place: Place, heads: dict[BranchName, Sha]) -> bool:
        """A live fenced agent's commits carried to its real branch: two small files read.

        True when they moved its head in ``heads``.
        """
        if place.agent is None:
            return False
        session = place.agent.session
        if session not in self._mirrors:
            if len(self._mirrors) > _MIRRORS_KEPT:
                self._mirrors.clear()
            self._mirrors[session] = sandbox.mirror_of(session)
        mirror = self._mirrors[session]
        if mirror is None:
            return False
        head = heads.get(place.branch)
        moved = fencerefs.settle(mirror, head)
        if moved is not None and moved != head:
            heads[place.branch] = moved
            return True
        return False


#: How many sessions' mirrors are remembered before all are forgotten (and looked up again).
_MIRRORS_KEPT = 4096
#: How many branches' ref folders are remembered before all are forgotten (and made again).
_FOLDERS_KEPT = 4096


def _in_flight(place: Place) -> bool:
    return place.made and place.life in {Life.MAKING, Life.ACTIVE}


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
            and (_in_flight(place) or holds_work(place))
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
