"""Finding the processes a test run started, by what they carry, and ending them.

A process started by the tests carries a mark it cannot shed: the run's tag in its environment
(``FLUME_TEST_RUN``, set for the whole session by tests/conftest.py and inherited by every
process started from it: commands, supervisors, tmux servers and the agents in their panes), or a
path under a test's own folder in its environment, command line or working directory. Processes
are read from ``/proc`` (Linux); a process that cannot be read is not counted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import attrs

#: The variable every process of a test run carries: the run's own tag.
TAG = "FLUME_TEST_RUN"


@attrs.frozen(kw_only=True)
class Process:
    """A running process, as /proc shows it."""

    pid: int
    command: str
    #: Its state folder (``XDG_STATE_HOME``) or HOME: which test's world it belongs to.
    world: str = ""

    def __str__(self) -> str:
        return f"pid {self.pid}: {self.command}" + (f" (in {self.world})" if self.world else "")


def carrying(*marks: str) -> list[Process]:
    """Live processes (not this one, no zombie) whose environment, command or cwd has a mark."""
    wanted = [mark.encode() for mark in marks]
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8", errors="replace")
            if stat.rsplit(")", 1)[-1].split()[0] in {"Z", "X"}:
                continue
            command = (entry / "cmdline").read_bytes()
            environment = (entry / "environ").read_bytes()
            try:
                cwd = bytes((entry / "cwd").readlink())
            except OSError:
                cwd = b""
        except OSError:
            continue
        if any(mark in environment or mark in command or mark in cwd for mark in wanted):
            shown = command.replace(b"\0", b" ").decode(errors="replace").strip()
            found.append(Process(pid=int(entry.name), command=shown, world=_world(environment)))
    return found


def end(processes: list[Process]) -> None:
    """Kill each process (SIGKILL): they outlived what started them."""
    for each in processes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(each.pid, signal.SIGKILL)


def survivors(*marks: str, grace: float, settle: float = 0.5) -> list[Process]:
    """The processes carrying a mark still alive after ``grace`` seconds (ones ending now end).

    None is taken to be left only once none has been seen for ``settle`` seconds: a process
    caught mid-exec shows neither its command line nor its environment for a moment.
    """
    deadline = time.monotonic() + grace
    quiet_since = time.monotonic()
    while True:
        found = carrying(*marks)
        now = time.monotonic()
        if found:
            quiet_since = now
            if now >= deadline:
                return found
        elif now - quiet_since >= settle:
            return []
        time.sleep(0.1)


def _world(environment: bytes) -> str:
    """The state folder, else the HOME, an environment names."""
    variables = dict(
        entry.decode(errors="replace").partition("=")[::2]
        for entry in environment.split(b"\0")
        if b"=" in entry
    )
    return variables.get("XDG_STATE_HOME") or variables.get("HOME", "")
