"""docs/transitions.md is what scripts/draw_transitions.py prints from the table now.

The page draws ``flume.core.place.ACCEPTS``; a change to the table that is not drawn again fails
here, so the drawing never goes stale.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from flume.core.place import ACCEPTS

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_drawing_is_what_the_script_prints_now() -> None:
    """The script's output, byte for byte, is the committed page."""
    printed = subprocess.run(  # noqa: S603 (this interpreter, running the repository's script)
        [sys.executable, str(ROOT / "scripts" / "draw_transitions.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    committed = (ROOT / "docs" / "transitions.md").read_text(encoding="utf-8")
    assert printed == committed, (
        "docs/transitions.md is stale: run "
        ".venv/bin/python scripts/draw_transitions.py > docs/transitions.md"
    )


def test_the_drawing_shows_every_move_of_the_table() -> None:
    """Each command that moves a phase is drawn as an edge, so the page cannot drop one."""
    page = (ROOT / "docs" / "transitions.md").read_text(encoding="utf-8")
    for phase, row in ACCEPTS.items():
        for target in set(row.values()) - {phase}:
            assert f"    {phase.__name__} --> {target.__name__}: " in page
