"""A launch, checked whole and journaled: the first phase of a place's two-phase start.

Theory of operation. Everything a launch names is checked before anything exists: the core
checks what the values alone decide (the name, the brief, the base's form, the stages to wait
on); this module checks what only the world can tell (the repository, its commits, its config,
the kind, the base branch, a name already in use, the agent's program and tmux installed). Any
problem is a :class:`UsageError` and nothing is created: no branch, worktree, journal or
registry entry.

A launch that passes is journaled as its ``Launched`` observation (the intent). The journal is
written in a staging folder and renamed into place, so it appears whole or not at all; the
rename is also what makes two launches of one name race fairly: exactly one rename wins, and
the other launch is told why. The effect (the worktree, the setup) is the supervisor's to
perform and observe, so a supervisor killed at any point finishes the launch once it is back.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import attrs
from pyrsistent import pmap, pset, pvector
from pyrsistent.typing import PMap

from flume.core.errors import Problem, UsageError, refused
from flume.core.ids import BranchName, Instant, KindName, SessionId, Sha, StageName, WorkName
from flume.core.judging import launch_settings
from flume.core.kinds import Kind, spreading, steps
from flume.core.launch import AgentSettings, Launch, Panes, check_launch, place_path
from flume.core.observations import Launched
from flume.core.place import Life
from flume.core.settings import Settings
from flume.core.step import replay, step
from flume.core.workflow.caps import WorstCase, worst_case
from flume.shell import agents, process
from flume.shell.agents import sandbox
from flume.shell.declared import config
from flume.shell.declared.kinds import read_kind_file
from flume.shell.panes import herdr
from flume.shell.perform import gates, launch_words
from flume.shell.perform.launch_words import Made
from flume.shell.store import journal, places
from flume.shell.tools import git, locate


@attrs.frozen(kw_only=True)
class Request:
    """What the caller asked for, as typed."""

    repository: Path
    kind: str
    name: str
    brief: str
    base: str | None = None
    mark: str | None = None
    waits: tuple[str, ...] = ()
    agent: AgentSettings = attrs.field(factory=AgentSettings)
    #: A kind the launch carries (``--kind-file``), in place of a built-in or declared one.
    carried: Kind | None = None
    #: Where the carried kind's steps gated on tests are declared (``file:line``).
    carried_tests: PMap[StageName, str] = attrs.field(factory=pmap)
    #: A fleet place carried again: the head its branch starts at (FLEET-CARRIED-HEAD).
    head: str | None = None


def _problem(field: str, what: str, mend: str) -> UsageError:
    return UsageError.one(field, what, mend)


def check(request: Request, settings: Settings, clock: Callable[[], float]) -> Launched:
    """The launch as the journal's first line, or a :class:`UsageError` naming what is wrong."""
    return _checked(request, settings, clock)[0]


@attrs.frozen(kw_only=True)
class _Resolved:
    """A launch with its kind, settings and the repository's facts, checked but for the world."""

    located: places.Located
    config: config.Config
    settings: Settings
    kind: Kind
    launch: Launch
    listed: git.Branches


def _resolve(request: Request, settings: Settings) -> _Resolved:
    """The launch's kind and settings resolved, and every check the values alone decide."""
    located = places.locate(request.repository)
    repository = located.main
    if not located.has_commits:
        raise _problem(
            "repository",
            f"{repository} has no commits, so there is no base to cut a branch from",
            "make a first commit, then launch again",
        )
    declared = config.load(repository)
    settings = declared.settings(settings)
    if request.agent.panes is Panes.HERDR:
        # A place is made only for a herdr that answers and speaks a protocol flume knows.
        herdr.check_server()
    settings = launch_settings(
        settings, panes=request.agent.panes, confirm_declared="confirm_seconds" in declared.timing
    )
    if request.carried is None:
        kind = declared.kind(request.kind)
    elif request.carried.name != request.kind:
        raise _problem(
            "kind",
            f"--kind names {request.kind!r} but the kind file declares {request.carried.name!r}",
            "name the kind the file declares, or leave --kind out",
        )
    else:
        kind = request.carried
    _check_tests_declared(request, declared, kind)
    listed = git.branches(repository)
    base = request.base or git.shared_branch(repository, main=repository, listed=listed)
    if base is None:
        raise _problem(
            "base",
            f"{repository} has no shared branch (no remote HEAD, and the main worktree's HEAD "
            "is detached)",
            "name the base with --base",
        )
    launch = Launch(
        repository=str(repository),
        kind=KindName(request.kind),
        name=WorkName(request.name),
        brief=request.brief,
        base=BranchName(base),
        agent=request.agent,
        waits=pset(StageName(stage) for stage in request.waits),
        mark=request.mark,
        carried=_carried(repository, request.head),
    )
    check_launch(launch, kind)
    return _Resolved(
        located=located,
        config=declared,
        settings=settings,
        kind=kind,
        launch=launch,
        listed=listed,
    )


def _carried(repository: Path, head: str | None) -> Sha | None:
    """The commit a carried launch starts its branch at, resolved; it must be here already."""
    if head is None:
        return None
    found = git.commit(repository, head)
    if found is None:
        raise _problem(
            "carried",
            f"the head {head} to carry the place from is no commit of {repository}",
            "fetch it from the remote first (git fetch), then launch again",
        )
    return found


def _check_tests_declared(request: Request, declared: config.Config, kind: Kind) -> None:
    """A step gated on tests needs a test command the repository declares (docs/config.md)."""
    gates = (
        request.carried_tests
        if request.carried is not None
        else declared.tests_gates.get(kind.name, pmap())
    )
    if gates and not declared.test_commands():
        raise UsageError(
            tuple(
                Problem(
                    field=where,
                    what=f"step {name} is gated on tests, but the repository's "
                    f"{config.FILE_NAME} declares no test command",
                    mend=f'declare [tests] command = ["pytest", "-q"] (or [land] checks) in '
                    f"{config.FILE_NAME}, or gate the step otherwise",
                )
                for name, where in sorted(gates.items())
            ),
        )


def _check_sandboxes(request: Request, kind: Kind) -> None:
    """A sandboxed step's agent can be held in its sandbox here, or the launch is refused.

    "A sandboxed step must not silently run unsandboxed": what its agent's sandbox needs
    (bubblewrap), and the endpoint its agent's network is limited to, are checked before
    anything is made. The start of each agent checks again, and a step whose sandbox went
    missing since stops short, named.
    """
    for found in steps(kind.body):
        if not found.sandbox:
            continue
        program = found.agent.agent if found.agent is not None else request.agent.agent
        flags = request.agent.flags if found.agent is None else ()
        agent = agents.of(program)
        lacking = agent.sandbox_missing()
        if lacking is not None:
            what, mend = lacking
            raise _problem("sandbox", f"step {found.name} is sandboxed, but {what}", mend)
        unnamed = agent.sandbox_needs(SessionId(""), flags).unnamed
        if unnamed:
            what = f"step {found.name} is sandboxed, but {unnamed}"
            raise _problem("sandbox", what, sandbox.UNNAMED_MEND)


def _checked(
    request: Request, settings: Settings, clock: Callable[[], float]
) -> tuple[Launched, Path]:
    """:func:`check`'s line, and the folder of the repository's journals.

    Each thing git is asked once: the repository, its journals and its commits in one
    ``rev-parse``; every branch head, the base's among them, and the remote's HEAD in one
    ``for-each-ref``.
    """
    resolved = _resolve(request, settings)
    located, declared, settings = resolved.located, resolved.config, resolved.settings
    kind, launch, listed = resolved.kind, resolved.launch, resolved.listed
    repository = located.main
    base = launch.base
    # Every program a step runs is installed: the launch's, and each a step names as its own.
    programs = [request.agent.agent] + [
        each.agent.agent for each in steps(kind.body) if each.agent is not None
    ]
    missing = next(
        (said for said in (agents.of(program).missing() for program in programs) if said),
        None,
    ) or locate.missing_panes(request.agent.panes)
    if missing is not None:
        raise _problem("agent", *missing)
    _check_sandboxes(request, kind)
    start = listed.resolve(launch.base)
    if start is None:
        raise _problem(
            "base",
            f"the base branch {base!r} does not exist in {repository}",
            "name an existing branch (git branch --list shows them)",
        )
    remote = kind.finalize.push if kind.finalize is not None else ""
    if remote and not git.run(repository, "remote", "get-url", "--", remote).ok:
        raise _problem(
            "finalize",
            f"the kind pushes to the remote {remote!r}, which {repository} lacks",
            f"add it (git remote add {remote} URL), or push elsewhere",
        )
    seen = Launched(
        at=Instant(clock()),
        launch=launch,
        kind=kind,
        setup=declared.setup,
        copy=declared.copy,
        start=start,
        settings=settings,
        board=str(gates.board_of(place_path(launch), launch.place)),
        tests=declared.test_commands(),
    )
    decision = step(settings, None, seen)
    branch, path = str(decision.place.branch), Path(decision.place.path)
    _check_free(repository, located.journals, launch, branch, path, heads=listed.heads)
    # The launching host carries it (HOST-OWNS-PLACE); named only once all is checked, so a
    # refused launch makes nothing, not even the host's id.
    return attrs.evolve(seen, launch=attrs.evolve(launch, host=places.host())), located.journals


def _check_free(  # noqa: PLR0913 (each is a thing already known)
    repository: Path,
    journals: Path,
    launch: Launch,
    branch: str,
    path: Path,
    *,
    heads: dict[BranchName, Sha],
) -> None:
    """The name is free: no live place, worktree path or branch (of ``heads``) holds it."""
    name = launch.place
    existing = journals / name / places.JOURNAL
    if existing.exists() and not _tidied(existing):
        raise _problem(
            "name",
            f"{name} is already launched in {repository}",
            f"choose another name, or drop and tidy it first (flume drop {name})",
        )
    if path.exists() or path.is_symlink():
        raise _problem(
            "name",
            f"{path} already exists",
            "choose another name, or move that folder away",
        )
    if branch in heads:
        raise _branch_in_the_way(repository, BranchName(branch), launch.base)
    # git keeps refs as files: a branch "fix" leaves no room for "fix/x", nor "fix/x/y" for it.
    parts = branch.split("/")
    clash = next(
        (
            head
            for head in heads
            if head in {"/".join(parts[:end]) for end in range(1, len(parts))}
            or head.startswith(f"{branch}/")
        ),
        None,
    )
    if clash is not None:
        raise _problem(
            "name",
            f"the branch {clash} in {repository} leaves no room for the branch {branch}",
            "choose another name, or rename that branch",
        )


def _branch_in_the_way(repository: Path, branch: BranchName, base: BranchName) -> UsageError:
    """The branch left holding the name (kept by tidy, or someone's), and the command freeing it.

    Tidy keeps a branch holding commits its base lacks, and a dropped change's: what it holds is
    said, so nobody deletes work unseen.
    """
    where, name = shlex.quote(str(repository)), shlex.quote(branch)
    delete = f"git -C {where} branch -D {name}"
    count = git.lacks(repository, branch, base)
    if count == 0:
        holds = f", holding nothing {base} lacks"
        mend = f"choose another name, or free this one: {delete}"
    else:
        commits = f"{count} commit{'s' if count != 1 else ''}"
        holds = "" if count is None else f", holding {commits} {base} lacks"
        look = f"git -C {where} log {shlex.quote(base)}..{name}"
        mend = (
            f"choose another name, or look at what it holds ({look}), keep what you want, "
            f"then free the name: {delete}"
        )
    return _problem("name", f"the branch {branch} already exists in {repository}{holds}", mend)


def _tidied(path: Path) -> bool:
    """The journal describes a place already tidied, whose name is free again."""
    try:
        read = journal.read(path)
        return replay(Settings(), read.observations).life is Life.TIDIED
    except (journal.JournalError, UsageError, OSError):
        return False


def write_board(board: Path, seen: Launched) -> None:
    """Make the place's board and its ``task.md``: the work as launched, for every step to read."""
    places.private(board.parent)
    board.mkdir(exist_ok=True)
    launch = seen.launch
    task = (
        f"# {launch.place}\n\n"
        f"- kind: {launch.kind}\n"
        f"- name: {launch.name}\n"
        f"- base: {launch.base}\n\n"
        f"## Brief\n\n{launch.brief}\n"
    )
    (board / "task.md").write_text(task, encoding="utf-8")


#: Every launch's staging folder is named ``.launching-<boot>-<pid>-<random>``.
STAGING = ".launching-"


def _boot() -> str:
    """This boot of the host (a pid names a process only within one boot)."""
    try:
        text = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii")
    except OSError:
        return "noboot"
    return text.strip().replace("-", "")[:12] or "noboot"


def staging_prefix() -> str:
    """The name a launch's staging folder starts with: its owner, this boot and process."""
    return f"{STAGING}{_boot()}-{os.getpid()}-"


def staging_owner_gone(name: str) -> bool | None:
    """The launch that made the staging folder ``name`` is gone: another boot, or its process.

    None when the name does not say (an older flume's): then its age must. No clock decides
    it: a clock stepped forward never removes a live launch's folder.
    """
    parts = name.removeprefix(STAGING).split("-")
    if not name.startswith(STAGING) or len(parts) < 3 or not parts[1].isdigit():
        return None
    return parts[0] != _boot() or not process.alive(int(parts[1]))


def launch(request: Request, settings: Settings, clock: Callable[[], float]) -> Made:
    """Check the launch and journal it; raises :class:`UsageError` and creates nothing if bad."""
    seen, folder = _checked(request, settings, clock)
    _check_spread(seen)
    place = step(settings, None, seen).place
    repository = Path(seen.launch.repository)

    def take(target: Path) -> bool:
        _take_tidied_name(repository, folder, target)
        return True

    journal_first(seen, folder, board=True, existing=take)
    return Made(
        place=seen.launch.place,
        repository=repository,
        path=Path(place.path),
        branch=place.branch,
        base=seen.launch.base,
        journal=folder / seen.launch.place / places.JOURNAL,
    )


def _check_spread(seen: Launched) -> None:
    """A kind whose block spreads its lanes over the fleet is launched in a fleet host's clone.

    There a fleet worker hands the lanes to the fleet (``flume.fleetRemote``, which the worker
    sets); anywhere else nobody would, and the run would wait on its lanes for ever. (A fleet
    launch is carried, and so checked, on a fleet host: its launching host may be none.)
    """
    block = spreading(seen.kind)
    repository = Path(seen.launch.repository)
    if block is not None and git.fleet_remote(repository) is None:
        raise _problem(
            "kind",
            f"block {block} of {seen.launch.kind} spreads its lanes over the fleet, and "
            f"{repository} is no fleet host's clone",
            "start flume fleet worker in it (docs/fleet.md), launch with --fleet, or leave "
            "spread out",
        )


def journal_first(
    seen: Launched, folder: Path, *, board: bool, existing: Callable[[Path], bool]
) -> bool:
    """Journal ``seen`` as the first line of the place's new journal in ``folder``; True if so.

    The journal is written in a staging folder and renamed into place under the repository's
    name lock, so it appears whole or not at all. ``board``: the place's board is made with its
    ``task.md`` first (a lane's is its run's, made already: it is neither made nor removed
    here). Where a journal of the name stands already, ``existing(folder / name)`` says
    whether to take the name (it sets the old journal aside, or raises) or leave it be; left,
    nothing is written.
    """
    repository = Path(seen.launch.repository)
    target = folder / seen.launch.place
    folder.mkdir(exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=staging_prefix(), dir=folder))
    try:
        journal.create(staging / places.JOURNAL, seen)
        # The board is made before the journal is renamed into place, so no place is ever seen
        # without its task.md; ``places/`` is ignored first, so git status never lists it.
        git.exclude(repository, "/places/")
        if board:
            write_board(Path(seen.board), seen)
        places.remember(repository)
        with places.names_locked(repository, journals=folder):
            if (target / places.JOURNAL).exists() and not existing(target):
                shutil.rmtree(staging, ignore_errors=True)
                return False
            staging.rename(target)
            _sync(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if board and not (target / places.JOURNAL).exists():
            shutil.rmtree(seen.board, ignore_errors=True)
        raise
    return True


def launch_lane(seen: Launched, *, own_board: bool = False) -> bool:
    """Journal a lane's launch (its run's ``LaunchLane``) in its repository; False: it was already.

    The lane's journal starts as a ``flume launch``'s does (:func:`journal_first`), beside its
    run's, but its board is its run's, made already: neither written nor removed. ``own_board``:
    a spread lane on a fleet host, whose run is elsewhere, has a board of its own, made here. A
    journal of the lane's name that stands already is the lane launched before a restart (or
    dropped and tidied since): it is left be, and nothing is written. Only a tidied lane cut
    from another head gives its name up: its journal is set aside, as a tidied place's is for a
    launch of its name. (A loop's later pass names its lanes anew, ``+slice-a@2``: no pass takes
    another's.)
    """
    folder = places.journals_dir(Path(seen.launch.repository))

    def earlier_pass(target: Path) -> bool:
        try:
            lane = replay(Settings(), journal.read(target / places.JOURNAL).observations)
        except (journal.JournalError, UsageError, OSError):
            return False
        if lane.life is not Life.TIDIED or lane.start == seen.start:
            return False
        archive(folder, target)
        return True

    return journal_first(seen, folder, board=own_board, existing=earlier_pass)


def launch_asked(asked: launch_words.LaunchAsked) -> Made:
    """A launch as its caller words it (:func:`flume.api.launch`'s arguments), checked, journaled.

    The kind file, the kind named, the agent and the panes are checked first; then the brief, if
    a function, is called (the CLI reads stdin so); then the rest. The same for the API, the CLI
    and the supervisor launching for the CLI: one launch, one set of checks.
    """
    request = _request(asked, lambda brief: brief if isinstance(brief, str) else brief())
    try:
        return launch(request, Settings(), time.time)
    except OSError as error:
        where = error.filename or request.repository
        raise refused(
            "repository",
            f"{where} cannot be written: {error.strerror or error} (errno {error.errno})",
            "free space, or make the folder writable, then launch again",
        ) from error


def check_asked(asked: launch_words.LaunchAsked) -> Launched:
    """A launch as its caller words it, checked whole as :func:`launch_asked` checks it.

    Nothing is journaled or made: its journal's first line, as it would be. A fleet launch is
    checked so on the launching host before any host is asked to carry it.
    """
    request = _request(asked, lambda brief: brief if isinstance(brief, str) else brief())
    return check(request, Settings(), time.time)


def plan_asked(asked: launch_words.LaunchAsked) -> WorstCase:
    """The worst case the launch's kind's caps allow (``flume launch --plan``); starts nothing.

    The launch is checked as a launch is (the kind file, the kind, the name, the base, the
    agent's words); its brief is not read.
    """
    # The brief is the work, not its caps: a plan reads none.
    request = _request(
        asked, lambda brief: brief if isinstance(brief, str) and brief.strip() else "(planned only)"
    )
    return worst_case(_resolve(request, Settings()).kind)


def _request(
    asked: launch_words.LaunchAsked,
    brief_of: Callable[[str | Callable[[], str]], str],
) -> Request:
    """The launch ``asked`` as a :class:`Request`, its brief as ``brief_of`` gives it.

    The kind file, the kind named, the agent and the panes are checked first, then the brief is
    given (the CLI's, if a function, reads stdin), so a bad word reads no standard input.
    """
    read = read_kind_file(asked.kind_file) if asked.kind_file is not None else None
    carried = read.kind if read is not None else None
    chosen_agent, chosen_panes = asked.checked()
    return Request(
        repository=asked.repository.absolute(),
        kind=asked.kind or (carried.name if carried is not None else ""),
        carried=carried,
        carried_tests=read.tests_gates if read is not None else pmap(),
        name=asked.name,
        brief=brief_of(asked.brief),
        base=asked.base,
        mark=asked.mark,
        waits=asked.waits,
        agent=AgentSettings(
            agent=chosen_agent,
            model=asked.model,
            flags=pvector(asked.agent_args),
            panes=chosen_panes,
        ),
        head=asked.carried,
    )


def _take_tidied_name(repository: Path, folder: Path, target: Path) -> None:
    """Set a tidied place's journal aside to take its name; a live one keeps it."""
    if not _tidied(target / places.JOURNAL):
        raise _problem(
            "name",
            f"{target.name} was launched in {repository} by another launch at the same moment",
            "choose another name",
        )
    archive(folder, target)


def _sync(folder: Path) -> None:
    """Make a rename in ``folder`` durable: a launch acknowledged survives a power loss."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def archive(folder: Path, target: Path) -> None:
    """Move a tidied place's journal aside, so its name can be launched again.

    The caller holds :func:`places.names_locked` and has judged the place tidied.
    """
    archive = folder / ".tidied"
    archive.mkdir(exist_ok=True)
    kept = Path(tempfile.mkdtemp(prefix=f"{target.name}.", dir=archive))
    with contextlib.suppress(FileNotFoundError):
        target.rename(kept / target.name)
