"""``flume attach``, shell side: which pane shows a place's agent, and the command that shows it.

The pane's own parts (the journaled pane, the live one found by its session, the terminal handed
over) are :mod:`flume.shell.panes.attach`'s; this chooses the pane backend the place launched
with and says what to run.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import attrs

from flume.core.launch import Panes
from flume.core.settings import Settings
from flume.shell.panes.attach import live_pane, pane_of
from flume.shell.panes.herdr import Herdr
from flume.shell.panes.port import PaneServer
from flume.shell.panes.printed import Printed
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places


@attrs.frozen(kw_only=True)
class Attaching:
    """How to show a place's agent in a terminal."""

    place: str
    #: The command that shows it: run in this terminal, or, for a printed agent, by the caller.
    argv: tuple[str, ...]
    #: The agent is printed (``--panes print``): nothing runs it but the caller.
    printed: bool
    #: The live pane (its id), or for a printed agent the place's pane word.
    pane: str
    #: How to leave the pane without ending the agent.
    leave: str

    @property
    def command(self) -> str:
        """:attr:`argv` as a shell would read it."""
        return shlex.join(self.argv)


def attaching(place: str, repository: Path | None, settings: Settings) -> Attaching:
    """How to show ``place``'s live agent; a :class:`UsageError` when it has none in a pane."""
    found = places.find(place, repository, settings)
    pane = pane_of(found.place)
    assert found.place is not None  # noqa: S101 (pane_of read it)
    if found.place.launch.agent.panes is Panes.PRINT:
        # Nothing shows it: the caller runs its command, which waits for its prompt.
        argv = Printed().attach_argv(pane)
        return Attaching(place=place, argv=tuple(argv), printed=True, pane=pane, leave="")
    in_herdr = found.place.launch.agent.panes is Panes.HERDR
    server: PaneServer = Herdr() if in_herdr else Tmux()
    live = live_pane(found.place, server.panes())
    leave = "herdr's own keys" if in_herdr else "C-b d"
    argv = server.attach_argv(live)
    return Attaching(place=place, argv=tuple(argv), printed=False, pane=live, leave=leave)
