"""The fleet's one workflow: a place carried by whichever host takes it, until it ends.

Theory of operation. Temporal decides placement and nothing else: which host carries the place
(the first with a free slot to poll the shared task queue of its remote), and whether that host
still lives (its heartbeats). Everything about the place itself is decided by the carrying
host's flume, as for any place it launched. So the workflow is small, and deterministic as
Temporal requires (its code runs again, against its history, whenever a worker picks it up):

1. It carries the place: one ``carry`` activity on the remote's shared task queue, with a
   heartbeat timeout. The host that takes it signals ``taken`` (so the place's host is known at
   once), launches the place through ``flume.api``, pushes its branch as its head moves, and
   heartbeats how it goes until the place lands, finishes or is dropped: then the activity
   returns, and so does the workflow.
2. A carry that stops heartbeating lost its host: the place is ``host-lost``, named with that
   host and the last head it pushed (its last heartbeat's). With ``relaunch`` it is carried
   again at once, by another host, from that head (FLEET-CARRIED-HEAD); without it, it waits for
   a person: ``flume fleet retry`` carries it again, ``flume fleet drop`` ends it. A carry the
   host could not start (its launch refused there) is ``failed`` and waits the same way.
3. A person's command, from any host, is an update (``command``): while a host carries the
   place, a short ``command`` activity on that host's own task queue runs it there and answers
   what it printed; a stranded place takes ``retry`` and ``drop`` itself.

4. A spread block's lane or child (WF-SPREAD, ``launch.lane_line``) is carried so too, and
   the workflow is its line to its run, on the run's own host: what the carrying host reads of
   it (a led child's news, signalled ``news``; its end, the carry's) goes to the run's host as
   ``run-word`` activities on that host's own task queue, in order, tried until they are
   journaled there; what the run asks of it (an order, a note, an answer, signalled ``word``
   by the run's host) goes to the host that carries it as ``lane-word`` activities, once one
   does. A lane that finished waits, its slot freed, for its run's order (its tidy, once
   merged); one dropped by its run before any host took it is never launched.

The workflow keeps where the place stands in its memo (:class:`Standing`), so ``flume status
--fleet`` reads it from Temporal's visibility with no worker running. No clock, no randomness,
no I/O here: only Temporal's own ``workflow`` calls. The records it reads and writes are in
:mod:`flume.fleet.records`; a change to this file that would make a recorded history replay
differently fails tests/integration/test_fleet_replay.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeout

with workflow.unsafe.imports_passed_through():
    from flume.fleet.records import (
        WORKFLOW,
        Answer,
        Asked,
        CarryAsked,
        CarryEnded,
        FleetLaunch,
        HostCommand,
        HostLaneWord,
        LaneEnd,
        LaneWord,
        News,
        Piece,
        Returned,
        RunWord,
        Standing,
        State,
        Taken,
        host_queue,
        shared_queue,
    )

#: How long a carry may last: a place lives until it lands or is dropped, days if need be.
CARRY_FOR = timedelta(days=30)
#: How long a person's command may take on its host, queued and run (a status, a tell).
COMMAND_FOR = timedelta(seconds=60)
#: An activity is tried once: a carry lost is the workflow's to handle, a command the person's.
ONCE = RetryPolicy(maximum_attempts=1)
#: What a spread lane's host brings its run's host is tried until journaled there (the run's
#: host may be down a while): a week at most.
TO_RUN_FOR = timedelta(days=7)
TO_RUN = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30))
#: What a run asks of its spread lane is tried while the lane's host launches it (its journal
#: not there yet) or is briefly away; each try waits for a tidy to be done.
TO_LANE_FOR = timedelta(minutes=10)
TO_LANE_TRY = timedelta(seconds=90)
TO_LANE = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=5))


def _lost_at(error: ActivityError) -> tuple[bool, dict[str, object]]:
    """Whether the carry timed out on its heartbeat (its host is lost), and its last heartbeat."""
    cause = error.cause
    if isinstance(cause, ActivityTimeout) and cause.type is TimeoutType.HEARTBEAT:
        details = list(cause.last_heartbeat_details)
        last = details[0] if details and isinstance(details[0], dict) else {}
        return True, last
    return False, {}


def _said(error: ActivityError) -> str:
    """What a carry that failed said, in one line."""
    cause = error.cause
    if isinstance(cause, ApplicationError):
        return cause.message
    return str(cause or error)


@workflow.defn(name=WORKFLOW)
class FleetPlace:
    """One fleet place: its carries, host after host, and the person's commands for it."""

    def __init__(self) -> None:
        self.standing = Standing(place="", state=State.WAITING)
        #: A stranded place's way out, as a person asked: "retry" or "drop".
        self.way_out = ""
        self.launch: FleetLaunch | None = None
        #: The carry under way, while there is one.
        self.carrying: workflow.ActivityHandle[CarryEnded] | None = None
        #: A spread lane's words for its run's host, and its run's for it, in order.
        self.to_run: list[RunWord] = []
        self.words: list[LaneWord] = []
        #: A spread lane's host once it finished there; its run's order (tidy, drop) given it.
        self.finished_on = ""
        self.ordered = False
        #: Dropped by its run while no host carried it: never launched.
        self.dropped_waiting = False
        self.closing = False

    def _stand(self, **changes: object) -> None:
        self.standing = dataclasses.replace(self.standing, **changes)  # type: ignore[arg-type]
        workflow.upsert_memo({"standing": dataclasses.asdict(self.standing)})

    @workflow.run
    async def run(self, launch: FleetLaunch) -> Standing:
        """Carry the place until it lands, finishes or is dropped (a lane: until its run's word)."""
        self.launch = launch
        self._stand(place=launch.place, remote=launch.remote)
        if not launch.lane_line:
            await self._carried(launch)
            return self.standing
        lines = [
            asyncio.create_task(self._to_run(launch)),
            asyncio.create_task(self._to_lane(launch)),
        ]
        ended = await self._carried(launch)
        if ended is None:
            # Dropped, by its run or a person, before any host carried it (or while stranded).
            end = LaneEnd(finished=False)
        else:
            end = ended.lane_end or LaneEnd(
                finished=ended.state == State.FINISHED, head=ended.pushed
            )
        self.to_run.append(self._run_word(launch, end=end))
        if ended is not None and ended.state == State.FINISHED:
            self.finished_on = ended.host
            self._stand(
                words=f"finished on {ended.host}; waits for its run {launch.run} to merge it "
                "and order its tidy"
            )
            await workflow.wait_condition(lambda: self.ordered)
        self.closing = True
        await asyncio.gather(*lines)
        return self.standing

    async def _carried(self, launch: FleetLaunch) -> CarryEnded | None:
        """Carry the place, host after host, until it ends; None: dropped where it stood."""
        carried: str | None = None
        attempt = 0
        while True:
            attempt += 1
            self._stand(
                state=State.WAITING,
                host="",
                attempt=attempt,
                words="waiting for a host with a free slot",
            )
            if self.dropped_waiting:
                self._stand(
                    state=State.DROPPED,
                    words=f"dropped by its run {launch.run} before a host carried it",
                )
                return None
            try:
                self.carrying = workflow.start_activity(
                    "carry",
                    CarryAsked(launch=launch, attempt=attempt, carried=carried),
                    task_queue=shared_queue(launch.queue, launch.remote),
                    start_to_close_timeout=CARRY_FOR,
                    heartbeat_timeout=timedelta(seconds=launch.heartbeat),
                    retry_policy=ONCE,
                    result_type=CarryEnded,
                )
                ended = await self.carrying
            except ActivityError as error:
                self.carrying = None
                if self.dropped_waiting and isinstance(error.cause, CancelledError):
                    self._stand(
                        state=State.DROPPED,
                        words=f"dropped by its run {launch.run} before a host carried it",
                    )
                    return None
                lost, last = _lost_at(error)
                if lost:
                    pushed = last.get("pushed")
                    carried = pushed if isinstance(pushed, str) and pushed else carried
                    host = str(last.get("host") or self.standing.host or "?")
                    again = (
                        "it is carried again on another host"
                        if launch.relaunch
                        else (
                            f"flume fleet retry {launch.place} carries it again on another host, "
                            f"flume fleet drop {launch.place} drops it"
                        )
                    )
                    self._stand(
                        state=State.HOST_LOST,
                        host=host,
                        pushed=carried,
                        lost=[*self.standing.lost, host],
                        words=f"its host {host} stopped heartbeating; last pushed "
                        f"{carried or 'nothing'}: {again}",
                    )
                    if launch.relaunch:
                        continue
                else:
                    self._stand(
                        state=State.FAILED,
                        words=f"{_said(error)}: flume fleet retry {launch.place} carries it "
                        f"again, flume fleet drop {launch.place} drops it",
                    )
                self.way_out = ""
                await workflow.wait_condition(lambda: bool(self.way_out))
                if self.way_out == "drop":
                    self._stand(state=State.DROPPED, words="dropped by a person while stranded")
                    return None
                continue
            self.carrying = None
            self._stand(
                state=ended.state,
                host=ended.host,
                pushed=ended.pushed or carried,
                words=ended.words,
            )
            return ended

    # --- a spread lane's line to its run ----------------------------------------------------

    def _run_word(
        self, launch: FleetLaunch, *, end: LaneEnd | None = None, news: list[Piece] | None = None
    ) -> RunWord:
        return RunWord(
            run=launch.run,
            lane=launch.lane_name,
            place=launch.place,
            news=news or [],
            end=end,
        )

    async def _to_run(self, launch: FleetLaunch) -> None:
        """What the lane's host brings, journaled in its run's journal, in order, on its host."""
        while True:
            await workflow.wait_condition(lambda: bool(self.to_run) or self.closing)
            if not self.to_run:
                return
            said = self.to_run.pop(0)
            try:
                await workflow.execute_activity(
                    "run-word",
                    said,
                    task_queue=host_queue(launch.queue, launch.run_host),
                    schedule_to_close_timeout=TO_RUN_FOR,
                    retry_policy=TO_RUN,
                    result_type=int,
                )
            except ActivityError as error:
                workflow.logger.warning("%s: its run never heard: %s", launch.place, _said(error))

    def _lane_host(self) -> str:
        """The host a word for the lane goes to: the one carrying it, or it finished on."""
        if self.finished_on:
            return self.finished_on
        return self.standing.host if self.standing.state == State.CARRIED else ""

    async def _to_lane(self, launch: FleetLaunch) -> None:
        """What the run asks of the lane, run on the lane's host once one carries it, in order."""
        while True:
            await workflow.wait_condition(
                lambda: self.closing or (bool(self.words) and bool(self._lane_host()))
            )
            host = self._lane_host()
            if not (self.words and host):
                return
            word = self.words.pop(0)
            try:
                answer: Answer = await workflow.execute_activity(
                    "lane-word",
                    HostLaneWord(place=launch.place, word=word),
                    task_queue=host_queue(launch.queue, host),
                    start_to_close_timeout=TO_LANE_TRY,
                    schedule_to_close_timeout=TO_LANE_FOR,
                    retry_policy=TO_LANE,
                    result_type=Answer,
                )
            except ActivityError as error:
                answer = Answer(status=1, err=f"{host} did not take it: {_said(error)}")
            if word.kind == "answer" and answer.status != 0:
                refused = Piece(
                    id=f"refused:{word.id}",
                    text=f"your answer to {word.question} was not taken: "
                    f"{answer.err.strip() or answer.out.strip()}",
                )
                self.to_run.append(self._run_word(launch, news=[refused]))
            if word.kind == "order" and self.finished_on:
                self.ordered = True
                self._stand(words=f"{word.order} ordered by its run {launch.run}: {answer.out}")

    @workflow.signal
    def news(self, said: News) -> None:
        """A led child's news from the host that carries it, for its run's lead."""
        launch = self.launch
        if launch is None or not launch.lane_line or said.attempt != self.standing.attempt:
            return
        self.to_run.append(self._run_word(launch, news=list(said.pieces)))

    @workflow.signal
    def word(self, said: LaneWord) -> None:
        """What the lane's run asks of it: carried to its host, or, not carried yet, done here.

        A drop for a lane no host took yet ends it here (its carry called off, or never asked
        for); for one stranded (its host lost), it is the way out. (A signal may come before
        the workflow's run has begun: it is kept until then.)
        """
        dropping = said.kind == "order" and said.order == "drop"
        if dropping and self.standing.state == State.WAITING:
            self.dropped_waiting = True
            if self.carrying is not None:
                self.carrying.cancel()
            return
        if dropping and self.standing.state in State.STRANDED and not self.way_out:
            self.way_out = "drop"
            return
        self.words.append(said)

    @workflow.signal
    def taken(self, took: Taken) -> None:
        """A host took the current carry: the place's host is known from now on."""
        if took.attempt == self.standing.attempt and self.standing.state == State.WAITING:
            self._stand(state=State.CARRIED, host=took.host, words=f"carried by {took.host}")

    @workflow.signal
    def returned(self, said: Returned) -> None:
        """A lost host came back: what it kept of the place, named for a person."""
        self._stand(kept=[*self.standing.kept, f"{said.host}: {said.words}"])

    @workflow.query
    def where(self) -> Standing:
        """Where the place stands now."""
        return self.standing

    @workflow.update
    async def command(self, asked: Asked) -> Answer:  # noqa: PLR0911 (each state answers)
        """A person's command: run on the place's host, or, stranded, retry or drop it here."""
        launch = self.launch
        standing = self.standing
        if launch is None:
            return Answer(status=1, err="flume: the place is not launched yet; try again")
        name = launch.place
        if standing.state in State.STRANDED:
            if asked.command in {"retry", "drop"} and not self.way_out:
                self.way_out = asked.command
                said = (
                    f"{name}: carried again on another host, from {standing.pushed or 'its base'}"
                    if asked.command == "retry"
                    else f"{name} dropped; the fleet carries it no more"
                )
                return Answer(status=0, out=said + "\n")
            return Answer(
                status=1,
                err=f"flume: {name} is {standing.state}: {standing.words}\n",
            )
        if standing.state in State.ENDED:
            return Answer(status=1, err=f"flume: {name} is {standing.state} already\n")
        if standing.state != State.CARRIED or not standing.host:
            return Answer(
                status=1,
                err=f"flume: {name} waits for a host to take it; flume status --fleet shows when "
                "one has\n",
            )
        try:
            answer: Answer = await workflow.execute_activity(
                "command",
                HostCommand(place=name, remote=launch.remote, asked=asked),
                task_queue=host_queue(launch.queue, standing.host),
                schedule_to_close_timeout=COMMAND_FOR,
                retry_policy=ONCE,
                result_type=Answer,
            )
        except ActivityError as error:
            return Answer(
                status=1,
                err=f"flume: {standing.host}, which carries {name}, did not answer: "
                f"{_said(error)}\n",
            )
        return answer
