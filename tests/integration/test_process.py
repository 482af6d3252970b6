"""The one runner: every outside program flume runs goes through it, and is counted once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flume.shell import process


def test_a_process_says_its_status_and_output_in_its_folder(tmp_path: Path) -> None:
    """Argv runs as given, in ``cwd``, with stdin; a failure is a status, not an exception."""
    code = "import os, sys; print(os.getcwd()); print(sys.stdin.read(), file=sys.stderr); exit(3)"
    ran = process.run([sys.executable, "-c", code], cwd=tmp_path, stdin="; echo not a shell")
    assert ran.status == 3
    assert not ran.ok
    assert ran.out.strip() == str(tmp_path)
    assert ran.err.strip() == "; echo not a shell"


def test_a_process_past_its_time_is_ended_and_said_timed_out() -> None:
    """A hung process does not hold up its caller: it is ended at the deadline."""
    ran = process.run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert ran.status == process.TIMED_OUT
    assert "no answer in 0.5s" in ran.err


def test_a_program_not_installed_is_a_status() -> None:
    """A missing program is said, as a shell says it, with its name."""
    ran = process.run(["flume-no-such-program-here", "x"])
    assert ran.status == process.NOT_RUN
    assert "flume-no-such-program-here" in ran.err


def test_every_process_is_counted_once_by_its_program(tmp_path: Path) -> None:
    """The one count: by program file name, and in all."""
    before, total = process.count.runs["git"], process.count.processes()
    process.run(["git", "--version"], cwd=tmp_path)
    process.run(["git", "--version"], cwd=tmp_path)
    process.run([sys.executable, "-c", "pass"])
    assert process.count.runs["git"] - before == 2
    assert process.count.processes() - total == 3


def test_the_environment_given_reaches_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """``env`` reaches the process; with none, it gets this process's environment as it is now."""
    code = "import os; print(os.environ.get('GIVEN'), os.environ.get('LATE'))"
    assert process.run([sys.executable, "-c", code], env={"GIVEN": "1"}).out.split()[0] == "1"
    monkeypatch.setenv("LATE", "set after import")
    assert process.run([sys.executable, "-c", code]).out.strip() == "None set after import"
