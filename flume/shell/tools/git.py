"""git: every call an argument list with its cwd, run by :func:`flume.shell.process.run`.

Nothing here decides. Each function runs git and reports what it said; callers turn that into
observations. Nothing a caller writes reaches a shell: plumbum passes argv to exec directly.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import attrs

from flume.core.ids import BranchName, Sha
from flume.shell import environment, process
from flume.shell.process import Ran

#: git must never stop to ask (a pager, an editor, credentials) or read the user's config, and
#: never takes a lock it does not need: ``git status`` would otherwise rewrite the index as it
#: reads it, holding ``index.lock`` meanwhile, where a person's git (or another landing's look
#: for that very lock) would find it held (GIT_OPTIONAL_LOCKS, git(1)).
_ENV = {
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "GIT_PAGER": "cat",
    "LC_ALL": "C",
}


def run(cwd: Path, *args: str, pass_fds: tuple[int, ...] = ()) -> Ran:
    """Run ``git args`` in ``cwd``; never raises on a non-zero exit.

    ``pass_fds`` are inherited by git: the supervisor passes its lock, so that a git it started
    holds the lock until it ends, even if the supervisor is killed meanwhile. The hooks it runs
    are the repository's main configuration's only (:func:`held_hooks`).
    """
    # The environment goes with this call only: changing plumbum's shared one is not safe
    # with the supervisor's worker threads running git at the same time.
    # The environment as it is now (plumbum's own is a copy taken when it was imported), or the
    # one a launch's caller sent (flume.shell.environment), with git kept from ever asking.
    env = {**environment.current(), **_ENV}
    hooks = held_hooks(cwd)
    held = ("-c", f"core.hooksPath={hooks}") if hooks is not None else ()
    return process.run(("git", *held, *args), cwd=cwd, env=env, pass_fds=pass_fds)


#: Each folder's repository's hooks, as :func:`held_hooks` found them, with what they rest on.
_HOOKS: dict[Path, tuple[tuple[Path, int], Path | None]] = {}


def held_hooks(cwd: Path) -> Path | None:
    """The only hooks flume's git runs in ``cwd``: the repository's main configuration's.

    A worktree can carry its own configuration (``config.worktree``, read where the repository
    sets ``extensions.worktreeConfig``) and its own files: an agent that set ``core.hooksPath``
    there, or committed hooks into a folder a relative ``core.hooksPath`` names, would have
    flume's own merge, rebase or commit run them on the host. So flume's git is always told the
    hooks of the main configuration (``<common>/config``): its ``core.hooksPath`` if absolute,
    resolved in the main worktree if relative, else ``<common>/hooks``. None outside a
    repository (git then finds none to run of flume's choosing). Found without a process: the
    folder's ``.git`` names its git folder, which names the common one; remembered while the
    main configuration is unchanged.
    """
    common = _common_of(cwd)
    if common is None:
        return None
    config = common / "config"
    try:
        stamp = (config, config.stat().st_mtime_ns)
    except OSError:
        return common / "hooks"
    known = _HOOKS.get(cwd)
    if known is not None and known[0] == stamp:
        return known[1]
    said = process.run(
        ("git", "config", "--file", str(config), "--get", "core.hooksPath"),
        cwd=common,
        env={**environment.current(), **_ENV},
    )
    named = said.out.strip() if said.ok else ""
    if not named:
        found = common / "hooks"
    else:
        path = Path(named).expanduser()
        found = path if path.is_absolute() else common.parent / path
    _HOOKS[cwd] = (stamp, found)
    return found


def _common_of(cwd: Path) -> Path | None:  # noqa: PLR0911 (each layout says where)
    """The common git folder of the repository ``cwd`` is the top of (a worktree, or a git folder).

    None when ``cwd`` is neither (a subfolder is not looked above: flume runs git at tops).
    """
    dot = cwd / ".git"
    try:
        if dot.is_dir():
            return dot
        if dot.is_file():
            text = dot.read_text(encoding="utf-8").strip()
            if not text.startswith("gitdir:"):
                return None
            admin = Path(text.removeprefix("gitdir:").strip())
            admin = admin if admin.is_absolute() else cwd / admin
            named = admin / "commondir"
            if not named.is_file():
                return admin
            common = Path(named.read_text(encoding="utf-8").strip())
            return common if common.is_absolute() else admin / common
        if (cwd / "HEAD").is_file() and (cwd / "objects").is_dir():
            return cwd
    except OSError:
        return None
    return None


def toplevel(path: Path) -> Path | None:
    """The top of the worktree ``path`` is in, or None when it is in no git repository."""
    ran = run(path, "rev-parse", "--show-toplevel")
    return Path(ran.out.strip()) if ran.ok else None


class GitError(Exception):
    """git could not say what flume needs to know; nothing is done on a guess."""


def common_dir(repository: Path) -> Path:
    """The repository's shared git directory (the same from every worktree)."""
    ran = run(repository, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if not ran.ok or not ran.out.strip():
        message = f"git cannot find the repository at {repository}: {ran.err.strip()}"
        raise GitError(message)
    return Path(ran.out.strip())


def _own_git_dir(repository: Path) -> Path | None:
    """``repository/.git`` when it is the shared git directory; None when only git can say.

    It is for a main worktree as ``git init`` and ``git clone`` lay it out; not for a ``.git``
    file (a linked worktree, the ``.bare`` layout, a submodule) or a ``$GIT_DIR`` given.
    """
    dot_git = repository / ".git"
    given = environment.current()
    if "GIT_DIR" in given or "GIT_COMMON_DIR" in given:
        return None
    if dot_git.is_dir() and not (dot_git / "commondir").exists():
        return dot_git
    return None


class BareRepositoryError(GitError):
    """The repository is bare and not laid out with a folder of its own: no place to put places.

    ``common`` is the bare repository's folder.
    """

    def __init__(self, common: Path) -> None:
        super().__init__(f"{common} is a bare repository")
        self.common = common


def is_bare(common: Path) -> bool:
    """The git directory ``common`` is a bare repository's (``core.bare`` is true)."""
    ran = run(common, "rev-parse", "--is-bare-repository")
    return ran.ok and ran.out.strip() == "true"


@attrs.frozen(kw_only=True)
class Where:
    """Where a folder is in its repository: its worktree's top, and the shared git directory."""

    toplevel: Path
    common: Path
    #: The commit the worktree's HEAD names; None while HEAD names no commit (no commits yet).
    head: Sha | None


def where(path: Path) -> Where | None:
    """Where ``path`` is, in one ``git rev-parse``; None when it is in no worktree.

    What :func:`toplevel`, :func:`common_dir` and :func:`has_commits` (of ``path``'s worktree)
    each say, asked at once. An answer this cannot read for certain (a path holding a newline)
    is asked for again the long way, one question at a time.
    """
    ran = run(
        path,
        "rev-parse",
        "--path-format=absolute",
        "--show-toplevel",
        "--git-common-dir",
        "--verify",
        "--quiet",
        "HEAD^{commit}",
    )
    said = ran.out.splitlines()
    if ran.status == 0 and len(said) == 3:
        return Where(toplevel=Path(said[0]), common=Path(said[1]), head=Sha(said[2]))
    if ran.status == 1 and len(said) == 2:
        return Where(toplevel=Path(said[0]), common=Path(said[1]), head=None)
    top = toplevel(path)
    if top is None:
        return None
    head = run(path, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    return Where(
        toplevel=top,
        common=common_dir(path),
        head=Sha(head.out.strip()) if head.ok else None,
    )


def git_dirs(path: Path) -> tuple[Path, Path] | None:
    """The git directory of ``path``'s worktree and the repository's common one; None if none.

    A linked worktree's git directory is its admin folder, ``<common>/worktrees/<id>``.
    """
    ran = run(path, "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir")
    said = ran.out.splitlines()
    if not ran.ok or len(said) != 2:
        return None
    return Path(said[0]), Path(said[1])


def main_worktree(repository: Path) -> Path:
    """The main worktree of the repository ``repository`` belongs to.

    For a bare repository in the ``.bare`` layout (``proj/.bare``, and ``proj/.git`` a file
    holding ``gitdir: ./.bare``) it is the folder holding both, ``proj``: git finds the
    repository from there, and its worktrees sit beside it. Any other bare repository has none:
    :class:`BareRepositoryError` names it.
    """
    common = common_dir(repository)
    if not is_bare(common):
        return common.parent
    holder = common.parent
    if (holder / ".git").is_file():
        try:
            if common_dir(holder).resolve() == common.resolve():
                return holder
        except GitError:
            pass
    raise BareRepositoryError(common)


def has_commits(repository: Path) -> bool:
    """HEAD names a commit."""
    return run(repository, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").ok


def resolve(repository: Path, branch: BranchName) -> Sha | None:
    """The commit ``refs/heads/<branch>`` points at, or None."""
    ran = run(repository, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}")
    return Sha(ran.out.strip()) if ran.ok else None


def commit(repository: Path, revision: str) -> Sha | None:
    """The commit ``revision`` names in ``repository`` (a full or abbreviated sha), or None."""
    if revision.startswith("-"):
        return None
    ran = run(repository, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    return Sha(ran.out.strip()) if ran.ok else None


def shared_branch(
    repository: Path, *, main: Path | None = None, listed: Branches | None = None
) -> BranchName | None:
    """The repository's shared branch: the remote's HEAD branch, else the main worktree's.

    ``main`` is the main worktree, and ``listed`` the repository's :func:`branches`, when the
    caller knows them already.
    """
    if listed is not None and listed.remote_head is not None:
        remote_head = listed.remote_head
    else:
        remote = run(repository, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
        remote_head = remote.out.strip() if remote.ok else ""
    if "/" in remote_head:
        name = BranchName(remote_head.split("/", 1)[1])
        head = listed.resolve(name) if listed is not None else resolve(repository, name)
        if head is not None:
            return name
    where = main if main is not None else main_worktree(repository)
    checked_out = run(where, "symbolic-ref", "--quiet", "--short", "HEAD")
    return BranchName(checked_out.out.strip()) if checked_out.ok else None


def heads(repository: Path) -> dict[BranchName, Sha]:
    """Every branch head of the repository, in one ``git for-each-ref``."""
    ran = run(repository, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/")
    found: dict[BranchName, Sha] = {}
    for line in ran.out.splitlines():
        sha, _, ref = line.partition(" ")
        found[BranchName(ref.removeprefix("refs/heads/"))] = Sha(sha)
    return found


#: The remote's HEAD, listed beside the branches when it names a branch.
_REMOTE_HEAD = "refs/remotes/origin/HEAD"


@attrs.frozen(kw_only=True)
class Branches:
    """A repository's branch heads and its remote's HEAD, as one ``git for-each-ref`` lists them.

    What :func:`heads`, :func:`resolve` and the remote half of :func:`shared_branch` say, asked
    at once. What the listing cannot say for certain is asked of git as they ask it: a head that
    names no commit, and a remote HEAD it leaves out (absent, or naming a branch that is gone).
    """

    repository: Path
    #: Every branch and the object its head names, as :func:`heads` gives them.
    heads: dict[BranchName, Sha]
    #: The branches whose head names a commit: what :func:`resolve` says of them.
    commits: frozenset[BranchName]
    #: ``refs/remotes/origin/HEAD`` as ``git symbolic-ref --short`` says it ("" when it is not
    #: symbolic); None when the listing has none.
    remote_head: str | None
    #: git listed them (else nothing is known, and everything is asked).
    listed: bool

    def resolve(self, branch: BranchName) -> Sha | None:
        """The commit ``branch`` points at, or None: :func:`resolve`'s answer."""
        if branch in self.commits:
            return self.heads[branch]
        if self.listed and branch not in self.heads:
            return None
        return resolve(self.repository, branch)


def branches(repository: Path) -> Branches:
    """Every branch head of ``repository`` and its remote's HEAD, in one ``git for-each-ref``."""
    fields = ("%(objectname)", "%(objecttype)", "%(symref:short)", "%(refname)")
    listing = ("for-each-ref", f"--format={'%00'.join(fields)}", "refs/heads/", _REMOTE_HEAD)
    ran = run(repository, *listing)
    found: dict[BranchName, Sha] = {}
    commits: set[BranchName] = set()
    remote_head: str | None = None
    for line in ran.out.splitlines() if ran.ok else ():
        sha, kind, symbolic, ref = line.split("\0")
        if ref == _REMOTE_HEAD:
            remote_head = symbolic
            continue
        name = BranchName(ref.removeprefix("refs/heads/"))
        found[name] = Sha(sha)
        if kind == "commit":
            commits.add(name)
    return Branches(
        repository=repository,
        heads=found,
        commits=frozenset(commits),
        remote_head=remote_head,
        listed=ran.ok,
    )


def is_ancestor(repository: Path, older: Sha, newer: Sha) -> bool:
    """``older`` is in ``newer``'s history (``git merge-base --is-ancestor``)."""
    return run(repository, "merge-base", "--is-ancestor", older, newer).ok


#: Who makes a merge commit where the repository names nobody (no ``user.email``).
FLUME_IDENTITY = ("-c", "user.name=flume", "-c", "user.email=flume@localhost")


def merge(
    worktree: Path, branch: BranchName, message: str, *, pass_fds: tuple[int, ...] = ()
) -> Ran:
    """``git merge --no-ff --no-edit -m MESSAGE BRANCH`` in ``worktree``: always a merge commit.

    Made by the repository's (or the environment's) identity; by flume's where the repository
    configures no ``user.email``, so a merge never stops on git asking who it is.
    """
    named = run(worktree, "config", "--get", "user.email").ok
    who = () if named else FLUME_IDENTITY
    return run(
        worktree,
        *(*who, "merge", "--no-ff", "--no-edit", "-m", message, branch),
        pass_fds=pass_fds,
    )


def merging(worktree: Path) -> bool:
    """A merge is under way in ``worktree`` (``MERGE_HEAD`` exists): it stopped on conflicts."""
    return run(worktree, "rev-parse", "--quiet", "--verify", "MERGE_HEAD").ok


def lacking(worktree: Path, start: Sha, branch: BranchName) -> tuple[str, ...]:
    """The files ``branch`` changed since ``start`` that ``HEAD`` holds as at ``start``.

    A merge that kept a branch's work changes each file the branch changed (or takes it as the
    branch has it); one concluded without it (a commit git left under a lock, a person's
    "ours") leaves them as they were: those are its work missing from the worktree's branch.
    """
    changed = run(worktree, "diff", "--name-only", "--no-renames", start, branch)
    paths = [line for line in changed.out.splitlines() if line]
    if not changed.ok or not paths:
        return ()
    held = run(worktree, "diff", "--name-only", "--no-renames", start, "HEAD", "--", *paths)
    moved = set(held.out.splitlines())
    return tuple(path for path in paths if path not in moved)


def held_paths(worktree: Path, branch: BranchName, paths: Sequence[str]) -> frozenset[str]:
    """Which of ``paths`` the tree of ``branch``'s head holds (``git ls-tree``)."""
    ran = run(worktree, "ls-tree", "-r", "--name-only", "-z", branch, "--", *paths)
    return frozenset(path for path in ran.out.split("\0") if path)


def unmerged(worktree: Path) -> tuple[str, ...]:
    """The files a merge left unmerged in ``worktree`` (``git diff --diff-filter=U``), in order."""
    ran = run(worktree, "diff", "--name-only", "--diff-filter=U")
    return tuple(line for line in ran.out.splitlines() if line)


def checked_out(repository: Path, branch: BranchName) -> bool:
    """Some worktree of the repository has ``branch`` checked out."""
    return branch in worktree_paths(repository).values()


def lacks(
    repository: Path, branch: BranchName, base: BranchName, *, since: Sha | None = None
) -> int | None:
    """How many commits of ``branch`` its ``base`` lacks: ``git rev-list --count base..branch``.

    ``since``: counted past that commit instead of the base (a lane whose base is gone). None
    when git cannot say (the base is gone, say): never taken as zero, which would let tidy
    delete the branch.
    """
    held = since if since is not None else f"refs/heads/{base}"
    ran = run(repository, "rev-list", "--count", f"{held}..refs/heads/{branch}", "--")
    return int(ran.out.strip()) if ran.ok else None


def log(
    repository: Path, branch: BranchName, base: BranchName, *, most: int = 200
) -> list[tuple[Sha, str]] | None:
    """The commits of ``branch`` its ``base`` lacks, newest first: each sha and its subject.

    At most ``most``; None when git cannot say (a branch gone).
    """
    ran = run(
        repository,
        "log",
        f"--max-count={most}",
        "--format=%H%x1f%s",
        f"refs/heads/{base}..refs/heads/{branch}",
        "--",
    )
    if not ran.ok:
        return None
    found: list[tuple[Sha, str]] = []
    for line in ran.out.splitlines():
        sha, _, subject = line.partition("\x1f")
        found.append((Sha(sha), subject))
    return found


@attrs.frozen(kw_only=True)
class WorktreeChanges:
    """What ``git status`` says of a worktree."""

    dirty: bool
    untracked: bool


def changes(worktree: Path) -> WorktreeChanges:
    """Uncommitted changes to tracked files, and untracked files git does not ignore."""
    ran = run(
        worktree, "status", "--porcelain=v1", "--untracked-files=normal", "--ignore-submodules=none"
    )
    lines = ran.out.splitlines()
    return WorktreeChanges(
        dirty=any(not line.startswith("??") for line in lines),
        untracked=any(line.startswith("??") for line in lines),
    )


def add_worktree(  # noqa: PLR0913 (its place, its branch and how it is added)
    repository: Path,
    path: Path,
    branch: BranchName,
    start: Sha | None,
    *,
    force: bool = False,
    pass_fds: tuple[int, ...] = (),
) -> Ran:
    """``git worktree add``: a new ``branch`` cut at ``start``, or (None) the branch as it is.

    The files are checked out by one worker a core (``checkout.workers=0``, git's parallel
    checkout): most of a launch's time is this checkout, and the result is the same file for
    file. A person's own ``checkout.workers`` gives way to it for flume's worktrees only.
    ``force``: over git's entry of a worktree whose folder was removed (``--force``).
    """
    where = ("-b", branch, str(path), start) if start is not None else (str(path), branch)
    forced = ("--force",) if force else ()
    return run(
        repository,
        *("-c", "checkout.workers=0", "worktree", "add", "--quiet", *forced, *where),
        pass_fds=pass_fds,
    )


def worktree_paths(repository: Path) -> dict[Path, BranchName | None]:
    """Every worktree of the repository and the branch it has checked out."""
    ran = run(repository, "worktree", "list", "--porcelain")
    found: dict[Path, BranchName | None] = {}
    path: Path | None = None
    for line in ran.out.splitlines():
        if line.startswith("worktree "):
            path = Path(line.removeprefix("worktree "))
            found[path] = None
        elif line.startswith("branch ") and path is not None:
            found[path] = BranchName(line.removeprefix("branch refs/heads/"))
    return found


def exclude(repository: Path, pattern: str) -> None:
    """Add ``pattern`` to the repository's ``info/exclude`` once, so git status never lists it.

    A main worktree's ``.git`` folder is the shared git directory itself: git is asked where
    that is only for a repository laid out otherwise.
    """
    path = (_own_git_dir(repository) or common_dir(repository)) / "info" / "exclude"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    if pattern in lines:
        return
    with path.open("a", encoding="utf-8") as file:
        if lines and not path.read_bytes().endswith(b"\n"):
            file.write("\n")
        file.write(f"{pattern}\n")


#: git's words when another process updated a remote-tracking ref a fetch was updating too.
_RACED = ("cannot lock ref", "unable to update local ref")
#: How many times a fetch that lost such a race is tried again.
FETCH_TRIES = 5


def fetch(repository: Path, remote: str, *refspecs: str, timeout: float = 60.0) -> Ran:
    """Fetch ``refspecs`` from ``remote``, quietly and without tags; never raises.

    A fetch still running after ``timeout`` seconds is ended and reported as status 124: a
    remote that hangs must not hold up whoever waits on the answer. Two fetches of one
    repository at once (a fleet host's lander and its worker) may race to update the same
    remote-tracking ref, and git fails the one that lost: it is tried again, a few times.
    """
    args = ("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--end-of-options")
    argv = (*args, remote, *refspecs)
    for tries in range(1, FETCH_TRIES + 1):
        ran = process.run(
            ("git", *argv), cwd=repository, env={**environment.current(), **_ENV}, timeout=timeout
        )
        if ran.ok or tries == FETCH_TRIES or not any(said in ran.err for said in _RACED):
            return ran
        time.sleep(0.05 * tries)
    return ran


#: The git config key naming the remote a fleet host's clone lands its places through: set by
#: ``flume fleet worker`` on its clone (docs/fleet.md). Unset: places land on the local base.
FLEET_REMOTE = "flume.fleetRemote"


def fleet_remote(repository: Path) -> str | None:
    """The remote this repository's places land through (a fleet host's clone), or None."""
    ran = run(repository, "config", "--get", FLEET_REMOTE)
    name = ran.out.strip()
    return name if ran.ok and name else None


def push(repository: Path, remote: str, refspec: str, timeout: float = 60.0) -> Ran:
    """Push one ``refspec`` to ``remote``, never forced; never raises.

    git refuses a push that is no fast-forward of what the remote holds: a compare-and-swap
    on the remote's ref, whose old value is what the commit was built on. ``--porcelain``
    says per ref what happened (``!`` rejected, `` `` or ``*`` done, ``=`` up to date).
    """
    if refspec.startswith(("+", "-")):
        message = f"flume never forces a push: {refspec!r}"
        raise ValueError(message)
    argv = ("push", "--porcelain", "--no-verify", "--end-of-options", remote, refspec)
    return process.run(
        ("git", *argv), cwd=repository, env={**environment.current(), **_ENV}, timeout=timeout
    )


def delete_pushed(
    repository: Path, remote: str, branch: str, expected: str, timeout: float = 60.0
) -> Ran:
    """Delete ``branch`` on ``remote`` only while it is still at ``expected``; never raises.

    A compare-and-swap on the remote's ref (``--force-with-lease``): a branch someone moved
    since is left as it is. Used for a landed place's branch, whose work its base holds.
    """
    lease = f"--force-with-lease=refs/heads/{branch}:{expected}"
    argv = ("push", "--porcelain", "--no-verify", lease, "--end-of-options", remote)
    return process.run(
        ("git", *argv, f":refs/heads/{branch}"),
        cwd=repository,
        env={**environment.current(), **_ENV},
        timeout=timeout,
    )


def holds(repository: Path, base: Sha, branch: Sha) -> bool:
    """``base`` holds ``branch``'s work: reachable, patch-equivalent, or merging changes nothing.

    Asked by the lander before and after it lands, and by the landings observer each time a
    base or branch moved: the one meaning of "landed" both use.
    """
    if run(repository, "merge-base", "--is-ancestor", branch, base).status == 0:
        return True
    cherry = run(repository, "cherry", base, branch)
    if cherry.ok and not any(line.startswith("+") for line in cherry.out.splitlines()):
        return True
    merged = run(repository, "merge-tree", "--write-tree", "--no-messages", base, branch)
    if merged.status != 0 or not merged.out.strip():
        return False
    tree = run(repository, "rev-parse", "--verify", "--quiet", f"{base}^{{tree}}")
    return tree.ok and merged.out.split()[0] == tree.out.strip()


@attrs.frozen(kw_only=True)
class Upstream:
    """Where a base is fetched from: the remote, its branch, and the remote-tracking ref."""

    remote: str
    merge: str
    tracking: str


def upstreams(repository: Path, bases: set[BranchName]) -> dict[str, Upstream]:
    """Each base's remote (``branch.<base>.remote``, else ``origin``), read in one git call.

    A base with no remote, ``.`` (a local branch) or a bare URL has none: its local branch is
    where it lands.
    """
    pattern = r"^(branch\..*\.(remote|merge)|remote\..*\.url)$"
    ran = run(repository, "config", "-z", "--get-regexp", pattern)
    values: dict[str, str] = {}
    for entry in ran.out.split("\0"):
        key, _, value = entry.partition("\n")
        if key:
            values.setdefault(key, value)
    remotes = {
        key.removeprefix("remote.").removesuffix(".url")
        for key in values
        if key.startswith("remote.") and key.endswith(".url")
    }
    found: dict[str, Upstream] = {}
    for base in bases:
        remote = values.get(f"branch.{base}.remote") or "origin"
        if remote not in remotes:
            continue
        merge = values.get(f"branch.{base}.merge") or f"refs/heads/{base}"
        if not merge.startswith("refs/heads/"):
            continue
        tracking = f"refs/remotes/{remote}/{merge.removeprefix('refs/heads/')}"
        found[base] = Upstream(remote=remote, merge=merge, tracking=tracking)
    return found
