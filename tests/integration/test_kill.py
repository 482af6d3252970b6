"""The supervisor killed with SIGKILL at random points during launches (at least 20 in CI)."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from flume.shell.store import places
from flume.shell.supervisor import client
from tests.integration import kill_trials
from tests.integration.conftest import daemons_of, stop_supervisor

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

TRIALS = 20 if os.environ.get("CI") == "true" else 6


def test_every_launch_completes_exactly_once_after_a_sigkill(host: Path) -> None:
    """Each launch completes exactly once after restart; nothing made without its journal."""
    rng = random.Random(20261129)  # noqa: S311 (kill points, not secrets)
    results = []
    for number in range(TRIALS):
        try:
            results.append(kill_trials.run(host / f"trial-{number}", rng))
            assert client.stop() is not None
            # Once stopped, it stays stopped: no supervisor started meanwhile takes over.
            deadline = time.monotonic() + 30
            while daemons_of(os.environ["XDG_STATE_HOME"]):
                assert time.monotonic() < deadline, (
                    "a supervisor outlived daemon stop",
                    daemons_of(os.environ["XDG_STATE_HOME"]),
                    (places.state_dir() / "supervisor.log").read_text()[-3000:],
                )
                time.sleep(0.02)
        finally:
            stop_supervisor()
    problems = [(trial.killed_at_line, trial.problems) for trial in results if trial.problems]
    assert not problems
    assert all(trial.completed == len(kill_trials.NAMES) for trial in results)
    # The kill points spread over the launches' whole course, and most trials really killed.
    assert len({trial.killed_at_line for trial in results}) >= min(TRIALS, 5)
    assert sum(trial.killed for trial in results) >= TRIALS // 2
