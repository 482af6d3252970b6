"""Talking to the supervisor: find it, start it when it is not running, ask it things.

The supervisor listens on a Unix socket; each request is one JSON line and gets one JSON line
back (``ping``, ``wake``, ``status``, ``survey``, ``stop``). A command that needs the supervisor
calls :func:`ensure`, which starts one, detached, when none answers; a command that only reads
(``flume status``, which asks for a ``survey`` and reads the journals itself when none answers)
never starts one.

``flume launch`` hands its launch to a running supervisor (:func:`launch`), which has flume's
rules and git already loaded: it answers ``taken`` at once, then a second line, the launch's
outcome. A launch no supervisor takes is the command's own to do.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

import flume
from flume.shell import lines, registry

#: How long ``flume launch`` waits for the supervisor to take its launch before doing it itself.
TAKE_SECONDS = 1.0
#: How long it then waits for the supervisor to say what came of it.
LAUNCH_SECONDS = 120.0
#: What the supervisor's ``taken`` may lag its deadline to take a launch (the request's
#: ``take_by``) and still be waited for: a supervisor takes nothing after its deadline.
_SLACK_SECONDS = 0.5

#: Unix socket paths are limited to about 104 bytes; longer ones move to the temp folder.
_MAX_SOCKET_PATH = 100


def socket_path() -> Path:
    """Where the supervisor of this state directory listens."""
    preferred = registry.state_dir() / "supervisor.sock"
    if len(str(preferred)) <= _MAX_SOCKET_PATH:
        return preferred
    # Imported here, as in start(): asking the supervisor (flume status) loads no more.
    import hashlib  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    digest = hashlib.sha256(str(preferred).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"flume-{os.getuid()}-{digest}.sock"


def request(op: str, timeout: float = 5.0) -> dict[str, Any] | None:
    """Ask the supervisor; None when none answers."""
    try:
        line = json.dumps({"op": op}).encode()
        data = lines.exchange(socket_path(), line, connect=timeout, answer=timeout)
    except OSError:
        return None
    try:
        reply = json.loads(data)
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


def identity() -> dict[str, str]:
    """Which flume this is: its version, where its code is, and the Python environment it runs in.

    A supervisor launches for a command only if it is the same flume: the same checks.
    """
    return {
        "version": flume.__version__,
        "code": str(Path(flume.__file__).parent.resolve()),
        "prefix": sys.prefix,
    }


class Unanswered(Exception):  # noqa: N818 (what happened, not a kind of error)
    """The supervisor took a launch and then said nothing of it: whether it was made is unknown."""


def launch(
    words: dict[str, Any],
    *,
    take_within: float = TAKE_SECONDS,
    answer_within: float = LAUNCH_SECONDS,
) -> dict[str, Any] | None:
    """Hand a launch to the running supervisor; what came of it, or None when none took it.

    ``words`` are :func:`flume.shell.launch.launch_asked`'s arguments as JSON (the repository an
    absolute path); this process's environment goes with them, for the checks to read. What
    came of it is ``made`` (``flume launch --json``'s document), else ``problems`` and
    ``exit_status`` (nothing made), else ``failed`` (the supervisor's error).

    None, and nothing done, when no supervisor runs, when the one running does not take this
    launch (it is another flume or installation's, or another user's), or when it has not taken
    it within ``take_within`` seconds: it takes none after that. A launch taken and then not
    answered within ``answer_within`` raises :class:`Unanswered`: it may have been made, so it
    is not made again.
    """
    request = {
        "op": "launch",
        "take_by": time.time() + take_within,
        "flume": identity(),
        "words": words,
        "environment": dict(os.environ),
    }
    # ASCII, \u-escaped: a name or a path that is not UTF-8 (a surrogate) goes as it is.
    line = (json.dumps(request) + "\n").encode("ascii")
    if len(line) > lines.LONGEST:
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        reader = lines.Reader(connection)
        try:
            connection.settimeout(take_within + _SLACK_SECONDS)
            connection.connect(str(socket_path()))
            connection.sendall(line)
            taken = _decoded(reader.line())
        except OSError:
            return None
        if taken is None or taken.get("taken") is not True:
            return None
        try:
            connection.settimeout(answer_within)
            answer = _decoded(reader.line())
        except OSError as error:
            raise Unanswered(str(error)) from error
    if answer is None:
        message = "no answer came"
        raise Unanswered(message)
    outcome = answer.get("launch")
    if not isinstance(outcome, dict):
        message = f"it answered {answer!r}"
        raise Unanswered(message)
    return outcome


def _decoded(data: bytes) -> dict[str, Any] | None:
    """A JSON object's line, or None."""
    try:
        found = json.loads(data)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


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
    return registry.state_dir() / "supervisor.stopped"


def log_path() -> Path:
    """Where a started supervisor writes what it has to say."""
    return registry.state_dir() / "supervisor.log"


def start() -> None:
    """Start a supervisor, detached from this process and its terminal."""
    import subprocess  # noqa: PLC0415 (only a start runs a process)
    import sys  # noqa: PLC0415

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
