"""``flume fleet demo``: the demo's fix and change carried across three hosts by Temporal.

Everything is made in a temporary folder (:mod:`flume.fleet.local`): Temporal's dev server, a
bare remote holding ``flume demo``'s sample repository, and three hosts of one slot each, each
its own state folder, clone, supervisor, tmux server and worker. One host launches both works
into the fleet; Temporal hands each to a host with a free slot; each host carries its work with
flume's test agent (:mod:`flume.testing.demo`'s scripts) and lands it on the remote's main by a
compare-and-swap push. The demo prints which host carried what and what the remote's main holds,
stops every process it started, and exits 0 once both landed.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flume.fleet.local import LocalFleet
from flume.testing import demo as local_demo

#: How long the demo waits for both works to land.
DEADLINE = 300.0
#: The works, as (kind, name, brief, script).
WORKS = (
    ("fix", "typo", local_demo.FIX_BRIEF, local_demo.SCRIPTS / "fix.toml"),
    ("change", "farewell", local_demo.CHANGE_BRIEF, local_demo.SCRIPTS / "change.toml"),
)


def run(*, keep: bool, say: Callable[[str], None]) -> int:
    """Run the demo; its exit status (0: both works landed on the remote's main)."""
    folder = Path(tempfile.mkdtemp(prefix="flume-fleet-"))
    fleet: LocalFleet | None = None
    try:
        fleet = LocalFleet.make(folder, local_demo.SAMPLE, hosts=3, slots=1, ui=keep)
        say(f"Temporal's dev server at {fleet.server.address}; a bare remote at {fleet.remote}")
        fleet.start()
        say(
            "three hosts serve the fleet, one slot each: "
            + ", ".join(f"{host.name} ({host.folder})" for host in fleet.hosts)
        )
        launcher = fleet.hosts[0]
        for kind, name, brief, script in WORKS:
            ran = launcher.flume(
                "launch", "--fleet", "--kind", kind, "--name", name, "--brief", brief,
                "--agent", "test", "--agent-arg=--script", f"--agent-arg={script}",
            )  # fmt: skip
            if ran.returncode != 0:
                say(f"the launch of {kind}--{name} failed: {ran.stderr.strip()}")
                return 1
            say(f"{launcher.name} launched {kind}--{name} into the fleet: {brief}")
        rows = _settled(fleet, say)
        for row in rows:
            say(f"{row['place']}: {row['state']}, carried by {row.get('host') or 'no host'}")
        say("the remote's main now holds:")
        for line in fleet.base_log():
            say(f"  {line}")
        landed = sorted(row["place"] for row in rows if row.get("state") == "landed")
        wanted = sorted(f"{kind}--{name}" for kind, name, *_ in WORKS)
        if landed != wanted:
            say(f"the demo did not finish: landed {landed or 'nothing'} of {wanted}")
            return 1
        return 0
    finally:
        if fleet is not None:
            fleet.stop(keep_server=keep)
        if keep and fleet is not None:
            say(
                f"kept: {folder}; Temporal's Web UI at {fleet.server.ui} (its dev server, pid "
                f"{fleet.server.pid}, runs until you stop it: kill {fleet.server.pid})"
            )
        elif fleet is not None:
            fleet.remove()


def _settled(fleet: LocalFleet, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """The fleet's places once both ended (or the deadline passed), saying each host's take."""
    deadline = time.monotonic() + DEADLINE
    told: set[tuple[str, str]] = set()
    while True:
        rows = fleet.standings()
        for row in rows:
            shown = (str(row["place"]), str(row.get("host") or ""))
            if shown[1] and shown not in told:
                told.add(shown)
                say(f"{shown[1]} took {shown[0]}")
        ended = [row for row in rows if not row.get("running")]
        if len(ended) == len(WORKS) or time.monotonic() > deadline:
            return rows
        time.sleep(0.5)
