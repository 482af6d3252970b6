"""bubblewrap (``bwrap``, Debian's ``bubblewrap``): a program that sees only what it is shown.

The fence of a sandboxed step (:mod:`flume.shell.agents.sandbox`) is a :class:`View`: deny by
default. The new root is empty; the system's folders are bound in read-only (:func:`system`),
with whatever in ``/etc`` the world may not read (``shadow``, host keys, private TLS keys)
masked; then what the step needs, each bound read-only or writable, or a stand-in folder bound
where the real one is; a private ``/tmp``. Every namespace is new (``--unshare-all``: user, pid,
network, IPC, UTS, cgroup), so no process, socket, abstract socket or network of the host is
reachable from inside; ``--new-session`` takes the terminal away as a controlling one (no
``TIOCSTI`` into the pane); and ``--die-with-parent`` ends it with its parent. bwrap passes its
own environment on: the caller starts it with the fenced program's (:attr:`View.env`), never
naming a value on its command line, where ``ps`` would show a key.

Facts found here (bubblewrap 0.8.0, Debian 12, as root and as another user):

- As root bwrap keeps every capability unless told (``CapEff: 000001fffeffffff``, and ``mount
  -o remount,rw /`` wrote on the host): ``--cap-drop ALL`` is given whenever flume runs as
  root; inside, ``CapEff`` reads 0 and the remount is refused. As another user it has none.
- A path to bind must exist ("Can't find source path"), and a mount point inside a read-only
  bind cannot be made: what is bound inside another bind is made on the host first (by the
  caller). Later binds cover earlier ones, so binds go shallowest first.
- A file bound alone is a mount point: it cannot be renamed over or removed ("Device or resource
  busy"). A folder masked with ``--tmpfs`` then ``--remount-ro`` is empty and read-only.
- Nested namespaces are refused inside (a new proc cannot be mounted over one bwrap made): a
  program's own bubblewrap sandbox (Claude Code's) cannot run inside this one.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import attrs

from flume.shell.tools import locate

#: The program.
PROGRAM = "bwrap"
#: How to install it, said when it is missing.
INSTALL = "install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap)"
#: The system's folders a fenced program sees, read-only, where they exist (a link is made a
#: link: ``/bin`` -> ``usr/bin`` on a merged ``/usr``).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
#: The system folder whose unreadable entries are masked (the rest hold programs and libraries).
_MASKED_IN = "/etc"
#: Folders a fenced program finds made but empty (some programs insist on them).
_MADE = ("/run", "/var", "/home", "/mnt", "/srv")


def missing() -> tuple[str, str] | None:
    """bubblewrap, when it is not found on the agent's PATH: what is wrong and how to mend it."""
    if locate.found(PROGRAM):
        return None
    return (f"bubblewrap ({PROGRAM}) is not installed here (not on PATH)", INSTALL)


@attrs.frozen(kw_only=True)
class View:
    """What a fenced program sees: nothing but what is named here (bwrap's own ``/dev``, ``/proc``).

    Paths are absolute. A path named that does not exist is left out: a folder not yet made
    stays unseen. Binds are made shallowest first, so a deeper one shows through a shallower.
    """

    #: Seen read-only.
    readonly: tuple[Path, ...] = ()
    #: Seen and writable.
    writable: tuple[Path, ...] = ()
    #: (where it is seen, the folder seen there, writable): a stand-in shown in a folder's place.
    stand_ins: tuple[tuple[Path, Path, bool], ...] = ()
    #: Seen empty and read-only (a folder), or as an empty file (a file): hidden inside a bind.
    masked: tuple[Path, ...] = ()
    #: The program's own temporary folder, seen as ``/tmp`` and ``/var/tmp``.
    scratch: Path
    #: The folder the program starts in.
    cwd: Path
    #: The program's whole environment, for whoever starts bwrap (it passes its own on).
    env: Mapping[str, str] = attrs.field(factory=dict)


def system(masked_in: str = _MASKED_IN) -> tuple[list[str], list[Path]]:
    """The system's folders: bwrap's arguments that show them, and what in them is masked.

    What in ``/etc`` the world may not read is masked: as root (without ``CAP_DAC_OVERRIDE``, as
    the owner) the program could read it otherwise.
    """
    arguments: list[str] = []
    masked: list[Path] = []
    for name in SYSTEM:
        path = Path(name)
        if path.is_symlink():
            arguments += ["--symlink", str(path.readlink()), name]
        elif path.is_dir():
            arguments += ["--ro-bind", name, name]
            if name == masked_in:
                masked += list(_unreadable(path))
    for name in _MADE:
        arguments += ["--dir", name]
    return arguments, masked


def _unreadable(folder: Path) -> Iterator[Path]:
    """What in ``folder`` the world may not read (a folder of them whole), never following links.

    Fails closed: a folder that cannot be listed is masked whole, and a system folder that
    cannot be listed at all raises (:class:`OSError`): no fence is drawn that could show it.
    """
    entries = list(os.scandir(folder))
    for entry in entries:
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            yield Path(entry.path)  # cannot be looked at: masked
            continue
        if stat.S_ISLNK(mode):
            continue
        if not mode & stat.S_IROTH or (stat.S_ISDIR(mode) and not mode & stat.S_IXOTH):
            yield Path(entry.path)
        elif stat.S_ISDIR(mode):
            try:
                found = list(_unreadable(Path(entry.path)))
            except OSError:
                yield Path(entry.path)
            else:
                yield from found


def as_root() -> bool:
    """Flume runs as root: bwrap would keep every capability, so they are all dropped."""
    return os.geteuid() == 0


def wrap(argv: Sequence[str], view: View) -> list[str]:
    """``argv`` run by ``bwrap`` seeing only ``view``, in new namespaces, without capabilities."""
    wrapped = [PROGRAM, "--unshare-all", "--new-session", "--die-with-parent"]
    if as_root():
        wrapped += ["--cap-drop", "ALL"]
    shown, masked = system()
    wrapped += [*shown, "--dev", "/dev", "--proc", "/proc"]
    for tmp in ("/tmp", "/var/tmp"):  # noqa: S108 (the fenced program's own, inside)
        wrapped += ["--bind", str(view.scratch), tmp]
    binds, folders = _binds(view, [*masked, *view.masked])
    wrapped += binds
    # Read-only last: a mount point inside a folder made read-only could not be made after it.
    for folder in ("/", *map(str, folders)):
        wrapped += ["--remount-ro", folder]
    return [*wrapped, "--chdir", str(view.cwd), "--", *argv]


def _binds(view: View, masked: Iterable[Path]) -> tuple[list[str], list[Path]]:
    """The binds of ``view`` and its masks, shallowest first; at one depth, masks last.

    Also the folders masked, each an empty ``tmpfs`` to be made read-only once all is bound.
    """
    folders: list[Path] = []
    ordered: list[tuple[int, int, list[str]]] = [
        (_depth(path), 1, ["--ro-bind", str(path), str(path)]) for path in _existing(view.readonly)
    ]
    ordered += [
        (_depth(path), 2, ["--bind", str(path), str(path)]) for path in _existing(view.writable)
    ]
    for where, folder, writable in view.stand_ins:
        if folder.exists():
            how = "--bind" if writable else "--ro-bind"
            ordered.append((_depth(where), 0, [how, str(folder), str(where)]))
    for path in masked:
        if path.is_dir() and not path.is_symlink():
            ordered.append((_depth(path), 3, ["--tmpfs", str(path)]))
            folders.append(path)
        elif path.exists() or path.is_symlink():
            ordered.append((_depth(path), 3, ["--ro-bind", "/dev/null", str(path)]))
    arguments: list[str] = []
    for _depth_of, _order, each in sorted(ordered, key=lambda bind: (bind[0], bind[1])):
        arguments += each
    return arguments, folders


def _depth(path: Path) -> int:
    return len(path.parts)


def _existing(paths: Iterable[Path]) -> list[Path]:
    """The paths that exist, each once, in a fixed order."""
    return sorted({path for path in paths if path.exists()}, key=lambda path: (_depth(path), path))
