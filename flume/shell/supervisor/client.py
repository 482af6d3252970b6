"""Talking to the supervisor: find it, start it when it is not running, ask it things.

The supervisor listens on a Unix socket; each request is one JSON line and gets one JSON line
back (the commands are :class:`~.protocol.Op`: ``ping``, ``wake``, ``status``, ``survey``,
``stop``, and ``follows``: why a journal is not followed), decoded here, once, into the typed
answer of :mod:`~flume.shell.supervisor.protocol`; none answering is None. A command that needs
the supervisor
calls :func:`ensure`, which starts one, detached, when none answers; a command that only reads
(``flume status``, which asks for a ``survey`` and reads the journals itself when none answers)
never starts one.

A supervisor runs while it holds the host's lock (``supervisor.lock``, its pid written in it).
One that holds it but does not answer (stopped by SIGSTOP, a debugger, a closed laptop lid) is
alive, not dead: no second one is started in its stead, and a command waits for its answer
only until a deadline, then says what holds it up and how to end that (:class:`NotAnswering`).

Which ``daemon stop`` came after a command asked for a supervisor is decided by a counter of
stops (``supervisor.stopped``), never by the wall clock, which can be stepped back: the command
passes the count it read, and a supervisor that finds a higher one leaves, and says why.

``flume launch`` hands its launch to a running supervisor (:mod:`.handover`).
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import flume
from flume.core.errors import Problem, UsageError
from flume.shell import host
from flume.shell.process import alive
from flume.shell.supervisor.protocol import (
    Answered,
    DaemonReport,
    FollowsAnswer,
    Op,
    SurveyAnswer,
    decode_answered,
    decode_follows,
    decode_report,
    decode_survey,
)
from flume.shell.tools import sockets

if TYPE_CHECKING:
    import subprocess


#: Unix socket paths are limited to about 104 bytes; longer ones move to the temp folder.
_MAX_SOCKET_PATH = 100
#: How long a command waits for a live supervisor that does not answer, before saying so.
ANSWER_SECONDS = 5.0
#: How long it waits for one that is stopped (SIGSTOP, a debugger) to be continued.
STOPPED_SECONDS = 2.0
#: How long a command waits for the supervisor it started to answer or to say why it left.
START_SECONDS = 10.0
#: The exit status of a supervisor that left because a ``daemon stop`` came after it was asked.
STOP_CAME_AFTER = 3


def socket_path() -> Path:
    """Where the supervisor of this state directory listens."""
    preferred = host.state_dir() / "supervisor.sock"
    if len(str(preferred)) <= _MAX_SOCKET_PATH:
        return preferred
    # Imported here, as in start(): asking the supervisor (flume status) loads no more.
    import hashlib  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    digest = hashlib.sha256(str(preferred).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"flume-{os.getuid()}-{digest}.sock"


def _ask(op: Op, timeout: float, **fields: str) -> dict[str, Any] | None:
    """The supervisor's answer to ``op`` as the JSON object it sent; None when none answers."""
    try:
        line = json.dumps({"op": op.value, **fields}).encode()
        data = sockets.exchange(socket_path(), line, connect=timeout, answer=timeout)
    except OSError:
        return None
    return decoded(data)


def ping(timeout: float = 5.0) -> Answered | None:
    """Whether a supervisor answers: which one; None when none does."""
    said = _ask(Op.PING, timeout)
    return decode_answered(said) if said is not None else None


def wake(timeout: float = 5.0) -> Answered | None:
    """Have the supervisor look now; which one answered, None when none did."""
    said = _ask(Op.WAKE, timeout)
    return decode_answered(said) if said is not None else None


def stop(timeout: float = 5.0) -> Answered | None:
    """Ask the supervisor to stop once its actions finish; which one, None when none answered."""
    said = _ask(Op.STOP, timeout)
    return decode_answered(said) if said is not None else None


def status(timeout: float = 5.0) -> DaemonReport | None:
    """What ``flume daemon status`` shows; None when no supervisor answers."""
    said = _ask(Op.STATUS, timeout)
    return decode_report(said) if said is not None else None


def survey(timeout: float = 5.0) -> SurveyAnswer | None:
    """What ``flume status`` shows, as the supervisor follows it; None when none answers."""
    said = _ask(Op.SURVEY, timeout)
    return decode_survey(said) if said is not None else None


def follows(journal: Path, timeout: float = 5.0) -> FollowsAnswer | None:
    """Why the supervisor does not follow ``journal``; None when none answers."""
    said = _ask(Op.FOLLOWS, timeout, journal=str(journal))
    return decode_follows(said) if said is not None else None


def identity() -> dict[str, str]:
    """Which flume this is: its version, where its code is, and the Python environment it runs in.

    A supervisor launches for a command only if it is the same flume: the same checks.
    """
    return {
        "version": flume.__version__,
        "code": str(Path(flume.__file__).parent.resolve()),
        "prefix": sys.prefix,
    }


def decoded(data: bytes) -> dict[str, Any] | None:
    """A JSON object's line, or None."""
    try:
        found = json.loads(data)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def lock_path() -> Path:
    """The host's supervisor lock: held by the one supervisor, which writes its pid in it."""
    return host.state_dir() / "supervisor.lock"


def holder() -> int | None:
    """The pid of the live supervisor that holds the host's lock; None when none holds it.

    A lock held while the pid in it is dead is held by what a dead supervisor started (its
    actions inherit the lock): no supervisor runs, and a new one waits for those to end.
    """
    try:
        descriptor = os.open(lock_path(), os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip()
            return int(text) if text.isdigit() and _is_supervisor(int(text)) else None
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        return None
    finally:
        os.close(descriptor)


def _is_supervisor(pid: int) -> bool:
    """``pid`` is a live ``flume daemon run`` (not a process that took a dead one's pid)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return alive(pid)  # no /proc to read: its being alive is all there is to know
    return alive(pid) and b"daemon" in command and b"run" in command


def stopped(pid: int) -> bool:
    """The process ``pid`` is stopped (SIGSTOP, a terminal's suspend, a debugger's stop)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] in {"T", "t"}


def not_answering(pid: int, waited: float) -> UsageError:
    """What a command says when the supervisor holding the lock does not answer."""
    journaled = "what you asked is journaled and is done once the supervisor answers"
    if stopped(pid):
        what = (
            f"the supervisor (pid {pid}) runs but is stopped (SIGSTOP, a debugger or a "
            "suspended session): it answers nothing"
        )
        mend = f"continue it with `kill -CONT {pid}`; {journaled}"
    else:
        what = f"the supervisor (pid {pid}) runs but has not answered for {waited:.0f} s"
        mend = (
            f"see its log {log_path()}; if it stays so, end it with `kill {pid}`, then "
            f"`flume daemon start`; {journaled}"
        )
    return UsageError((Problem(field="supervisor", what=what, mend=mend),), exit_status=1)


def stopped_path() -> Path:
    """Where ``daemon stop`` counts the stops asked so far on this host."""
    return host.state_dir() / "supervisor.stopped"


def stops() -> int:
    """How many ``daemon stop`` this host has seen (0 for none, or an older flume's file)."""
    try:
        text = stopped_path().read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return 0
    return int(text) if text.isdigit() else 0


def record_stop() -> int:
    """Count one more ``daemon stop``: a supervisor asked for before it must not start."""
    path = stopped_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        text = os.pread(descriptor, 64, 0).decode("ascii", "replace").strip()
        count = (int(text) if text.isdigit() else 0) + 1
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{count}\n".encode(), 0)
        return count
    finally:
        os.close(descriptor)


def log_path() -> Path:
    """Where a started supervisor writes what it has to say."""
    return host.state_dir() / "supervisor.log"


def start() -> subprocess.Popen[bytes]:
    """Start a supervisor, detached from this process and its terminal.

    It is told how many stops this host had when it was asked for: a ``daemon stop`` counted
    after that makes it leave (a stop is never undone by a slow starter).
    """
    import subprocess  # noqa: PLC0415 (only a start runs a process)
    import sys  # noqa: PLC0415

    log = log_path()
    host.private(log.parent)
    asked_after = str(stops())
    # A supervisor an agent's command started (``flume submit``) is no agent's: it keeps none of
    # the marks of the session it was started from.
    env = {name: value for name, value in os.environ.items() if name not in _AGENT_MARKS}
    with log.open("ab") as output:
        return subprocess.Popen(  # noqa: S603 (our own interpreter and module, no caller input)
            [sys.executable, "-P", "-m", "flume", "daemon", "run", "--asked-after", asked_after],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
            close_fds=True,
            env=env,
        )


#: The marks of an agent's session flume started (runner.marks, the inbox's variable).
_AGENT_MARKS = frozenset({"FLUME_SESSION", "FLUME_PLACE", "FLUME_INBOX"})


def ensure(wait: float = 0.0) -> Answered | None:
    """Wake the supervisor, starting one if none runs; with ``wait``, until it answers.

    Raises :class:`UsageError` (exit status 1) when a live supervisor does not answer by the
    deadline, or when the one started here left without serving, saying why.
    """
    pid = holder()
    if pid is not None:
        return _answer_of(pid, wait)
    reply = wake(timeout=1.0)
    if reply is not None:
        return reply
    return _started(start(), wait)


def _answer_of(pid: int, wait: float) -> Answered | None:
    """The answer of the live supervisor ``pid``, waited for until a deadline."""
    began = time.monotonic()
    deadline = began + max(wait, ANSWER_SECONDS)
    while True:
        now = time.monotonic()
        if stopped(pid):
            # Nothing it is sent is read while it is stopped: wait less, and send nothing.
            if now - began >= STOPPED_SECONDS:
                raise not_answering(pid, now - began)
        else:
            reply = wake(timeout=max(0.1, min(1.0, deadline - now)))
            if reply is not None:
                return reply
        if not alive(pid):
            return ensure(wait)  # it ended meanwhile: as for none
        if time.monotonic() >= deadline:
            raise not_answering(pid, time.monotonic() - began)
        time.sleep(0.05)


def _started(child: subprocess.Popen[bytes], wait: float) -> Answered | None:
    """Wait until the supervisor started answers, or says why it left; None past the deadline."""
    deadline = time.monotonic() + max(wait, START_SECONDS)
    while time.monotonic() < deadline:
        reply = wake(timeout=1.0)
        if reply is not None:
            return reply
        status = child.poll()
        if status == STOP_CAME_AFTER:
            what = "no supervisor was started: a `flume daemon stop` came after this command"
            mend = "what you asked is journaled; start one with `flume daemon start`"
            raise UsageError((Problem(field="supervisor", what=what, mend=mend),), exit_status=1)
        if status == 0:
            # It left because another took the lock first: that one is asked.
            pid = holder()
            return _answer_of(pid, wait) if pid is not None else wake(timeout=1.0)
        if status is not None:
            what = f"the supervisor started exited at once with status {status}"
            mend = f"see its log {log_path()}"
            raise UsageError((Problem(field="supervisor", what=what, mend=mend),), exit_status=1)
        time.sleep(0.05)
    return None
