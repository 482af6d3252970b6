"""SIGKILL trials of the supervisor through whole fix runs (L1), shared by a test and a bench.

One trial: a fresh host and repository; a fix launched with flume's test agent (half the trials
with an agent that loses its first input), whose code stage commits and whose submit stage runs
``flume submit``; the supervisor killed with SIGKILL once the journal holds a random number of
lines, then started again. The run must complete after the restart: landed on main and tidied,
the fix's commit on main (no commit lost), no prompt sent more than twice, never two agents for
one stage attempt. Sends are counted twice over: as the rules decided them, and as the agents
received them (every input the test agent's terminal submitted, lost ones too).
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

import attrs

from flume.core.actions import Event, Report, SendPrompt
from flume.core.observations import AgentStarted
from flume.core.place import Life
from flume.shell import process
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from flume.shell.supervisor import client
from flume.shell.tools import git
from tests.integration.agents_kit import (
    agent_repository,
    decided,
    launch_test_agent,
    observations,
    place_of,
    script,
    wait_for,
)
from tests.integration.places_kit import GIT_IDENTITY

CONFIG = "[timing]\nquiet = 0.3\nconfirm = 2\nready = 20\n"
FIX = """
[[turn]]
match = ":code:1]"
steps = [{write = {path = "fixed.txt", text = "fixed\\n"}}, {commit = "Mend it"}]

[[turn]]
match = ":submit:1]"
steps = [{run = ["flume", "submit"]}]
"""


@attrs.frozen(kw_only=True)
class Trial:
    """What one trial saw."""

    kill_at: int
    lost_first: bool
    seconds: float
    problems: tuple[str, ...]
    #: Sends a kill left decided and untyped, typed after the restart (DELIVERY-RETYPE-UNTYPED).
    retyped: int = 0


def _daemon_pid() -> int | None:
    lock = places.state_dir() / "supervisor.lock"
    text = lock.read_text().strip() if lock.exists() else ""
    return int(text) if text.isdigit() else None


def run(folder: Path, rng: random.Random) -> Trial:
    """One trial in ``folder`` (a fresh host); the caller stops the supervisor afterwards."""
    started = time.monotonic()
    os.environ["XDG_STATE_HOME"] = str(folder / "state")
    os.environ["FLUME_TMUX_SOCKET"] = str(folder / "tmux.sock")
    os.environ.update(GIT_IDENTITY)
    lost_first = rng.random() < 0.5
    repo = agent_repository(folder, CONFIG)
    inputs = folder / "inputs.jsonl"
    head = f"inputs = {json.dumps(str(inputs))}\n" + ("lose = 1\n" if lost_first else "")
    path = launch_test_agent(repo, "k", script(folder, head + FIX), brief="Mend it.")
    kill_at = rng.randint(1, 24)
    problems: list[str] = []
    try:
        wait_for(
            lambda: len(observations(path)) >= kill_at or place_of(path).life is Life.TIDIED,
            60,
            f"{kill_at} journal lines",
        )
        time.sleep(rng.uniform(0, 0.2))  # a point between lines, maybe mid-action
        pid = _daemon_pid()
        if pid is not None and process.alive(pid):
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: not process.alive(pid), 10, "the supervisor to die")
        if client.ensure(wait=30) is None:
            problems.append("no supervisor answered after the restart")
        wait_for(lambda: place_of(path).life is Life.TIDIED, 120, "the fix to land and be tidied")
    except AssertionError as error:
        problems.append(str(error))
        problems.append(_where(path))
    problems.extend(_broken_promises(repo, path, inputs))
    retyped = [
        r
        for r in decided(path, Report)
        if isinstance(r, Report) and r.event is Event.PROMPT_RETYPED
    ]
    return Trial(
        kill_at=kill_at,
        lost_first=lost_first,
        seconds=time.monotonic() - started,
        problems=tuple(problems),
        retyped=len(retyped),
    )


def _where(path: Path) -> str:
    """Where a run that did not complete stands: its life, stage, phase and sends."""
    place = place_of(path)
    stage = place.stage
    return (
        f"it stands {place.life.value}, stage {stage.name}#{stage.attempt}, "
        f"{stage.sends} sends, {stage.phase!r}"
    )


def _broken_promises(repo: Path, path: Path, inputs: Path) -> list[str]:
    """Every promise of L1 the run broke."""
    problems: list[str] = []
    seen = observations(path)
    starts: dict[tuple[str, int], set[str]] = {}
    for each in seen:
        if isinstance(each, AgentStarted):
            starts.setdefault((each.stage, each.attempt), set()).add(each.session)
    problems.extend(
        f"stage {stage}#{attempt}: {len(sessions)} agents"
        for (stage, attempt), sessions in starts.items()
        if len(sessions) > 1
    )
    sends: dict[tuple[str, int], set[int]] = {}
    for action in decided(path, SendPrompt):
        assert isinstance(action, SendPrompt)
        sends.setdefault((action.stage, action.attempt), set()).add(action.send)
    problems.extend(
        f"stage {stage}#{attempt}: {len(numbers)} sends of the prompt decided"
        for (stage, attempt), numbers in sends.items()
        if len(numbers) > 2
    )
    logged = inputs.read_text() if inputs.exists() else ""
    received = [json.loads(line) for line in logged.splitlines()]
    for stage in ("code", "submit"):
        count = sum(1 for text in received if f":{stage}:1]" in text)
        if count > 2:
            problems.append(f"stage {stage}#1: the agents received the prompt {count} times")
    on_main = git.run(repo, "log", "--format=%s", "main").out.splitlines()
    if "Mend it" not in on_main:
        problems.append(f"the fix's commit is not on main: {on_main}")
    return problems


def cleanup(folder: Path) -> None:
    """Stop the trial's supervisor and tmux server."""
    client.stop(timeout=5.0)
    Tmux(folder / "tmux.sock").kill_server()
