"""The caller's commands refuse a folder in no place at once, exactly when the full check would."""

from __future__ import annotations

from pathlib import Path

import pytest

from flume.core.errors import UsageError
from flume.core.settings import Settings
from flume.shell.commands import input_checks, verbs
from flume.shell.tools import git


def _git(cwd: Path, *args: str) -> None:
    ran = git.run(cwd, "-c", "user.name=t", "-c", "user.email=t@t", *args)
    assert ran.ok, ran.err


def test_a_folder_in_no_places_folder_is_surely_in_no_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sure only where no folder up from it sits in ``places``; there the full check refuses."""
    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.delenv("GIT_WORK_TREE", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "start")
    (repo / "src").mkdir()
    by_hand = repo / "places" / "fix--byhand"
    _git(repo, "worktree", "add", "-q", "-b", "byhand", str(by_hand))
    (by_hand / "deep").mkdir()
    stray = tmp_path / "stray"
    stray.mkdir()
    sure = {stray: True, repo: True, repo / "src": True, repo / "places": True}
    unsure = {by_hand: False, by_hand / "deep": False}
    for folder, expected in {**sure, **unsure}.items():
        assert input_checks.in_no_place(folder.resolve()) is expected, folder
    for folder in sure:
        with pytest.raises(UsageError) as refused:
            verbs.place_here(folder.resolve(), Settings())
        assert str(refused.value) == str(input_checks.outside(folder.resolve()))
    monkeypatch.setenv("GIT_WORK_TREE", str(by_hand))
    assert input_checks.in_no_place(stray.resolve()) is False  # git is pointed elsewhere: ask it
