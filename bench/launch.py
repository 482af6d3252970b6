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

flume's supervisor has git check the place out with one worker a core (``checkout.workers=0``,
git's parallel checkout), which a person's ``git worktree add`` does not do unless configured.
So that what flume adds shows apart from that gain, the same command with that setting is
timed in the same turns, and flume's ratio against it printed too.

With ``--against FLUME`` (another installation's ``flume`` script, say the code before a
change), that flume's ``flume launch`` is timed too, taking turns with this one's and with the
bare command, round by round, on a host and an identical repository of its own: before and
after, side by side in one run.

Run: ``python bench/launch.py [--rounds N] [--files N] [--against FLUME]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs
from common import best, median, private_host, realistic_repository

from flume.core.launch import AgentName, AgentSettings, Panes
from flume.core.settings import Settings
from flume.core.step import step
from flume.shell.perform import launcher
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
    request = launcher.Request(
        repository=repo, kind="fix", name=f"f{number}", brief="Bench.", agent=AGENT
    )
    made = launcher.launch(request, Settings(), time.time)
    decision = step(Settings(), None, journal.read(made.journal).observations[0])
    for seen in performer.perform(decision.place, decision.actions[-1]):
        journal.append(made.journal, seen)
    elapsed = time.perf_counter() - started
    assert made.path.is_dir()
    return elapsed


def command_environment() -> dict[str, str]:
    """This host's environment, with bytecode cached as on a user's machine."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


@attrs.frozen(kw_only=True)
class Host:
    """A flume as a user runs it: its script, its host's environment, its repository."""

    argv: tuple[str, ...]
    environment: dict[str, str]
    repository: Path


def flume_argv() -> list[str]:
    """The ``flume`` console script beside this interpreter, as a user runs it."""
    script = Path(sys.executable).parent / "flume"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "flume"]


#: How flume's supervisor has git check a place out: one worker a core (git's parallel checkout).
PARALLEL = ("-c", "checkout.workers=0")


def bare_command(repo: Path, number: int, *, parallel: bool = False) -> float:
    """``git worktree add -b`` as a process of its own, run in the repository; seconds.

    ``parallel``: with the parallel checkout flume's own ``git worktree add`` asks for, so
    that what flume adds to git's own work shows apart from the faster checkout.
    """
    config = PARALLEL if parallel else ()
    label = "p" if parallel else "c"
    argv = [GIT, *config, "worktree", "add", "--quiet", "-b", f"bare/{label}{number}"]
    started = time.perf_counter()
    subprocess.run(  # noqa: S603 (git, with our own arguments)
        [*argv, str(repo / "places" / f"bare--{label}{number}"), "main"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def cli(host: Host, number: int) -> tuple[float, float]:
    """``flume launch`` in its own process: until it exits, and until it exits with its place made.

    Seconds, from the command's start.
    """
    started_at = time.time()
    started = time.perf_counter()
    ran = subprocess.run(  # noqa: S603 (our own script)
        [
            *host.argv,
            "launch",
            "--repository",
            str(host.repository),
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
        env=host.environment,
        # Not this checkout's folder: the supervisor the first launch starts runs
        # ``python -m flume``, which would load the flume package found there.
        cwd=host.repository.parent,
    )
    returned = time.perf_counter() - started
    path = Path(json.loads(ran.stdout)["journal"])
    # When the place was made is the supervisor's own word: the time it journaled with
    # ``WorktreeMade``, taken as git returned. Waited for at a slow pace: a poll at every
    # millisecond would take the CPU the checkout's workers need, and slow what it times.
    while (made_at := _made_at(path)) is None:
        if time.perf_counter() - started > 60:
            message = "the supervisor did not make the place within 60s"
            raise TimeoutError(message)
        time.sleep(0.05)
    return returned, max(returned, made_at - started_at)


def _made_at(journal_path: Path) -> float | None:
    """The time the journal's ``WorktreeMade`` line says, or None before there is one."""
    for line in journal_path.read_bytes().splitlines():
        if b'"WorktreeMade"' in line:
            at = json.loads(line)["at"]
            assert isinstance(at, float)
            return at
    return None


def other_host(flume: Path, files: int) -> Host:
    """``flume`` on a host of its own, with a repository built as this host's is."""
    environment = command_environment()
    home = Path(tempfile.mkdtemp(prefix="flume-bench-against-"))
    environment["HOME"] = str(home)
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        environment[name] = str(home / name.lower())
    return Host(
        argv=(str(flume),),
        environment=environment,
        repository=realistic_repository(home / "project", files=files),
    )


def stop(host: Host) -> None:
    """Stop the host's supervisor."""
    subprocess.run(  # noqa: S603 (our own script)
        [*host.argv, "daemon", "stop"],
        check=False,
        capture_output=True,
        env=host.environment,
        cwd=host.repository.parent,
    )


def commands(hosts: dict[str, Host], rounds: int) -> None:
    """Time the commands in turns, each round in the next order; print them and their ratios."""
    # Each host's supervisor runs, as it does once anything was launched: the first launch
    # starts it, and is not timed.
    for host in hosts.values():
        cli(host, 1000)
    bare_commands: list[float] = []
    parallel_commands: list[float] = []
    returned: dict[str, list[float]] = {label: [] for label in hosts}
    made: dict[str, list[float]] = {label: [] for label in hosts}
    turns = ["bare", "parallel", *hosts]
    repo = next(iter(hosts.values())).repository
    for number in range(rounds):
        shift = number % len(turns)
        for turn in turns[shift:] + turns[:shift]:
            if turn == "bare":
                bare_commands.append(bare_command(repo, number))
            elif turn == "parallel":
                parallel_commands.append(bare_command(repo, number, parallel=True))
            else:
                returned_at, made_at = cli(hosts[turn], number)
                returned[turn].append(returned_at)
                made[turn].append(made_at)
    print(
        f"git worktree add -b, as a command: best {best(bare_commands) * 1000:.0f} ms, "
        f"median {median(bare_commands) * 1000:.0f} ms"
    )
    print(
        f"git {' '.join(PARALLEL)} worktree add -b, flume's checkout as a command: best "
        f"{best(parallel_commands) * 1000:.0f} ms, median {median(parallel_commands) * 1000:.0f} ms"
    )
    for label in hosts:
        ratio = median(made[label]) / median(bare_commands)
        print(
            f"{label}, as a command: exits in median {median(returned[label]) * 1000:.0f} ms; "
            f"exited with its place made: best {best(made[label]) * 1000:.0f} ms, "
            f"median {median(made[label]) * 1000:.0f} ms"
        )
        print(
            f"  end to end (median/median): {ratio:.2f}x; best/best "
            f"{best(made[label]) / best(bare_commands):.2f}x; target at most {COMMAND_TARGET}x: "
            f"{'met' if ratio <= COMMAND_TARGET else 'NOT met'}"
        )
        print(
            "  against git's own work with flume's checkout (median/median): "
            f"{median(made[label]) / median(parallel_commands):.2f}x"
        )
    print(f"raw, ms, in the order timed ({rounds} rounds):")
    print(f"  bare: {' '.join(f'{each * 1000:.0f}' for each in bare_commands)}")
    print(f"  bare, parallel checkout: {' '.join(f'{e * 1000:.0f}' for e in parallel_commands)}")
    for label in hosts:
        print(f"  {label}: {' '.join(f'{each * 1000:.0f}' for each in made[label])}")
    for host in hosts.values():
        stop(host)


def main() -> None:
    """Build the repository, time both side by side, print the ratio against the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument(
        "--against",
        type=Path,
        help="another installation's flume script, timed in turns with this one",
    )
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
    hosts = {
        "flume launch": Host(
            argv=tuple(flume_argv()), environment=command_environment(), repository=repo
        )
    }
    if arguments.against is not None:
        hosts[f"flume launch of {arguments.against}"] = other_host(
            arguments.against, arguments.files
        )
    commands(hosts, arguments.rounds)


if __name__ == "__main__":
    main()
