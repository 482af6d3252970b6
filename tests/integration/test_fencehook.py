"""The guard on a sandboxed Claude Code's file tools (flume/shell/agents/fencehook.py).

It fails closed: what it cannot read or check is refused (exit 2, with a reason), never let
through; inside the worktree, git's folder and Claude Code's own project settings are refused.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from flume.shell.agents import fencehook


def _guard(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], given: str, *allowed: Path
) -> tuple[int, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(given))
    status = fencehook.main([str(each) for each in allowed])
    return status, capsys.readouterr().err


def _write(cwd: Path, path: str, field: str = "file_path") -> str:
    return json.dumps({"cwd": str(cwd), "tool_input": {field: path, "content": "x"}})


@pytest.fixture
def fence(tmp_path: Path) -> tuple[Path, Path]:
    """A worktree (with Claude Code's project folder) and a board beside it."""
    worktree, board = tmp_path / "places" / "fix--a", tmp_path / "board"
    (worktree / ".claude").mkdir(parents=True)
    board.mkdir()
    return worktree, board


def test_a_write_inside_the_worktree_or_the_board_passes(
    fence: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Inside the worktree (but what is kept) or the board: 0, nothing said."""
    worktree, board = fence
    for given in (
        _write(worktree, "src/app.py"),
        _write(worktree, str(board / "notes.md")),
        _write(worktree, "nb.ipynb", "notebook_path"),
        _write(worktree, ".github/workflows/x.yml"),
    ):
        assert _guard(monkeypatch, capsys, given, worktree, board) == (0, "")


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../../escaped.md", "is outside the folders it may write"),
        (".git", "is kept from the agent"),
        (".git/hooks/pre-commit", "is kept from the agent"),
        (".claude/settings.json", "is kept from the agent"),
        (".claude/settings.local.json", "is kept from the agent"),
        (".mcp.json", "is kept from the agent"),
        ("sub/../.mcp.json", "is kept from the agent"),
    ],
)
def test_a_write_outside_or_to_what_is_kept_is_refused(
    fence: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    path: str,
    why: str,
) -> None:
    """Outside the fence, or git's folder and Claude Code's settings in the worktree: 2."""
    worktree, board = fence
    status, said = _guard(monkeypatch, capsys, _write(worktree, path), worktree, board)
    assert status == 2
    assert "flume: this step is sandboxed:" in said
    assert why in said


def test_a_link_into_what_is_kept_is_refused(
    fence: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A path is judged where it leads: a link into ``.claude`` is refused."""
    worktree, board = fence
    (worktree / "settings").symlink_to(worktree / ".claude")
    status, said = _guard(monkeypatch, capsys, _write(worktree, "settings/x.json"), worktree, board)
    assert (status, "is kept from the agent" in said) == (2, True)


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ("", "not JSON"),
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps({"cwd": "/"}), "names no input"),
        (json.dumps({"cwd": "/", "tool_input": "x"}), "names no input"),
        (json.dumps({"tool_input": {"file_path": "a"}}), "names no working folder"),
        (json.dumps({"cwd": "rel", "tool_input": {"file_path": "a"}}), "names no working folder"),
        (json.dumps({"cwd": "/", "tool_input": {"content": "x"}}), "names no file"),
        (json.dumps({"cwd": "/", "tool_input": {"file_path": 3}}), "is not a path"),
        (json.dumps({"cwd": "/", "tool_input": {"file_path": ""}}), "is not a path"),
        (json.dumps({"cwd": "/", "tool_input": {"file_path": "a\u0000b"}}), "could not check"),
    ],
)
def test_what_it_cannot_read_or_check_is_refused(
    fence: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    given: str,
    why: str,
) -> None:
    """Failing closed: input it cannot make sense of, or its own error, refuses the call."""
    worktree, board = fence
    status, said = _guard(monkeypatch, capsys, given, worktree, board)
    assert status == 2
    assert why in said, said


def test_with_no_folder_allowed_everything_is_refused(
    fence: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No folder named: nothing passes."""
    worktree, _board = fence
    status, said = _guard(monkeypatch, capsys, _write(worktree, "a.py"))
    assert (status, "no folder is allowed" in said) == (2, True)
