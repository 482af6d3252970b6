"""Issue 13: a run's four lanes made, against four bare ``git worktree add -b``. Target: <= 1.5x.

The real supervisor, a repository shaped like :mod:`launch`'s (3,000 files, 61 commits) and a
kind whose first block is a parallel of four commit-gated lanes, at most four at once, run by
flume's test agent written down (``--panes print``, as :mod:`launch` does: only the worktrees'
making is timed, and no agent's start in tmux takes the CPU git needs meanwhile).

Each round, taking turns in a rotating order on the same repository:

- **flume**: ``flume launch --kind-file`` (not timed); then, from the run's fan-out, the
  instant of the run's journal line whose step put it in ``Fanned`` (with no setup declared,
  its own ``WorktreeMade``: what that step decided was to launch the lanes), to the last of its
  four lanes' ``WorktreeMade``, each taken as git returned. The supervisor launches each lane
  (``LaunchLane``: its journal written), finds the four new journals and makes their worktrees,
  one at a time in a repository as flume makes every worktree, each with git's parallel
  checkout (``checkout.workers=0``);
- **bare, one after another**: four ``git worktree add -b`` of the same commit, each a process
  of its own, as a person types them; the target's denominator;
- **bare, parallel checkout**: the same with ``-c checkout.workers=0``, flume's own checkout,
  so that what flume adds shows apart from that gain;
- **bare, side by side**: the four started at once, for the record (flume adds worktrees one
  at a time: two ``git worktree add`` at once can fail, one reading the other's half-made
  administrative files).

After each round the run is dropped (its lanes with it) and the bare worktrees removed, and the
next round waits until the run's and lanes' worktrees are gone: every round starts from the
same repository. A first round, untimed, starts the supervisor, as the first launch does on a
user's machine. Bytecode is cached, as on a user's machine.

Run: ``python bench/lanes.py [--rounds N] [--files N]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from common import best, median, private_host, realistic_repository
from launch import command_environment, flume_argv

from flume.core.observations import Observation, WorktreeMade
from flume.core.place import Fanned, Place
from flume.core.settings import Settings
from flume.core.step import step
from flume.shell.store import journal, places

TARGET = 1.5
LANES = 4
GIT = shutil.which("git") or "git"
#: How often the journals are looked at while the supervisor works: slow enough to leave the
#: CPU to git's checkout workers, as :mod:`launch` does.
POLL_SECONDS = 0.05


def kind_text(lanes: int) -> str:
    """A kind whose first block is a parallel of ``lanes`` commit-gated lanes, all at once."""
    names = [f"l{number}" for number in range(1, lanes + 1)]
    steps = "".join(
        f'[step.{name}]\nprompt = "Build slice {name}; commit."\ngate = "commit"\n\n'
        for name in names
    )
    return (
        '[kind]\nname = "lanes"\nbody = ["slices", "check"]\n\n'
        f"[parallel.slices]\nbranches = {json.dumps(names)}\ncap = {lanes}\n\n"
        f'{steps}[step.check]\nprompt = "Check the slices; commit."\ngate = "commit"\n'
    )


def _journal(repo: Path, place: str) -> Path:
    return places.journals_dir(repo) / place / places.JOURNAL


def _observations(path: Path) -> list[Observation]:
    try:
        return list(journal.read(path).observations)
    except FileNotFoundError:
        return []


def fanned_at(path: Path) -> float | None:
    """The instant of the run's journal line whose step put it in ``Fanned``; None before it."""
    place: Place | None = None
    for seen in _observations(path):
        place = step(Settings(), place, seen).place
        if isinstance(place.stage.phase, Fanned):
            return float(seen.at)
    return None


def made_at(path: Path) -> float | None:
    """The instant of the journal's ``WorktreeMade``; None before there is one."""
    for seen in _observations(path):
        if isinstance(seen, WorktreeMade):
            return float(seen.at)
    return None


def _wait(predicate: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            message = f"timed out waiting for {what}"
            raise TimeoutError(message)
        time.sleep(POLL_SECONDS)


def _flume(*args: str, cwd: Path) -> str:
    ran = subprocess.run(  # noqa: S603 (our own script)
        [*flume_argv(), *args],
        capture_output=True,
        text=True,
        check=False,
        env=command_environment(),
        # Not this checkout's folder: the supervisor the first launch starts runs
        # ``python -m flume``, which would load the flume package found there.
        cwd=cwd,
    )
    if ran.returncode != 0:
        message = f"flume {' '.join(args)} failed ({ran.returncode}): {ran.stderr}"
        raise RuntimeError(message)
    return ran.stdout


def flume_round(repo: Path, kind_file: Path, name: str) -> tuple[list[float], list[float]]:
    """Launch a run and wait for its lanes' worktrees.

    Seconds after the fan-out: each lane journaled (its ``Launched``), and each lane made.
    """
    _flume(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", name,
        "--brief", "Bench.", "--agent", "test", "--panes", "print", "--json",
        cwd=repo.parent,
    )  # fmt: skip
    run = _journal(repo, f"lanes--{name}")
    lanes = [_journal(repo, f"lanes--{name}+l{number}") for number in range(1, LANES + 1)]
    _wait(lambda: all(made_at(lane) is not None for lane in lanes), 120, f"{name}'s lanes")
    fanned = fanned_at(run)
    assert fanned is not None, f"{name} made its lanes without fanning out"
    launched = [float(_observations(lane)[0].at) - fanned for lane in lanes]
    return launched, [float(made_at(lane) or 0.0) - fanned for lane in lanes]


def drop(repo: Path, name: str) -> None:
    """Drop the run's lanes, then the run; wait until their worktrees are gone.

    The lanes first: dropped with their run, a lane whose tidy comes after the run's has lost
    its base (the run's branch, deleted by the run's tidy), and git cannot say what its branch
    holds: its worktree is left, and the round after would not start from the same repository.
    """
    lanes = [f"lanes--{name}+l{number}" for number in range(1, LANES + 1)]
    for each in (lanes, [f"lanes--{name}"]):
        for place in each:
            _flume("drop", place, "--repository", str(repo), cwd=repo.parent)
        paths = [repo / "places" / place for place in each]
        _wait(lambda paths=paths: not any(path.exists() for path in paths), 120, "worktrees to go")


def _bare_argv(repo: Path, label: str, *, parallel: bool) -> list[str]:
    config = ("-c", "checkout.workers=0") if parallel else ()
    path = repo / "places" / f"bare--{label}"
    return [GIT, *config, "worktree", "add", "--quiet", "-b", f"bare/{label}", str(path), "main"]


def bare_round(
    repo: Path, label: str, *, parallel: bool = False, together: bool = False
) -> tuple[float, int]:
    """Four ``git worktree add -b``, one after another (or ``together``); seconds, and failures.

    Side by side, an add may fail, git reading another's half-made administrative files (why
    flume adds one at a time): it is counted, and the time is until the four have returned.
    """
    argvs = [
        _bare_argv(repo, f"{label}-{number}", parallel=parallel) for number in range(1, LANES + 1)
    ]
    failed = 0
    started = time.perf_counter()
    if together:
        running = [
            subprocess.Popen(argv, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # noqa: S603 (git, with our own arguments)
            for argv in argvs
        ]
        failed = sum(1 for each in running if each.wait() != 0)
    else:
        for argv in argvs:
            subprocess.run(argv, cwd=repo, check=True, capture_output=True)  # noqa: S603 (git, with our own arguments)
    elapsed = time.perf_counter() - started
    for number in range(1, LANES + 1):
        path = repo / "places" / f"bare--{label}-{number}"
        # What a failed add left (a folder, a branch) goes too; nothing is checked.
        for argv in (
            [GIT, "worktree", "remove", "--force", str(path)],
            [GIT, "worktree", "prune"],
            [GIT, "branch", "-q", "-D", f"bare/{label}-{number}"],
        ):
            subprocess.run(argv, cwd=repo, check=False, capture_output=True)  # noqa: S603 (git, with our own arguments)
        shutil.rmtree(path, ignore_errors=True)
    return elapsed, failed


def _ms(samples: list[float]) -> str:
    return " ".join(f"{each * 1000:.0f}" for each in samples)


def main() -> None:
    """Build the repository, time the turns round by round, print the figures and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--files", type=int, default=3000)
    arguments = parser.parse_args()
    home = private_host()
    started = time.perf_counter()
    repo = realistic_repository(home / "project", files=arguments.files)
    print(
        f"repository: {arguments.files} files, 61 commits, built in "
        f"{time.perf_counter() - started:.1f}s"
    )
    kind_file = home / "lanes.toml"
    kind_file.write_text(kind_text(LANES), encoding="utf-8")
    turns = ["flume", "bare", "parallel", "together"]
    timed: dict[str, list[float]] = {turn: [] for turn in turns}
    each_lane: list[list[float]] = []
    journaled: list[float] = []
    failures = 0
    try:
        # The first launch starts the host's supervisor, as on a user's machine: not timed.
        flume_round(repo, kind_file, "warm")
        drop(repo, "warm")
        for number in range(arguments.rounds):
            shift = number % len(turns)
            for turn in turns[shift:] + turns[:shift]:
                if turn == "flume":
                    launched, lanes = flume_round(repo, kind_file, f"r{number}")
                    drop(repo, f"r{number}")
                    journaled.append(max(launched))
                    each_lane.append(lanes)
                    timed[turn].append(max(lanes))
                else:
                    elapsed, failed = bare_round(
                        repo,
                        f"{turn}{number}",
                        parallel=turn == "parallel",
                        together=turn == "together",
                    )
                    timed[turn].append(elapsed)
                    failures += failed
    finally:
        subprocess.run(  # noqa: S603 (our own script)
            [*flume_argv(), "daemon", "stop"],
            check=False,
            capture_output=True,
            env=command_environment(),
            cwd=home,
        )
    # Kept when the bench fails, to be looked at: its journals say why.
    shutil.rmtree(home, ignore_errors=True)
    report(timed, journaled, each_lane, failures)


def report(
    timed: dict[str, list[float]],
    journaled: list[float],
    each_lane: list[list[float]],
    failures: int,
) -> None:
    """Print each turn's best and median, the ratio against the target, and the raw figures."""
    labels = {
        "flume": f"flume, fan-out to {LANES} lanes made",
        "bare": f"{LANES} x git worktree add -b, one after another",
        "parallel": f"{LANES} x git -c checkout.workers=0 worktree add -b, one after another",
        "together": f"{LANES} x git worktree add -b, side by side",
    }
    for turn, label in labels.items():
        print(
            f"{label}: best {best(timed[turn]) * 1000:.0f} ms, "
            f"median {median(timed[turn]) * 1000:.0f} ms"
        )
        if turn == "flume":
            print(
                f"  of which the {LANES} lanes launched (the last lane's journal written): best "
                f"{best(journaled) * 1000:.0f} ms, median {median(journaled) * 1000:.0f} ms"
            )
        if turn == "together":
            print(
                f"  of which {failures} of {len(timed[turn]) * LANES} adds failed (git's race "
                "between adds at once)"
            )
    ratio = median(timed["flume"]) / median(timed["bare"])
    print(
        f"lanes ratio (median/median): {ratio:.2f}x; best/best "
        f"{best(timed['flume']) / best(timed['bare']):.2f}x; target at most {TARGET}x: "
        f"{'met' if ratio <= TARGET else 'NOT met'}"
    )
    print(
        "  against flume's own checkout one after another (median/median): "
        f"{median(timed['flume']) / median(timed['parallel']):.2f}x; against side by side: "
        f"{median(timed['flume']) / median(timed['together']):.2f}x"
    )
    print(f"raw, ms, in the order timed ({len(each_lane)} rounds):")
    for turn in labels:
        print(f"  {turn}: {_ms(timed[turn])}")
    print("  flume, each lane made after the fan-out:")
    for lanes in each_lane:
        print(f"    {_ms(lanes)}")


if __name__ == "__main__":
    main()
