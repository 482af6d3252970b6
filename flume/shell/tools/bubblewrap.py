"""bubblewrap (``bwrap``, Debian's ``bubblewrap``): a program run with most of the disk read-only.

A sandboxed step's agent that has no sandbox of its own (Codex here, flume's test agent) runs
inside ``bwrap``: the whole filesystem bound read-only at ``/``, a fresh ``/dev`` and ``/proc``,
and only the folders flume names bound again read-write; a few files inside those kept read-only
again. Writes anywhere else fail with "Read-only file system". It needs no privilege where the
kernel lets an unprivileged user make namespaces (Debian's default), and works as root too.

Facts found here (bubblewrap 0.8.0, Debian 12): a path to bind must exist (``bwrap`` stops with
"Can't find source path"), so a folder not yet made is left out, not bound; later binds cover
earlier ones, so the read-only files come last. No new session (``--new-session``): a terminal
agent needs its pane's terminal as its controlling one. The pid namespace is shared, so the
agent's pid is the one its registry names and ``/proc`` shows.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from flume.shell.tools import locate

#: The program.
PROGRAM = "bwrap"
#: How to install it, said when it is missing.
INSTALL = "install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap)"


def missing() -> tuple[str, str] | None:
    """bubblewrap, when it is not found on the agent's PATH: what is wrong and how to mend it."""
    if locate.found(PROGRAM):
        return None
    return (f"bubblewrap ({PROGRAM}) is not installed here (not on PATH)", INSTALL)


def wrap(  # noqa: PLR0913 (each is one kind of bind)
    argv: Iterable[str],
    *,
    cwd: Path,
    writable: Iterable[Path],
    readonly: Iterable[Path] = (),
    env: dict[str, str] | None = None,
    covered: Iterable[tuple[Path, Path]] = (),
) -> list[str]:
    """``argv`` run by ``bwrap`` in ``cwd``: everything read-only but ``writable``.

    ``readonly`` are paths inside ``writable`` ones kept read-only again; ``env`` is set inside.
    ``covered`` are (folder, stand-in) pairs: inside, the folder is the stand-in, writable, and
    what ``writable`` and ``readonly`` name in it is bound from the real folder over it. A path
    that does not exist is left out (it cannot be bound): a folder not yet made stays
    unwritable, as everything else.
    """
    wrapped = [PROGRAM, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    binds = [(str(folder), str(stand_in), "--bind") for folder, stand_in in covered]
    binds += [(path, path, "--bind") for path in _existing(writable)]
    binds += [(path, path, "--ro-bind") for path in _existing(readonly)]
    # Shallowest first (a bind then never hides a deeper one); at one depth, a stand-in first,
    # then writable, then read-only.
    for place, source, how in sorted(binds, key=lambda bind: bind[0].count("/")):
        wrapped += [how, source, place]
    for name, value in (env or {}).items():
        wrapped += ["--setenv", name, value]
    return [*wrapped, "--die-with-parent", "--chdir", str(cwd), "--", *argv]


def _existing(paths: Iterable[Path]) -> list[str]:
    """The paths that exist, each once, shallowest first (a bind then never hides a deeper one)."""
    found = {str(path) for path in paths if path.exists()}
    return sorted(found, key=lambda path: (path.count("/"), path))
