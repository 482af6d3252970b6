"""The supervisor SIGKILLed at random points through a stage run by a real agent in tmux.

Each trial: a fresh host and repository, a fix launched with flume's test agent (half the trials
with an agent that loses its first input), the supervisor killed with SIGKILL once the place's
journal holds a random number of lines, then started again. After it settles, the trial checks
the promises of R4 and R5: one agent session for the stage, at most two sends of its prompt, the
prompt in the transcript at most once (once exactly when the stage went on). It counts how many
stages were carried through, and how many ended "never began" (R5 counts a send when it is
decided: a kill between deciding and pasting costs that send, and never makes a third).

    .venv/bin/python bench/kill_agents.py [--trials 30] [--seed 7]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flume.core.place import Short
from flume.shell import process
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from flume.shell.supervisor import client
from tests.integration.agents_kit import (
    TIMING,
    agent_repository,
    launch_test_agent,
    observations,
    place_of,
    prompt_sends,
    script,
    sessions_started,
    typed_lines,
    wait_for,
)
from tests.integration.conftest import stop_supervisor
from tests.integration.places_kit import GIT_IDENTITY

COMMITS = """
[[turn]]
steps = [{write = {path = "README.md", text = "hello\\n"}}, {commit = "Say hello"}]
"""


def trial(folder: Path, rng: random.Random) -> tuple[str, list[str]]:
    """One trial: what became of the stage, and every broken promise."""
    os.environ["XDG_STATE_HOME"] = str(folder / "state")
    os.environ["FLUME_TMUX_SOCKET"] = str(folder / "tmux.sock")
    os.environ["HOME"] = str(folder / "home")
    os.environ.update(GIT_IDENTITY)
    lose = rng.random() < 0.5
    repo = agent_repository(folder, TIMING)
    text = ("lose = 1\n" if lose else "") + COMMITS
    journal = launch_test_agent(repo, "k", script(folder, text))
    kill_at = rng.randint(2, 9)
    problems: list[str] = []
    try:
        wait_for(lambda: len(observations(journal)) >= kill_at, 60, f"{kill_at} lines")
        time.sleep(rng.uniform(0, 0.3))  # a point between lines, maybe mid-action
        pid = int((places.state_dir() / "supervisor.lock").read_text().strip())
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not process.alive(pid), 10, "the supervisor to die")
        client.ensure(wait=30)

        def settled() -> bool:
            place = place_of(journal)
            return "code" in place.completed or (
                isinstance(place.stage.phase, Short) and place.agent is None
            )

        wait_for(settled, 90, "the stage to end either way")
        sessions = sessions_started(journal)
        sends = prompt_sends(journal)
        went_on = "code" in place_of(journal).completed
        if len(sessions) != 1:
            problems.append(f"{len(sessions)} agent sessions for the stage")
        if sends > 2:
            problems.append(f"{sends} sends")
        for session in sessions:
            recorded = len(typed_lines(place_of(journal), session, "flume:fix--k:code:1"))
            if recorded != int(went_on):
                problems.append(f"the prompt recorded {recorded} times")
        outcome = "carried" if went_on else "never began"
        outcome += f" (kill at line {kill_at}, {'lost first input' if lose else 'no loss'})"
    except AssertionError as error:
        problems.append(str(error))
        outcome = "stuck"
    finally:
        stop_supervisor()
        Tmux().kill_server()
    return outcome, problems


def main() -> None:
    """Run the trials and print what each came to, then the totals."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    arguments = parser.parse_args()
    rng = random.Random(arguments.seed)  # noqa: S311 (kill points, not secrets)
    carried = never = kept = 0
    started = time.monotonic()
    for number in range(arguments.trials):
        folder = Path(tempfile.mkdtemp(prefix="flk-", dir="/tmp"))
        try:
            outcome, problems = trial(folder, rng)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        carried += outcome.startswith("carried")
        never += outcome.startswith("never")
        kept += not problems
        print(f"trial {number + 1:>3}: {outcome}; {'; '.join(problems) or 'every promise kept'}")
    print(
        f"{arguments.trials} trials in {time.monotonic() - started:.0f}s: every promise kept in "
        f"{kept}; carried through {carried}; never began {never}"
    )


if __name__ == "__main__":
    main()
