"""The daemon: the host's one supervisor process, its lock, its socket, and the requests it answers.

:func:`serve` takes the host's lock, listens on the socket (:func:`.client.socket_path`), and
runs the :class:`~.loop.Supervisor`'s ticks between requests. Each request names an
:class:`~.protocol.Op` and is answered with that op's record, written as the line flume has
always sent (:func:`.protocol.wire`).

Every process an action starts inherits the supervisor's lock: a supervisor killed mid-action
cannot be replaced until what it started has ended, so a restart never races a half-done
``git worktree add``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import selectors
import signal
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any, TypeGuard

import attrs

from flume.core.settings import Settings
from flume.shell import process
from flume.shell.agents.runner import Agents
from flume.shell.observe.branches import BranchHeads
from flume.shell.observe.changes import Changes
from flume.shell.observe.inboxes import Inboxes
from flume.shell.observe.landings import Landings
from flume.shell.observe.port import Observer
from flume.shell.observe.reports import Reports
from flume.shell.observe.watch import Watch
from flume.shell.panes.herdr import Herdr
from flume.shell.panes.port import PaneServer
from flume.shell.panes.tmux import Tmux
from flume.shell.perform.lander import Lander
from flume.shell.perform.launch_words import LaunchAsked
from flume.shell.perform.performer import Performer
from flume.shell.store import places
from flume.shell.supervisor import client
from flume.shell.supervisor.handover import LaunchMade, wire_outcome, wire_taken
from flume.shell.supervisor.loop import Supervisor
from flume.shell.supervisor.protocol import (
    Answered,
    Declined,
    FollowsAnswer,
    Op,
    Reply,
    wire,
)
from flume.shell.tools import openspec, sockets
from flume.shell.tools.notify import Notify

#: How often the supervisor looks when nothing wakes it.
TICK_SECONDS = 1.0
#: How often it looks while an agent lives in a place it carries: a turn's end is seen within
#: this, so the next step's prompt follows a gate's passing by a fraction of a second (the
#: places with no live agent cost no more: idle, it looks once a second).
BUSY_TICK_SECONDS = 0.25
#: How long a new supervisor waits for an old one's processes to let go of the lock.
LOCK_WAIT_SECONDS = 30.0
_log = logging.getLogger("flume.supervisor")


def _holder_alive(descriptor: int) -> bool:
    """The process named in the lock file lives: a supervisor holds the lock, not orphans."""
    text = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip()
    return text.isdigit() and process.alive(int(text))


def _lock() -> int | None:
    """Take the host's supervisor lock; None when a live supervisor already holds it.

    A lock held while the supervisor it names is dead is held by what that supervisor started
    for an action (it inherits the lock): then wait, up to :data:`LOCK_WAIT_SECONDS`, for those
    processes to end. A lock held by a live supervisor (even one not yet listening) means this
    one is not needed: it leaves at once, so it can never take over after a ``daemon stop``.
    """
    path = places.private(places.state_dir()) / "supervisor.lock"
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if (
                _holder_alive(descriptor)
                or client.ping() is not None
                or time.monotonic() > deadline
            ):
                _log.info("another supervisor holds the lock: leaving")
                os.close(descriptor)
                return None
            _log.info("waiting for a dead supervisor's processes to let go of the lock")
            # An old supervisor's processes still run and hold the lock: wait for them.
            time.sleep(0.1)
            continue
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"{os.getpid()}\n".encode())
        return descriptor


def _stopped_since(asked_after: int | None) -> bool:
    """A ``daemon stop`` came after this supervisor was asked for: it must not take over.

    Stops are counted, not timed: a wall clock stepped back after a stop fools no count.
    """
    return asked_after is not None and client.stops() > asked_after


def observers(
    tmux: PaneServer, herdr: PaneServer, settings: Settings, notify: Notify | None = None
) -> tuple[Observer, ...]:
    """The supervisor's batch observers, every one, in the order each tick asks them.

    Branch heads first; the agents' watch on the same pane servers the performer starts agents
    in (both learn from ``notify`` which files changed); then landings, OpenSpec changes and
    report files; last, sandboxed agents' commands from their inboxes (carried out through the
    rules, with ``settings``).
    """
    return (
        BranchHeads(notify),
        Watch(tmux, herdr, notify),
        Landings(),
        Changes(openspec.binary()),
        Reports(),
        Inboxes(settings),
    )


def serve(settings: Settings, asked_after: int | None = None) -> int:
    """Run the supervisor until ``flume daemon stop`` or SIGTERM; 0 if another one runs.

    ``asked_after`` is how many stops the host had counted when a command asked for this
    supervisor: one that finds more leaves at once (exit status
    :data:`~flume.shell.supervisor.client.STOP_CAME_AFTER`, which the asking command names), so a
    stop is
    never undone by a slow starter.
    """
    _configure_log()
    # Hold no folder open: the one it was started from may be a place tidy removes.
    os.chdir("/")
    descriptor = _lock()
    if descriptor is None:
        return 0
    if _stopped_since(asked_after):
        _log.info("a daemon stop came after this supervisor was asked for: leaving")
        os.close(descriptor)
        return client.STOP_CAME_AFTER
    _log.info("supervisor started")
    address = client.socket_path()
    with contextlib.suppress(FileNotFoundError):
        address.unlink()
    address.parent.mkdir(parents=True, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # Only this user may connect: a launch asked over it runs as this user. (No thread runs
    # yet, so the process's umask may change for the bind.)
    umask = os.umask(0o177)
    try:
        listener.bind(str(address))
    finally:
        os.umask(umask)
    listener.listen(64)
    listener.setblocking(False)  # noqa: FBT003 (the socket API)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)

    def wake() -> None:
        with contextlib.suppress(BlockingIOError):
            os.write(wake_write, b".")

    # One server of each kind, shared by the agents' starts and the watch: each place's agent
    # goes to the one its launch named (--panes tmux or herdr); herdr's is asked only when used.
    server, herdr_server = Tmux(), Herdr()
    performer = Performer(
        clock=time.time,
        agents=Agents(server, herdr_server),
        lander=Lander(pass_fds=(descriptor,)),
        pass_fds=(descriptor,),
    )
    # Which files changed, from inotify where it can tell (the poller where it cannot).
    notify = Notify()
    supervisor = Supervisor(
        settings,
        performer=performer,
        observers=observers(server, herdr_server, settings, notify),
        wake=wake,
        notify=notify,
    )
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "listener")
    selector.register(wake_read, selectors.EVENT_READ, "wake")
    loop = _Loop(supervisor, selector, _Events(selector, notify))

    def on_term(_signum: int, _frame: object) -> None:
        loop.stopping = True
        wake()

    signal.signal(signal.SIGTERM, on_term)
    try:
        loop.run(listener, wake_read)
    finally:
        _log.info("supervisor stopping")
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            address.unlink()
        supervisor.close()
        os.close(descriptor)
    return 0


class _Loop:
    """The daemon's loop: a tick when one is due, requests and wakes answered between."""

    def __init__(
        self, supervisor: Supervisor, selector: selectors.BaseSelector, events: _Events
    ) -> None:
        self.supervisor = supervisor
        self.selector = selector
        self.events = events
        #: Set by SIGTERM or a stop asked: the loop ends after what it is doing.
        self.stopping = False

    def run(self, listener: socket.socket, wake_read: int) -> None:
        """Tick and answer until stopped."""
        supervisor, events = self.supervisor, self.events
        due = ticked = time.monotonic()
        while not self.stopping:
            if time.monotonic() >= due:
                supervisor.tick()
                ticked = time.monotonic()
                every = BUSY_TICK_SECONDS if supervisor.hurried() else TICK_SECONDS
                deadline = supervisor.next_due()
                if deadline is not None:
                    # A place's deadline before the next tick: a tick at it, not after it (but
                    # never sooner than a hurried tick).
                    every = min(every, max(BUSY_TICK_SECONDS, deadline - time.time()))
                due = ticked + every
                events.listen()
            for key, _events in self.selector.select(max(0.0, due - time.monotonic())):
                if key.data == "wake":
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake_read, 4096)
                    due = 0.0
                elif key.data == "events":
                    # Files changed: looked at by the next tick, but no sooner than a hurried
                    # tick would (an agent writing its transcript must not tick the loop each
                    # line). Not listened to until that tick has read them.
                    events.pause()
                    due = min(due, ticked + BUSY_TICK_SECONDS)
                else:
                    asks = _answer(listener, supervisor)
                    self.stopping |= asks.stop
                    if asks.look:
                        due = 0.0


class _Events:
    """inotify's descriptor in the loop's selector: events wake the loop (issue 29).

    Listened to after each tick (the tick reads the events that came), and not between a wake
    and the tick it asks for, so the loop never spins on a descriptor left readable. Its
    descriptor changes when the event queue overflowed: the current one is listened to.
    """

    def __init__(self, selector: selectors.BaseSelector, notify: Notify) -> None:
        self.selector = selector
        self.notify = notify
        self.listening: int | None = None

    def listen(self) -> None:
        """Wake the loop on the next event."""
        descriptor = self.notify.fileno()
        if descriptor != self.listening:
            self.pause()
            if descriptor is not None:
                self.selector.register(descriptor, selectors.EVENT_READ, "events")
                self.listening = descriptor

    def pause(self) -> None:
        """Wake the loop on no event until :meth:`listen` is called again."""
        if self.listening is not None:
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.selector.unregister(self.listening)
            self.listening = None


@attrs.frozen
class Asks:
    """What the requests just answered ask of the supervisor's loop."""

    #: ``daemon stop`` was asked.
    stop: bool = False
    #: A tick is to look now. Anything asked is looked at at once, but for a launch handed over
    #: and started: it is followed already, and its batch wakes a tick when done (a tick now
    #: would only slow the worktree being made).
    look: bool = False


def _answer(listener: socket.socket, supervisor: Supervisor) -> Asks:
    """Answer every waiting request; what they ask of the loop."""
    asks = Asks()
    while True:
        try:
            connection, _ = listener.accept()
        except BlockingIOError:
            return asks
        with connection:
            connection.settimeout(2.0)
            try:
                request = json.loads(sockets.read_line(connection))
                asked = request.get("op")
            except (OSError, ValueError, AttributeError):
                asks = attrs.evolve(asks, look=True)
                continue
            op = _op(asked)
            if op is Op.LAUNCH:
                started = False
                with contextlib.suppress(OSError):
                    started = _launch(connection, request, supervisor)
                asks = attrs.evolve(asks, look=asks.look or not started)
                continue
            asks = attrs.evolve(asks, stop=asks.stop or op is Op.STOP, look=True)
            if op is Op.STOP:
                client.record_stop()
            reply = _reply(op, asked, request, supervisor)
            with contextlib.suppress(OSError):
                _say(connection, wire(reply, os.getpid()))


def _op(asked: object) -> Op | None:
    """The command a request's ``op`` names; None for one this supervisor does not know."""
    try:
        return Op(asked)
    except ValueError:
        return None


def _reply(op: Op | None, asked: object, request: dict[str, Any], supervisor: Supervisor) -> Reply:
    """The answer to every request but a launch (:func:`_launch`)."""
    match op:
        case Op.STATUS:
            return supervisor.report()
        case Op.SURVEY:
            return supervisor.survey()
        case Op.FOLLOWS:
            journal = Path(str(request.get("journal", "")))
            return FollowsAnswer(pid=os.getpid(), problem=supervisor.problem_of(journal))
        case Op.PING | Op.WAKE | Op.STOP:
            return Answered(pid=os.getpid())
        case Op.LAUNCH | None:
            return Declined(f"unknown op {asked!r}")


def _launch(connection: socket.socket, request: dict[str, Any], supervisor: Supervisor) -> bool:
    """Take a launch a command hands over, or decline it: then the command launches itself.

    Taken, ``taken`` is said at once and the outcome once the launch is checked and journaled.
    True when it was made and its first actions started.
    """
    asked = LaunchAsked.from_words(request.get("words"))
    given = request.get("environment")
    if not _same_user(connection):
        declined = "another user asks"
    elif request.get("flume") != client.identity():
        declined = "another flume asks"
    elif asked is None or not _environment(given):
        declined = "the launch is not worded as flume launch words it"
    elif not isinstance(request.get("take_by"), float) or time.time() > request["take_by"]:
        declined = "asked too late: the command launches itself"
    else:
        _say(connection, wire_taken())
        outcome = supervisor.launch(asked, given)
        _say(connection, wire_outcome(outcome, os.getpid()))
        return isinstance(outcome, LaunchMade) and supervisor.started(
            Path(outcome.document["journal"])
        )
    _say(connection, wire(Declined(declined), os.getpid()))
    return False


def _environment(given: object) -> TypeGuard[dict[str, str]]:
    """``given`` is an environment: names and values, all text."""
    return isinstance(given, dict) and all(
        isinstance(name, str) and isinstance(value, str) for name, value in given.items()
    )


def _same_user(connection: socket.socket) -> bool:
    """The process at the other end runs as this one's user (known only where the OS says)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return False
    credentials = connection.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", credentials)
    return bool(uid == os.getuid())


def _say(connection: socket.socket, reply: dict[str, Any]) -> None:
    """One JSON line to the connection."""
    connection.sendall((json.dumps(reply) + "\n").encode())


def _configure_log() -> None:
    """The supervisor's log lines: when, which process, what."""
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s flume supervisor %(process)d: %(message)s",
    )
