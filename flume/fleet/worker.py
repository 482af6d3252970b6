"""``flume fleet worker``: a host's Temporal worker, beside its supervisor.

It polls two task queues: the shared one of its clone's remote, for the fleet's workflows and
for carries (at most ``slots`` carries at once: Temporal hands a carry only to a worker with a
free slot, so no host ever holds more fleet places than its slots), and its own, for the
person's commands for the places it carries. It marks its clone as landing through the remote
(``git config flume.fleetRemote``). Before it polls, and every heartbeat window after, it sweeps
the places it carried before: one the fleet carries elsewhere now was this host's before it was
lost, and is dropped here, its unpushed commits kept and named (:meth:`FleetHost.sweep`).
About twice a second it hands the fleet what this host's runs ask of their spread lanes (the
outbox, :meth:`FleetHost.hand_over`); its own task queue also serves those lanes' words
(``run-word``, ``lane-word``).

It runs until SIGINT or SIGTERM; then it stops polling, and the places it still carries end
their carries as ``HostLeft`` (the workflow takes that as a lost host, at once rather than a
heartbeat window later).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from flume.fleet import client as fleet_client
from flume.fleet import handover
from flume.fleet.config import Fleet
from flume.fleet.connect import connect
from flume.fleet.host import Clone, FleetHost
from flume.fleet.records import host_queue, shared_queue
from flume.fleet.workflow import FleetPlace
from flume.shell.tools import git

_log = logging.getLogger("flume.fleet")
#: Seconds between two looks at the outbox: a spread lane's word reaches the fleet this soon.
HAND_SECONDS = 0.5
#: How long a workflow's next task waits for the worker that ran its last one (Temporal's
#: sticky queue) before any worker of the fleet may run it. The SDK's 10 s would hold a place
#: whose host was lost, when that host's worker also ran its workflow, 10 s past the heartbeat
#: window before it is named host-lost; a task taken elsewhere costs a replay of its history.
STICKY_FOR = timedelta(seconds=1)


async def serve(fleet: Fleet, name: str, clone: Clone, say: Callable[[str], None] = print) -> int:
    """Run the host's worker until told to stop; its exit status."""
    git.run(clone.path, "config", git.FLEET_REMOTE, clone.remote)
    client = await connect(fleet, identity=f"{name}@{os.getpid()}")
    host = FleetHost(name, clone, client, fleet)
    for words in await host.sweep():
        say(f"flume fleet: {words}")
    shared = Worker(
        client,
        task_queue=shared_queue(fleet.queue, clone.url),
        workflows=[FleetPlace],
        # The workflow imports only Temporal's workflow calls and plain records (no clock, no
        # I/O; the replay test holds it to its histories), so it runs without the sandbox,
        # which would import its modules anew for each workflow it starts.
        workflow_runner=UnsandboxedWorkflowRunner(),
        activities=[host.carry],
        max_concurrent_activities=fleet.slots,
        sticky_queue_schedule_to_start_timeout=STICKY_FOR,
        graceful_shutdown_timeout=timedelta(seconds=5),
        identity=f"{name}@{os.getpid()}",
    )
    own = Worker(
        client,
        task_queue=host_queue(fleet.queue, name),
        activities=[host.command, host.run_word, host.lane_word],
        max_concurrent_activities=8,
        graceful_shutdown_timeout=timedelta(seconds=5),
        identity=f"{name}@{os.getpid()}",
    )
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for each in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(each, stopping.set)
    say(
        f"flume fleet: host {name} serves {clone.url} from {clone.path} with {fleet.slots} "
        f"slot{'s' if fleet.slots != 1 else ''}, on {fleet.address} ({fleet.namespace})"
    )

    async def sweeping() -> None:
        while not stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=fleet.heartbeat)
            if not stopping.is_set():
                for words in await host.sweep():
                    say(f"flume fleet: {words}")

    async def launched(asked: Any, relaunch: bool | None) -> dict[str, Any]:  # noqa: ANN401
        made = await fleet_client.launch(
            asked, fleet, host=name, relaunch=relaunch, connected=client
        )
        return made.as_dict()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            writer.write(await handover.serve_one(line, launched))
            await writer.drain()
        finally:
            writer.close()

    listening = handover.socket_path()
    listening.parent.mkdir(parents=True, exist_ok=True)
    listening.unlink(missing_ok=True)
    launches = await asyncio.start_unix_server(answer, path=str(listening))
    async with shared, own, launches:
        sweeper = asyncio.create_task(sweeping())
        hander = asyncio.create_task(_handing(host, stopping))
        await stopping.wait()
        await sweeper
        await hander
    listening.unlink(missing_ok=True)
    say(f"flume fleet: host {name} stopped")
    return 0


async def _handing(host: FleetHost, stopping: asyncio.Event) -> None:
    """Hand the outbox's words to the fleet, about twice a second, until the worker stops."""
    while not stopping.is_set():
        try:
            await host.hand_over()
        except Exception:  # noqa: BLE001 (Temporal away, or a word it refused: next round)
            _log.warning("handing the outbox to the fleet failed; again soon", exc_info=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), timeout=HAND_SECONDS)


def run(fleet: Fleet, name: str, clone: Clone) -> int:
    """:func:`serve` in an event loop of its own; flushed lines for a log or a terminal."""

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    return asyncio.run(serve(fleet, name, clone, say))
