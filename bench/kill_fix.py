"""L1: the supervisor SIGKILLed at random points through whole fix runs, 100 trials.

Each trial launches a fix run by flume's test agent in tmux (code commits, submit lands through
the embedded lander, tidy removes the place), kills the supervisor once the journal holds a
random number of lines, starts it again, and checks that the run completes: landed and tidied,
its commit on main, no prompt sent more than twice, never two agents for one stage attempt.

    .venv/bin/python bench/kill_fix.py [--trials 100] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import private_host

from tests.integration import fix_trials


def main() -> None:
    """Run the trials; print each one's outcome and the totals."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    arguments = parser.parse_args()
    rng = random.Random(arguments.seed)  # noqa: S311 (kill points, not secrets)
    private_host()
    kept, seconds, retyped = 0, [], 0
    for number in range(arguments.trials):
        folder = Path(tempfile.mkdtemp(prefix="flf-", dir="/tmp"))
        try:
            trial = fix_trials.run(folder, rng)
        finally:
            fix_trials.cleanup(folder)
            shutil.rmtree(folder, ignore_errors=True)
        kept += not trial.problems
        retyped += trial.retyped > 0
        seconds.append(trial.seconds)
        said = "; ".join(trial.problems) or "landed, tidied, every promise kept"
        loss = "lost first input" if trial.lost_first else "no loss"
        window = "; a send decided, untyped, typed after the restart" if trial.retyped else ""
        print(f"trial {number + 1:>3}: kill at line {trial.kill_at:>2} ({loss}): {said}{window}")
    print(
        f"{arguments.trials} trials: {kept} completed with every promise kept; "
        f"median {statistics.median(seconds):.1f}s a trial; {retyped} killed between deciding "
        "a send and typing it"
    )


if __name__ == "__main__":
    main()
