"""SIGKILL trials of the supervisor during launches, shared by the test and bench/kill.py.

One trial: a fresh host and repository whose setup takes a moment; three launches at once
through the real CLI (which start the real supervisor); the supervisor killed with SIGKILL once
the journals hold a chosen number of lines (a random point from the first line to the last),
sometimes a moment later still; the supervisor started again; then every launch must complete
exactly once: one worktree made and one setup finished per journal, and no worktree, branch or
journal without the others.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import attrs

from flume.core.actions import ActionName
from flume.core.observations import (
    ActionFailed,
    Launched,
    Observation,
    PromptTyped,
    SetupFinished,
    WorktreeMade,
)
from flume.shell import process
from flume.shell.store import journal, places
from flume.shell.supervisor import client
from flume.shell.tools import git
from tests.integration.places_kit import GIT_IDENTITY, launch_argv, repository

NAMES = ("alpha", "beta", "gamma")
#: Lines a place's journal comes to hold here: Launched, WorktreeMade, SetupFinished (the launch
#: complete), then its agent printed for a caller who never runs it (--panes print): started,
#: taken as waiting, its prompt written down (PromptTyped). The kill point is drawn over them all.
LINES_EACH = 6
SETUP = '[place]\nsetup = [["sh", "-c", "sleep 0.05; echo ready > .ready"]]\n'


@attrs.frozen(kw_only=True)
class Trial:
    """What one trial saw."""

    killed_at_line: int
    killed: bool
    restart_seconds: float
    completed: int
    problems: tuple[str, ...]


def _lines(repo: Path) -> int:
    folder = places.journals_dir(repo)
    total = 0
    for path in folder.glob(f"*/{places.JOURNAL}") if folder.is_dir() else []:
        if path.parent.name.startswith("."):
            continue  # a launch's staging folder, renamed into place any moment
        with contextlib.suppress(FileNotFoundError):
            total += path.read_bytes().count(b"\n")
    return total


def _every_journal_holds(repo: Path, kind: type[Observation]) -> bool:
    """Every launch's journal holds an observation of ``kind``."""
    journals = places.journals_dir(repo)
    for name in NAMES:
        path = journals / f"fix--{name}" / places.JOURNAL
        try:
            seen = journal.read(path).observations
        except (OSError, journal.JournalError):
            return False
        if not any(isinstance(each, kind) for each in seen):
            return False
    return True


def _daemon_pid() -> int | None:
    lock = places.state_dir() / "supervisor.lock"
    text = lock.read_text().strip() if lock.exists() else ""
    return int(text) if text.isdigit() else None


def _wait(predicate: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            message = f"waited {seconds}s for {what}"
            raise TimeoutError(message)
        time.sleep(0.005)


def run(folder: Path, rng: random.Random) -> Trial:
    """One trial in ``folder`` (a fresh host); the caller stops the supervisor afterwards."""
    os.environ["XDG_STATE_HOME"] = str(folder / "state")
    os.environ.update(GIT_IDENTITY)
    repo = repository(folder / "repo", files={".flume.toml": SETUP, ".gitignore": ".ready\n"})
    total = LINES_EACH * len(NAMES)
    kill_at = rng.randint(1, total)
    launches = [
        subprocess.Popen(  # noqa: S603 (our own interpreter and module)
            [*launch_argv(repo, name, f"Do {name}."), "--panes", "print"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for name in NAMES
    ]
    _wait(lambda: _lines(repo) >= kill_at, 60, f"{kill_at} journal lines")
    if rng.random() < 0.5:
        time.sleep(rng.uniform(0, 0.05))  # a point between lines, mid-action
    _wait(lambda: _daemon_pid() is not None, 30, "the supervisor's pid")
    pid = _daemon_pid()
    assert pid is not None
    killed = process.alive(pid)
    if killed:
        os.kill(pid, signal.SIGKILL)
        _wait(lambda: not process.alive(pid), 10, "the supervisor to die")
    for launch in launches:
        launch.wait(timeout=60)
    started = time.monotonic()
    if client.ensure(wait=60) is None:
        message = "no supervisor answered within 60s of being started again"
        raise TimeoutError(message)
    restart = time.monotonic() - started
    problems: list[str] = []
    try:
        # Each launch complete (its place made and set up), then its printed agent's prompt
        # written down: a kill between deciding that send and writing it leaves the file without
        # it, which the restarted supervisor sees and writes at once (DELIVERY-UNWRITTEN-NOW),
        # well within this wait, not after the printed agent's hour.
        _wait(lambda: _every_journal_holds(repo, SetupFinished), 60, "every launch to complete")
        _wait(lambda: _every_journal_holds(repo, PromptTyped), 60, "every prompt written down")
    except TimeoutError as error:
        problems.append(str(error))
    return Trial(
        killed_at_line=kill_at,
        killed=killed,
        restart_seconds=restart,
        completed=_completed(repo, problems),
        problems=tuple(problems),
    )


def _completed(repo: Path, problems: list[str]) -> int:
    """How many launches completed exactly once; every departure is added to ``problems``."""
    completed = 0
    journals = places.journals_dir(repo)
    for name in NAMES:
        path = journals / f"fix--{name}" / places.JOURNAL
        if not path.exists():
            problems.append(f"fix--{name}: no journal")
            continue
        seen = journal.read(path).observations
        counts = {
            kind.__name__: sum(isinstance(s, kind) for s in seen)
            for kind in (Launched, WorktreeMade, SetupFinished)
        }
        failures = [
            s
            for s in seen
            if isinstance(s, ActionFailed) and s.action is not ActionName.START_AGENT
        ]
        if counts != {"Launched": 1, "WorktreeMade": 1, "SetupFinished": 1} or failures:
            problems.append(f"fix--{name}: {counts}, failures {failures}")
            continue
        if not (repo / "places" / f"fix--{name}" / ".ready").exists():
            problems.append(f"fix--{name}: setup did not run in its place")
            continue
        completed += 1
    trees = {p.name for p in git.worktree_paths(repo) if p.parent.name == "places"}
    branches = {b.removeprefix("fix/") for b in git.heads(repo) if b.startswith("fix/")}
    named = {p.name for p in journals.iterdir() if not p.name.startswith(".")}
    if trees != {f"fix--{n}" for n in NAMES} or branches != set(NAMES) or named != trees:
        problems.append(
            f"worktrees {sorted(trees)}, branches {sorted(branches)}, journals {sorted(named)}"
        )
    staging = sorted(p.name for p in journals.glob(".launching-*"))
    if staging:
        problems.append(f"launch staging left behind: {staging}")
    return completed
