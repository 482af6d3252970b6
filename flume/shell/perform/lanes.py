"""A parallel block's lanes, the shell's part: launched, ordered, and merged into their run.

Theory of operation. A lane is a place of its own (:mod:`flume.core.workflow.lanes`): launching it
is journaling its ``Launched`` as a ``flume launch`` would, in the same journals folder, and the
supervisor finds the new journal and carries the lane as it carries any place. What its run
orders it (drop, tidy) is journaled in the lane's journal as the command a person would give,
checked against the lane's own rules first, so no line its rules refuse is ever written there
(a refused line reads as a journal edited by hand). The merge runs in the run's worktree, with
no agent in it, each lane's branch in the order asked, under the repository's landing lock
(the lanes' base is the run's branch, which the merge moves).

Each is safe to perform twice (RESTART-PENDING): a lane whose journal exists is not launched
again, an order a lane has had is not given again, and a branch already merged is passed over
(the state a merge cut short after its commit left is cleared first).

A lane of a block that spreads (WF-SPREAD) is a fleet place, whose journal is on whichever host
took it: its launch, orders and notes are handed to this host's fleet worker through the outbox
(:mod:`flume.shell.store.outbox`), and its merge fetches its branch from the fleet's remote
first, checked at the head the lane ended at; the run's branch, merged, is pushed there, so the
lanes' hosts see their work in it.
"""

from __future__ import annotations

import logging
from pathlib import Path

from pyrsistent import pvector

from flume.core.actions import (
    ActionName,
    LaneOrder,
    LaunchLane,
    MergeLanes,
    NotifyLane,
    OrderLane,
)
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, Sha
from flume.core.launch import place_branch
from flume.core.observations import (
    ActionFailed,
    DropAsked,
    LaneEnded,
    LanesMerged,
    Launched,
    MergeConflicted,
    Notified,
    Observation,
    TidyAsked,
)
from flume.core.place import Life
from flume.core.settings import Settings
from flume.core.step import step
from flume.core.workflow.lanes import takes_order
from flume.shell.perform import launcher
from flume.shell.perform.lander import base_lock
from flume.shell.process import Ran
from flume.shell.store import codec, journal, outbox, places
from flume.shell.tools import git

_log = logging.getLogger("flume.supervisor")


def launch(action: LaunchLane, at: Instant) -> list[Observation]:
    """Journal the lane's launch as the first line of its journal; nothing if it has one.

    Its launch carries its run's host already, so this host's supervisor carries it; its board
    is the run's. A launch the rules would refuse is not journaled: the failure is reported, and
    the lane ended unfinished, so its run does not wait on it for ever.
    """
    seen = Launched(
        at=at,
        launch=action.launch,
        kind=action.kind,
        setup=action.setup,
        copy=action.copy,
        start=action.start,
        settings=action.settings,
        board=action.board,
        tests=action.tests,
    )
    try:
        step(action.settings, None, seen)
    except UsageError as error:
        said = "; ".join(f"{problem.what} ({problem.mend})" for problem in error.problems)
        return _not_launched(action, at, said)
    if action.launch.spread:
        return _hand_to_fleet(action, seen, at)
    if launcher.launch_lane(seen):
        _log.info("lane %s of %s launched", action.launch.place, action.parent)
    return []


def _not_launched(action: LaunchLane, at: Instant, said: str) -> list[Observation]:
    """A lane that cannot be launched: the failure reported, and the lane ended unfinished."""
    return [
        ActionFailed(
            at=at,
            action=ActionName.LAUNCH_LANE,
            output=f"lane {action.lane} cannot be launched: {said}",
        ),
        LaneEnded(at=at, lane=action.lane, finished=False),
    ]


def _hand_to_fleet(action: LaunchLane, seen: Launched, at: Instant) -> list[Observation]:
    """WF-SPREAD: the lane's launch, as its journal's first line would be, into the outbox.

    Only from a clone a fleet worker serves (its ``flume.fleetRemote``): else nobody would ever
    hand it to the fleet, and the lane ends unfinished at once, saying why.
    """
    repository = Path(action.repository)
    if git.fleet_remote(repository) is None:
        return _not_launched(
            action,
            at,
            f"{repository} is no fleet host's clone, and its block spreads its lanes over the "
            "fleet (start flume fleet worker there, or leave spread out)",
        )
    branch = place_branch(action.kind, action.launch.name)
    outbox.put(
        outbox.Word(
            kind="launch",
            place=action.launch.place,
            run=action.parent,
            repository=action.repository,
            lane=action.lane,
            line=codec.encode(seen),
            branch=branch,
            start=action.start or "",
        )
    )
    _log.info("lane %s of %s handed to the fleet", action.launch.place, action.parent)
    return []


def order(action: OrderLane, at: Instant) -> list[Observation]:
    """Give the lane place the command its run orders (``flume drop`` or ``flume tidy``'s).

    Journaled under the lane journal's lock, judged on the lane as it stands then. A lane with
    no journal, or one that took it already, takes nothing; one whose journal cannot be read or
    written is logged, and its run goes on: what the run does next never waits on its lanes'.
    """
    if action.spread:
        _to_fleet("order", action.place, action.repository, order=action.order.value)
        return []
    path = places.journals_dir(Path(action.repository)) / action.place / places.JOURNAL
    if not path.is_file():
        return []
    seen = DropAsked(at=at) if action.order is LaneOrder.DROP else TidyAsked(at=at)
    try:
        given = places.command_if(
            path, seen, Settings(), lambda lane: takes_order(action.order, lane)
        )
    except (UsageError, journal.JournalError, OSError) as error:
        _log.warning("lane %s was not given %s: %s", action.place, action.order.value, error)
        return []
    if given is not None:
        _log.info("lane %s given %s", action.place, action.order.value)
    return []


def _to_fleet(  # noqa: PLR0913 (each is one thing a word carries)
    kind: str, place: str, repository: str, *, order: str = "", text: str = "", ident: str = ""
) -> None:
    """WF-SPREAD: what the run asks of a lane on another host, into the outbox for the fleet."""
    word = outbox.Word(
        kind=kind, place=place, run="", repository=repository, order=order, text=text, id=ident
    )
    outbox.put(word)


def notify(action: NotifyLane, at: Instant) -> list[Observation]:
    """Journal a lead's words into its child's journal (``Notified``), under the journal's lock.

    The child's rules decide whether its live agent is told or its next prompt reads them. A
    child with no journal, or one that ended, takes nothing; a journal that cannot be read or
    written is logged, and the run goes on.
    """
    if action.spread:
        _to_fleet("notify", action.place, action.repository, text=action.text, ident=action.id)
        return []
    path = places.journals_dir(Path(action.repository)) / action.place / places.JOURNAL
    if not path.is_file():
        return []
    seen = Notified(at=at, text=action.text, id=action.id)
    try:
        places.command_if(
            path,
            seen,
            Settings(),
            lambda child: (
                child.life in {Life.MAKING, Life.ACTIVE} and action.id not in child.notified
            ),
        )
    except (UsageError, journal.JournalError, OSError) as error:
        _log.warning("child %s was not given its lead's words: %s", action.place, error)
    return []


def merge(
    action: MergeLanes, repository: Path, at: Instant, pass_fds: tuple[int, ...] = ()
) -> list[Observation]:
    """WF-MERGE-ORDER: merge each lane's branch into the run's, in order; the first conflict undone.

    A branch the run's head holds already (merged before a restart, or by a person) is passed
    over. A merge that conflicts is aborted, leaving the worktree as it was, and reported with
    its files; one git refuses to start (a file in the way) is a failure, with git's words.
    The caller checked that ``action.path`` is the run's worktree on its branch.

    A merge a kill cut short after its commit left its state behind: the supervisor killed,
    its ``git merge`` goes on, moves the branch, then dies printing what it merged to the dead
    supervisor's pipe (SIGPIPE), before it clears ``MERGE_HEAD``. The head holds that merge, so
    its state is cleared first (:func:`_concluded`): else git would refuse the next lane's
    merge, read as a conflict naming no file, or make the next agent's commit a merge.
    """
    worktree = Path(action.path)
    remote = git.fleet_remote(repository) if action.spread else None
    if action.spread and remote is None:
        what = (
            f"{repository} is no fleet host's clone: its spread lanes' branches are on the "
            "fleet's remote, which it does not name (flume.fleetRemote)"
        )
        return _failed(at, what)
    refs: list[str] = list(action.branches)
    if remote is not None:
        fetched = _fetched(action, repository, remote, at)
        if fetched:
            return fetched
        refs = [f"refs/remotes/{remote}/{branch}" for branch in action.branches]
    with base_lock(repository) as held:
        fds = (*pass_fds, held)
        stopped = _concluded(worktree, at, fds) or _merge_each(action, refs, worktree, at, fds)
        if stopped:
            return stopped
        head = git.run(worktree, "rev-parse", "HEAD")
    if not head.ok:
        return _failed(at, "git cannot say the merged branch's head", head)
    if remote is not None:
        _push_run(worktree, remote, action.branch, head.out.strip())
        for ref in refs:
            # What the fetch left here for the merge; the run's branch holds it now.
            git.run(repository, "update-ref", "-d", ref)
    return [LanesMerged(at=at, head=Sha(head.out.strip()))]


def _fetched(action: MergeLanes, repository: Path, remote: str, at: Instant) -> list[Observation]:
    """WF-SPREAD: each lane's branch fetched from the fleet's remote, at the head it ended at.

    Into ``refs/remotes/<remote>/<branch>``, never a branch here (the lane may have been
    carried on this very host). [] once each holds the head its run was told; else why not.
    """
    refspecs = [
        f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}" for branch in action.branches
    ]
    ran = git.fetch(repository, remote, *refspecs)
    if not ran.ok:
        return _failed(at, f"the lanes' branches could not be fetched from {remote}", ran)
    for lane, branch, head in zip(action.lanes, action.branches, action.heads, strict=False):
        there = git.commit(repository, f"refs/remotes/{remote}/{branch}")
        if head is not None and there != head:
            return _failed(
                at,
                f"lane {lane}'s branch {branch} is at {there or 'nothing'} on {remote}, not at "
                f"{head}, where it ended: its host did not push it (flume status --fleet names "
                "a push refused)",
            )
    return []


def _push_run(worktree: Path, remote: str, branch: str, head: str) -> None:
    """The run's branch, its spread lanes merged, pushed to the fleet's remote (never forced).

    So each lane's host finds its work in its base there, and its tidy lets its branch go
    (R10). A push refused (the remote's branch moved otherwise) is logged: the lanes' hosts
    then keep their branches, named, and nothing is lost.
    """
    ran = git.push(worktree, remote, f"{head}:refs/heads/{branch}")
    if not ran.ok:
        _log.warning("the run's branch %s was not pushed to %s: %s", branch, remote, ran.err)


def _concluded(worktree: Path, at: Instant, fds: tuple[int, ...]) -> list[Observation]:
    """Clear the state of a merge the head holds already (``git merge --quit``); [] once clear.

    ``MERGE_HEAD`` held by ``HEAD`` is a merge committed, its state left by a git killed before
    it cleared it: the index and the worktree are the commit's, so only the state goes. A merge
    under way (``MERGE_HEAD`` not in ``HEAD``: a person's, say) is left as it is.
    """
    if not git.merging(worktree):
        return []
    if not git.run(worktree, "merge-base", "--is-ancestor", "MERGE_HEAD", "HEAD").ok:
        return []
    cleared = git.run(worktree, "merge", "--quit", pass_fds=fds)
    if cleared.ok:
        return []
    return _failed(at, "the state a merge committed before a restart left was not cleared", cleared)


def _merge_each(
    action: MergeLanes, refs: list[str], worktree: Path, at: Instant, fds: tuple[int, ...]
) -> list[Observation]:
    """Merge each lane not merged yet, in order: [] once all are; else why it stopped.

    ``refs``: what to merge for each lane: its branch, or for a spread lane the ref its branch
    was fetched into from the fleet's remote.
    """
    for lane, branch, ref in zip(action.lanes, action.branches, refs, strict=True):
        if git.commit(worktree, ref) is None:
            gone = f"lane {lane}'s branch {branch} does not exist: it cannot be merged"
            return _failed(at, gone)
        if git.run(worktree, "merge-base", "--is-ancestor", ref, "HEAD").ok:
            continue
        message = f"Merge lane {lane} ({branch}) into {action.branch}"
        ran = git.merge(worktree, BranchName(ref), message, pass_fds=fds)
        if ran.ok:
            continue
        if not git.merging(worktree):
            return _failed(at, f"git merge of lane {lane} ({branch}) refused", ran)
        files = git.unmerged(worktree)
        aborted = git.run(worktree, "merge", "--abort", pass_fds=fds)
        if not aborted.ok:
            what = f"merging lane {lane} ({branch}) conflicted, and git merge --abort failed"
            return _failed(at, what, aborted)
        return [MergeConflicted(at=at, lane=lane, files=pvector(files))]
    return []


def _failed(at: Instant, what: str, ran: Ran | None = None) -> list[Observation]:
    if ran is None:
        return [ActionFailed(at=at, action=ActionName.MERGE_LANES, output=what)]
    said = (ran.err.strip() or ran.out.strip()) or "no output"
    return [
        ActionFailed(
            at=at,
            action=ActionName.MERGE_LANES,
            argv=pvector(ran.argv),
            status=ran.status,
            output=f"{what}: {said}",
        ),
    ]
