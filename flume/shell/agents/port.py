"""The agent port: what flume asks of an agent program it drives, whichever it is.

One module per agent implements it, as a module: :mod:`~flume.shell.agents.claude` (Claude
Code), :mod:`~flume.shell.agents.codex` (Codex) and :mod:`~flume.shell.agents.scripted` (flume's
test agent). Each says how it is started, what it needs written first, where it keeps its
transcript and registry, and how its hooks, registry entries and screen become what the agent
is doing. :func:`flume.shell.agents.of` finds an agent's module by its name; the pane runner
(:mod:`~flume.shell.agents.runner`) and the watch (:mod:`flume.shell.observe.watch`) ask it and
never branch on the agent's name. Like every part of the shell, it reports and decides nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Protocol

from flume.core.ids import Instant, SessionId
from flume.core.judging import Said
from flume.core.observations import Activity
from flume.core.place import Place
from flume.shell.agents.chat import Chat
from flume.shell.agents.sandbox import Needs
from flume.shell.agents.tail import Tail
from flume.shell.agents.turns import Turn
from flume.shell.store import places


def agents_dir() -> Path:
    """Where flume keeps what it writes for agents: hook settings, hook records, offsets."""
    return places.state_dir() / "agents"


class AgentPort(Protocol):
    """An agent program: its command line, its files, and what they say it is doing."""

    def program(self) -> str:
        """The program the agent's command line starts."""
        ...

    def missing(self) -> tuple[str, str] | None:
        """The agent's program, when it is not found here: what is wrong and how to mend it."""
        ...

    def command(
        self, place: Place, session: SessionId, model: str | None, *, fenced: bool = False
    ) -> list[str]:
        """The agent's command line for the session (the launch's own flags follow it).

        ``fenced``: a sandboxed step's, run inside flume's fence (:mod:`.sandbox`).
        """
        ...

    def sandbox_missing(self) -> tuple[str, str] | None:
        """What a sandboxed step's agent needs here and lacks, and how to mend it; None if none."""
        ...

    def sandbox_needs(self, session: SessionId, flags: Sequence[str]) -> Needs:
        """What the agent needs inside a fence: its folders, what it reads, its endpoint.

        ``flags`` are the launch's own for it (a file one names is read inside).
        """
        ...

    def prepare(self, session: SessionId) -> None:
        """Write what the agent needs before it starts (a file its hooks append to)."""
        ...

    def registry_home(self) -> Path | None:
        """The folder whose ``sessions/`` holds the agent's live-session registry; None if none."""
        ...

    def registry_said(self, entry: Mapping[str, object]) -> Said | None:
        """What the agent's live-session registry entry says it does, and when; None if nothing."""
        ...

    def hooks_said(self, session: str, offset: int) -> tuple[int, Said | None]:
        """The hook calls recorded after byte ``offset``: the next read's start, the last word.

        The word is the last call that said what the agent does; None when none did.
        """
        ...

    def hooks_file(self, session: str) -> Path | None:
        """The file the session's hooks append to (watched for changes); None: it has none."""
        ...

    def screen(self, capture: Callable[[], str | None]) -> Activity | None:
        """What the agent's screen says before it registers; ``capture`` reads it, if asked."""
        ...

    def find_transcript(
        self, place: Place, session: SessionId, claimed: AbstractSet[str | None]
    ) -> str | None:
        """The session's transcript, once it can be found; none that another session claimed."""
        ...

    def read_from(
        self, path: Path, offset: int, *, session: SessionId, at: Instant, turn: Turn | None = None
    ) -> Tail:
        """The transcript lines appended to ``path`` after byte ``offset``.

        Their usage is added to ``turn``, the turn open at ``offset`` (a new one when not
        given); the tail's turns are those they close.
        """
        ...

    def conversation(self, path: Path) -> Chat:
        """The conversation in the transcript ``path``, read whole (``flume transcript``).

        ``OSError`` when the file cannot be read.
        """
        ...
