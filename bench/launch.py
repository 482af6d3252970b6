"""P1: flume's own work in a launch, against a bare ``git worktree add -b``, side by side.

Target (DESIGN.md §9): at most 1.5x. The repository is built here, shaped like a middling
project (3,000 files, a history of 60 commits), with no network.

Timed, taking turns round by round on the same repository:

- **bare**: ``git worktree add -b <branch> <path> <base>``, as a person would type it;
- **flume**: everything flume does for a launch apart from the repository's setup and the
  agent's start: the checks (repository, commits, config, kind, base, name in use), the journal
  written, staged and renamed into place, the registry, and then the supervisor's
  ``MakeWorktree`` (``info/exclude``, the worktree added, the head observed and journaled).

Also printed, for the record: the ``flume launch`` command end to end in its own process
(which adds the Python interpreter's start and imports), and when its place was made.

Run: ``python bench/launch.py [--rounds N] [--files N]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from common import best, median, private_host, realistic_repository

from flume.core.settings import Settings
from flume.core.step import step
from flume.shell import git, journal
from flume.shell import launch as shell_launch
from flume.shell.perform import Performer

TARGET = 1.5


def bare(repo: Path, number: int) -> float:
    """``git worktree add -b`` of the base; seconds."""
    started = time.perf_counter()
    ran = git.run(
        repo,
        "worktree",
        "add",
        "--quiet",
        "-b",
        f"bare/b{number}",
        str(repo / "places" / f"bare--b{number}"),
        "main",
    )
    elapsed = time.perf_counter() - started
    assert ran.ok, ran.err
    return elapsed


def flume_work(repo: Path, number: int) -> float:
    """Flume's launch and its MakeWorktree, in this process; seconds."""
    performer = Performer(clock=time.time)
    started = time.perf_counter()
    request = shell_launch.Request(repository=repo, kind="fix", name=f"f{number}", brief="Bench.")
    made = shell_launch.launch(request, Settings(), time.time)
    decision = step(Settings(), None, journal.read(made.journal).observations[0])
    for seen in performer.perform(decision.place, decision.actions[-1]):
        journal.append(made.journal, seen)
    elapsed = time.perf_counter() - started
    assert made.path.is_dir()
    return elapsed


def cli(repo: Path, number: int) -> tuple[float, float]:
    """``flume launch`` in its own process, and until its worktree is journaled made; seconds."""
    started = time.perf_counter()
    ran = subprocess.run(  # noqa: S603 (our own interpreter)
        [
            sys.executable,
            "-m",
            "flume",
            "launch",
            "--repository",
            str(repo),
            "--kind",
            "fix",
            "--name",
            f"c{number}",
            "--brief",
            "Bench.",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    returned = time.perf_counter() - started
    path = Path(json.loads(ran.stdout)["journal"])
    while b"WorktreeMade" not in path.read_bytes():
        if time.perf_counter() - started > 60:
            message = "the supervisor did not make the place within 60s"
            raise TimeoutError(message)
        time.sleep(0.002)
    return returned, time.perf_counter() - started


def main() -> None:
    """Build the repository, time both side by side, print the ratio against the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--files", type=int, default=3000)
    arguments = parser.parse_args()
    home = private_host()
    started = time.perf_counter()
    repo = realistic_repository(home / "project", files=arguments.files)
    print(
        f"repository: {arguments.files} files, 61 commits, built in "
        f"{time.perf_counter() - started:.1f}s"
    )
    bares, flumes = [], []
    for number in range(arguments.rounds):
        if number % 2:
            flumes.append(flume_work(repo, number))
            bares.append(bare(repo, number))
        else:
            bares.append(bare(repo, number))
            flumes.append(flume_work(repo, number))
    ratio = best(flumes) / best(bares)
    print(
        f"bare git worktree add -b: best {best(bares) * 1000:.1f} ms, "
        f"median {median(bares) * 1000:.1f} ms"
    )
    print(
        f"flume's own launch work:  best {best(flumes) * 1000:.1f} ms, "
        f"median {median(flumes) * 1000:.1f} ms"
    )
    print(
        f"P1 ratio (best/best): {ratio:.2f}x; median/median "
        f"{median(flumes) / median(bares):.2f}x; target at most {TARGET}x: "
        f"{'met' if ratio <= TARGET else 'NOT met'}"
    )
    returned, made = zip(*(cli(repo, number) for number in range(5)), strict=True)
    command_ms, made_ms = best(list(returned)) * 1000, best(list(made)) * 1000
    print(
        f"for the record, flume launch as a command: returns in {command_ms:.0f} ms "
        f"(interpreter start and imports included); place made {made_ms:.0f} ms "
        "after the command began (the supervisor's start included on the first)"
    )
    subprocess.run(
        [sys.executable, "-m", "flume", "daemon", "stop"], check=False, capture_output=True
    )


if __name__ == "__main__":
    main()
