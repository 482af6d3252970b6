"""L1: the supervisor SIGKILLed at random points through whole fix runs, with real agents.

Each trial (see fix_trials.py) launches a fix run by flume's test agent in tmux, kills the
supervisor once the journal holds a random number of lines, starts it again, and checks that the
fix lands and is tidied, its commit on main, no prompt sent more than twice, and never two agents
for one stage attempt. 20 trials under CI (bench/kill_fix.py runs 100), 5 elsewhere.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.integration import fix_trials
from tests.integration.conftest import stop_supervisor

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

TRIALS = 20 if os.environ.get("CI") == "true" else 5


@pytest.mark.parametrize("seed", range(TRIALS))
def test_a_fix_completes_after_a_sigkill_at_a_random_point(
    host: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """L1: the run lands after the restart; no commit lost, no third send, one agent a stage."""
    del host
    folder = Path(tempfile.mkdtemp(prefix="flf-", dir="/tmp"))
    for name in ("XDG_STATE_HOME", "FLUME_TMUX_SOCKET"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    try:
        trial = fix_trials.run(folder, random.Random(seed))  # noqa: S311 (kill points)
        assert trial.problems == (), (trial.kill_at, trial.lost_first, trial.problems)
    finally:
        stop_supervisor()
        fix_trials.cleanup(folder)
        shutil.rmtree(folder, ignore_errors=True)
