"""flume's test agent: a scripted stand-in for Claude Code, started by its module's name.

It is a module of flume's own interpreter (:data:`MODULE`, named here and nowhere else in the
shell, which never imports :mod:`flume.testing`), run with the session id flume chose and a home
of its own in flume's state folder (:func:`home`, passed as its ``--home``), never Claude
Code's. There it writes Claude Code's files: its transcript and its live-session registry, read
as Claude Code's are (:mod:`~flume.shell.agents.claude`). It runs no hooks and draws no dialog.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path

from flume.core.ids import Instant, SessionId
from flume.core.judging import Said
from flume.core.observations import Activity
from flume.core.place import Place
from flume.shell import environment
from flume.shell.agents import chat, claude
from flume.shell.agents.chat import Chat
from flume.shell.agents.sandbox import Home, Needs, seen_home
from flume.shell.agents.tail import Tail
from flume.shell.agents.turns import Turn
from flume.shell.store import places
from flume.shell.tools import bubblewrap

#: The test agent's module, run as ``python -m MODULE``.
MODULE = "flume.testing.agent"
#: The variable naming its script when ``--script`` is not given (flume.testing.agent's).
SCRIPT_VARIABLE = "FLUME_TEST_AGENT_SCRIPT"


def home() -> Path:
    """Where the test agent keeps its transcripts and registry: ``STATE/test-agent``.

    flume passes it as the agent's ``--home``; the agent run bare defaults to the same folder.
    """
    return places.state_dir() / "test-agent"


def program() -> str:
    """Flume's own interpreter, which runs the agent's module."""
    return sys.executable


def missing() -> None:
    """The test agent's program is the interpreter running flume: never missing."""


def command(
    place: Place,
    session: SessionId,
    model: str | None,  # noqa: ARG001 (the test agent takes no model)
    *,
    fenced: bool = False,  # noqa: ARG001 (the same inside a fence)
) -> list[str]:
    """The test agent's command line: its module, the session id, its home and the board.

    The board is added as Claude Code's is (``--add-dir``): a script writes ``$board/...`` there.
    """
    argv = [program(), "-m", MODULE, "--session-id", session, "--home", str(home())]
    if place.board:
        argv += ["--add-dir", place.board]
    return argv


def sandbox_missing() -> tuple[str, str] | None:
    """A sandboxed step's test agent runs inside bubblewrap: missing, when it is."""
    return bubblewrap.missing()


def sandbox_needs(session: SessionId, flags: Sequence[str]) -> Needs:  # noqa: ARG001 (one home)
    """Its home as a stand-in of the session's own; its script, read-only; no network at all."""
    scripts = [Path(each) for each in _scripts(flags)]
    named = environment.current().get(SCRIPT_VARIABLE)
    if named:
        scripts.append(Path(named))
    return Needs(
        homes=(Home(real=home()),),
        reads=tuple(path.resolve() for path in scripts if path.is_absolute()),
        variables=(SCRIPT_VARIABLE,),
    )


def _scripts(flags: Sequence[str]) -> list[str]:
    """The files ``--script FILE`` (or ``--script=FILE``) names among the agent's flags."""
    found: list[str] = []
    for number, flag in enumerate(flags):
        if flag == "--script" and number + 1 < len(flags):
            found.append(flags[number + 1])
        elif flag.startswith("--script="):
            found.append(flag.removeprefix("--script="))
    return found


def prepare(session: SessionId) -> None:
    """The test agent needs nothing written before it starts."""


def registry_home() -> Path:
    """The test agent registers in its own home, laid out as Claude Code's."""
    return home()


def registry_said(entry: Mapping[str, object]) -> Said | None:
    """Its registry entries are Claude Code's."""
    return claude.registry_said(entry)


def hooks_file(session: str) -> Path | None:  # noqa: ARG001 (no hooks)
    """The test agent runs no hooks: no file."""
    return None


def hooks_said(session: str, offset: int) -> tuple[int, Said | None]:  # noqa: ARG001 (no hooks)
    """The test agent runs no hooks: nothing is read."""
    return offset, None


def screen(capture: Callable[[], str | None]) -> Activity | None:  # noqa: ARG001 (not looked at)
    """The test agent draws no dialog: its screen is not read."""
    return None


def find_transcript(
    place: Place,
    session: SessionId,
    claimed: AbstractSet[str | None],  # noqa: ARG001 (its session id names it)
) -> str | None:
    """The session's transcript in the test agent's home (its stand-in, fenced), as Claude's."""
    return claude.find_in(seen_home(session, home()), place, session)


def read_from(
    path: Path, offset: int, *, session: SessionId, at: Instant, turn: Turn | None = None
) -> Tail:
    """Its transcript is Claude Code's, line for line."""
    return claude.read_from(path, offset, session=session, at=at, turn=turn)


def conversation(path: Path) -> Chat:
    """Its transcript is Claude Code's: read as Claude Code's conversation."""
    return chat.read_claude(path)
