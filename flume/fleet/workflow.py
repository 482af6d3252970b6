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

The workflow keeps where the place stands in its memo (:class:`Standing`), so ``flume status
--fleet`` reads it from Temporal's visibility with no worker running. No clock, no randomness,
no I/O here: only Temporal's own ``workflow`` calls. The records it reads and writes are in
:mod:`flume.fleet.records`; a change to this file that would make a recorded history replay
differently fails tests/integration/test_fleet_replay.py.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutType
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
        Returned,
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

    def _stand(self, **changes: object) -> None:
        self.standing = dataclasses.replace(self.standing, **changes)  # type: ignore[arg-type]
        workflow.upsert_memo({"standing": dataclasses.asdict(self.standing)})

    @workflow.run
    async def run(self, launch: FleetLaunch) -> Standing:
        """Carry the place until it lands, finishes or is dropped."""
        self.launch = launch
        self._stand(place=launch.place, remote=launch.remote)
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
            try:
                ended = await workflow.execute_activity(
                    "carry",
                    CarryAsked(launch=launch, attempt=attempt, carried=carried),
                    task_queue=shared_queue(launch.queue, launch.remote),
                    start_to_close_timeout=CARRY_FOR,
                    heartbeat_timeout=timedelta(seconds=launch.heartbeat),
                    retry_policy=ONCE,
                    result_type=CarryEnded,
                )
            except ActivityError as error:
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
                    return self.standing
                continue
            self._stand(
                state=ended.state,
                host=ended.host,
                pushed=ended.pushed or carried,
                words=ended.words,
            )
            return self.standing

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
