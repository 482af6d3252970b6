"""bench/compare.py reads the figures the bench scripts print, and judges noise honestly.

The texts below are the benches' printed output as the code before issue 17 prints it (its
scripts cannot change, so their text is compare.py's interface); no checkout is run.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "compare.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_compare", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


compare = _load()

REPLAY = """\
journal: 100000 observations, 9.9 MB of JSON lines
fold (replay in memory)        1106.7 ms      90,359 obs/s   1.81x the P5 target of 50,000 obs/s
restart (decode + replay)      1706.1 ms      58,614 obs/s   1.17x the P5 target of 50,000 obs/s
decoding costs 1.54x the fold alone
"""

LAUNCH = """\
repository: 300 files, 61 commits, built in 4.2s
bare git worktree add -b: best 41.5 ms, median 57.0 ms
flume's own launch work:  best 88.1 ms, median 120.4 ms
P1 ratio (best/best): 2.12x; median/median 2.11x; target at most 1.5x: NOT met
git worktree add -b, as a command: best 45 ms, median 61 ms
flume launch, as a command: exits in median 1,204 ms; exited with its place made: best 990 ms, \
median 1,350 ms
launch end to end (median/median): 22.13x; best/best 22.00x; target at most 1.5x: NOT met
"""

STATUS = """\
status --json, 1 place:   best 512 ms, median 640 ms
status --json, 50 places: best 930 ms, median 1100 ms
P2 ratio (best/best): 1.82x; median/median 1.72x; target at most 3.0x: met
"""

SUPERVISOR = """\
1 place(s): made and idle after 12.5s
5 place(s): made and idle after 31.0s
  1 place(s): 3 git+tmux process(es) a tick, 40 ticks so far; idle CPU 1.25% of a core; \
resident memory 48.2 MB
  5 place(s): 4 git+tmux process(es) a tick, 38 ticks so far; idle CPU 3.50% of a core; \
resident memory 52.9 MB
P3 subprocesses a tick, 1 vs 5 places: 3 vs 4: NOT equal
"""

DELIVERY = """\
test agent via the supervisor: send -> journal median   121.4 ms  best    80.2  worst   373.9  \
(100 prompts)
test agent via the supervisor: tell -> journal median   211.0 ms  best    95.5  worst   512.3  \
(100 prompts)
"""

TRANSCRIPT = """\
transcript: 20.0 MB, 45,120 lines; first read 0.41 s; 5 rounds of ~1.10 KB appended
tail (read_from offset)  median     0.081 ms  best     0.070 ms  worst     0.120 ms
whole file again         median   390.500 ms  best   350.000 ms  worst   480.000 ms
the whole file costs 4,821x the tail (medians)
P4 (1 KB appended observed in < 10 ms): met, worst round 0.120 ms
"""


def test_every_figure_of_every_bench_is_read_from_its_text() -> None:
    """Each figure of the six benches is the number printed beside its words."""
    read = {
        name: compare.parse(compare.BENCHES[name], text)
        for name, text in (
            ("replay", REPLAY),
            ("launch", LAUNCH),
            ("status", STATUS),
            ("supervisor", SUPERVISOR),
            ("transcript", TRANSCRIPT),
            ("delivery", DELIVERY),
        )
    }
    assert read["replay"] == {
        "input: journal as JSON lines": 9.9,
        "fold, best of rounds (wall)": 1106.7,
        "restart, best of rounds (wall)": 1706.1,
    }
    assert read["launch"] == {
        "bare git worktree add, median (wall)": 57.0,
        "flume's own launch work, median (wall)": 120.4,
        "flume's own launch work, best (wall)": 88.1,
        "git worktree add command, median (wall)": 61.0,
        "flume launch command exits, median (wall)": 1204.0,
        "flume launch command place made, median (wall)": 1350.0,
    }
    assert read["status"] == {
        "status --json 1 place, median (wall)": 640.0,
        "status --json 1 place, best (wall)": 512.0,
        "status --json N places, median (wall)": 1100.0,
        "status --json N places, best (wall)": 930.0,
    }
    assert read["supervisor"] == {
        "1 place: processes a tick": 3.0,
        "N places: processes a tick": 4.0,
        "1 place: supervisor idle CPU (CPU)": 1.25,
        "N places: supervisor idle CPU (CPU)": 3.5,
        "1 place: resident memory": 48.2,
        "N places: resident memory": 52.9,
        "N places: made and idle after (wall)": 31.0,
    }
    assert read["delivery"] == {
        "100 places: send -> journal, median (wall)": 121.4,
        "100 places: send -> journal, worst (wall)": 373.9,
        "100 places: tell -> journal, median (wall)": 211.0,
        "100 places: tell -> journal, worst (wall)": 512.3,
    }
    assert read["transcript"] == {
        "input: transcript lines": 45120.0,
        "first read, whole file (wall)": 0.41,
        "tail read_from offset, median (wall)": 0.081,
        "whole file again, median (wall)": 390.5,
    }


def test_this_trees_launch_prints_what_the_tree_before_printed() -> None:
    """Launch's figures read the same from this tree's text as from the tree before's."""
    # After issue 17, launch.py labels its command's line by host; without --against the one
    # host is "flume launch", so the line reads as it did before.
    after = LAUNCH.replace("launch end to end", "  end to end") + (
        "raw, ms, in the order timed (5 rounds):\n  bare: 61 60\n  flume launch: 1350 1300\n"
    )
    assert compare.parse(compare.BENCHES["launch"], after) == compare.parse(
        compare.BENCHES["launch"], LAUNCH
    )


LANES = """\
repository: 300 files, 61 commits, built in 1.6s
flume, fan-out to 4 lanes made: best 826 ms, median 830 ms
  of which the 4 lanes launched (the last lane's journal written): best 73 ms, median 75 ms
4 x git worktree add -b, one after another: best 1033 ms, median 1040 ms
4 x git -c checkout.workers=0 worktree add -b, one after another: best 1052 ms, median 1060 ms
4 x git worktree add -b, side by side: best 1325 ms, median 1330 ms
  of which 0 of 12 adds failed (git's race between adds at once)
lanes ratio (median/median): 0.80x; best/best 0.80x; target at most 1.5x: met
  against flume's own checkout one after another (median/median): 0.78x; against side by side: \
0.62x
raw, ms, in the order timed (3 rounds):
  flume: 826 830 900
"""

LANES_SUPERVISOR = """\
8 fix places: made and idle after 1.9s
1 run of 8 lanes (9 places): made and idle after 2.1s
8 fix places: supervisor 101, 8 places followed, 69 ticks so far; idle CPU 1.40% of a core; \
resident memory 36.3 MB
1 run of 8 lanes (9 places): supervisor 102, 9 places followed, 62 ticks so far; \
idle CPU 1.55% of a core; resident memory 36.5 MB
8 fix places: git+tmux processes a tick, 8 ticks sampled: 2 2 2 2 2 2 2 2
1 run of 8 lanes (9 places): git+tmux processes a tick, 8 ticks sampled: 3 3 3 3 3 3 3 3
processes a tick, 1 run of 8 lanes (9 places) vs 8 fix places: 3 vs 2: NOT equal
"""


def test_the_lanes_benches_figures_are_read_from_their_text() -> None:
    """Issue 13's lanes benches: each figure is the number printed beside its words."""
    assert compare.parse(compare.BENCHES["lanes"], LANES) == {
        "fan-out to 4 lanes made, median (wall)": 830.0,
        "4 lanes journaled, median (wall)": 75.0,
        "4 git worktree add in turn, median (wall)": 1040.0,
        "lanes made / bare, median": 0.8,
    }
    assert compare.parse(compare.BENCHES["lanes_supervisor"], LANES_SUPERVISOR) == {
        "8 fix places: processes a tick": 2.0,
        "1 run of 8 lanes: processes a tick": 3.0,
        "1 run of 8 lanes: supervisor idle CPU (CPU)": 1.55,
    }


def test_a_figure_missing_from_the_text_is_an_error_not_a_zero() -> None:
    """A bench whose text no longer holds a figure stops the comparison."""
    with pytest.raises(ValueError, match="restart"):
        compare.parse(compare.BENCHES["replay"], REPLAY.replace("restart (decode", "restart (x"))


def _row(before: list[float], after: list[float], unit: str = "ms") -> Any:
    figure = compare.Figure("f", unit, "")
    return compare.row("b", compare.Samples(figure, before, after))


def test_slower_only_when_every_round_after_is_above_every_round_before() -> None:
    """The verdict is "slower" only when the two ranges do not overlap."""
    slower = _row([10.0, 11.0, 12.0], [12.5, 13.0, 20.0])
    assert (slower.verdict, slower.ratio) == ("slower", 13.0 / 11.0)
    assert _row([10.0, 11.0, 12.0], [11.5, 13.0, 20.0]).verdict == "noise"
    assert _row([10.0, 11.0, 12.0], [7.0, 8.0, 9.0]).verdict == "faster"
    # Memory or a count of processes is "more", not "slower".
    assert _row([32.9, 33.0], [33.2, 33.4], unit="MB").verdict == "more"


def test_the_table_shows_both_medians_their_ranges_and_the_ratio() -> None:
    """A table line carries both medians, both ranges, the ratio and the verdict."""
    text = compare.table([_row([10.0, 11.0, 12.0], [12.5, 13.0, 20.0])])
    line = text.splitlines()[-1]
    assert "11 [10-12]" in line
    assert "13 [12.5-20]" in line
    assert "1.18x" in line
    assert line.endswith("slower")


def test_the_cpu_clock_runs_a_script_as_python_runs_it_with_its_clock_replaced(
    tmp_path: Path,
) -> None:
    """Under CPU_CLOCK a script is __main__, gets its arguments, finds its folder's modules."""
    (tmp_path / "common.py").write_text("WORD = 'beside'\n")
    script = tmp_path / "bench.py"
    script.write_text(
        "import sys, time\n"
        "from common import WORD\n"
        "print(__name__, WORD, sys.argv[1:], time.perf_counter.__name__)\n"
    )
    ran = subprocess.run(  # noqa: S603 (this interpreter, our own script)
        [sys.executable, "-c", compare.CPU_CLOCK, str(script), "--rounds", "3"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path.parent,
    )
    assert ran.stdout == "__main__ beside ['--rounds', '3'] cpu\n"


def test_on_the_cpu_clock_only_the_figures_it_can_measure_are_kept() -> None:
    """Launch's "place made" is the supervisor's work: not measurable on the bench's CPU clock."""
    figures = [each.name for each in compare.on_cpu_clock(compare.BENCHES["launch"]).figures]
    assert "flume launch command exits, median (CPU clock)" in figures
    assert not [name for name in figures if "place made" in name or "(wall)" in name]
    assert compare.on_cpu_clock(compare.BENCHES["supervisor"]).figures == ()


def test_no_bench_named_is_every_bench_and_a_named_one_is_that_one() -> None:
    """``compare.py --against X`` compares all but the slow ones; named, those; a typo is told."""
    default = compare.command_line(["--against", "x"]).benches
    assert default == [name for name in compare.BENCHES if name != "delivery"]
    assert compare.command_line(["--against", "x", "delivery"]).benches == ["delivery"]
    assert compare.command_line(["--against", "x", "replay", "status"]).benches == [
        "replay",
        "status",
    ]
    with pytest.raises(SystemExit):
        compare.command_line(["--against", "x", "replays"])
