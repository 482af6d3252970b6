"""bubblewrap (``bwrap``, Debian's ``bubblewrap``): a program that sees only what it is shown.

The fence of a sandboxed step (:mod:`flume.shell.agents.sandbox`) is a :class:`View`: deny by
default. The new root is empty; the system's folders are bound in read-only (:func:`system`),
``/etc`` only as far as the world may read it (no ``shadow``, host keys, private TLS keys);
then what the step needs, each bound read-only or writable, or a stand-in folder bound
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
from collections.abc import Iterable, Mapping, Sequence
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
#: The system folder shown only as far as the world may read it (the rest hold programs).
_SHOWN_IN_PART = "/etc"
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


def system(shown_in_part: str = _SHOWN_IN_PART) -> tuple[list[str], list[Path]]:
    """The system's folders: bwrap's arguments that show them, and the folders made for them.

    ``/etc`` is shown entry by entry, only what the world may read: as root (the owner, without
    ``CAP_DAC_OVERRIDE``) the program could read ``shadow`` otherwise. Nothing is masked after
    the fact: a file is shown only if it was seen world-readable, so a secret renamed into place
    while the fence is drawn (``useradd`` rewriting ``shadow``) is never shown (seen here: a
    mask drawn from a listing taken mid-rename left ``/etc/shadow`` readable). The folders
    returned are each an empty ``tmpfs`` holding what is shown of it, made read-only last.
    """
    arguments: list[str] = []
    made: list[Path] = []
    for name in SYSTEM:
        path = Path(name)
        if path.is_symlink():
            arguments += ["--symlink", str(path.readlink()), name]
        elif path.is_dir() and name == shown_in_part:
            arguments += _readable(path, made)
        elif path.is_dir():
            arguments += ["--ro-bind", name, name]
    for name in _MADE:
        arguments += ["--dir", name]
    return arguments, made


def _readable(folder: Path, made: list[Path]) -> list[str]:
    """``folder`` shown as what the world may read of it, never following a link.

    A folder holding nothing unreadable is bound whole; one that does is a ``tmpfs`` (added to
    ``made``) with each readable entry bound in it. Fails closed: an entry that cannot be looked
    at is not shown, and a folder that cannot be listed is not shown at all.
    """
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return []
    shown: list[str] = []
    whole = True
    for entry in entries:
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            whole = False
            continue
        if stat.S_ISLNK(mode):
            shown += ["--symlink", str(Path(entry.path).readlink()), entry.path]
            continue
        readable = mode & stat.S_IROTH and (not stat.S_ISDIR(mode) or mode & stat.S_IXOTH)
        if not readable or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            whole = False
            continue
        if stat.S_ISDIR(mode):
            inner = _readable(Path(entry.path), made)
            whole = whole and inner == ["--ro-bind", entry.path, entry.path]
            shown += inner
        else:
            shown += ["--ro-bind", entry.path, entry.path]
    if whole:
        made[:] = [each for each in made if not each.is_relative_to(folder)]
        return ["--ro-bind", str(folder), str(folder)]
    made.append(folder)
    return ["--tmpfs", str(folder), *shown]


def as_root() -> bool:
    """Flume runs as root: bwrap would keep every capability, so they are all dropped."""
    return os.geteuid() == 0


def wrap(argv: Sequence[str], view: View) -> list[str]:
    """``argv`` run by ``bwrap`` seeing only ``view``, in new namespaces, without capabilities."""
    wrapped = [PROGRAM, "--unshare-all", "--new-session", "--die-with-parent"]
    if as_root():
        wrapped += ["--cap-drop", "ALL"]
    shown, made = system()
    wrapped += [*shown, "--dev", "/dev", "--proc", "/proc"]
    for tmp in ("/tmp", "/var/tmp"):  # noqa: S108 (the fenced program's own, inside)
        wrapped += ["--bind", str(view.scratch), tmp]
    binds, folders = _binds(view, view.masked)
    wrapped += binds
    # Read-only last: a mount point inside a folder made read-only could not be made after it.
    for folder in ("/", *map(str, made), *map(str, folders)):
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
