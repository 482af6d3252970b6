"""The supervisor killed with SIGKILL at random points during launches: 100 trials.

The issue's reliability target for places: each launch completes exactly once after a restart;
no worktree or branch without a journal; no duplicate. Each trial (tests/integration/
kill_trials.py) launches three fixes at once through the real CLI, kills the real supervisor
once the journals hold a random number of lines (half the time a moment later still, mid-action),
starts it again and checks every launch.

Run: ``python bench/kill.py [--trials N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import collections
import random
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import private_host

from flume.shell.supervisor import client
from tests.integration import kill_trials


def main() -> None:
    """Run the trials and print what they found."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    arguments = parser.parse_args()
    private_host()
    rng = random.Random(arguments.seed)  # noqa: S311 (kill points, not secrets)
    folder = Path(tempfile.mkdtemp(prefix="flume-kill-"))
    results = []
    for number in range(arguments.trials):
        try:
            results.append(kill_trials.run(folder / f"trial-{number}", rng))
        finally:
            client.stop()
    launches = len(kill_trials.NAMES) * len(results)
    completed = sum(trial.completed for trial in results)
    killed = sum(trial.killed for trial in results)
    failed = [trial for trial in results if trial.problems]
    points = collections.Counter(trial.killed_at_line for trial in results)
    restarts = [trial.restart_seconds for trial in results]
    print(f"trials: {len(results)}; supervisor killed in {killed} (the others had finished)")
    print(f"launches completed exactly once after restart: {completed} of {launches}")
    print(f"trials with a problem (duplicate, orphan, lost launch): {len(failed)}")
    for trial in failed:
        print(f"  killed at line {trial.killed_at_line}: {'; '.join(trial.problems)}")
    print(
        "kill points (journal lines written when killed): "
        + ", ".join(f"{line}: {count}" for line, count in sorted(points.items()))
    )
    print(
        f"restart until a supervisor answered: median {statistics.median(restarts):.2f}s, "
        f"max {max(restarts):.2f}s"
    )


if __name__ == "__main__":
    main()
