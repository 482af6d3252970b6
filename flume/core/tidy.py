"""R10 tidy: remove what landed or was dropped, and never lose a commit or touch a stranger's work.

Theory of operation. Tidy decides on facts the shell gathered (:class:`TidyFactsSeen`): the
worktree (does it exist, did flume make it, is it dirty) and the branch (does it exist, how many
of its commits its base lacks). "Landed fix: remove its place and branch. Dropped change: remove
its place, keep its branch. A worktree made by hand: never touched. flume removes only places it
made. Before it removes a branch it compares the branch with its base: a branch holding commits
its base lacks stays, and flume names it." A dropped change keeps its branch whatever it holds,
as the seed says; other dropped work (a fix, a question, a kind declared) whose branch holds
nothing its base lacks loses the branch with its place, so the name is free to launch again.
Beyond the seed: a worktree with uncommitted or untracked changes is never removed without the
caller's explicit force, and force never lets a branch with commits its base lacks go. Every
place and branch kept is named with its reason.

A place is tidied only on facts that show nothing left to remove: after asking for removals,
tidy keeps wanting and looks again once they are done, so a shell that dies between removing
the worktree and deleting the branch finishes the work when it comes back.

Rule ids: R10, TIDY-DONE-ON-FACTS, TIDY-ONLY-OURS, TIDY-KEEPS-AHEAD-BRANCH,
TIDY-DROPPED-CHANGE-KEEPS-BRANCH, TIDY-DROPPED-EMPTY-BRANCH-GOES, TIDY-DIRTY-NEEDS-FORCE.
"""

from __future__ import annotations

from pyrsistent import pvector

from flume.core.actions import (
    Action,
    DeleteBranch,
    Event,
    GatherTidyFacts,
    KeepBranch,
    KeepPlace,
    RemoveWorktree,
    Report,
)
from flume.core.ids import Instant, KindName
from flume.core.observations import (
    BranchDeleted,
    BranchFacts,
    TidyFactsSeen,
    WorktreeFacts,
)
from flume.core.place import (
    Life,
    Outcome,
    Place,
    Tidy,
    TidyGathering,
    TidyNotWanted,
    TidyWanted,
    evolve,
    restore_command,
)
from flume.core.settings import Settings

#: The kind whose dropped work keeps its branch even when the branch holds nothing new: "removes
#: the dropped change's place and keeps its branch".
CHANGE = KindName("change")


def _commits(count: int) -> str:
    return f"{count} commit{'s' if count != 1 else ''}"


def plan(  # noqa: PLR0911, PLR0913 (each is one fact or word tidy decides on)
    *,
    kind: KindName,
    life: Life,
    made: bool,
    worktree: WorktreeFacts,
    branch: BranchFacts,
    force: bool,
) -> tuple[Action, ...]:
    """What tidy removes and keeps for one place, each kept thing with its reason."""
    if not made and not worktree.exists:
        # flume never made this place (its making failed, or never came): nothing to remove.
        if branch.exists:
            return (KeepBranch(branch=branch.name, reason="flume did not make its place: kept"),)
        return ()
    if made and worktree.plain:
        # Where flume's worktree was (deleted by hand), a folder that is no worktree stands:
        # what is in it is not flume's to judge, so it is never removed (TIDY-ONLY-OURS).
        reason = (
            "flume's worktree here is gone and a plain folder stands in its place: flume "
            "never removes it; look inside, remove it by hand, then run flume tidy again"
        )
        return (
            KeepPlace(path=worktree.path, reason=reason),
            KeepBranch(branch=branch.name, reason="its place's folder is kept: kept"),
        )
    if not (made and worktree.made_by_flume):
        return (
            KeepPlace(path=worktree.path, reason="made by hand: flume never touches it"),
            KeepBranch(branch=branch.name, reason="its worktree was not made by flume: kept"),
        )
    if life not in {Life.FINISHED, Life.DROPPED}:
        return (
            KeepPlace(path=worktree.path, reason=f"in flight ({life.value}): drop it to tidy it"),
            KeepBranch(branch=branch.name, reason="its place is in flight: kept"),
        )
    actions: list[Action] = []
    if worktree.exists:
        changed = worktree.dirty or worktree.untracked
        if changed and not force:
            what = " and ".join(
                word
                for word, present in (
                    ("uncommitted changes", worktree.dirty),
                    ("untracked files", worktree.untracked),
                )
                if present
            )
            return (
                KeepPlace(
                    path=worktree.path,
                    reason=f"holds {what}: kept; commit them, or tidy --force to discard them",
                ),
                KeepBranch(branch=branch.name, reason="checked out in a kept place: kept"),
            )
        actions.append(RemoveWorktree(path=worktree.path, force=changed))
    actions.extend(_branch_plan(kind=kind, life=life, branch=branch))
    return tuple(actions)


def _branch_plan(*, kind: KindName, life: Life, branch: BranchFacts) -> tuple[Action, ...]:
    if not branch.exists:
        return ()
    if life is Life.DROPPED and kind == CHANGE:
        # TIDY-DROPPED-CHANGE-KEEPS-BRANCH: "removes the dropped change's place and keeps its
        # branch".
        lacks = f"; {_commits(branch.base_lacks)} {branch.base} lacks" if branch.base_lacks else ""
        return (
            KeepBranch(
                branch=branch.name, reason=f"a dropped change keeps its branch{lacks}: kept"
            ),
        )
    if branch.base_lacks > 0:
        # TIDY-KEEPS-AHEAD-BRANCH: "a branch holding commits its base lacks stays, and flume
        # names it", whether its work landed or was dropped.
        reason = f"{branch.name} holds {_commits(branch.base_lacks)} {branch.base} lacks: kept"
        return (KeepBranch(branch=branch.name, reason=reason),)
    # TIDY-DROPPED-EMPTY-BRANCH-GOES (and a landed fix's branch): nothing on it is lost, and
    # keeping it would only block the name. Deleted only at the head that was counted: a commit
    # made since is never lost with it.
    return (DeleteBranch(branch=branch.name, base=branch.base, head_was=branch.head),)


def on_tidy_asked(place: Place, *, force: bool) -> Outcome:
    """Want a finished or dropped place tidied (with the caller's force); keep one in flight."""
    if place.life is Life.TIDIED:
        return place, ()
    if place.life not in {Life.FINISHED, Life.DROPPED}:
        keep = KeepPlace(
            path=place.path,
            reason=f"in flight (stage {place.stage.name}): drop it to tidy it",
        )
        return place, (keep,)
    # Asked again while gathering: the look goes on, decided with the caller's latest word.
    tidy: Tidy = (
        TidyGathering(force=force)
        if isinstance(place.tidy, TidyGathering)
        else TidyWanted(force=force)
    )
    return evolve(place, tidy=tidy), ()


def gather_when_free(settings: Settings, place: Place, now: Instant) -> Outcome:
    """Ask for the facts tidy decides on, once no agent lives.

    An agent still ending could commit after its branch was judged.
    """
    del settings, now
    wanted = place.tidy
    if not isinstance(wanted, TidyWanted) or place.agent is not None:
        return place, ()
    gather = GatherTidyFacts(
        path=place.path,
        branch=place.branch,
        base=place.launch.base,
        force=wanted.force,
    )
    return evolve(place, tidy=TidyGathering(force=wanted.force)), (gather,)


def on_facts(place: Place, seen: TidyFactsSeen) -> Outcome:
    """Decide the plan on the gathered facts, and report every thing kept.

    Only facts about this place's own worktree and branch, asked for, are taken; whether to
    force is the caller's word the core kept, never the shell's.
    """
    gathering = place.tidy
    if (
        place.life not in {Life.FINISHED, Life.DROPPED}
        or not isinstance(gathering, TidyGathering)
        or seen.branch.name != place.branch
        or seen.worktree.path != place.path
    ):
        return place, ()
    actions = plan(
        kind=place.launch.kind,
        life=place.life,
        made=place.made,
        worktree=seen.worktree,
        branch=seen.branch,
        force=gathering.force,
    )
    if any(isinstance(action, RemoveWorktree | DeleteBranch) for action in actions):
        # TIDY-DONE-ON-FACTS: the removals are asked for, and tidy looks again once they are
        # performed; only facts that show nothing left to remove make the place tidied.
        # What an earlier look kept is being removed now: the row no longer says it is kept.
        return evolve(place, tidy=TidyWanted(force=gathering.force), kept=pvector()), actions
    kept: tuple[Action, ...] = tuple(
        Report(event=Event.KEPT, text=f"{action.path}: {action.reason}")
        if isinstance(action, KeepPlace)
        else Report(event=Event.KEPT, text=f"{action.branch}: {action.reason}")
        for action in actions
        if isinstance(action, KeepPlace | KeepBranch)
    )
    # R10, "flume names it": what was kept, and why, shows on the place's row until a later
    # look finds it gone.
    said = pvector(report.text for report in kept if isinstance(report, Report))
    kept = (*kept, *_branch_lost(place, seen))
    place = evolve(place, tidy=TidyNotWanted(), kept=said)
    if not seen.worktree.exists:
        place, gone = _gone(place)
        return place, (*actions, *kept, *gone)
    return place, (*actions, *kept)


def _branch_lost(place: Place, seen: TidyFactsSeen) -> tuple[Action, ...]:
    """WF-NO-LOST-COMMIT: a branch a person deleted, found gone by tidy, named with its restore.

    Tidy deletes a branch only when its base holds it; one gone that tidy did not delete (nor a
    landing make needless) may have taken commits nothing else holds: the command that puts it
    back at the head flume last saw is said, once, as tidy finds it.
    """
    if seen.branch.exists or place.branch_gone or place.head is None or place.landed_at:
        return ()
    words = (
        f"{place.branch}: gone when tidied, deleted by hand; if its commits are nowhere else, "
        f"restore it with {restore_command(place, place.head)}"
    )
    return (Report(event=Event.BRANCH_GONE, text=words),)


def _gone(place: Place) -> Outcome:
    """The place's worktree is gone: the place is tidied (callers hold it finished or dropped)."""
    place = evolve(place, life=Life.TIDIED)
    name = place.launch.place
    return place, (Report(event=Event.TIDIED, text=f"{name} tidied: its worktree is gone"),)


def on_branch_deleted(place: Place, seen: BranchDeleted) -> Outcome:
    """The branch is gone."""
    if seen.branch != place.branch:
        return place, ()
    return evolve(place, branch_gone=True), ()
