"""The README's picture is the board flume draws, from a real run, by scripts/board_picture.py.

Never drawn by hand: the committed SVG is rich's export of the board (``flume watch``'s own
code) during a run of ``flume demo``, and the script that drew it draws it again here.
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


def test_the_readme_shows_the_committed_picture_of_the_board() -> None:
    """The README's first image is the board's picture, which is a drawing rich exported."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (first, *_) = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", readme)
    assert first == "docs/_static/board.svg"
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
