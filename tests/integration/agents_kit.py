"""What the agent tests share: flume's own tmux server per test, launches of agents, waits.

Every test gets a private tmux socket (``FLUME_TMUX_SOCKET``, a short path: a unix socket's
path is limited to 108 bytes) and a host of its own (the ``host`` fixture: flume's state and
supervisor under the test's folder). The supervisor is the real daemon, started by the real CLI;
agents run in real panes.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from pathlib import Path

from flume.core.actions import Action, SendPrompt, SendTell
from flume.core.ids import SessionId
from flume.core.observations import Activity, AgentStarted, Observation, TranscriptEntry
from flume.core.place import Place, Short, ShortCause, Working
from flume.core.settings import Settings
from flume.core.step import replay, step
from flume.shell.agents import of
from flume.shell.store import journal, places
from flume.testing import scenario
from tests import shared
from tests.conftest import is_stand_in
from tests.integration.places_kit import flume_process

#: Short waits, so that a lost send is found missing in seconds, not the default half minute.
TIMING = scenario.FAST_TIMING


def agent_repository(folder: Path, config: str = TIMING) -> Path:
    """A repository whose places live by short timings."""
    return scenario.make_repository(
        folder / "repo", {".flume.toml": config, "README.md": "hullo\n"}
    )


def script(folder: Path, text: str, name: str = "script.toml") -> Path:
    """A test agent's script, written to a file."""
    return scenario.write_script(folder, text, name)


def launch_test_agent(
    repo: Path,
    name: str,
    script_path: Path,
    *,
    brief: str = "Mend the greeting.",
    kind: str = "fix",
) -> Path:
    """Launch a place whose stages run flume's test agent with ``script_path``; its journal."""
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind", kind, "--name", name, "--brief", brief,
        "--agent", "test", "--agent-arg=--script", f"--agent-arg={script_path}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / f"{kind}--{name}" / places.JOURNAL


def observations(path: Path) -> list[Observation]:
    """Everything the place's journal holds."""
    return list(journal.read(path).observations)


def place_of(path: Path) -> Place:
    """The place its journal describes now."""
    return replay(Settings(), observations(path))


def decided(path: Path, kind: type[Action]) -> list[Action]:
    """Every action of ``kind`` the rules decided over the journal (sends are never journaled).

    The supervisor performs what the rules decide, once; a restarted one performs only what is
    pending, which never holds a send (R5): so this counts the sends made.
    """
    place: Place | None = None
    found: list[Action] = []
    for seen in observations(path):
        decision = step(Settings(), place, seen)
        place = decision.place
        found.extend(action for action in decision.actions if isinstance(action, kind))
    return found


def prompt_sends(path: Path, stage: str = "code", attempt: int = 1) -> int:
    """How many sends of the stage attempt's prompt were decided.

    A send typed again, after a restart found it never typed, is still the one send.
    """
    return len(
        {
            action.send
            for action in decided(path, SendPrompt)
            if isinstance(action, SendPrompt)
            and action.stage == stage
            and action.attempt == attempt
        }
    )


def tell_sends(path: Path) -> int:
    """How many times tells were sent."""
    return len(decided(path, SendTell))


def sessions_started(path: Path, stage: str = "code", attempt: int = 1) -> set[str]:
    """The agent sessions journaled as started for a stage attempt."""
    return {
        seen.session
        for seen in observations(path)
        if isinstance(seen, AgentStarted) and seen.stage == stage and seen.attempt == attempt
    }


def transcript_lines(place: Place, session: str) -> list[dict[str, object]]:
    """The lines of a session's transcript, as the agent wrote them."""
    found = of(place.launch.agent.agent).find_transcript(place, SessionId(session), frozenset())
    path = Path(found) if found is not None else None
    if path is None or not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def typed_lines(place: Place, session: str, holding: str) -> list[dict[str, object]]:
    """The transcript's user lines with string content holding ``holding``."""
    found = []
    for line in transcript_lines(place, session):
        message = line.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if line.get("type") == "user" and isinstance(content, str) and holding in content:
            found.append(line)
    return found


def journaled_text(path: Path) -> str:
    """All transcript text the journal holds."""
    return "\n".join(seen.text for seen in observations(path) if isinstance(seen, TranscriptEntry))


def wait_for(predicate: Callable[[], object], seconds: float, what: str) -> None:
    """Wait until ``predicate()`` holds, looking every 50 ms; fail naming ``what``."""
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(FileNotFoundError):
            if predicate():
                return
        if time.monotonic() > deadline:
            message = f"waited {seconds}s for {what}"
            raise AssertionError(message)
        time.sleep(0.05)


def agent_doing(path: Path, activity: Activity) -> Callable[[], bool]:
    """A predicate: the place's live agent is doing ``activity``."""

    def holds() -> bool:
        place = place_of(path)
        return place.agent is not None and place.agent.activity is activity

    return holds


def stopped_short(path: Path, cause: ShortCause) -> Callable[[], bool]:
    """A predicate: the place's stage stopped short for ``cause``."""

    def holds() -> bool:
        phase = place_of(path).stage.phase
        return isinstance(phase, Short) and phase.cause is cause

    return holds


def taken_and_waiting(path: Path) -> Callable[[], bool]:
    """A predicate: the stage's prompt is delivered and its agent waits."""

    def holds() -> bool:
        place = place_of(path)
        return (
            isinstance(place.stage.phase, Working)
            and place.agent is not None
            and place.agent.activity is Activity.WAITING
        )

    return holds


def installed_or_skip(binary: Path | None, what: str) -> Path:
    """``binary`` when it is there; else a loud skip, or a failure where the run installed it.

    scripts/test installs the pinned agents itself and says so (``FLUME_REQUIRE_AGENTS=1``):
    there, a missing one is a broken install, not a choice. The test suite's own stand-in for an
    agent (tests/conftest.py) is no agent.
    """
    if binary is None or not binary.exists() or is_stand_in(binary):
        shared.lacking(
            f"NOT TESTED WITH THE REAL {what}: it is not installed; "
            "run scripts/install-agents (npm)",
            shared.REQUIRE_AGENTS,
        )
    return binary
