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
hook files read from stored offsets: :mod:`flume.shell.observe.watch`). Deadlines are kept in a
heap: each time a place changes, the core says when a ``Tick`` will next change it
(:func:`~flume.core.step.next_deadline`), and a tick looks only at the places whose deadline has
come, stepping a ``Tick`` to check; a tick with nothing due looks at no place. A tick that changes
nothing is not journaled, so idle places cost no disk. Every :data:`SCAN_SECONDS` all places are
checked as well, as a safety net (it finds nothing the heap would not).

Actions run on worker threads, one batch at a time per place and in order, so a long setup in
one place never holds up another. The daemon that runs this loop, answers the socket and holds
the host's lock is :mod:`flume.shell.supervisor.daemon`.
"""

from __future__ import annotations

import collections
import concurrent.futures
import heapq
import logging
import os
import queue
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from flume.core.actions import Action, ActionName, KeepBranch, KeepPlace, Report
from flume.core.errors import UsageError
from flume.core.ids import Instant, PlaceName
from flume.core.launch import followed_by
from flume.core.observations import (
    ActionFailed,
    Observation,
    Tick,
)
from flume.core.place import Life, Place, evolve
from flume.core.settings import Settings
from flume.core.status import status as core_status
from flume.core.step import next_deadline, pending, step
from flume.core.workflow.lanes import lanes_ended
from flume.core.workflow.orchestrate import children_news
from flume.shell import environment, process
from flume.shell.host import STATUS_FORMAT
from flume.shell.observe.branches import BranchHeads
from flume.shell.observe.port import Observer
from flume.shell.perform import launcher
from flume.shell.perform.launch_words import LaunchAsked
from flume.shell.perform.performer import Performer
from flume.shell.store import codec, journal, places
from flume.shell.store.follower import Followed, Follower
from flume.shell.supervisor.handover import (
    LaunchCrashed,
    LaunchMade,
    LaunchOutcome,
    LaunchRefused,
)
from flume.shell.supervisor.protocol import DaemonReport, SurveyAnswer, Unreadable
from flume.shell.tools.notify import SAFETY_SECONDS, Notify

#: How many actions run at once, each for a different place.
WORKERS = 8
#: How often every place's deadlines are checked besides those the heap says are due.
SCAN_SECONDS = 30.0
#: Outdated heap entries allowed beyond twice the places before the heap is made anew.
_HEAP_SLACK = 64
_NO_EFFECT = (KeepBranch, KeepPlace, Report)
_log = logging.getLogger("flume.supervisor")


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
    #: places whose deadlines the last tick checked (a ``Tick`` stepped): those due, or all at a
    #: safety net's scan.
    last_tick_deadlines_checked: int = 0


class Supervisor:
    """Follows every place of every repository flume knows; one tick at a time."""

    def __init__(  # noqa: PLR0913 (what a supervisor is made of)
        self,
        settings: Settings,
        *,
        performer: Performer,
        clock: Callable[[], float] = time.time,
        observers: Sequence[Observer] = (BranchHeads(),),
        wake: Callable[[], None] = lambda: None,
        notify: Notify | None = None,
    ) -> None:
        self.settings = settings
        self.performer = performer
        self.clock = clock
        self.observers = observers
        #: Which files changed (read once a tick, before the observers look); None: no events.
        self.notify = notify
        self.follower = Follower(settings, on_problem=_not_following, on_lost=_lost)
        self.stats = Stats(started_at=clock())
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS)
        self._done: queue.SimpleQueue[tuple[Path, tuple[Observation, ...], str | None]] = (
            queue.SimpleQueue()
        )
        self._wake = wake
        self._running: set[concurrent.futures.Future[None]] = set()
        #: This host's id (HOST-OWNS-PLACE); None until the host's first launch makes it.
        self.host = places.host_id()
        #: Each followed place's status as the last ``survey`` answered it (:meth:`_view_of`).
        self._shown: dict[Path, tuple[Place, str | None, str | None, dict[str, Any]]] = {}
        #: Each followed place's next deadline, with the place it was computed for.
        self._due: dict[Path, tuple[Place, Instant | None]] = {}
        #: The deadlines in order, with their journals; an entry the place outdated is skipped.
        self._heap: list[tuple[Instant, Path]] = []
        #: When all places' deadlines were last checked (the safety net), on the clock.
        self._scanned = float("-inf")
        #: The journals this supervisor appended to since it last read them (they grew).
        self._written: set[Path] = set()
        #: Each journal's folder and name, and when it was last read (monotonic).
        self._split: dict[Path, tuple[str, str]] = {}
        self._read_at: dict[Path, float] = {}
        #: The runs told nothing by their lanes at the last tick, with the lanes they had then.
        self._quiet: dict[Path, tuple[Place, dict[PlaceName, Place]]] = {}

    # --- one tick ----------------------------------------------------------------------------

    def tick(self) -> None:
        """Read what was journaled, observe, check deadlines, and start what is to do."""
        started = time.perf_counter()
        self._finish()
        if self.host is None:
            self.host = places.host_id()
        self._write_unwritten()
        self.follower.discover()
        self._read_changed()
        runs = process.count.processes()
        asked = process.count.requests["herdr"]
        now = Instant(self.clock())
        live = [
            each
            for each in self.followed.values()
            if each.place and not each.problem and not each.foreign
        ]
        for observer in self.observers:
            try:
                for each, seen in observer.observe(live, now):
                    self._append(each, seen)
            except Exception:  # noqa: BLE001 (one source failing must not stop the supervisor)
                _log.exception("observing with %s failed", type(observer).__name__)
        self.stats.last_tick_subprocesses = process.count.processes() - runs
        self.stats.last_tick_herdr_requests = process.count.requests["herdr"] - asked
        self._lanes_ended(now)
        self._deadlines(now)
        self._read_changed()
        self._dispatch()
        self.stats.ticks += 1
        self.stats.last_tick_seconds = time.perf_counter() - started

    @property
    def followed(self) -> dict[Path, Followed]:
        """The journals followed, by path (:attr:`.Follower.followed`)."""
        return self.follower.followed

    def working(self) -> bool:
        """An agent lives in a place this supervisor carries: its turn may end at any moment."""
        return any(
            each.place is not None
            and each.place.agent is not None
            and not each.problem
            and not each.foreign
            for each in self.followed.values()
        )

    def hurried(self) -> bool:
        """The next tick should come soon: an agent's change would be seen late otherwise.

        An agent lives (its turn may end at any moment), and either no event tells of its
        files (no inotify, or folders the poller looks at), or the last tick looked at some
        agent whole: one mid-delivery, or whose files just changed. Agents all at rest, their
        folders watched, wait for the events (which wake the loop) or the next slow tick.
        """
        if not self.working():
            return False
        notify = self.notify
        return (
            notify is None
            or notify.mode != "inotify"
            or any(getattr(observer, "last_looked", 0) for observer in self.observers)
        )

    def next_due(self) -> float | None:
        """When the earliest deadline the heap holds comes, on the supervisor's clock; None: none.

        An entry the place outdated may be first: a tick at it finds nothing due, and costs little.
        """
        return float(self._heap[0][0]) if self._heap else None

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
        """Journal an observation; a journal archived meanwhile takes none (nothing recreated).

        A journal that cannot be written (a full disk, a read-only folder) takes none for now:
        the fault is kept on the place, for ``daemon status`` and ``status``, and the
        observation is held, in order, to be journaled on a later tick once it can be.
        """
        if each.unwritten:
            self._hold(each, seen)
            return
        self._written.add(each.journal)
        try:
            journal.append(each.journal, seen)
        except FileNotFoundError:
            _log.info("%s is gone; %s not journaled", each.journal, type(seen).__name__)
        except OSError as error:
            self._fault(each, journal.write_fault(each.journal, error))
            self._hold(each, seen)
        else:
            self._fault(each, None)

    @staticmethod
    def _hold(each: Followed, seen: Observation) -> None:
        """Hold ``seen`` to journal later; one seen again each tick (a tick, a head): held once."""
        if not any(held == attrs.evolve(seen, at=held.at) for held in each.unwritten):
            each.unwritten.append(seen)

    def _fault(self, each: Followed, fault: str | None) -> None:
        """Keep (or clear) the place's write fault, saying so once when it changes."""
        if fault != each.fault:
            if fault is not None:
                _log.warning("%s", fault)
            else:
                _log.info("the journal %s can be written again", each.journal)
        each.fault = fault

    def _write_unwritten(self) -> None:
        """Journal, in order, what was held while the journals could not be written."""
        for each in self.followed.values():
            while each.unwritten:
                try:
                    journal.append(each.journal, each.unwritten[0])
                except FileNotFoundError:
                    each.unwritten.clear()
                except OSError as error:
                    self._fault(each, journal.write_fault(each.journal, error))
                    break
                else:
                    each.unwritten.popleft()
                    self._written.add(each.journal)
                    self._fault(each, None)

    def _read_all(self) -> None:
        for each in self.followed.values():
            self._read(each)

    def _read_changed(self) -> None:
        """Read the journals that may have grown: written since, by this supervisor or another.

        Without events, all are read (:meth:`_read_all`). With them, a journal is read when an
        event names it, when this supervisor appended to it, when it is new or given up (a
        journal mended in place is read anew), and at least every ``SAFETY_SECONDS``.
        """
        notify = self.notify
        if notify is None:
            self._read_all()
            return
        notify.read()
        clock = time.monotonic()
        for each in self.followed.values():
            split = self._split.get(each.journal)
            if split is None:
                split = self._split[each.journal] = os.path.split(each.journal)
            grown = notify.changed_in(*split)  # asked of each, so each event is taken
            last = self._read_at.get(each.journal)
            if (
                grown
                or last is None
                or not 0 <= clock - last < SAFETY_SECONDS
                or each.fresh
                or each.problem is not None
                or each.journal in self._written
            ):
                self._read_at[each.journal] = clock
                self._read(each)
        self._written.clear()
        if len(self._split) > 2 * len(self.followed) + _HEAP_SLACK:
            self._split = {path: self._split[path] for path in self.followed if path in self._split}
            self._read_at = {
                path: self._read_at[path] for path in self.followed if path in self._read_at
            }

    def _read(self, each: Followed) -> None:
        """Fold the lines appended since the last read, and queue what they call for.

        On a journal's first read, what its place is pending (:func:`~flume.core.step.pending`)
        is queued, not its history: after a SIGKILL that is what was asked and never seen done.
        """
        self._fold(each)
        self._schedule(each)

    def _fold(self, each: Followed) -> None:
        folded = self.follower.read(each)
        if folded is None or each.problem is not None:
            return
        batch: list[Action] = []
        if not each.fresh:
            for decision in folded.decisions:
                batch.extend(a for a in decision.actions if not isinstance(a, _NO_EFFECT))
        if self.host is None and each.place is not None and each.place.launch.host is not None:
            # The host's first launch made its id since this supervisor last looked (a launch
            # handed over is followed at once, between ticks): judged by the id as it is now.
            self.host = places.host_id()
        if each.place is not None and not followed_by(each.place.launch, self.host):
            # HOST-OWNS-PLACE: another host's supervisor observes and acts; this one only reads.
            each.foreign, each.fresh = True, False
            return
        if each.fresh and each.place is not None:
            batch = list(pending(each.place))
            each.fresh = False
        if batch:
            each.batches.append(tuple(batch))

    def _lanes_ended(self, now: Instant) -> None:
        """Tell each run whose lanes run which of them ended: ``LaneEnded``, in its journal.

        A run learns of its lanes only from its own journal (its replay depends on it alone),
        so what the lanes' journals show is journaled there: a lane finished (its branch's
        block done), or ended unfinished (dropped, or tidied since), once its agent is seen gone:
        no lane's agent can commit to a branch being merged, nor outlive its turn under the
        block's cap. Each lane is the place its run named, launched by that run and cut from
        its head at this entry of the block (a loop around the block enters it again). An
        orchestrate block's children's news goes the same way (``ChildNews``), each piece once.
        """
        lanes: dict[str, dict[PlaceName, Place]] = {}
        for each in self.followed.values():
            if each.place is not None and not each.problem and each.place.launch.parent:
                found = lanes.setdefault(each.place.launch.repository, {})
                found[each.place.launch.place] = each.place
        quiet: dict[Path, tuple[Place, dict[PlaceName, Place]]] = {}
        for path, each in self.followed.items():
            run = each.place
            if run is None or each.problem or each.foreign:
                continue
            found = lanes.get(run.launch.repository, {})
            kept = self._quiet.get(path)
            if kept is not None and kept[0] is run and _same(kept[1], found):
                # Nothing to tell the last time, and neither the run nor a lane changed since:
                # nothing now (what is told depends on them alone, ``now`` being its instant).
                quiet[path] = kept
                continue
            # A child's news (its gate passed) before its end: the lead hears them in order.
            told: list[Observation] = [
                *children_news(run, found, now),
                *lanes_ended(run, found, now),
            ]
            for seen in told:
                self._append(each, seen)
            if not told:
                quiet[path] = (run, found)
        self._quiet = quiet

    def _schedule(self, each: Followed) -> None:
        """Keep the place's next deadline in the heap, computed again only once it changed."""
        place = each.place
        if place is None or not self._ticked(each):
            self._due.pop(each.journal, None)
            return
        kept = self._due.get(each.journal)
        if kept is not None and kept[0] is place:
            return
        due = next_deadline(place)
        self._due[each.journal] = (place, due)
        if due is not None:
            heapq.heappush(self._heap, (due, each.journal))
        if len(self._heap) > 2 * len(self._due) + _HEAP_SLACK:
            # Outdated entries far in the future are many: the heap is made again of the kept.
            self._heap = [(at, path) for path, (_, at) in self._due.items() if at is not None]
            heapq.heapify(self._heap)

    @staticmethod
    def _ticked(each: Followed) -> bool:
        """The place is this supervisor's to tick: followed whole, its own, not tidied."""
        place = each.place
        return (
            place is not None
            and not each.problem
            and not each.foreign
            and place.life is not Life.TIDIED
        )

    def _deadlines(self, now: Instant) -> None:
        """Journal a tick for each place whose deadline has come; others cost nothing.

        The places due are those at the heap's top; every :data:`SCAN_SECONDS`, all are looked
        at as well. A tick journaled is read back (the place changes, and its next deadline is
        computed); one that could not be written is tried again at the next tick, as it was due.
        """
        due: dict[Path, Followed] = {}
        if now - self._scanned >= SCAN_SECONDS:
            self._scanned = now
            due = {path: each for path, each in self.followed.items() if self._ticked(each)}
            for gone in self._due.keys() - self.followed.keys():
                del self._due[gone]
        while self._heap and self._heap[0][0] <= now:
            at, path = heapq.heappop(self._heap)
            each = self.followed.get(path)
            kept = self._due.get(path)
            if each is None or kept is None or kept[0] is not each.place:
                continue  # outdated: the place changed since (or is no longer followed)
            due[path] = each
            if kept[1] == at:
                self._due[path] = (kept[0], None)  # popped: pushed again only if still due
        self.stats.last_tick_deadlines_checked = len(due)
        for each in due.values():
            place = each.place
            if place is None or not self._ticked(each):
                continue
            trial = step(self.settings, place, Tick(at=now))
            if trial.actions or evolve(trial.place, now=place.now) != place:
                self._append(each, Tick(at=now))
                # Due until the place changes: a tick not written is tried again next time.
                self._due[each.journal] = (place, now)
                heapq.heappush(self._heap, (now, each.journal))

    # --- performing --------------------------------------------------------------------------

    def _dispatch(self) -> None:
        for each in self.followed.values():
            if each.busy or not each.batches or each.place is None or each.foreign:
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
        is deleted only once the worktree that had it out is gone). So does a journal that
        cannot be written: what the action came to is handed back to be journaled once it can.
        """
        unwritten: tuple[Observation, ...] = ()
        fault: str | None = None
        try:
            for action in batch:
                try:
                    observed = self.performer.perform(place, action)
                except Exception:  # noqa: BLE001 (an action's crash is reported, never lost)
                    observed = [
                        ActionFailed(
                            at=Instant(self.clock()),
                            action=ActionName.of(action),
                            output=traceback.format_exc(limit=3),
                        ),
                    ]
                for number, seen in enumerate(observed):
                    try:
                        journal.append(path, seen)
                    except FileNotFoundError:
                        _log.info("%s is gone; the rest of its batch is dropped", path)
                        return
                    except OSError as error:
                        unwritten, fault = (
                            tuple(observed[number:]),
                            journal.write_fault(path, error),
                        )
                        return
                if any(isinstance(seen, ActionFailed) for seen in observed):
                    return
        finally:
            self._done.put((path, unwritten, fault))
            self._wake()

    def _finish(self) -> None:
        while True:
            try:
                path, unwritten, fault = self._done.get_nowait()
            except queue.Empty:
                return
            each = self.followed.get(path)
            if each is not None:
                each.busy = False
                each.unwritten.extend(unwritten)
                if fault is not None:
                    self._fault(each, fault)

    def launch(self, asked: LaunchAsked, given: Mapping[str, str]) -> LaunchOutcome:
        """A launch ``flume launch`` handed over (:func:`.handover.launch`): its outcome.

        The command's own checks and journaling (:func:`~.launch.launch_asked`), reading the
        caller's environment ``given`` in place of the supervisor's. A launch journaled is followed,
        and its place made, at once: ``made``, the launch as ``flume launch --json`` prints it. Bad
        input makes nothing: ``problems`` and ``exit_status``, the command's own.
        """
        try:
            with environment.given(given):
                made = launcher.launch_asked(asked)
        except UsageError as error:
            return LaunchRefused(error.problems, error.exit_status)
        except Exception:  # noqa: BLE001 (said to the command, as its own launch would have)
            _log.exception("a launch handed over by a command failed")
            return LaunchCrashed(traceback.format_exc(limit=3))
        _log.info("%s launched in %s, for a command", made.place, made.repository)
        self.follow(made.journal)
        return LaunchMade(made.as_dict())

    def follow(self, path: Path) -> None:
        """Follow a journal just written, and start what it asks for now, not at the next tick.

        Found as every journal is found (:meth:`.Follower.discover`), so it is followed once;
        one not found so is left to the next tick.
        """
        self.follower.discover()
        each = self.followed.get(path)
        if each is not None:
            self._read(each)
            self._dispatch()

    def started(self, path: Path) -> bool:
        """The place of the journal ``path`` is followed and its actions are under way."""
        each = self.followed.get(path)
        return each is not None and each.busy

    def survey(self) -> SurveyAnswer:
        """What ``flume status`` shows, as the journals hold it now: ``status --json``'s data.

        The journals are read up to their ends first, so a line a command has just written is
        in it, as it would be had the command read the journals itself. Places and journals come
        in the order a reading of the journals gives (repository by repository, as registered,
        then by name), and a journal not followed whole is read as that reading would read it,
        so the answer is the same as :func:`flume.api.survey`'s with a supervisor running.
        Beside ``format``, ``places`` and ``unreadable``: ``torn``, the journals whose last line a
        crash cut short, and ``repositories``, those looked in.
        """
        self.follower.discover()
        self._read_all()
        # The views made for this answer, kept for the next (see _view_of).
        shown: dict[Path, tuple[Place, str | None, str | None, dict[str, Any]]] = {}
        views: list[dict[str, Any]] = []
        unreadable: list[Unreadable] = []
        torn: list[str] = []
        repositories = places.remembered()
        for repository in repositories:
            folder = self.follower.folders.get(repository)
            found = [
                each
                for path, each in sorted(self.followed.items())
                if folder is not None and path.parent.parent == folder and path.is_file()
            ]
            for each in found if folder is not None else [None]:
                if each is not None and each.place is not None and not each.problem:
                    views.append(self._view_of(each, each.place, shown))
                    if self._torn(each):
                        torn.append(str(each.journal))
                    continue
                # Not followed whole (or no journals folder): read as status reads it.
                only = each.journal.parent.name if each is not None else None
                for read in places.places_of(repository, self.settings, only=only):
                    if read.place is None:
                        problem = read.problem or "unreadable"
                        unreadable.append(Unreadable(str(read.journal), problem))
                        continue
                    view = core_status(read.place, here=self.host)
                    if each is not None and each.problem:
                        view = attrs.evolve(view, fault=journal.fault_words(unread=each.problem))
                    views.append(codec.codec().unstructure(view))
                    if read.torn:
                        torn.append(str(read.journal))
        self._shown = shown
        return SurveyAnswer(
            format=STATUS_FORMAT,
            places=tuple(views),
            unreadable=tuple(unreadable),
            torn=tuple(torn),
            repositories=tuple(str(repository) for repository in repositories),
        )

    def _view_of(
        self,
        each: Followed,
        place: Place,
        shown: dict[Path, tuple[Place, str | None, str | None, dict[str, Any]]],
    ) -> dict[str, Any]:
        """The status of the place ``each`` follows, as ``status --json`` holds it.

        Made again only when the place, its journal's fault or this host's id changed since the
        last answer: the same place and host give the same status (the core is pure), and
        ``flume status`` polled beside 200 unchanged places is answered without remaking 200.
        """
        kept = self._shown.get(each.journal)
        if kept is not None and kept[0] is place and kept[1:3] == (each.fault, self.host):
            document = kept[3]
        else:
            view = core_status(place, here=self.host)
            if each.fault is not None:
                view = attrs.evolve(view, fault=journal.fault_words(unwritable=each.fault))
            document = codec.codec().unstructure(view)
        shown[each.journal] = (place, each.fault, self.host, document)
        return document

    @staticmethod
    def _torn(each: Followed) -> bool:
        """The journal goes on past its last whole line: a line cut short by a crash."""
        try:
            return each.journal.stat().st_size > each.offset
        except FileNotFoundError:
            return False

    def report(self) -> DaemonReport:
        """What ``flume daemon status`` shows."""
        ours = [each for each in self.followed.values() if not each.foreign]
        lives = collections.Counter(
            each.place.life.value for each in ours if each.place is not None
        )
        return DaemonReport(
            pid=os.getpid(),
            started_at=self.stats.started_at,
            ticks=self.stats.ticks,
            places=len(ours),
            other_hosts_places=len(self.followed) - len(ours),
            lives=dict(lives),
            repositories=len(self.follower.folders),
            busy=sum(1 for each in self.followed.values() if each.busy),
            actions=self.stats.actions,
            last_tick_subprocesses=self.stats.last_tick_subprocesses,
            last_tick_herdr_requests=self.stats.last_tick_herdr_requests,
            last_tick_seconds=round(self.stats.last_tick_seconds, 6),
            unreadable={
                str(each.journal): each.problem for each in self.followed.values() if each.problem
            },
            unwritable={
                str(each.journal): each.fault for each in self.followed.values() if each.fault
            },
            watching=self.notify.mode if self.notify is not None else "poller (no events asked)",
            last_tick_deadlines_checked=self.stats.last_tick_deadlines_checked,
            last_tick_agents_looked=sum(
                getattr(observer, "last_looked", 0) for observer in self.observers
            ),
        )

    def problem_of(self, path: Path) -> str | None:
        """Why the journal at ``path`` is not followed, read up to now; None when it is.

        A journal this supervisor does not know (not yet discovered, or in a repository it does
        not follow) is not its to judge: None.
        """
        self.follower.discover()
        each = self.followed.get(path)
        if each is None:
            return None
        self._read(each)
        return each.problem


def _same(kept: Mapping[PlaceName, Place], found: Mapping[PlaceName, Place]) -> bool:
    """The same lanes, each the very place it was (places are immutable: unchanged)."""
    return kept.keys() == found.keys() and all(kept[name] is found[name] for name in kept)


def _not_following(path: Path, why: str) -> None:
    """Say in the log that a journal is given up, and why (it is followed again once mended)."""
    _log.warning("not following %s: %s", path, why)


def _lost(repository: Path) -> None:
    """Say in the log that a registered repository can no longer be followed."""
    _log.warning("%s is no longer a git repository: not followed", repository)
