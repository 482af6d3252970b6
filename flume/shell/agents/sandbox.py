"""The fence of a sandboxed step: what its agent sees, what it may write, where it may connect.

A step that says ``sandbox = true`` is "one sandboxed agent" (the seed's Step), and people turn
it on for agents they do not trust: a way out of it is worse than none (docs/config.md,
"Sandboxed steps"). So it is **deny by default** (:class:`~flume.shell.tools.bubblewrap.View`):
the agent sees

- the system's folders, read-only, with what the world may not read in ``/etc`` masked;
- flume's own interpreter and package, and the agent's program (:attr:`Needs.reads`), read-only;
- the repository's git folder read-only (no main worktree: a ``.env`` there is not its to read),
  with flume's records in it (journals) masked, and of it writable only its worktree's own admin
  folder, whose ``HEAD``, ``config.worktree`` (made empty first), ``gitdir`` and ``commondir``
  are kept read-only: no branch switched under flume's feet, no hook configured for later;
- its branch's folders of refs and reflogs as stand-ins of its own session's, and its own object
  folder (:mod:`~flume.shell.agents.fencerefs`, which carries its commits over);
- its worktree and the run's board, writable; no other place (``places/`` is masked);
- its inbox, writable: the only way it speaks to flume (no socket of flume's, tmux's or
  herdr's is there to reach, nor any other process: new pid and network namespaces);
- a private ``/tmp`` (``<session>.fence/tmp``) and, for its home and its own agent folders, a
  stand-in each (:class:`Home`): its settings bound read-only from the real folder, its sessions
  written in the stand-in, kept with the session (:func:`seen_home`);
- a network of its own, loopback alone: its model's endpoint reached through flume's warden
  outside (:mod:`~flume.shell.agents.fencewarden`), forwarded (an endpoint on the host's
  loopback) or through an HTTP ``CONNECT`` proxy that takes only the endpoint's host.

It runs without any capability (``--cap-drop ALL`` as root, and its first program,
:mod:`~flume.shell.agents.fenceinit`, checks ``CapEff`` is 0 before it starts the agent), in a
new session, with an environment of named variables only (no token of the caller's but the
agent's own). A gate's tests and a landing's checks of a run with sandboxed steps run in a fence
of their own (:func:`command_view`): the worktree, no network, no agent.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import os
import shutil
import sys
import urllib.parse
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

import flume
from flume.core.ids import BranchName, SessionId, Sha
from flume.core.place import Place
from flume.shell.agents import fencerefs
from flume.shell.agents.fencerefs import Mirror, prepare
from flume.shell.agents.fencewarden import kept_environment
from flume.shell.store import places
from flume.shell.store.inbox import VARIABLE as INBOX_VARIABLE
from flume.shell.tools import bubblewrap, git

#: The inside's first program.
_INIT = Path(__file__).with_name("fenceinit.py")
#: The warden outside, the pane's program.
_WARDEN = Path(__file__).with_name("fencewarden.py")
#: The port inside whose connections go to the warden's proxy (``HTTPS_PROXY``).
PROXY_PORT = 3128
#: Where the warden's sockets are seen inside: a short path (a socket's path holds 107 bytes at
#: most; a session's folder may be deeper).
NET_INSIDE = Path("/run/flume")
#: The variables a fenced program keeps of the environment it was given, by name.
_KEPT = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "LANG", "LANGUAGE",
        "TZ", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "PYTHONPATH", "NO_COLOR",
        "FLUME_SESSION", "FLUME_PLACE", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
    }
)  # fmt: skip
#: ... and by prefix.
_KEPT_PREFIXES = ("LC_",)
#: What a fenced program reads of the person's home, besides what its agent names: git's
#: settings (its name for commits).
_HOME_KEPT = (".gitconfig", ".config/git")


@attrs.frozen(kw_only=True)
class Home:
    """An agent's folder (its home, its settings folder) as the fenced agent sees it: a stand-in.

    The stand-in, kept in the session's fence folder, is writable: what the agent writes of its
    own (its sessions, its transcripts) stays there with the session. ``kept`` entries of the
    real folder are seen read-only through it (its settings, its login), and ``copied`` ones are
    copied in, the agent's own copy to change (Claude Code rewrites ``.claude.json`` as it runs).
    """

    real: Path
    kept: tuple[str, ...] = ()
    copied: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class Endpoint:
    """A host and port an agent must reach (its model's API)."""

    host: str
    port: int

    @property
    def on_loopback(self) -> bool:
        """On this host's loopback: forwarded as it is, the same port inside."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


@attrs.frozen(kw_only=True)
class Needs:
    """What an agent needs in its fence; its module says (``sandbox_needs``)."""

    #: Its folders, each seen as a stand-in.
    homes: tuple[Home, ...] = ()
    #: Files and folders it reads, read-only (its program's install, a script named by a flag).
    reads: tuple[Path, ...] = ()
    #: Files and folders of flume's it writes (its hook file).
    writes: tuple[Path, ...] = ()
    #: Variables it keeps of the environment (a name, or a prefix ending with ``_``).
    variables: tuple[str, ...] = ()
    #: Where it connects: its model's endpoint(s).
    endpoints: tuple[Endpoint, ...] = ()
    #: Why its endpoint cannot be named ("" when it can): the launch says so and starts nothing.
    unnamed: str = ""


@attrs.frozen(kw_only=True)
class Fence:
    """A sandboxed session's fence: its folder and the place's folders it is drawn around."""

    #: ``<agents>/<session>.fence``: its stand-ins, its ``/tmp``, its sockets.
    folder: Path
    #: The place's worktree: the agent's work.
    worktree: Path
    #: The run's board; None in a place made before boards.
    board: Path | None
    #: The repository's common git folder.
    common: Path
    #: The worktree's admin folder (``<common>/worktrees/<id>``).
    admin: Path
    #: The place's branch and its base.
    branch: BranchName
    base: BranchName
    #: The agent's inbox, where its commands to flume go (``$FLUME_INBOX`` inside).
    inbox: Path

    @property
    def mirror(self) -> Mirror:
        """Its branch's and objects' stand-ins (:mod:`~flume.shell.agents.fencerefs`)."""
        return Mirror(folder=self.folder, common=self.common, branch=self.branch)

    @property
    def scratch(self) -> Path:
        """Its ``/tmp``."""
        return self.folder / "tmp"

    @property
    def net(self) -> Path:
        """Where the warden's sockets are."""
        return self.folder / "net"

    @property
    def kept(self) -> tuple[Path, ...]:
        """Files in its writable folders it may not write (module doc)."""
        return (
            self.worktree / ".git",
            *(self.admin / name for name in ("HEAD", "gitdir", "commondir", "config.worktree")),
        )


def folder_of(session: str) -> Path:
    """A session's fence folder (it exists once the session was fenced)."""
    return places.state_dir() / "agents" / f"{session}.fence"


def seen_home(session: str, real: Path) -> Path:
    """Where a session's agent wrote what it sees at ``real``: its stand-in if it was fenced."""
    stand_in = _stand_in(folder_of(session), real)
    return stand_in if stand_in.is_dir() else real


def _stand_in(folder: Path, real: Path) -> Path:
    digest = hashlib.sha256(str(real).encode()).hexdigest()[:16]
    return folder / "homes" / f"{real.name or 'root'}-{digest}"


def fence_of(place: Place, session: SessionId, inbox: Path) -> Fence | None:
    """The session's fence, made (its folders, its stand-ins); None when git cannot say where.

    Made again for the same session (a supervisor restarted), what is there is kept.
    """
    dirs = git.git_dirs(Path(place.path))
    if dirs is None:
        return None
    admin, common = dirs
    fence = Fence(
        folder=folder_of(session),
        worktree=Path(place.path),
        board=Path(place.board) if place.board else None,
        common=common,
        admin=admin,
        branch=place.branch,
        base=place.launch.base,
        inbox=inbox,
    )
    fresh = not fence.folder.exists()
    for folder in (fence.folder, fence.scratch, fence.net, inbox):
        folder.mkdir(parents=True, exist_ok=True)
    for folder in (fence.folder, inbox):
        folder.chmod(0o700)
    (admin / "config.worktree").touch()
    if fresh:
        prepare(fence.mirror, fence.base)
        (fence.folder / _MIRRORED).write_text(
            json.dumps({"common": str(common), "branch": place.branch}), encoding="utf-8"
        )
    return fence


#: The file in a fence's folder naming what its mirror carries (:func:`mirror_of`).
_MIRRORED = "fence.json"


def mirror_of(session: str) -> Mirror | None:
    """The mirror of a fenced session's branch; None for a session that was never fenced."""
    folder = folder_of(session)
    try:
        said = json.loads((folder / _MIRRORED).read_text(encoding="utf-8"))
        return Mirror(folder=folder, common=Path(said["common"]), branch=BranchName(said["branch"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def carried_now(session: str, repository: Path, branch: BranchName) -> Sha | None:
    """A fenced session's commit made since the last carry, carried to its real branch now.

    The real branch's new head, or None (nothing new inside; not fenced). Two small files read
    when nothing moved; git is asked only when the stand-in moved.
    """
    mirror = mirror_of(session)
    if mirror is None or fencerefs.read(mirror.ref) == fencerefs.read(mirror.mirrored):
        return None
    real = git.resolve(repository, branch)
    carried = fencerefs.settle(mirror, real)
    return carried if carried not in {None, real} else None


def settle(session: str, real: Sha | None) -> Sha | None:
    """Carry a fenced session's branch over (:func:`~flume.shell.agents.fencerefs.settle`).

    The real branch's head after (``real``, its head now, when nothing moved or the session
    was never fenced).
    """
    mirror = mirror_of(session)
    return real if mirror is None else fencerefs.settle(mirror, real)


def interpreter() -> list[Path]:
    """What flume's own interpreter and package are read from (the agent runs ``flume``)."""
    found = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)}
    found.add(Path(sys.executable).resolve().parent.parent)
    found.add(Path(flume.__file__).resolve().parent)
    found.update(Path(each) for each in os.environ.get("PYTHONPATH", "").split(os.pathsep) if each)
    return sorted(path.resolve() for path in found if path.exists())


def endpoint_of(url: str) -> Endpoint | None:
    """The host and port an API's URL names; None when it names no host (or no known scheme)."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in {"http", "https"} or not parsed.hostname:
        return None
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
    except ValueError:
        return None
    return Endpoint(host=parsed.hostname, port=port)


def install_of(program: str) -> list[Path]:
    """What an agent's program is read from: the npm folder holding it, or its own folder."""
    located = shutil.which(program) if os.sep not in program else program
    if not located:
        return []
    path = Path(located)
    real = path.resolve()
    for folder in real.parents:
        if folder.name == "node_modules":
            return [path.parent, folder]
    return [path.parent, real.parent]


def _homes_view(
    fence_folder: Path, homes: Iterable[Home]
) -> tuple[list[tuple[Path, Path, bool]], list[Path]]:
    """The stand-ins of ``homes`` (made, their copies written) and what in them is kept."""
    stand_ins: list[tuple[Path, Path, bool]] = []
    kept: list[Path] = []
    for home in homes:
        stand_in = _stand_in(fence_folder, home.real)
        fresh = not stand_in.exists()
        stand_in.mkdir(parents=True, exist_ok=True)
        for name in home.copied:
            source = home.real / name
            if fresh and source.is_file():
                (stand_in / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, stand_in / name)
        for name in home.kept:
            source = home.real / name
            if source.exists():
                # A mount point inside the stand-in: made there, so bwrap need not make it.
                target = stand_in / name
                target.parent.mkdir(parents=True, exist_ok=True)
                if source.is_dir():
                    target.mkdir(exist_ok=True)
                else:
                    target.touch()
                kept.append(source)
        stand_ins.append((home.real, stand_in, True))
    return stand_ins, kept


def kept_names(needs: Needs) -> tuple[frozenset[str], tuple[str, ...]]:
    """The variables a fenced program keeps of its environment: by name, and by prefix."""
    names = set(_KEPT) | {name for name in needs.variables if not name.endswith("_")}
    prefixes = (*_KEPT_PREFIXES, *(name for name in needs.variables if name.endswith("_")))
    return frozenset(names), prefixes


def view(fence: Fence, needs: Needs, home: Path) -> bubblewrap.View:
    """What a fenced agent sees (module doc); ``home`` is its ``HOME``."""
    mirror = fence.mirror
    refs, logs = mirror.real_folders()
    homes = _merged((Home(real=home, kept=_HOME_KEPT), *needs.homes))
    homed, kept = _homes_view(fence.folder, homes)
    board = (fence.board,) if fence.board is not None else ()
    return bubblewrap.View(
        readonly=(fence.common, *interpreter(), *needs.reads, *kept, *fence.kept),
        writable=(fence.worktree, *board, fence.admin, fence.inbox, mirror.objects, *needs.writes),
        # The warden's sockets, read-only: a socket is reached through a read-only bind
        # (connect() writes no file), and only the warden's own are in this folder.
        stand_ins=(
            (refs, mirror.refs, True),
            (logs, mirror.logs, True),
            (NET_INSIDE, fence.net, False),
            *homed,
        ),
        masked=(fence.worktree.parent, fence.common / "flume"),
        scratch=fence.scratch,
        cwd=fence.worktree,
    )


def _merged(homes: Iterable[Home]) -> list[Home]:
    """One stand-in a folder (the person's home named twice: the agent keeps more of it)."""
    merged: dict[Path, Home] = {}
    for home in homes:
        if home.real == Path("/"):
            continue  # never a stand-in for the whole disk
        had = merged.get(home.real)
        merged[home.real] = (
            home
            if had is None
            else Home(
                real=home.real,
                kept=tuple(dict.fromkeys((*had.kept, *home.kept))),
                copied=tuple(dict.fromkeys((*had.copied, *home.copied))),
            )
        )
    return list(merged.values())


def fenced_settings(fence: Fence, needs: Needs) -> dict[str, str]:
    """What the environment inside is given besides what it keeps: its inbox, objects, proxy."""
    settings = {
        "TMPDIR": "/tmp",  # noqa: S108 (its own, inside)
        INBOX_VARIABLE: str(fence.inbox),
        "GIT_OBJECT_DIRECTORY": str(fence.mirror.objects),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(fence.common / "objects"),
        # Its own objects are carried over by flume: git must not pack them away meanwhile.
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "gc.auto",
        "GIT_CONFIG_VALUE_0": "0",
        "NO_PROXY": "localhost,127.0.0.1,::1",
        "no_proxy": "localhost,127.0.0.1,::1",
    }
    if any(not each.on_loopback for each in needs.endpoints):
        proxy = f"http://127.0.0.1:{PROXY_PORT}"
        settings |= {"HTTPS_PROXY": proxy, "https_proxy": proxy}
    return settings


def agent_command(argv: list[str], fence: Fence, needs: Needs, home: Path) -> list[str]:
    """``argv`` inside the fence: the warden outside, bubblewrap, the check inside, the agent.

    The warden is given the whole environment (from flume's private file, or a person's
    terminal) and passes on only the variables named here, and the settings of
    :func:`fenced_settings`: a key is never on a command line, where ``ps`` would show it.
    ``home`` is the agent's ``HOME``.
    """
    warden: list[str] = []
    init: list[str] = []
    proxied = [each for each in needs.endpoints if not each.on_loopback]
    for endpoint in needs.endpoints:
        if endpoint.on_loopback:
            name = f"{endpoint.port}.sock"
            warden += ["--forward", f"{fence.net / name}={endpoint.host}:{endpoint.port}"]
            init += ["--forward", f"{endpoint.port}={NET_INSIDE / name}"]
    if proxied:
        allowed = ",".join(f"{each.host}:{each.port}" for each in proxied)
        warden += ["--proxy", f"{fence.net / 'proxy.sock'}={allowed}"]
        init += ["--proxy", f"{PROXY_PORT}={NET_INSIDE / 'proxy.sock'}"]
    names, prefixes = kept_names(needs)
    warden += [arg for name in sorted(names) for arg in ("--keep", name)]
    warden += [arg for prefix in prefixes for arg in ("--keep", prefix + "*")]
    for name, value in sorted(fenced_settings(fence, needs).items()):
        warden += ["--set", f"{name}={value}"]
    inside = [sys.executable, "-I", str(_INIT), *init, "--", *argv]
    wrapped = bubblewrap.wrap(inside, view(fence, needs, home))
    return [sys.executable, "-I", str(_WARDEN), *warden, "--", *wrapped]


def command_fence(worktree: Path) -> tuple[bubblewrap.View, Path] | None:
    """A fence for a command flume runs in a fenced run's place (a gate's tests, a check).

    It sees what an agent's fence shows but no inbox, agent's folder or network; it writes the
    worktree (and its admin folder: ``git status`` refreshes the index). Its folder
    (``<state>/fences/<digest>``, its ``/tmp`` and home) is returned, to be removed after.
    None when git cannot say where the place's folders are.
    """
    dirs = git.git_dirs(worktree)
    if dirs is None:
        return None
    admin, common = dirs
    digest = hashlib.sha256(str(worktree).encode()).hexdigest()[:16]
    folder = places.state_dir() / "fences" / digest
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(folder)
    (folder / "tmp").mkdir(parents=True)
    folder.chmod(0o700)
    home = Path(os.environ.get("HOME") or Path.home())
    homed, kept = _homes_view(folder, _merged((Home(real=home, kept=_HOME_KEPT),)))
    names, prefixes = kept_names(Needs())
    env = kept_environment(os.environ, names, prefixes, {"TMPDIR": "/tmp"})  # noqa: S108
    (admin / "config.worktree").touch()
    kept_files = (worktree / ".git", *(admin / n for n in ("HEAD", "gitdir", "commondir")))
    fenced = bubblewrap.View(
        readonly=(common, *interpreter(), *kept, *kept_files, admin / "config.worktree"),
        writable=(worktree, admin),
        stand_ins=tuple(homed),
        masked=(worktree.parent, common / "flume"),
        scratch=folder / "tmp",
        cwd=worktree,
        env=env,
    )
    return fenced, folder


#: How to mend a sandboxed step whose agent's endpoint flume cannot name.
UNNAMED_MEND = (
    "a sandboxed agent reaches only its model's endpoint, which flume must be able to name: "
    "point the agent at one by its URL (ANTHROPIC_BASE_URL, or a Codex provider's base_url), "
    "or take sandbox = true off the step"
)


def in_fence(argv: Sequence[str], worktree: Path) -> tuple[list[str], dict[str, str], Path] | None:
    """``argv`` as a fenced run's command runs it (:func:`command_fence`), and how.

    In bubblewrap, its capabilities checked none first; with its environment, and its fence's
    folder to remove after.
    """
    made = command_fence(worktree)
    if made is None:
        return None
    fenced, folder = made
    inside = [sys.executable, "-I", str(_INIT), "--", *argv]
    return bubblewrap.wrap(inside, fenced), dict(fenced.env), folder
