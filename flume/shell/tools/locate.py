"""Where flume finds the outside programs it drives: agents and the OpenSpec CLI.

An agent's program is the variable its module names (``$FLUME_CLAUDE``, ``$FLUME_CODEX``) if
set, else its name, looked up on the PATH the agent is started with (:func:`search_path`:
flume's own interpreter's folder first, so that agents find ``flume``). A launch looks it up
the same way before anything is made (:func:`missing_named`, :func:`missing_panes`), and the
start of each agent again.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from flume.core.launch import Panes
from flume.shell import environment

#: Where ``scripts/install-agents`` puts the pinned npm packages' programs, beside flume.
NODE_BIN = Path(__file__).resolve().parents[3] / ".node" / "node_modules" / ".bin"


def installed(name: str, variable: str) -> Path | None:
    """``$variable`` if set, else the pinned ``.node`` install's ``name``, else PATH's; or None."""
    chosen = environment.current().get(variable)
    if chosen:
        return Path(chosen)
    pinned = NODE_BIN / name
    if pinned.exists():
        return pinned
    found = shutil.which(name, path=environment.current().get("PATH", os.defpath))
    return Path(found) if found else None


def program_named(variable: str, name: str) -> str:
    """A program: ``$variable`` if set, else its ``name``, looked up on PATH when run."""
    return environment.current().get(variable) or name


def search_path() -> str:
    """PATH with the folder of flume's own interpreter first, so agents find ``flume``."""
    bin_dir = str(Path(sys.executable).parent)
    path = environment.current().get("PATH", "/usr/local/bin:/usr/bin:/bin")
    if bin_dir not in path.split(os.pathsep):
        path = os.pathsep.join([bin_dir, path])
    return path


def found(program: str) -> bool:
    """``program`` (a name, or a path) is an executable the agent's PATH finds."""
    return shutil.which(program, path=search_path()) is not None


def missing_named(program: str, variable: str, name: str) -> tuple[str, str] | None:
    """An agent's ``program``, when it is not found here: what is wrong and how to mend it."""
    if found(program):
        return None
    named = environment.current().get(variable)
    where = f"{variable} names {program}" if named else "not on PATH"
    return (
        f"the agent's program {program!r} is not installed here ({where})",
        f"install {name} and put it on PATH, or set {variable} to its path",
    )


def missing_panes(panes: Panes) -> tuple[str, str] | None:
    """What a launch's panes would lack here, and how to mend it; or None.

    tmux for ``--panes tmux``; herdr is asked over its socket.
    """
    if panes is Panes.TMUX and not found("tmux"):
        return (
            "tmux is not installed here (not on PATH), and --panes tmux runs agents in it",
            "install tmux, or launch with --panes herdr or --panes print",
        )
    return None
