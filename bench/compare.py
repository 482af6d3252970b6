"""The benches of two checkouts, before and after, side by side in one run.

Each named bench script is run as a process of its own by each checkout's own interpreter
(``<tree>/.venv/bin/python bench/<name>.py``, the working folder the tree), so each tree's
script imports that tree's modules. The two trees take turns, round by round, with the same
arguments: A B, then B A, then A B..., so that a busy moment on the machine falls on both
sides rather than on one. The figures each script prints are read from its text (the other
tree's scripts cannot change, so their text is the interface), and for every bench the CPU
time (user + system) and wall time of the whole bench process are added, as the operating
system counts them (``os.wait4``; CPU time includes the processes the bench waited for, not a
daemon it started and left running). On a loaded machine CPU time is far less disturbed than
wall time.

The table gives, per figure: each side's median over the rounds and its range (lowest to
highest), the ratio of the medians (after / before), and a verdict: "slower" only when every
round after was above every round before (the ranges do not overlap), "faster" the other way
round, otherwise "noise".

Run: ``python bench/compare.py --against ../before [--rounds N] [--json FILE] replay status``.
This checkout is "after", the one named by ``--against`` is "before".
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
NUMBER = r"([0-9][0-9,]*(?:\.[0-9]+)?)"


@dataclass(frozen=True)
class Figure:
    """One number a bench prints: its name, unit, and the pattern whose first group is it."""

    name: str
    unit: str
    pattern: str


@dataclass(frozen=True)
class Bench:
    """A bench script, the arguments both sides run it with, and the figures it prints."""

    script: str
    arguments: tuple[str, ...]
    figures: tuple[Figure, ...]
    #: The figures that still mean something when the script's clock is its CPU time (see
    #: ``CPU_CLOCK``): work done in the bench process or in processes it waits for.
    cpu_clock: tuple[str, ...] = ()


def _ms(name: str, pattern: str) -> Figure:
    return Figure(name=name, unit="ms", pattern=pattern)


#: Benches run only when named: each takes minutes (100 places launched and delivered to).
NAMED_ONLY = frozenset({"delivery"})

BENCHES: dict[str, Bench] = {
    "replay": Bench(
        script="replay.py",
        arguments=("--observations", "20000", "--rounds", "3"),
        figures=(
            # The same input on both sides: the journal's size in JSON lines.
            Figure(
                "input: journal as JSON lines", "MB", rf"^journal: \d+ observations, {NUMBER} MB"
            ),
            _ms("fold, best of rounds (wall)", rf"^fold \(replay in memory\)\s+{NUMBER} ms"),
            _ms("restart, best of rounds (wall)", rf"^restart \(decode \+ replay\)\s+{NUMBER} ms"),
        ),
        cpu_clock=("fold, best of rounds (wall)", "restart, best of rounds (wall)"),
    ),
    "launch": Bench(
        script="launch.py",
        arguments=("--rounds", "5", "--files", "300"),
        figures=(
            _ms(
                "bare git worktree add, median (wall)",
                rf"^bare git worktree add -b: .*median {NUMBER} ms",
            ),
            _ms(
                "flume's own launch work, median (wall)",
                rf"^flume's own launch work: .*median {NUMBER} ms",
            ),
            _ms(
                "flume's own launch work, best (wall)",
                rf"^flume's own launch work:\s+best {NUMBER} ms",
            ),
            _ms(
                "git worktree add command, median (wall)",
                rf"^git worktree add -b, as a command: .*median {NUMBER} ms",
            ),
            _ms(
                "flume launch command exits, median (wall)",
                rf"^flume launch, as a command: exits in median {NUMBER} ms",
            ),
            _ms(
                "flume launch command place made, median (wall)",
                rf"^flume launch, as a command: .*place made: best .* median {NUMBER} ms",
            ),
        ),
        # Not "place made": the supervisor makes the place, a daemon the bench does not wait
        # for, while the bench polls the journal (its polling would be what is counted).
        cpu_clock=(
            "bare git worktree add, median (wall)",
            "flume's own launch work, median (wall)",
            "flume's own launch work, best (wall)",
            "git worktree add command, median (wall)",
            "flume launch command exits, median (wall)",
        ),
    ),
    "lanes": Bench(
        script="lanes.py",
        arguments=("--rounds", "3", "--files", "300"),
        figures=(
            _ms(
                "fan-out to 4 lanes made, median (wall)",
                rf"^flume, fan-out to 4 lanes made: .*median {NUMBER} ms",
            ),
            _ms(
                "4 lanes journaled, median (wall)",
                rf"^  of which the 4 lanes launched .*median {NUMBER} ms",
            ),
            _ms(
                "4 git worktree add in turn, median (wall)",
                rf"^4 x git worktree add -b, one after another: .*median {NUMBER} ms",
            ),
            Figure("lanes made / bare, median", "x", rf"^lanes ratio \(median/median\): {NUMBER}x"),
        ),
        # None on the CPU clock: the supervisor, a daemon the bench does not wait for, makes the
        # lanes, and their instants are its journal's.
    ),
    "status": Bench(
        script="status.py",
        arguments=("--rounds", "5", "--places", "50"),
        figures=(
            _ms(
                "status --json 1 place, median (wall)",
                rf"^status --json, 1 place: .*median {NUMBER} ms",
            ),
            _ms(
                "status --json 1 place, best (wall)",
                rf"^status --json, 1 place:\s+best {NUMBER} ms",
            ),
            _ms(
                "status --json N places, median (wall)",
                rf"^status --json, \d+ places: .*median {NUMBER} ms",
            ),
            _ms(
                "status --json N places, best (wall)",
                rf"^status --json, \d+ places: best {NUMBER} ms",
            ),
        ),
        cpu_clock=(
            "status --json 1 place, median (wall)",
            "status --json 1 place, best (wall)",
            "status --json N places, median (wall)",
            "status --json N places, best (wall)",
        ),
    ),
    "supervisor": Bench(
        script="supervisor.py",
        arguments=("--places", "20", "--seconds", "15"),
        figures=(
            Figure(
                "1 place: processes a tick",
                "n",
                rf"^\s*1 place\(s\): {NUMBER} git\+tmux",
            ),
            Figure(
                "N places: processes a tick",
                "n",
                rf"^\s*(?!1 )\d+ place\(s\): {NUMBER} git\+tmux",
            ),
            Figure(
                "1 place: supervisor idle CPU (CPU)",
                "% core",
                rf"^\s*1 place\(s\): .*idle CPU {NUMBER}%",
            ),
            Figure(
                "N places: supervisor idle CPU (CPU)",
                "% core",
                rf"^\s*(?!1 )\d+ place\(s\): .*idle CPU {NUMBER}%",
            ),
            Figure("1 place: resident memory", "MB", rf"^\s*1 place\(s\): .*memory {NUMBER} MB"),
            Figure(
                "N places: resident memory",
                "MB",
                rf"^\s*(?!1 )\d+ place\(s\): .*memory {NUMBER} MB",
            ),
            Figure(
                "N places: made and idle after (wall)",
                "s",
                rf"^(?!1 )\d+ place\(s\): made and idle after {NUMBER}s",
            ),
        ),
    ),
    "lanes_supervisor": Bench(
        script="lanes_supervisor.py",
        arguments=("--seconds", "5", "--samples", "5"),
        figures=(
            Figure(
                "8 fix places: processes a tick",
                "n",
                rf"^processes a tick, .* vs \d+ fix places: \d+ vs {NUMBER}:",
            ),
            Figure(
                "1 run of 8 lanes: processes a tick",
                "n",
                rf"^processes a tick, 1 run of \d+ lanes .*: {NUMBER} vs",
            ),
            Figure(
                "1 run of 8 lanes: supervisor idle CPU (CPU)",
                "% core",
                rf"^1 run of \d+ lanes .*idle CPU {NUMBER}%",
            ),
        ),
    ),
    "delivery": Bench(
        script="delivery.py",
        arguments=("--places", "100", "--only-supervisor"),
        figures=(
            _ms(
                "100 places: send -> journal, median (wall)",
                rf"^test agent via the supervisor: send -> journal\s+median\s+{NUMBER} ms",
            ),
            _ms(
                "100 places: send -> journal, worst (wall)",
                rf"^test agent via the supervisor: send -> journal.*worst\s+{NUMBER}",
            ),
            _ms(
                "100 places: tell -> journal, median (wall)",
                rf"^test agent via the supervisor: tell -> journal\s+median\s+{NUMBER} ms",
            ),
            _ms(
                "100 places: tell -> journal, worst (wall)",
                rf"^test agent via the supervisor: tell -> journal.*worst\s+{NUMBER}",
            ),
        ),
    ),
    "transcript": Bench(
        script="transcript.py",
        arguments=("--megabytes", "20", "--rounds", "5"),
        figures=(
            Figure("input: transcript lines", "n", rf"^transcript: .* MB, {NUMBER} lines"),
            Figure("first read, whole file (wall)", "s", rf"first read {NUMBER} s"),
            _ms(
                "tail read_from offset, median (wall)",
                rf"^tail \(read_from offset\)\s+median\s+{NUMBER} ms",
            ),
            _ms("whole file again, median (wall)", rf"^whole file again\s+median\s+{NUMBER} ms"),
        ),
        cpu_clock=(
            "first read, whole file (wall)",
            "tail read_from offset, median (wall)",
            "whole file again, median (wall)",
        ),
    ),
    "workflow_replay": Bench(
        script="workflow_replay.py",
        arguments=("--observations", "20000", "--rounds", "3"),
        figures=(
            _ms("workflow fold, best of rounds (wall)", rf"^workflow fold\s+best\s+{NUMBER} ms"),
            _ms("fix fold, best of rounds (wall)", rf"^fix fold\s+best\s+{NUMBER} ms"),
            _ms(
                "workflow restart, best of rounds (wall)",
                rf"^workflow restart\s+best\s+{NUMBER} ms",
            ),
            _ms("fix restart, best of rounds (wall)", rf"^fix restart\s+best\s+{NUMBER} ms"),
            Figure("workflow/fix fold, best", "x", rf"^workflow/fix fold\s+best {NUMBER}x"),
            Figure("workflow/fix restart, best", "x", rf"^workflow/fix restart\s+best {NUMBER}x"),
        ),
        cpu_clock=(
            "workflow fold, best of rounds (wall)",
            "fix fold, best of rounds (wall)",
            "workflow restart, best of rounds (wall)",
            "fix restart, best of rounds (wall)",
            "workflow/fix fold, best",
            "workflow/fix restart, best",
        ),
    ),
    "usage": Bench(
        script="usage.py",
        arguments=("--megabytes", "20", "--rounds", "5", "--whole-rounds", "3"),
        figures=(
            _ms(
                "whole file, read_from with usage, median (wall)",
                rf"^whole file:\n  read_from \(with usage\)\s+median\s+{NUMBER} ms",
            ),
            _ms(
                "whole file, same read without usage, median (wall)",
                rf"^whole file:\n.*\n  same read without usage\s+median\s+{NUMBER} ms",
            ),
            _ms(
                "whole file, usage summing alone, median (wall)",
                rf"^whole file:\n.*\n.*\n  usage summing alone\s+median\s+{NUMBER} ms",
            ),
        ),
        cpu_clock=(
            "whole file, read_from with usage, median (wall)",
            "whole file, same read without usage, median (wall)",
            "whole file, usage summing alone, median (wall)",
        ),
    ),
}

#: The units of time and of CPU time: a higher figure in them is "slower".
TIMES = ("ms", "s", "% core")

#: Added to every bench: the bench process's own counts, from the operating system.
PROCESS_CPU = Figure("bench process user+sys (CPU)", "s", "")
PROCESS_WALL = Figure("bench process (wall)", "s", "")


def parse(bench: Bench, text: str) -> dict[str, float]:
    """The figures found in a bench's printed text, by name; a figure not found is an error."""
    found: dict[str, float] = {}
    for figure in bench.figures:
        match = re.search(figure.pattern, text, re.MULTILINE)
        if match is None:
            message = f"{bench.script}: no {figure.name!r} in its output:\n{text}"
            raise ValueError(message)
        found[figure.name] = float(match.group(1).replace(",", ""))
    return found


@dataclass
class Samples:
    """Every round's value of one figure, on each side."""

    figure: Figure
    before: list[float] = field(default_factory=list)
    after: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Row:
    """One line of the table."""

    bench: str
    figure: str
    unit: str
    before_median: float
    before_low: float
    before_high: float
    after_median: float
    after_low: float
    after_high: float
    ratio: float
    verdict: str


def row(bench: str, samples: Samples) -> Row:
    """The medians, ranges, ratio and verdict of one figure's samples."""
    before, after = samples.before, samples.after
    worse_after = min(after) > max(before)
    better_after = max(after) < min(before)
    words = ("slower", "faster") if samples.figure.unit in TIMES else ("more", "less")
    verdict = words[0] if worse_after else words[1] if better_after else "noise"
    before_median, after_median = statistics.median(before), statistics.median(after)
    return Row(
        bench=bench,
        figure=samples.figure.name,
        unit=samples.figure.unit,
        before_median=before_median,
        before_low=min(before),
        before_high=max(before),
        after_median=after_median,
        after_low=min(after),
        after_high=max(after),
        ratio=after_median / before_median if before_median else float("nan"),
        verdict=verdict,
    )


def _number(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def table(rows: list[Row]) -> str:
    """The side-by-side table, one figure a line."""
    header = (
        f"{'bench':<17}{'figure':<48}{'unit':>7}  {'before median [range]':>26}  "
        f"{'after median [range]':>26}  {'after/before':>12}  verdict"
    )
    lines = [header, "-" * len(header)]
    for each in rows:
        before = (
            f"{_number(each.before_median)} [{_number(each.before_low)}-"
            f"{_number(each.before_high)}]"
        )
        after = (
            f"{_number(each.after_median)} [{_number(each.after_low)}-{_number(each.after_high)}]"
        )
        lines.append(
            f"{each.bench:<17}{each.figure:<48}{each.unit:>7}  {before:>26}  {after:>26}  "
            f"{each.ratio:>11.2f}x  {each.verdict}"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Ran:
    """One run of a bench script: its text, and the operating system's counts of it."""

    text: str
    cpu: float
    wall: float


#: Runs a bench script with its clock, ``time.perf_counter``, reading CPU time instead: the
#: user and system time of the bench process and of the processes it has waited for. Every
#: figure the script times is then CPU time spent between its two readings, which the
#: machine's other work hardly changes. The script runs as ``python bench/<name>.py`` runs it:
#: as ``__main__``, its folder first on the path.
CPU_CLOCK = """\
import os, resource, runpy, sys, time
def cpu():
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime
time.perf_counter = cpu
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(script)
runpy.run_path(script, run_name="__main__")
"""


def command(tree: Path, bench: Bench, clock: str) -> list[str]:
    """The command that runs ``bench`` of ``tree`` with that tree's interpreter, by ``clock``."""
    python = str(tree / ".venv" / "bin" / "python")
    script = [str(tree / "bench" / bench.script), *bench.arguments]
    return [python, *script] if clock == "wall" else [python, "-c", CPU_CLOCK, *script]


def run(argv: list[str], cwd: Path, environment: dict[str, str]) -> Ran:
    """Run one bench script, in its tree.

    Its CPU time is the growth of this process's children's resource use across the run: one
    bench runs at a time, so the growth is that bench's (and of the processes it waited for).
    """
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    ran = subprocess.run(  # noqa: S603 (our own scripts)
        argv, cwd=cwd, env=environment, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    if ran.returncode != 0:
        message = f"{argv} failed ({ran.returncode}):\n{ran.stdout}\n{ran.stderr}"
        raise RuntimeError(message)
    cpu = (now.ru_utime - used.ru_utime) + (now.ru_stime - used.ru_stime)
    return Ran(text=ran.stdout, cpu=cpu, wall=wall)


def on_cpu_clock(bench: Bench) -> Bench:
    """The bench's figures that mean something on the CPU clock, named for that clock."""
    return Bench(
        script=bench.script,
        arguments=bench.arguments,
        figures=tuple(
            Figure(
                name=figure.name.replace("(wall)", "(CPU clock)"),
                unit=figure.unit,
                pattern=figure.pattern,
            )
            for figure in bench.figures
            if figure.name in bench.cpu_clock
        ),
    )


def compare(  # noqa: PLR0913 (each is the run's own)
    *,
    before: Path,
    after: Path,
    names: list[str],
    rounds: int,
    clocks: list[str],
    log: Path | None,
) -> list[Row]:
    """Run the benches in turns and gather every figure's samples; the table's rows.

    In every round each side runs each clock once; the order of the sides turns round every
    round and within a round (A B then B A), so neither side always runs first.
    """
    # Bytecode cached and used, as on a user's machine, alike on both sides: each tree's
    # modules compiled by its own interpreter before anything is timed.
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for tree in (before, after):
        python = str(tree / ".venv" / "bin" / "python")
        subprocess.run(  # noqa: S603 (the tree's interpreter)
            [python, "-m", "compileall", "-q", "flume", "bench"],
            cwd=tree,
            env=environment,
            check=True,
            capture_output=True,
        )
    rows: list[Row] = []
    for name in names:
        bench = BENCHES[name]
        timed = {"wall": bench, "cpu": on_cpu_clock(bench)}
        runs = [clock for clock in clocks if timed[clock].figures]
        figures_of = [figure for clock in runs for figure in timed[clock].figures]
        samples = {
            figure.name: Samples(figure) for figure in (*figures_of, PROCESS_CPU, PROCESS_WALL)
        }
        for number in range(rounds):
            order = [("before", before), ("after", after)]
            if number % 2:
                order.reverse()
            for index, clock in enumerate(runs):
                for side, tree in order if index % 2 == 0 else order[::-1]:
                    ran = run(command(tree, bench, clock), tree, environment)
                    figures = parse(timed[clock], ran.text)
                    if clock == "wall":
                        figures[PROCESS_CPU.name] = ran.cpu
                        figures[PROCESS_WALL.name] = ran.wall
                    for figure_name, value in figures.items():
                        getattr(samples[figure_name], side).append(value)
                    if log is not None:
                        with log.open("a") as file:
                            record = {"bench": name, "round": number, "side": side, **figures}
                            file.write(json.dumps(record) + "\n")
                    print(
                        f"{name} round {number + 1}/{rounds} {side} {clock} clock: "
                        f"cpu {ran.cpu:.2f}s wall {ran.wall:.2f}s",
                        file=sys.stderr,
                        flush=True,
                    )
        rows.extend(row(name, each) for each in samples.values() if each.before)
    return rows


def command_line(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line's words; every bench when none is named."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # Checked here, not by argparse's choices: with no bench named, argparse checks its empty
    # list (or a default list) against the choices as if it were one, and refuses it.
    parser.add_argument(
        "benches",
        nargs="*",
        help=f"the benches, of {', '.join(BENCHES)} (default: all but {', '.join(NAMED_ONLY)})",
    )
    parser.add_argument("--against", type=Path, required=True, help="the checkout before")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--clocks",
        default="wall,cpu",
        help="the bench scripts' clocks: wall (as they are), cpu (CPU_CLOCK), or both",
    )
    parser.add_argument("--log", type=Path, help="append every round's figures here (JSON lines)")
    arguments = parser.parse_args(argv)
    unknown = [name for name in arguments.benches if name not in BENCHES]
    if unknown:
        parser.error(f"no bench {', '.join(unknown)}: choose from {', '.join(BENCHES)}")
    arguments.benches = arguments.benches or [name for name in BENCHES if name not in NAMED_ONLY]
    return arguments


def main() -> None:
    """Compare the named benches of this checkout against another's and print the table."""
    arguments = command_line()
    rows = compare(
        before=arguments.against.resolve(),
        after=HERE,
        names=arguments.benches,
        rounds=arguments.rounds,
        clocks=arguments.clocks.split(","),
        log=arguments.log,
    )
    print(f"before: {arguments.against.resolve()}  after: {HERE}  rounds: {arguments.rounds}")
    print(
        "CPU figures are user+sys time, little disturbed by the machine's load; wall figures "
        "are disturbed by it. 'slower' means every round after was above every round before."
    )
    print(table(rows))


if __name__ == "__main__":
    main()
