"""P1: flume's own work in a launch, against a bare ``git worktree add -b``, side by side.

Target (DESIGN.md §9): at most 1.5x. The repository is built here, shaped like a middling
project (3,000 files, a history of 60 commits), with no network.

Timed, taking turns round by round on the same repository:

- **bare**: ``git worktree add -b <branch> <path> <base>``, as a person would type it;
- **flume**: everything flume does for a launch apart from the repository's setup and the
  agent's start: the checks (repository, commits, config, kind, base, name in use), the journal
  written, staged and renamed into place, the registry, and then the supervisor's
  ``MakeWorktree`` (``info/exclude``, the worktree added, the head observed and journaled).

And the ``flume launch`` command end to end, beside ``git worktree add -b`` as a person types
it (also a process of its own), taking turns the same way: from the command's start until it has
exited and its place is made (``WorktreeMade`` journaled by the host's supervisor, which runs
already, as it does once anything was launched). The command hands its launch to that
supervisor, which checks and journals it and starts the worktree at once. This adds the
interpreter's start and the command's imports to flume's own work. Target (issue 16): at most
1.5x. Bytecode is cached, as on a user's machine.

Run: ``python bench/launch.py [--rounds N] [--files N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import best, median, private_host, realistic_repository

from flume.core.launch import AgentName, AgentSettings, Panes
from flume.core.settings import Settings
from flume.core.step import step
from flume.shell.perform import launch as shell_launch
from flume.shell.perform.performer import Performer
from flume.shell.store import journal
from flume.shell.tools import git

TARGET = 1.5
#: The launch as a command, against the bare command, median against median.
COMMAND_TARGET = 1.5
GIT = shutil.which("git") or "git"
#: The agent is not what is timed: flume's test agent, written down (``--panes print``) rather
#: than started, needs no agent installed and adds no tmux server's work to the machine's.
AGENT = AgentSettings(agent=AgentName.TEST, panes=Panes.PRINT)


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
    request = shell_launch.Request(
        repository=repo, kind="fix", name=f"f{number}", brief="Bench.", agent=AGENT
    )
    made = shell_launch.launch(request, Settings(), time.time)
    decision = step(Settings(), None, journal.read(made.journal).observations[0])
    for seen in performer.perform(decision.place, decision.actions[-1]):
        journal.append(made.journal, seen)
    elapsed = time.perf_counter() - started
    assert made.path.is_dir()
    return elapsed


def command_environment() -> dict[str, str]:
    """This host's environment, with bytecode cached as on a user's machine."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def flume_argv() -> list[str]:
    """The ``flume`` console script beside this interpreter, as a user runs it."""
    script = Path(sys.executable).parent / "flume"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "flume"]


def bare_command(repo: Path, number: int) -> float:
    """``git worktree add -b`` as a process of its own, run in the repository; seconds."""
    argv = [GIT, "worktree", "add", "--quiet", "-b", f"bare/c{number}"]
    started = time.perf_counter()
    subprocess.run(  # noqa: S603 (git, with our own arguments)
        [*argv, str(repo / "places" / f"bare--c{number}"), "main"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def cli(repo: Path, number: int) -> tuple[float, float]:
    """``flume launch`` in its own process: until it exits, and until it exits with its place made.

    Seconds, from the command's start.
    """
    started = time.perf_counter()
    ran = subprocess.run(  # noqa: S603 (our own script)
        [
            *flume_argv(),
            "launch",
            "--repository",
            str(repo),
            "--kind",
            "fix",
            "--name",
            f"c{number}",
            "--brief",
            "Bench.",
            "--agent",
            AGENT.agent.value,
            "--panes",
            AGENT.panes.value,
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
        env=command_environment(),
    )
    returned = time.perf_counter() - started
    path = Path(json.loads(ran.stdout)["journal"])
    while b"WorktreeMade" not in path.read_bytes():
        if time.perf_counter() - started > 60:
            message = "the supervisor did not make the place within 60s"
            raise TimeoutError(message)
        time.sleep(0.001)
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
    # The host's supervisor runs, as it does once anything was launched: the first launch
    # starts it, and is not timed.
    cli(repo, 1000)
    bare_commands, returned, made = [], [], []
    for number in range(arguments.rounds):
        if number % 2:
            bare_commands.append(bare_command(repo, number))
            returned_at, made_at = cli(repo, number)
        else:
            returned_at, made_at = cli(repo, number)
            bare_commands.append(bare_command(repo, number))
        returned.append(returned_at)
        made.append(made_at)
    command_ratio = median(made) / median(bare_commands)
    print(
        f"git worktree add -b, as a command: best {best(bare_commands) * 1000:.0f} ms, "
        f"median {median(bare_commands) * 1000:.0f} ms"
    )
    print(
        f"flume launch, as a command: exits in median {median(returned) * 1000:.0f} ms; "
        f"exited with its place made: best {best(made) * 1000:.0f} ms, "
        f"median {median(made) * 1000:.0f} ms"
    )
    print(
        f"launch end to end (median/median): {command_ratio:.2f}x; best/best "
        f"{best(made) / best(bare_commands):.2f}x; target at most {COMMAND_TARGET}x: "
        f"{'met' if command_ratio <= COMMAND_TARGET else 'NOT met'}"
    )
    subprocess.run(  # noqa: S603 (our own script)
        [*flume_argv(), "daemon", "stop"],
        check=False,
        capture_output=True,
        env=command_environment(),
    )


if __name__ == "__main__":
    main()
