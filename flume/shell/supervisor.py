"""The supervisor: one per host, following every place, from their journals.

Theory of operation. The journal is the source of truth, and the supervisor is its reader: it
folds every line of every place's journal through ``step``, whoever wrote the line (a CLI
command, or the supervisor itself reporting what it saw), and performs the actions each line
calls for. What it observes it appends to the journal first and folds only when it reads the
line back, so every observation is journaled before it is applied.

A journal read for the first time (at start, or a place launched since) is folded whole and its
:func:`~flume.core.step.pending` actions performed: after a SIGKILL that is exactly what was
asked for and never observed done. Lines read after that have their own actions performed.

Each tick observes in batches, never place by place: :class:`Observer` sources get every place
followed at once and group them as their tool allows (one ``git for-each-ref`` per repository
for all branch heads; one ``tmux list-panes -a`` for every agent's pane, and transcripts and
hook files read from stored offsets: :mod:`flume.shell.watch`). Deadlines are checked by
stepping a ``Tick``; a tick that changes nothing is not journaled, so idle places cost no disk.

Actions run on worker threads, one batch at a time per place and in order, so a long setup in
one place never holds up another. Every process an action starts inherits the supervisor's lock:
a supervisor killed mid-action cannot be replaced until what it started has ended, so a restart
never races a half-done ``git worktree add``.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import fcntl
import json
import logging
import os
import queue
import selectors
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from flume.core.actions import Action, KeepBranch, KeepPlace, Report
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, Sha
from flume.core.observations import (
    ActionFailed,
    BranchHead,
    BranchVanished,
    Observation,
    Tick,
    WorktreeLost,
)
from flume.core.place import Life, Place, evolve
from flume.core.settings import Settings
from flume.core.step import pending, step
from flume.shell import client, git, herdr, journal, lines, openspec, places, tmux
from flume.shell.agents import Agents
from flume.shell.herdr import Herdr
from flume.shell.lander import Lander, Landings
from flume.shell.openspec import Changes
from flume.shell.perform import Performer
from flume.shell.reports import Reports
from flume.shell.tmux import Tmux
from flume.shell.watch import Watch

#: How many actions run at once, each for a different place.
WORKERS = 8
#: How often the supervisor looks when nothing wakes it.
TICK_SECONDS = 1.0
#: How long a new supervisor waits for an old one's processes to let go of the lock.
LOCK_WAIT_SECONDS = 30.0
_NO_EFFECT = (KeepBranch, KeepPlace, Report)
_log = logging.getLogger("flume.supervisor")


@attrs.define(eq=False)
class Followed:
    """One place the supervisor follows: its journal, how far it has read, and what is to do."""

    journal: Path
    offset: int = 0
    place: Place | None = None
    #: Never read yet: its first read performs what it is pending, not its history.
    fresh: bool = True
    #: A batch of its actions is being performed.
    busy: bool = False
    batches: collections.deque[tuple[Action, ...]] = attrs.field(factory=collections.deque)
    #: Why the journal can no longer be followed (damaged, or edited by hand).
    problem: str | None = None
    #: The journal file's (device, inode): a name launched again gets a new file, read anew.
    identity: tuple[int, int] | None = None

    def restart(self, identity: tuple[int, int]) -> None:
        """Follow a new journal at this path from its start."""
        self.offset, self.place, self.fresh, self.problem = 0, None, True, None
        self.batches.clear()
        self.identity = identity


class Observer(Protocol):
    """A batch source of observations: it sees every followed place at once, each tick."""

    def observe(
        self, followed: Sequence[Followed], now: Instant
    ) -> Iterator[tuple[Followed, Observation]]:
        """What changed since the places' states, as (place, observation) pairs."""
        ...


class BranchHeads:
    """Every place's branch head, from one ``git for-each-ref`` per repository a tick.

    It also sees what a person deleted under a place in flight: its worktree (a ``stat`` of the
    folder's ``.git``, no process) and its branch (absent from the heads).
    """

    def observe(
        self, followed: Sequence[Followed], now: Instant
    ) -> Iterator[tuple[Followed, Observation]]:
        """A ``BranchHead`` for each made place whose branch moved; what was lost, named."""
        by_repository: dict[str, list[Followed]] = collections.defaultdict(list)
        for each in followed:
            place = each.place
            if place is not None and place.made and place.life is not Life.TIDIED:
                by_repository[place.launch.repository].append(each)
        for repository, group in by_repository.items():
            heads = git.heads(Path(repository))
            for each in group:
                assert each.place is not None  # noqa: S101 (grouped above)
                seen = _seen(Path(repository), each.place, heads, now)
                if seen is not None:
                    yield each, seen


def _in_flight(place: Place) -> bool:
    return place.made and place.life in {Life.MAKING, Life.ACTIVE}


def _worktree_lost(place: Place) -> str | None:
    """How the place's worktree is gone, or None while its folder holds a worktree."""
    path = Path(place.path)
    if not path.exists():
        return "its folder is gone"
    if not (path / ".git").exists():
        return "its folder holds no worktree: git there is the main repository's"
    return None


def _seen(
    repository: Path, place: Place, heads: dict[BranchName, Sha], now: Instant
) -> Observation | None:
    """What changed of the place's worktree and branch since its state, if anything."""
    if _in_flight(place) and not place.worktree_gone:
        how = _worktree_lost(place)
        if how is not None:
            return WorktreeLost(at=now, path=place.path, how=how)
    head = heads.get(place.branch)
    if head is None:
        # A branch absent from a listing that holds others, and absent when asked again: gone.
        vanished = (
            bool(heads)
            and _in_flight(place)
            and not place.branch_gone
            and not place.worktree_gone
            and git.resolve(repository, place.branch) is None
        )
        return BranchVanished(at=now, branch=place.branch) if vanished else None
    if place.branch_gone:
        # Back: restored by a person, or made anew by a commit with none of its history, which
        # is not the place's branch (its last head is not in it) and is not reported.
        if place.head is None or git.is_ancestor(repository, place.head, head):
            return BranchHead(at=now, branch=place.branch, sha=head)
        return None
    if head != place.head:
        return BranchHead(at=now, branch=place.branch, sha=head)
    return None


@attrs.define
class Stats:
    """What the supervisor has done, for ``flume daemon status`` and the benchmarks."""

    started_at: float
    ticks: int = 0
    #: git and tmux processes the last tick ran to observe (not to perform actions).
    last_tick_subprocesses: int = 0
    #: requests the last tick sent herdr to observe (its places' agents in herdr panes).
    last_tick_herdr_requests: int = 0
    last_tick_seconds: float = 0.0
    actions: int = 0


class Supervisor:
    """Follows every place of every repository flume knows; one tick at a time."""

    def __init__(
        self,
        settings: Settings,
        *,
        performer: Performer,
        clock: Callable[[], float] = time.time,
        observers: Sequence[Observer] = (BranchHeads(),),
        wake: Callable[[], None] = lambda: None,
    ) -> None:
        self.settings = settings
        self.performer = performer
        self.clock = clock
        self.observers = observers
        self.followed: dict[Path, Followed] = {}
        self.stats = Stats(started_at=clock())
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS)
        self._done: queue.SimpleQueue[Path] = queue.SimpleQueue()
        self._wake = wake
        self._journals_dirs: dict[Path, Path] = {}
        self._running: set[concurrent.futures.Future[None]] = set()

    # --- one tick ----------------------------------------------------------------------------

    def tick(self) -> None:
        """Read what was journaled, observe, check deadlines, and start what is to do."""
        started = time.perf_counter()
        self._finish()
        self._discover()
        self._read_all()
        runs = git.counter.runs + tmux.counter.runs + openspec.counter.runs
        asked = herdr.counter.requests
        now = Instant(self.clock())
        live = [each for each in self.followed.values() if each.place and not each.problem]
        for observer in self.observers:
            try:
                for each, seen in observer.observe(live, now):
                    self._append(each, seen)
            except Exception:  # noqa: BLE001 (one source failing must not stop the supervisor)
                _log.exception("observing with %s failed", type(observer).__name__)
        self.stats.last_tick_subprocesses = (
            git.counter.runs + tmux.counter.runs + openspec.counter.runs - runs
        )
        self.stats.last_tick_herdr_requests = herdr.counter.requests - asked
        self._deadlines(now)
        self._read_all()
        self._dispatch()
        self.stats.ticks += 1
        self.stats.last_tick_seconds = time.perf_counter() - started

    def idle(self) -> bool:
        """Nothing is being performed or waits to be."""
        return not any(each.busy or each.batches for each in self.followed.values())

    def wait_for_actions(self, timeout: float | None = None) -> None:
        """Wait until every batch of actions started so far is done (for tests and benches)."""
        concurrent.futures.wait(list(self._running), timeout=timeout)
        self._finish()

    def close(self) -> None:
        """Let running actions finish, then stop."""
        self._pool.shutdown(wait=True)
        self._finish()

    # --- reading journals --------------------------------------------------------------------

    def _append(self, each: Followed, seen: Observation) -> None:
        """Journal an observation; a journal archived meanwhile takes none (nothing recreated)."""
        try:
            journal.append(each.journal, seen)
        except FileNotFoundError:
            _log.info("%s is gone; %s not journaled", each.journal, type(seen).__name__)

    def _discover(self) -> None:
        """Follow every journal of every repository in the registry; forget vanished ones."""
        seen: set[Path] = set()
        for repository in places.remembered():
            folder = self._journals_dirs.get(repository)
            if folder is None:
                try:
                    folder = places.journals_dir(repository)
                except git.GitError:
                    _log.warning("%s is no longer a git repository: not followed", repository)
                    continue
                self._journals_dirs[repository] = folder
            with contextlib.suppress(FileNotFoundError):
                for entry in os.scandir(folder):
                    if entry.name.startswith(".") or not entry.is_dir():
                        continue
                    path = Path(entry.path) / places.JOURNAL
                    seen.add(path)
                    if path not in self.followed and path.exists():
                        self.followed[path] = Followed(journal=path)
        for path in [path for path, each in self.followed.items() if path not in seen]:
            if not self.followed[path].busy:
                del self.followed[path]

    def _read_all(self) -> None:
        for each in self.followed.values():
            self._read(each)

    def _read(self, each: Followed) -> None:
        """Fold the lines appended since the last read, and queue what they call for."""
        tail = self._tail(each)
        if tail is None:
            return
        self._fold(each, tail)

    def _tail(self, each: Followed) -> journal.Tail | None:
        """The whole lines appended since the last read; None when there are none."""
        try:
            stat = each.journal.stat()
        except FileNotFoundError:
            return None  # archived: discovery forgets it
        identity = (stat.st_dev, stat.st_ino)
        if each.identity is None:
            each.identity = identity
        elif identity != each.identity or stat.st_size < each.offset:
            if each.busy:
                return None  # the old journal's actions finish first
            each.restart(identity)
        if each.problem is not None:
            return None  # not followed until a new journal takes the name
        if stat.st_size <= each.offset:
            return None
        try:
            return journal.read_from(each.journal, each.offset)
        except (OSError, journal.JournalError) as error:
            each.problem = str(error)
            _log.warning("not following %s: %s", each.journal, error)
            return None

    def _fold(self, each: Followed, tail: journal.Tail) -> None:
        """Step each new line; queue its actions, or the pending ones on a first read."""
        batch: list[Action] = []
        for seen in tail.observations:
            try:
                decision = step(self.settings, each.place, seen)
            except UsageError as error:
                each.problem = f"{each.journal}: a line the rules refuse: {error}"
                _log.warning("not following %s", each.problem)
                return
            except Exception:  # noqa: BLE001 (one bad journal must not stop the supervisor)
                each.problem = f"{each.journal}: {traceback.format_exc(limit=3)}"
                _log.exception("not following %s", each.journal)
                return
            each.place = decision.place
            if not each.fresh:
                batch.extend(a for a in decision.actions if not isinstance(a, _NO_EFFECT))
        each.offset = tail.offset
        if each.fresh and each.place is not None:
            batch = list(pending(each.place))
            each.fresh = False
        if batch:
            each.batches.append(tuple(batch))

    def _deadlines(self, now: Instant) -> None:
        """Journal a tick for each place whose deadlines it moves; others cost nothing."""
        for each in self.followed.values():
            place = each.place
            if place is None or each.problem or place.life is Life.TIDIED:
                continue
            trial = step(self.settings, place, Tick(at=now))
            if trial.actions or evolve(trial.place, now=place.now) != place:
                self._append(each, Tick(at=now))

    # --- performing --------------------------------------------------------------------------

    def _dispatch(self) -> None:
        for each in self.followed.values():
            if each.busy or not each.batches or each.place is None:
                continue
            batch = each.batches.popleft()
            each.busy = True
            self.stats.actions += len(batch)
            future = self._pool.submit(self._perform, each.journal, each.place, batch)
            self._running.add(future)
            future.add_done_callback(self._done_with)

    def _done_with(self, future: concurrent.futures.Future[None]) -> None:
        self._running.discard(future)
        error = future.exception()
        if error is not None:
            _log.error("an action batch failed: %r", error)

    def _perform(self, path: Path, place: Place, batch: tuple[Action, ...]) -> None:
        """On a worker: perform a batch in order, journaling what each action came to.

        A failed action ends the batch: what follows it was decided on its success (a branch
        is deleted only once the worktree that had it out is gone).
        """
        try:
            for action in batch:
                try:
                    observed = self.performer.perform(place, action)
                except Exception:  # noqa: BLE001 (an action's crash is reported, never lost)
                    observed = [
                        ActionFailed(
                            at=Instant(self.clock()),
                            action=type(action).__name__,
                            output=traceback.format_exc(limit=3),
                        ),
                    ]
                try:
                    for seen in observed:
                        journal.append(path, seen)
                except FileNotFoundError:
                    _log.info("%s is gone; the rest of its batch is dropped", path)
                    return
                if any(isinstance(seen, ActionFailed) for seen in observed):
                    return
        finally:
            self._done.put(path)
            self._wake()

    def _finish(self) -> None:
        while True:
            try:
                path = self._done.get_nowait()
            except queue.Empty:
                return
            each = self.followed.get(path)
            if each is not None:
                each.busy = False

    def report(self) -> dict[str, Any]:
        """What ``flume daemon status`` shows."""
        lives = collections.Counter(
            each.place.life.value for each in self.followed.values() if each.place is not None
        )
        return {
            "pid": os.getpid(),
            "started_at": self.stats.started_at,
            "ticks": self.stats.ticks,
            "places": len(self.followed),
            "lives": dict(lives),
            "repositories": len(self._journals_dirs),
            "busy": sum(1 for each in self.followed.values() if each.busy),
            "actions": self.stats.actions,
            "last_tick_subprocesses": self.stats.last_tick_subprocesses,
            "last_tick_herdr_requests": self.stats.last_tick_herdr_requests,
            "last_tick_seconds": round(self.stats.last_tick_seconds, 6),
            "unreadable": {
                str(each.journal): each.problem for each in self.followed.values() if each.problem
            },
        }


# --- the daemon ------------------------------------------------------------------------------


def _holder_alive(descriptor: int) -> bool:
    """The process named in the lock file lives: a supervisor holds the lock, not orphans."""
    text = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip()
    return text.isdigit() and client.alive(int(text))


def _lock() -> int | None:
    """Take the host's supervisor lock; None when a live supervisor already holds it.

    A lock held while the supervisor it names is dead is held by what that supervisor started
    for an action (it inherits the lock): then wait, up to :data:`LOCK_WAIT_SECONDS`, for those
    processes to end. A lock held by a live supervisor (even one not yet listening) means this
    one is not needed: it leaves at once, so it can never take over after a ``daemon stop``.
    """
    path = places.state_dir() / "supervisor.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if (
                _holder_alive(descriptor)
                or client.request("ping") is not None
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


def _stopped_since(asked_at: float | None) -> bool:
    """A ``daemon stop`` came after this supervisor was asked for: it must not take over."""
    if asked_at is None:
        return False
    try:
        stopped_at = float(client.stopped_path().read_text().strip())
    except (OSError, ValueError):
        return False
    return stopped_at > asked_at


def serve(settings: Settings, asked_at: float | None = None) -> int:  # noqa: PLR0915 (the daemon's whole life, in order)
    """Run the supervisor until ``flume daemon stop`` or SIGTERM; 0 if another one runs.

    ``asked_at`` is when a command asked for this supervisor: one that starts only after a
    ``daemon stop`` asked later leaves at once, so a stop is never undone by a slow starter.
    """
    _configure_log()
    # Hold no folder open: the one it was started from may be a place tidy removes.
    os.chdir("/")
    descriptor = _lock()
    if descriptor is None:
        return 0
    if _stopped_since(asked_at):
        _log.info("a daemon stop came after this supervisor was asked for: leaving")
        os.close(descriptor)
        return 0
    _log.info("supervisor started")
    address = client.socket_path()
    with contextlib.suppress(FileNotFoundError):
        address.unlink()
    address.parent.mkdir(parents=True, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(address))
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
    observers = (
        BranchHeads(),
        Watch(server, herdr_server),
        Landings(),
        Changes(openspec.binary()),
        Reports(),
    )
    supervisor = Supervisor(settings, performer=performer, observers=observers, wake=wake)
    stopping = False

    def on_term(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        wake()

    signal.signal(signal.SIGTERM, on_term)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "listener")
    selector.register(wake_read, selectors.EVENT_READ, "wake")
    try:
        while not stopping:
            supervisor.tick()
            for key, _events in selector.select(TICK_SECONDS):
                if key.data == "wake":
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake_read, 4096)
                    continue
                stopping |= _answer(listener, supervisor)
    finally:
        _log.info("supervisor stopping")
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            address.unlink()
        supervisor.close()
        os.close(descriptor)
    return 0


def _answer(listener: socket.socket, supervisor: Supervisor) -> bool:
    """Answer every waiting request; True when one asked the supervisor to stop."""
    stop = False
    while True:
        try:
            connection, _ = listener.accept()
        except BlockingIOError:
            return stop
        with connection:
            connection.settimeout(2.0)
            try:
                request = json.loads(lines.read_line(connection, longest=65536))
                op = request.get("op")
            except (OSError, ValueError, AttributeError):
                continue
            reply: dict[str, Any] = {"ok": True, "pid": os.getpid()}
            if op == "status":
                reply.update(supervisor.report())
            elif op == "stop":
                stop = True
                client.stopped_path().write_text(f"{time.time()!r}\n")
            elif op not in {"ping", "wake"}:
                reply = {"ok": False, "error": f"unknown op {op!r}"}
            with contextlib.suppress(OSError):
                connection.sendall((json.dumps(reply) + "\n").encode())


def _configure_log() -> None:
    """The supervisor's log lines: when, which process, what."""
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s flume supervisor %(process)d: %(message)s",
    )
