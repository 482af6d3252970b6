"""The pane port: what flume asks of a terminal multiplexer that runs its agents.

:class:`flume.shell.panes.tmux.Tmux` is the adapter flume ships; a herdr backend (its socket API)
is to
implement the same calls. Each call reports what the multiplexer said and decides nothing:
whether an agent took a paste is for its transcript to say (R5).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from flume.shell.panes.tmux import Pane
from flume.shell.process import Ran


class PaneServer(Protocol):
    """A multiplexer whose panes run agents, observed all at once."""

    def start(
        self, *, group: str, window: str, cwd: Path, argv: Sequence[str], env: Mapping[str, str]
    ) -> Ran:
        """Run ``argv`` in a new pane named ``window`` of ``group``; its id on standard output."""
        ...

    def panes(self) -> dict[str, Pane] | None:
        """Every pane, by id, in one call; {} with none; None when the listing failed."""
        ...

    def capture(self, pane: str) -> str | None:
        """The pane's screen as text; None when it could not be read."""
        ...

    def paste(self, pane: str, text: str, *, mark: str = "", settle: float = 5.0) -> Ran:
        """Paste ``text`` literally into the pane and press Enter.

        A ``mark`` is kept by the pane (as :attr:`Pane.typed`) from the moment the paste is
        submitted, set with the Enter in one step where the server allows, so a listing says
        which prompt was submitted.
        """
        ...

    def kill_pane(self, pane: str) -> Ran:
        """End the pane's process and close it."""
        ...

    def attach_argv(self, pane: str) -> list[str]:
        """The command that shows the pane in the caller's terminal."""
        ...


#: The longest marker a typed mark holds whole: herdr keeps at most 80 characters of a token.
_MARK_WHOLE = 64


def typed_mark(marker: str, send: int) -> str:
    """What a pane is marked with once send ``send`` of the prompt ``marker`` was pasted.

    A marker too long for every multiplexer's field (a long place name) is kept as its digest:
    the mark is only ever compared with the one this makes, and read back only by
    :func:`send_of`.
    """
    shown = marker
    if len(marker) > _MARK_WHOLE:
        shown = "sha256:" + hashlib.sha256(marker.encode()).hexdigest()[:40]
    return f"{shown}#{send}"


def send_of(mark: str) -> int | None:
    """Which send a :func:`typed_mark` names; None for no mark (a tell's paste)."""
    _, hash_sign, number = mark.rpartition("#")
    return int(number) if hash_sign and number.isdigit() else None
