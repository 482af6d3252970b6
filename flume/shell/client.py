"""Talking to the supervisor: find it, start it when it is not running, ask it things.

The supervisor listens on a Unix socket; each request is one JSON line and gets one JSON line
back (``ping``, ``wake``, ``status``, ``stop``, and ``follows``: why a journal is not followed).
A command that needs the supervisor calls :func:`ensure`, which starts one, detached, when none
answers; a command that only reads journals (``flume status``) never starts one.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from flume.shell import lines, places

#: Unix socket paths are limited to about 104 bytes; longer ones move to the temp folder.
_MAX_SOCKET_PATH = 100


def socket_path() -> Path:
    """Where the supervisor of this state directory listens."""
    preferred = places.state_dir() / "supervisor.sock"
    if len(str(preferred)) <= _MAX_SOCKET_PATH:
        return preferred
    digest = hashlib.sha256(str(preferred).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"flume-{os.getuid()}-{digest}.sock"


def request(op: str, timeout: float = 5.0, **fields: str) -> dict[str, Any] | None:
    """Ask the supervisor (``fields`` go with the op); None when none answers."""
    try:
        line = json.dumps({"op": op, **fields}).encode()
        data = lines.exchange(socket_path(), line, connect=timeout, answer=timeout)
    except OSError:
        return None
    try:
        reply = json.loads(data)
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


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


def stopped_path() -> Path:
    """Where the last ``daemon stop`` left the time it was asked."""
    return places.state_dir() / "supervisor.stopped"


def log_path() -> Path:
    """Where a started supervisor writes what it has to say."""
    return places.state_dir() / "supervisor.log"


def start() -> None:
    """Start a supervisor, detached from this process and its terminal."""
    log = log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as output:
        subprocess.Popen(  # noqa: S603 (our own interpreter and module, no caller input)
            [sys.executable, "-m", "flume", "daemon", "run", "--asked-at", repr(time.time())],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
            close_fds=True,
        )


def ensure(wait: float = 0.0) -> dict[str, Any] | None:
    """Wake the supervisor, starting one if none answers; with ``wait``, until it answers."""
    reply = request("wake")
    if reply is not None:
        return reply
    start()
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        reply = request("wake")
        if reply is not None:
            return reply
        time.sleep(0.05)
    return None
