"""Processes flume starts and watches: the one runner, the one count, whether one still runs.

Every outside program flume runs (git, tmux, the OpenSpec CLI) runs through :func:`run`: an
argument list and a folder, never a shell, through plumbum, and counted in :data:`count` by
program, so that the supervisor's cost per tick (P3) is one subtraction. Requests over a socket
(herdr's API) are counted there too, by server.

The bottom of the shell: it imports nothing of flume's. plumbum is imported when the first
process runs, so that a command that runs none (``flume status`` asking the supervisor) does not
pay for it.
"""

from __future__ import annotations

import collections
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

#: The status of a process that did not answer within its time, as ``timeout(1)`` reports it.
TIMED_OUT = 124
#: The status of a program that could not be started (not found, not executable), as a shell's.
NOT_RUN = 127


class Ran(NamedTuple):
    """What a process said: its argument list, exit status and output.

    A named tuple, and the count a plain class: this module loads no attrs, so that ``flume
    launch`` handed to the supervisor, which asks here whether it runs, loads none.
    """

    argv: tuple[str, ...]
    status: int
    out: str = ""
    err: str = ""

    @property
    def ok(self) -> bool:
        """The process exited 0."""
        return self.status == 0


class Count:
    """How many processes this process ran, by program, and requests it sent, by server."""

    def __init__(self) -> None:
        """Nothing run or asked yet."""
        self.runs: collections.Counter[str] = collections.Counter()
        self.requests: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def ran(self, program: str) -> None:
        """One more process of ``program`` (its file name: ``git``, ``tmux``, ``openspec``)."""
        with self._lock:
            self.runs[program] += 1

    def asked(self, server: str) -> None:
        """One more request to ``server`` (``herdr``)."""
        with self._lock:
            self.requests[server] += 1

    def processes(self) -> int:
        """Every process run so far."""
        with self._lock:
            return sum(self.runs.values())


#: This process's one count (the supervisor reads its difference across a tick).
count = Count()


def run(  # noqa: PLR0913 (each is one thing a process is started with)
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    timeout: float | None = None,
    pass_fds: tuple[int, ...] = (),
) -> Ran:
    """Run ``argv`` in ``cwd``; never raises for its exit status, a timeout or a missing program.

    ``env`` is laid over the environment plumbum took when imported; with none, the process
    gets this process's environment as it is now.
    ``pass_fds`` are inherited by the process: the supervisor passes its lock, so that what it
    started holds the lock until it ends, even if the supervisor is killed meanwhile. A process
    still running after ``timeout`` seconds is ended and reported as :data:`TIMED_OUT`.
    """
    from plumbum import local  # noqa: PLC0415 (plumbum costs a command that runs no process)
    from plumbum.commands.processes import (  # noqa: PLC0415 (the same)
        CommandNotFound,
        ProcessTimedOut,
    )

    argv = tuple(argv)
    count.ran(Path(argv[0]).name)
    try:
        bound = local[argv[0]][argv[1:]]
    except CommandNotFound:
        return Ran(argv=argv, status=NOT_RUN, err=f"{argv[0]} is not installed here")
    command = bound if stdin is None else bound << stdin
    try:
        status, out, err = command.run(
            cwd=None if cwd is None else str(cwd),
            env=dict(os.environ if env is None else env),
            retcode=None,
            timeout=timeout,
            pass_fds=pass_fds,
        )
    except ProcessTimedOut:
        return Ran(argv=argv, status=TIMED_OUT, err=f"no answer in {timeout:g}s")
    except OSError as error:
        return Ran(argv=argv, status=NOT_RUN, err=f"{argv[0]} could not be run: {error}")
    return Ran(argv=argv, status=status, out=out, err=err)


def alive(pid: int) -> bool:
    """The process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rsplit(")", 1)[-1].split()[0] not in {"Z", "X"}
