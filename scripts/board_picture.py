#!/usr/bin/env python3
"""Draws the README's picture: flume's board (``flume watch``) during a real run of the demo.

It runs what ``flume demo`` runs (a fix and an OpenSpec change carried to landing by flume's test
agent in tmux, on a sample repository, in a temporary folder of its own), follows the places as
``flume watch`` does, and draws each board the run shows with the board's own code. Of those, it
keeps the one that shows the most at once (places in different phases, a landing, tasks ticked)
and writes it as an SVG, through rich's own export of what it drew: docs/_static/board.svg, or
the path given. Nothing is drawn by hand; run it again to draw the picture again.

Run it from a clone, with flume installed: .venv/bin/python scripts/board_picture.py [OUT.svg]
"""

from __future__ import annotations

import io
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

from flume.cli import board
from flume.core.settings import Settings
from flume.shell.store.events import EventStream
from flume.testing import demo, scenario

#: Where the picture goes, from the top of the clone.
OUT = Path(__file__).resolve().parents[1] / "docs" / "_static" / "board.svg"
#: How wide the board is drawn, in columns: the README's width, about.
WIDTH = 104
#: How long the demo may take before the script gives up.
DEADLINE = 120.0


def score(found: list[board.Row]) -> int:
    """How much a board shows: distinct phases and agent states, tasks ticked part way, a landing.

    Ties go to the board seen first.
    """
    phases = {row.view.phase for row in found}
    agents = {row.view.agent for row in found}
    landed = any(row.view.submission.value == "landed" for row in found)
    ticking = any(row.view.tasks and 0 < row.view.tasks[0] < row.view.tasks[1] for row in found)
    return len(phases) + len(agents) + int(landed) + int(ticking)


def frames(folder: Path) -> list[list[board.Row]]:
    """Every distinct board of a run of the demo in ``folder``, in the order they were seen."""
    for said in demo.start(folder):
        sys.stderr.write(f"flume demo: {said}\n")
    follower = EventStream(Settings(), repository=demo.repository_of(folder))
    seen: list[list[board.Row]] = []
    last: list[tuple[object, ...]] | None = None
    ends = time.monotonic() + DEADLINE
    while not demo.all_settled(follower):
        if time.monotonic() > ends:
            message = f"the demo did not settle in {DEADLINE:.0f} s"
            raise SystemExit(message)
        found = board.rows(follower, time.time(), supervised=True)
        if found and [row.key() for row in found] != last:
            last = [row.key() for row in found]
            seen.append(found)
        time.sleep(0.05)
    return seen


def main() -> None:
    """Run the demo, keep its fullest board, write it as an SVG."""
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    folder = Path(tempfile.mkdtemp(prefix="flume-pic-", dir="/tmp"))
    try:
        with scenario.private_host(folder):
            seen = frames(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    best = max(seen, key=score)
    console = Console(
        file=io.StringIO(), record=True, width=WIDTH, force_terminal=True, color_system="truecolor"
    )
    heading = f"flume watch: {len(best)} places in ~/src/greet; q quits"
    console.print(board.board(best, heading=heading, width=WIDTH))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(console.export_svg(title="flume watch"), encoding="utf-8")
    sys.stderr.write(f"{out}: the board of {len(seen)} drawn, scored {score(best)}\n")


if __name__ == "__main__":
    main()
