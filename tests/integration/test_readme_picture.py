"""The pictures of flume's pages are drawn from real runs, never by hand.

The README's first picture is the run monitor's page of a real run, shown in Chromium by
scripts/screenshots.py (the browser tests drive the same page). The board's picture, beside
``flume watch`` in docs/commands.md, is rich's export of the board (``flume watch``'s own code)
during a run of ``flume demo``, and the script that drew it, scripts/board_picture.py, draws it
again here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PICTURE = ROOT / "docs" / "_static" / "board.svg"


def _is_a_drawn_board(svg: str) -> bool:
    """Rich's own export, of a board holding the demo's two places."""
    return all(each in svg for each in ("Generated with Rich", "fix--typo", "change--farewell"))


def _images(page: Path) -> list[str]:
    """The addresses of the images ``page`` shows, in order."""
    return re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text(encoding="utf-8"))


def test_the_readme_shows_the_monitor_s_screenshot_first() -> None:
    """The README's first image is the monitor's page at a laptop's size, as the script wrote it."""
    (first, *_) = _images(ROOT / "README.md")
    assert first == "docs/monitor-slices-1280.png"
    written = (ROOT / "scripts" / "screenshots.py").read_text(encoding="utf-8")
    assert 'DOCS / f"monitor-{name}-{width}.png"' in written
    assert '("slices", "slices--greet")' in written
    png = (ROOT / first).read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert int.from_bytes(png[16:20], "big") == 1280


def test_the_board_s_picture_stands_beside_flume_watch_and_is_a_drawing_rich_exported() -> None:
    """docs/commands.md shows the board's picture, which is rich's export of a drawn board."""
    assert "_static/board.svg" in _images(ROOT / "docs" / "commands.md")
    assert _is_a_drawn_board(PICTURE.read_text(encoding="utf-8"))


@pytest.mark.processes
def test_the_script_draws_the_picture_again_from_a_run_of_the_demo(tmp_path: Path) -> None:
    """scripts/board_picture.py runs the demo and writes the board it drew, as an SVG."""
    out = tmp_path / "board.svg"
    ran = subprocess.run(  # noqa: S603 (this interpreter, the repository's own script)
        [sys.executable, str(ROOT / "scripts" / "board_picture.py"), str(out)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert _is_a_drawn_board(out.read_text(encoding="utf-8"))
