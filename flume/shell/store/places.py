"""Where places' journals live, the host's registry of repositories, and places read back.

A place's journal is ``<git-common-dir>/flume/<kind>--<name>/journal.jsonl``: inside the
repository's own git directory, so it goes wherever the repository goes and no worktree's
status sees it. The registry, ``$XDG_STATE_HOME/flume/repositories`` (one absolute path a
line), lets a bare ``flume status`` find every repository on the host that has places.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

from flume.core.errors import UsageError
from flume.core.launch import Host
from flume.core.observations import Observation
from flume.core.place import Place
from flume.core.settings import Settings
from flume.core.step import Decision, replay, step

# Re-exported: they were always found here.
from flume.shell.host import private as private  # noqa: PLC0414
from flume.shell.host import registry_path as registry_path  # noqa: PLC0414
from flume.shell.host import remembered as remembered  # noqa: PLC0414
from flume.shell.host import state_dir as state_dir  # noqa: PLC0414
from flume.shell.store.journal import JournalError, locked, read, write_fault
from flume.shell.tools import git

JOURNAL = "journal.jsonl"


HOST_FILE = "host"


def host_id() -> str | None:
    """This host's id, kept in its state folder; None when it never made one (never launched)."""
    try:
        text = (state_dir() / HOST_FILE).read_text(encoding="ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    return text or None


def host() -> Host:
    """This host, as a launch records it: its id (made once, at random) and its state folder.

    Two users, or a test beside a person, have two state folders and so two hosts, even on one
    repository: each host's supervisor carries only the places its own host launched.
    """
    folder = state_dir()
    known = host_id()
    if known is None:
        private(folder)
        made = folder / f".{HOST_FILE}.{secrets.token_hex(8)}"
        made.write_text(f"{secrets.token_hex(16)}\n", encoding="ascii")
        # A link never replaces: of two first launches at once, one host id wins, for both.
        with contextlib.suppress(FileExistsError):
            os.link(made, folder / HOST_FILE)
        made.unlink()
        known = host_id()
        if known is None:
            message = f"{folder / HOST_FILE} holds no host id"
            raise OSError(message)
    return Host(id=known, state=str(folder))


def remember(repository: Path) -> None:
    """Add a repository's main worktree to the registry, once (under a lock)."""
    path = registry_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = f"{repository.resolve()}\n"
    with path.open("a+", encoding="utf-8") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        file.seek(0)
        if line not in set(file.readlines()):
            file.write(line)
            file.flush()
            os.fsync(file.fileno())


def repository_of(path: Path) -> Path:
    """The main worktree of the repository at ``path``; a usage error when there is none."""
    _a_folder(path)
    try:
        repository = git.main_worktree(path)
    except git.BareRepositoryError as bare:
        inside = path.resolve() == bare.common.resolve() or bare.common in path.resolve().parents
        what = (
            "is a bare repository"
            if inside
            else f"is a worktree of the bare repository {bare.common}"
        )
        raise UsageError.one(
            "repository",
            f"{path} {what}: it has no main worktree for flume to put places beside",
            f"launch in a clone with a working tree (git clone {bare.common} <folder>), or lay "
            f"it out as <folder>/.bare with a file <folder>/.git holding 'gitdir: ./.bare'",
        ) from bare
    except git.GitError as error:
        raise _not_in_a_repository(path) from error
    if git.toplevel(path) is None and path.resolve() != repository.resolve():
        raise UsageError.one(
            "repository",
            f"{path} is inside the git directory {git.common_dir(path)}, not a worktree",
            f"name the repository's worktree, {repository}",
        )
    return repository


def _a_folder(path: Path) -> None:
    """``path`` is a folder; a usage error naming what it is otherwise."""
    if not path.exists():
        raise UsageError.one("repository", f"{path} does not exist", "name a git repository")
    if not path.is_dir():
        raise UsageError.one(
            "repository", f"{path} is a file, not a folder", "name a git repository's folder"
        )


def _not_in_a_repository(path: Path) -> UsageError:
    return UsageError.one(
        "repository",
        f"{path} is not in a git repository",
        "name a folder inside a git repository",
    )


@attrs.frozen(kw_only=True)
class Located:
    """A repository as a launch needs it: main worktree, journals, whether it has a commit yet."""

    #: The main worktree (:func:`repository_of`).
    main: Path
    #: Where its places' journals live (:func:`journals_dir`).
    journals: Path
    #: The main worktree's HEAD names a commit (:func:`flume.shell.tools.git.has_commits`).
    has_commits: bool


def locate(path: Path) -> Located:
    """:func:`repository_of`, :func:`journals_dir` and whether it has commits, mostly in one git.

    The same usage errors as :func:`repository_of`. A folder in a linked worktree is one git
    more: the commits asked of are the main worktree's.
    """
    _a_folder(path)
    where = git.where(path)
    if where is None or where.common.name != ".git":
        # Outside a worktree (a bare repository, or the .bare layout's own folder), or a git
        # directory laid out otherwise (.bare, a bare repository's worktree, a submodule): the
        # long way, which knows each of them.
        main = repository_of(path)
        return Located(main=main, journals=journals_dir(main), has_commits=git.has_commits(main))
    main = where.common.parent
    in_main = where.toplevel == main
    has_commits = where.head is not None if in_main else git.has_commits(main)
    return Located(main=main, journals=where.common / "flume", has_commits=has_commits)


def journals_dir(repository: Path) -> Path:
    """Where the repository's places keep their journals."""
    return git.common_dir(repository) / "flume"


@contextlib.contextmanager
def names_locked(repository: Path, *, journals: Path | None = None) -> Iterator[None]:
    """Hold the repository's lock on place names: taking a name, or setting a tidied one aside.

    A name free again after its place was tidied is taken by moving the old journal aside and
    renaming the new one in; under this lock no other launch or tidy can do either meanwhile.
    ``journals`` is :func:`journals_dir`, when the caller knows it already.
    """
    folder = journals if journals is not None else journals_dir(repository)
    private(folder)
    descriptor = os.open(folder / ".names.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


@attrs.frozen(kw_only=True)
class Found:
    """A place read back from its journal, or the reason it could not be."""

    journal: Path
    place: Place | None
    problem: str | None = None
    torn: bool = False


def places_of(repository: Path, settings: Settings, only: str | None = None) -> list[Found]:
    """Every place the repository's journals describe, replayed, in name order.

    With ``only``, just the place of that name: the others' journals are not read.
    """
    try:
        folder = journals_dir(repository)
    except git.GitError as error:
        return [Found(journal=repository, place=None, problem=str(error))]
    found: list[Found] = []
    if only is not None:
        # A name, not a pattern: what a caller typed is never globbed.
        journals = [folder / only / JOURNAL] if (folder / only / JOURNAL).is_file() else []
    else:
        journals = sorted(folder.glob(f"*/{JOURNAL}")) if folder.is_dir() else []
    # Dot folders are not places: a launch's staging, and tidied places set aside.
    for journal in (path for path in journals if not path.parent.name.startswith(".")):
        try:
            contents = read(journal)
            place = replay(settings, contents.observations)
        except (JournalError, UsageError, OSError) as error:
            found.append(Found(journal=journal, place=None, problem=str(error)))
            continue
        found.append(Found(journal=journal, place=place, torn=contents.torn))
    return found


def _repository_here() -> Path | None:
    """The main worktree of the repository the caller stands in, if any."""
    try:
        return git.main_worktree(Path.cwd())
    except (git.GitError, OSError):
        return None


def find(name: str, repository: Path | None, settings: Settings) -> Found:
    """The one place called ``name`` (``<kind>--<name>``), in ``repository`` or on the host."""
    repositories = [repository_of(repository)] if repository else remembered()
    matches = [
        found
        for where in repositories
        for found in places_of(where, settings, only=name)
        if found.journal.parent.name == name
    ]
    if not matches:
        where = ", ".join(map(str, repositories)) or "any repository flume knows"
        raise UsageError.one(
            "place", f"no place {name} in {where}", "run flume status to list the places there are"
        )
    if len(matches) > 1 and repository is None:
        # Asked from inside a repository (or one of its places' worktrees): that one's.
        here = _repository_here()
        mine = [
            found
            for found in matches
            if found.place is not None
            and here is not None
            and Path(found.place.launch.repository).resolve() == here.resolve()
        ]
        matches = mine if len(mine) == 1 else matches
    if len(matches) > 1:
        where = ", ".join(
            found.place.launch.repository if found.place else str(found.journal)
            for found in matches
        )
        raise UsageError.one(
            "place",
            f"{name} names places in several repositories: {where}",
            "say which with --repository",
        )
    return matches[0]


def command(path: Path, seen: Observation, settings: Settings) -> Decision:
    """Journal a caller's command, if the place's rules accept it, under the journal's lock.

    The check and the append happen in one hold of the lock, so no other writer slips a line
    in between. A refused command raises :class:`UsageError` and nothing is journaled.
    """
    with locked(path) as held:
        place = replay(settings, held.read().observations)
        decision = step(settings, place, seen)
        held.append(seen)
    return decision


def give(found: Found, seen: Observation, settings: Settings) -> Decision:
    """Journal the command ``seen`` for the place ``found``, if its rules accept it.

    Raises :class:`UsageError`: the core's refusal (nothing journaled), or, with exit status 1,
    a journal that cannot be read (nothing journaled either: nobody would act on it) or written
    (naming the path and the system's words).
    """
    if found.place is None:
        raise UsageError.one(
            "place",
            f"the journal {found.journal} cannot be read: {found.problem or 'unreadable'}",
            "mend or move the journal; flume status lists the journals it cannot read",
            exit_status=1,
        )
    try:
        return command(found.journal, seen, settings)
    except JournalError as error:
        raise UsageError.one(
            "place",
            f"the journal {found.journal} cannot be read: {error}",
            "mend or move the journal; flume status lists the journals it cannot read",
            exit_status=1,
        ) from error
    except FileNotFoundError as error:
        # Tidied and set aside between finding it and journaling.
        raise UsageError.one(
            "place",
            f"the place's journal {found.journal} is gone (its place was tidied)",
            "run flume status to list the places there are",
        ) from error
    except OSError as error:
        raise UsageError.one(
            "place",
            write_fault(found.journal, error),
            "free space, or make the journal's folder writable, then run it again",
            exit_status=1,
        ) from error


def command_if(
    path: Path, seen: Observation, settings: Settings, wanted: Callable[[Place], bool]
) -> Decision | None:
    """:func:`command`, only when ``wanted(place)`` holds of the place as the journal has it now.

    Judged in the same hold of the lock as the check and the append: what a run orders its
    lane (:class:`~flume.core.actions.OrderLane`) is given only if the lane has not had it
    already, whoever wrote last. None when not wanted: nothing is journaled.
    """
    with locked(path) as held:
        place = replay(settings, held.read().observations)
        if not wanted(place):
            return None
        decision = step(settings, place, seen)
        held.append(seen)
    return decision
