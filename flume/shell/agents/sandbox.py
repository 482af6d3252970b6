"""What a sandboxed step's agent may write, found for its place (docs/config.md, "Sandboxed steps").

The seed's Step is "one sandboxed agent": a step that says ``sandbox = true`` runs an agent whose
commands write only its worktree and its board, and what git needs to commit there. Each agent's
module holds the fence its own way: Claude Code through its own sandbox settings
(:mod:`~flume.shell.agents.claude`), the others inside bubblewrap
(:mod:`flume.shell.tools.bubblewrap`). This module only finds the fence, one ``git rev-parse``.

What git needs to commit in a linked worktree, and nothing more of the repository's git folder:
its objects, the worktree's own admin folder (its HEAD, index, logs), and of its refs only the
branch's own folders, ``refs/heads/<prefix>`` and ``logs/refs/heads/<prefix>`` (made if missing),
each bound alone, a mount point the agent cannot rename: ``refs``, ``logs/refs`` and
``packed-refs`` around them stay read-only (renaming ``refs/heads`` once got round a kept
file). Its config and hooks stay read-only: a hook written there would run later outside any
sandbox. The base's ref and reflog are kept read-only (:attr:`Fence.kept`), so a sandboxed agent
cannot move the branch its work lands on, even beside its branch in its folder; a base only in
``packed-refs`` is written loose first, so that there is a file to keep. flume's own folder for
the place (``<common>/flume/<place>``, its journal) is not the agent's to write: a line it wrote
there would be taken as the caller's or the supervisor's. Its ``flume needs``, ``progress``,
``ask`` and ``submit`` go through an inbox of its own instead (:attr:`Fence.inbox`,
:mod:`flume.shell.store.inbox`), which the supervisor reads and answers.

An agent inside bubblewrap (:func:`wrapped`) may write its own folders besides (the test
agent's home, where its transcript and registry are; Codex's sessions and logs, its home's
settings read-only over a stand-in of its own) and a temporary folder of its own, ``TMPDIR``,
in flume's agents folder (``<session>.tmp``): the rest of ``/tmp`` is read-only to it, as
everything else.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import attrs

from flume.core.place import Place
from flume.shell.store.inbox import VARIABLE as INBOX_VARIABLE
from flume.shell.tools import bubblewrap, git


@attrs.frozen(kw_only=True)
class Fence:
    """The folders a sandboxed agent may write, and the files inside them it may not."""

    #: The place's worktree: the agent's work.
    worktree: Path
    #: The place's board (``places/.boards/<place>``); None in a place made before boards.
    board: Path | None
    #: flume's folder for the place, where its journal is: read-only to the agent.
    records: Path
    #: The agent's inbox, where its commands to flume go (``$FLUME_INBOX`` inside).
    inbox: Path
    #: What git needs to commit in the worktree: objects, refs, logs, the worktree's admin folder.
    git: tuple[Path, ...]
    #: The repository's git folder, shared by its worktrees.
    common: Path
    #: The branch's own folders of refs and of reflogs (``refs/heads/<prefix>``,
    #: ``logs/refs/heads/<prefix>``): of git's refs, only these are writable.
    own: tuple[Path, Path]
    #: Inside those, kept read-only: the worktree's ``.git`` file, its admin folder's links
    #: back, the main worktree's HEAD and index, the base's ref and reflog.
    kept: tuple[Path, ...]

    @property
    def writable(self) -> tuple[Path, ...]:
        """Every folder the agent may write."""
        board = () if self.board is None else (self.board,)
        return (self.worktree, *board, self.inbox, *self.git)


def fence_of(place: Place, inbox: Path) -> Fence | None:
    """The fence of the place's sandboxed agent, its inbox ``inbox`` (made here).

    None when git cannot say where its folders are.
    """
    worktree = Path(place.path)
    dirs = git.git_dirs(worktree)
    if dirs is None:
        return None
    admin, common = dirs
    inbox.mkdir(parents=True, exist_ok=True)
    # The branch's own folders of refs and reflogs, made if missing: each is bound on its own,
    # a mount point the agent cannot rename; the folders above them stay read-only.
    heads, logs = common / "refs" / "heads", common / "logs" / "refs" / "heads"
    own = tuple((root / place.branch).parent for root in (heads, logs))
    for folder in own:
        folder.mkdir(parents=True, exist_ok=True)
    return Fence(
        worktree=worktree,
        board=Path(place.board) if place.board else None,
        records=common / "flume" / place.launch.place,
        inbox=inbox,
        git=(common / "objects", *own, admin),
        common=common,
        own=(own[0], own[1]),
        kept=(
            worktree / ".git",
            admin / "gitdir",
            admin / "commondir",
            admin / "config.worktree",
            *_base_kept(worktree, place.launch.base, ((heads, own[0]), (logs, own[1]))),
        ),
    )


def _base_kept(worktree: Path, base: str, owned: tuple[tuple[Path, Path], ...]) -> list[Path]:
    """What keeps the base's ref and reflog as they are: their files, or what holds them.

    ``owned`` pairs the folder of branch refs (and that of their reflogs) with the branch's own
    folder in it. A base kept only in ``packed-refs`` has no file of its own, and a loose one
    the agent wrote would hide it: its ref is written loose first, as git itself would, naming
    the same commit (and its reflog made, empty), so that there is a file to keep. A base
    beside the branch (a lane's, ``feature/greet`` beside ``feature/greet+slice-a``) is in a
    folder the agent may write: the first thing on the way to it there (its file, or the
    folder holding it) is kept read-only, a mount point the agent cannot rename or remove.
    Elsewhere its file is kept (for bubblewrap its folder is read-only already; Claude Code's
    sandbox is told to deny it).
    """
    kept: list[Path] = []
    for root, folder in owned:
        path = root / base
        if path == folder:
            continue  # git cannot hold both: the branch's folder is no ref
        if not path.exists():
            if root.parts[-3:] == ("logs", "refs", "heads"):
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
            else:
                named = git.run(worktree, "rev-parse", "--verify", "-q", f"refs/heads/{base}")
                if not named.ok:
                    continue  # no such base: nothing to keep
                if not _write_ref(path, named.out.strip()):
                    continue  # git holds its lock: it is writing the ref itself
        inside = path.is_relative_to(folder)
        kept.append(folder / path.relative_to(folder).parts[0] if inside else path)
    return kept


def _write_ref(path: Path, commit: str) -> bool:
    """Write a loose ref as git does, under its lock (``<ref>.lock``); False if it is held."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(f"{path.name}.lock")
    try:
        handle = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(handle, "w", encoding="ascii") as file:
        file.write(commit + "\n")
    lock.replace(path)
    return True


def environment(fence: Fence) -> dict[str, str]:
    """What a fenced agent's environment holds besides its own: where its inbox is."""
    return {INBOX_VARIABLE: str(fence.inbox)}


def wrapped(  # noqa: PLR0913 (each is one thing the agent may write, or keeps)
    argv: list[str],
    fence: Fence,
    *,
    own: Iterable[Path],
    scratch: Path,
    covered: Iterable[tuple[Path, Path]] = (),
    kept: Iterable[Path] = (),
) -> list[str]:
    """``argv`` inside bubblewrap, writing only the fence and the agent's ``own`` folders.

    The agent's own folders are made first (a folder that does not exist cannot be bound), and
    so is ``scratch``, its temporary folder (``TMPDIR`` inside). ``covered`` are (folder,
    stand-in) pairs: the agent writes the stand-in where it sees the folder (its home, whose
    settings are kept), and ``kept`` are files of the real folders it reads there, read-only.
    """
    for folder in (*own, scratch, *(stand_in for _folder, stand_in in covered)):
        folder.mkdir(parents=True, exist_ok=True)
    return bubblewrap.wrap(
        argv,
        cwd=fence.worktree,
        writable=(*fence.writable, *own, scratch),
        readonly=(*fence.kept, *kept),
        env={"TMPDIR": str(scratch), **environment(fence)},
        covered=covered,
    )
