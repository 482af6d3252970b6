"""Issue 13: the supervisor's processes a tick, one run of 8 lanes against 8 fix places.

Target: equal. A run fanned out (its phase ``Fanned``, no agent in its own worktree) is one
place more to follow than its lanes, and the supervisor observes in batches (one ``git
for-each-ref`` a repository, one ``tmux list-panes -a``: :mod:`flume.shell.supervisor.loop`),
so 9 places (the run and its 8 lanes) should cost the git and tmux processes of 8 places.

Two hosts, as :mod:`supervisor` builds them, each followed by its own real supervisor: one with
8 ``fix`` places launched in one repository, one with a run of a kind whose first block is a
parallel of 8 commit-gated lanes (cap 8). Every agent is flume's test agent in a pane of its
host's tmux server. Once every agent took its prompt and waits (and the run is fanned out), both
run together for the measuring window: CPU time and resident memory, as :mod:`supervisor`
reads them, for the record. Then each supervisor's ``last_tick_subprocesses`` (git and tmux
processes its last tick ran to observe) is sampled, in turns, after ticks of its own: every
value seen is printed, and the target compares the most seen on each side.

Run: ``python bench/lanes_supervisor.py [--lanes N] [--seconds S] [--samples N]``.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from common import private_host, small_repository
from lanes import kind_text
from supervisor import cpu_seconds, host_with, rss_mb, settled, with_environment

from flume import api
from flume.core.place import Fanned
from flume.core.settings import Settings
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from flume.shell.supervisor import client


def host_with_lanes(lanes: int) -> tuple[dict[str, str], Path]:
    """A host with one run launched, its first block a parallel of ``lanes`` lanes at once."""
    home = private_host()
    repo = small_repository(home / "repo")
    kind_file = home / "lanes.toml"
    kind_file.write_text(kind_text(lanes).replace('name = "lanes"', 'name = "wf"'))
    api.launch(
        repository=repo, name="run", brief="Idle.", kind_file=kind_file, agent="test", panes="tmux"
    )
    client.ensure(wait=30)
    return dict(os.environ), repo


def fanned(repo: Path) -> bool:
    """The run is fanned out: its lanes run, and it has no agent of its own."""
    for found in places.places_of(repo, Settings()):
        place = found.place
        if place is not None and not place.launch.parent:
            return isinstance(place.stage.phase, Fanned) and place.agent is None
    return False


def idle(repo: Path, agents: int, *, run: bool) -> bool:
    """Every agent took its prompt and waits; with ``run``, the run is fanned out too."""
    return settled(repo, agents) and (not run or fanned(repo))


def _wait(ready: Callable[[], bool], what: str) -> float:
    started = time.monotonic()
    while not ready():
        if time.monotonic() - started > 300:
            message = f"{what} did not settle in 300s"
            raise TimeoutError(message)
        time.sleep(0.1)
    return time.monotonic() - started


def main() -> None:
    """Build both hosts, measure their supervisors side by side, print the counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--samples", type=int, default=10)
    arguments = parser.parse_args()
    count = arguments.lanes
    environments: dict[str, dict[str, str]] = {}
    hosts: dict[str, tuple[dict[str, str], int]] = {}
    labels = {
        "fix": f"{count} fix places",
        "lanes": f"1 run of {count} lanes ({count + 1} places)",
    }
    try:
        for side in ("fix", "lanes"):
            environment, repo = host_with(count) if side == "fix" else host_with_lanes(count)
            environments[side] = environment
            took = _wait(functools.partial(idle, repo, count, run=side == "lanes"), labels[side])
            reply = client.status()
            assert reply is not None
            hosts[side] = (environment, reply.pid)
            print(f"{labels[side]}: made and idle after {took:.1f}s")
        before = {side: cpu_seconds(pid) for side, (_env, pid) in hosts.items()}
        wall = time.monotonic()
        time.sleep(arguments.seconds)  # the measuring window: both supervisors run on their own
        elapsed = time.monotonic() - wall
        for side, (environment, pid) in hosts.items():
            with_environment(environment)
            reply = client.status()
            assert reply is not None
            share = (cpu_seconds(pid) - before[side]) / elapsed * 100
            print(
                f"{labels[side]}: supervisor {pid}, {reply.places} places followed, "
                f"{reply.ticks} ticks so far; "
                f"idle CPU {share:.2f}% of a core; resident memory {rss_mb(pid):.1f} MB"
            )
        seen: dict[str, list[int]] = {side: [] for side in hosts}
        for _ in range(arguments.samples):
            for side, (environment, _pid) in hosts.items():
                with_environment(environment)
                reply = client.status()
                assert reply is not None
                seen[side].append(reply.last_tick_subprocesses)
            # A status request makes each supervisor look at once: the next sample is of a tick
            # run after this one's.
            time.sleep(0.3)
        for side in hosts:
            print(
                f"{labels[side]}: git+tmux processes a tick, {arguments.samples} ticks sampled: "
                f"{' '.join(str(n) for n in seen[side])}"
            )
        fix, lanes = (max(seen[side], key=seen[side].count) for side in ("fix", "lanes"))
        print(
            f"processes a tick, {labels['lanes']} vs {labels['fix']}: {lanes} vs {fix}: "
            f"{'equal' if lanes == fix else 'NOT equal'}"
        )
    finally:
        for environment in environments.values():
            with_environment(environment)
            client.stop()
            Tmux().kill_server()
            shutil.rmtree(environment["HOME"], ignore_errors=True)


if __name__ == "__main__":
    main()
