"""``flume attach``: the pane of a place's live agent, and the terminal handed to tmux or herdr."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence

from flume.core.errors import UsageError, refused
from flume.core.launch import Panes
from flume.core.place import Place
from flume.shell.panes import printed
from flume.shell.panes.tmux import Pane


def pane_of(place: Place | None) -> str:
    """The pane of the place's live agent; refused when it has none."""
    if place is None:
        raise UsageError.one("place", "its journal cannot be read", "see flume status")
    name = place.launch.place
    in_herdr = place.launch.agent.panes is Panes.HERDR
    if place.agent is None or not (
        place.agent.pane.startswith("%")
        or printed.is_printed(place.agent.pane)
        or (in_herdr and place.agent.pane)
    ):
        raise refused(
            "attach",
            f"{name} has no live agent in a pane (stage {place.stage.name})",
            f"see flume status {name}; flume retry {name} starts a fresh agent",
        )
    return place.agent.pane


def live_pane(place: Place, panes: dict[str, Pane] | None) -> str:
    """The pane running the place's agent now, found by its session, never by a stale id.

    tmux numbers panes afresh when its server restarts: the journaled id may be another's.
    """
    assert place.agent is not None  # noqa: S101 (pane_of found one)
    name = place.launch.place
    if panes is None:
        raise refused("attach", "tmux could not list its panes", "try again in a moment")
    found = [pane.id for pane in panes.values() if pane.session == place.agent.session]
    if not found:
        raise refused(
            "attach",
            f"the pane of {name}'s agent is gone (the agent ended or tmux restarted)",
            f"see flume status {name}; flume retry {name} starts a fresh agent",
        )
    return found[0]


def exec_attach(argv: Sequence[str]) -> None:
    """Replace this process with tmux showing the pane (never returns on success)."""
    program = shutil.which(argv[0])
    if program is None:
        raise SystemExit(f"flume: {argv[0]} is not installed")
    env = {key: value for key, value in os.environ.items() if key != "TMUX"}
    os.execve(program, list(argv), env)  # noqa: S606 (our own argv: tmux, its socket, a pane id)
