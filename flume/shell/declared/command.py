"""Running a repository's declared command (a setup step, a landing check), as written.

The command is an argument list run in the place with no shell. It runs in a process group of
its own, recorded in a file while it runs, so that a supervisor restarted after a crash ends what
its predecessor left running before it runs the command again. A program named by a path
(``./setup.sh``) is found from the place, a bare name on PATH; output and errors are interleaved
as they were written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from flume.shell.store.places import state_dir


def record_of(purpose: str, place: Path) -> Path:
    """Where the process group of a ``purpose`` command running in ``place`` is written down."""
    digest = hashlib.sha256(str(place).encode()).hexdigest()[:24]
    return state_dir() / purpose / f"{digest}.pgid"


def end_orphaned(record: Path) -> None:
    """End the process group a killed supervisor left running, and wait for it to go."""
    try:
        group = int(record.read_text().strip())
    except (OSError, ValueError):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except (ProcessLookupError, PermissionError):
            break
        time.sleep(0.01)
    record.unlink(missing_ok=True)


def run(
    cwd: Path, argv: Sequence[str], record: Path, env: Mapping[str, str] | None = None
) -> tuple[int, str]:
    """Run ``argv`` in ``cwd``, its process group recorded at ``record``; status and output."""
    status, output = run_within(cwd, argv, record, None, env)
    assert status is not None  # noqa: S101 (no deadline: it ran to its end)
    return status, output


def run_within(
    cwd: Path,
    argv: Sequence[str],
    record: Path,
    seconds: float | None,
    env: Mapping[str, str] | None = None,
) -> tuple[int | None, str]:
    """:func:`run`, its process group ended after ``seconds``: then the status is None.

    ``env``: the program's whole environment (this process's when None).

    The output goes to a file, not a pipe: a process that left the group (``setsid``) and
    still holds the output open cannot keep the deadline from being kept.
    """
    end_orphaned(record)
    with tempfile.TemporaryFile() as output:
        try:
            process = subprocess.Popen(  # noqa: S603 (the repository's own declaration, as argv)
                list(argv),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=None if env is None else dict(env),
            )
        except FileNotFoundError:
            return 127, f"{argv[0]}: command not found"
        except PermissionError:
            return 126, f"{argv[0]}: permission denied"
        except OSError as error:
            return 126, f"{argv[0]}: cannot run it ({error.strerror or error})"
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(f"{process.pid}\n", encoding="ascii")
        try:
            status: int | None = process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            status = None
        finally:
            record.unlink(missing_ok=True)
        output.seek(0)
        return status, output.read().decode("utf-8", "replace")
