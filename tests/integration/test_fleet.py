"""The fleet on a real Temporal, real bare remotes and hosts as processes (docs/fleet.md).

Small versions of the fleet's promises, each a few fixes of flume's test agent: a place carried
by the host that took it and landed on the remote's base; slots never exceeded and one launch a
name; a person's commands from any host; a host SIGKILLed mid-stage named ``host-lost`` and its
place carried again from its pushed head, its unpushed commit kept and named when it comes back;
Temporal itself SIGKILLed and started again on its database. The full trials (30 fixes, kills)
are bench/fleet.py's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes
pytest.importorskip(
    "temporalio", reason="the fleet's tests need flume's fleet extra: pip install '.[fleet]'"
)

from flume.fleet import server as dev  # noqa: E402
from tests.integration.fleet_kit import Make, launch, name, record, wait_for  # noqa: E402


def _git(cwd: Path, *args: str) -> str:
    argv = ["git", *args]
    ran = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=True)  # noqa: S603
    return ran.stdout


def test_fixes_land_on_the_remote_within_slots_and_a_name_is_launched_once(
    fleet_of: Make,
) -> None:
    """Four fixes on two hosts of one slot: each landed once, never two live on one host.

    Each is carried by one host, which journaled it (no other did); the remote's main holds
    every one's commit; a second launch of a name in flight, from a third host, is refused with
    exit status 2 and makes nothing.
    """
    fleet = fleet_of(hosts=3, slots=1)
    h1, h2, h3 = fleet.hosts
    fleet.start([h1, h2])
    works = [name(f"w{number}") for number in range(4)]
    places = [launch(h1, fleet, work) for work in works]
    # From a host that carries none of them (its own clone knows no such place). The last is
    # surely in flight: it waits behind others for a slot (the first may have landed already
    # on a loaded machine, its name free again).
    again = h3.flume(
        "launch", "--fleet", "--kind", "fix", "--name", works[-1], "--brief", "Again.",
        "--agent", "test",
    )  # fmt: skip
    assert again.returncode == 2, again.stderr
    assert f"{places[-1]} is already launched in the fleet" in again.stderr
    most: dict[str, int] = {}

    def sampled(rows: dict[str, dict[str, object]]) -> bool:
        live: dict[str, int] = {}
        for row in rows.values():
            if row.get("state") == "carried":
                live[str(row["host"])] = live.get(str(row["host"]), 0) + 1
        for host, count in live.items():
            most[host] = max(most.get(host, 0), count)
        return all(rows.get(place, {}).get("state") == "landed" for place in places)

    rows = wait_for(fleet, sampled, seconds=240)
    assert max(most.values()) <= 1, most
    log = "\n".join(fleet.base_log())
    for place in places:
        assert len(fleet.journaled_on(place)) == 1, (place, fleet.journaled_on(place))
        assert rows[place]["host"] in fleet.journaled_on(place)
        assert _git(fleet.remote, "show", f"main:{place}.txt").strip()
    assert log.count("Mend it") == 4
    # Landed, each branch left the remote as tidy removed it on its host (R10): names free.
    assert _git(fleet.remote, "for-each-ref", "refs/heads/fix/") == ""
    record(fleet, places[0], "landing")


def test_a_person_s_commands_reach_the_place_s_host_from_another(fleet_of: Make) -> None:
    """status, tell and proceed from the other host run on the carrying one; bad words are 2."""
    fleet = fleet_of(hosts=2, slots=1)
    h1, h2 = fleet.hosts
    fleet.start([h1])
    place = launch(h2, fleet, name("asked"), "--wait", "submit")
    wait_for(fleet, lambda rows: (rows[place].get("beat") or {}).get("phase") == "waits-word")
    shown = h2.flume("fleet", "status", place)
    assert shown.returncode == 0, shown.stderr
    assert place in shown.stdout
    assert "waits-word" in shown.stdout or "submit" in shown.stdout
    told = h2.flume("fleet", "tell", place, "Hello from h2.")
    assert told.returncode == 1, told.stdout + told.stderr  # no live agent: refused there (R6)
    assert f"no agent is live in {place}, so nothing was typed" in told.stderr
    sneaky = h2.flume("fleet", "drop", place, "--repository", "/")
    assert sneaky.returncode == 2
    assert "--repository is the host's own" in sneaky.stderr
    unknown = h2.flume("fleet", "stop", "fix--nowhere-000")
    assert unknown.returncode == 2
    assert "no fleet place fix--nowhere-000" in unknown.stderr
    went = h2.flume("fleet", "proceed", place)
    assert went.returncode == 0, went.stderr
    rows = wait_for(fleet, lambda rows: rows[place]["state"] == "landed")
    assert rows[place]["host"] == "h1"
    assert fleet.journaled_on(place) == ["h1"]


def test_a_killed_host_is_named_lost_and_its_place_carried_on_from_its_pushed_head(
    fleet_of: Make,
) -> None:
    """A host SIGKILLed mid-stage: host-lost; another carries it on; its unpushed commit kept.

    The place relaunches: the second host cuts it at the head the first pushed, so the remote's
    main holds the first host's pushed commit and the second's; the commit the first host made
    after its last push never reaches the remote, and when that host comes back its worker
    drops the place there, keeps its branch and names the commit.
    """
    fleet = fleet_of(hosts=2, slots=1, heartbeat=4.0)
    h1, h2 = fleet.hosts
    (h1.folder / "home" / "slow").touch()
    fleet.start([h1])
    place = launch(h1, fleet, name("lost"), "--relaunch", script="slow.toml")
    rows = wait_for(fleet, lambda rows: bool((rows[place].get("beat") or {}).get("pushed")))
    # The other host serves the fleet too (a workflow moves on only where a worker runs it).
    fleet.start([h2])
    pushed = rows[place]["beat"]["pushed"]
    worktree = h1.clone / "places" / place
    assert h1.worker is not None
    h1.worker.kill()
    h1.worker.wait(timeout=30)
    (worktree / "unpushed.txt").write_text("never pushed\n", encoding="utf-8")
    _git(worktree, "add", "unpushed.txt")
    _git(worktree, "commit", "-q", "-m", "Unpushed work")
    unpushed = _git(worktree, "rev-parse", "--short", "HEAD").strip()
    h1.kill()
    # Named lost once its heartbeat window passed (bench/fleet.py measures how soon).
    rows = wait_for(fleet, lambda rows: rows[place]["lost"] == ["h1"], seconds=60)
    assert rows[place]["pushed"] == pushed
    rows = wait_for(fleet, lambda rows: rows[place]["state"] == "landed", seconds=180)
    assert rows[place]["host"] == "h2"
    assert rows[place]["attempt"] == 2
    remote = fleet.remote
    assert _git(remote, "merge-base", "--is-ancestor", pushed, "main") == ""
    assert "Unpushed work" not in "\n".join(fleet.base_log())
    assert fleet.journaled_on(place) == ["h1", "h2"]
    record(fleet, place, "host-loss")
    (h1.folder / "home" / "slow").unlink()
    fleet.start([h1])
    deadline = time.monotonic() + 60
    log = h1.folder / "worker.log"
    while "never pushed" not in log.read_text(errors="replace"):
        assert time.monotonic() < deadline, log.read_text(errors="replace")
        time.sleep(0.2)
    said = log.read_text(errors="replace")
    assert f"{unpushed} Unpushed work" in said
    branch = "fix/" + place.removeprefix("fix--")
    assert _git(h1.clone, "log", "--format=%s", "-1", branch).strip() == "Unpushed work"


def test_without_relaunch_a_lost_place_waits_named_until_a_person_drops_it(
    fleet_of: Make,
) -> None:
    """host-lost with its host and last push; a command is refused naming the way out; drop.

    Named lost even while no host's worker runs (status reads the carry's silence), then by the
    workflow once another host's worker runs it.
    """
    fleet = fleet_of(hosts=2, slots=1, heartbeat=4.0)
    h1, h2 = fleet.hosts
    (h1.folder / "home" / "slow").touch()
    fleet.start([h1])
    place = launch(h1, fleet, name("stranded"), script="slow.toml")
    wait_for(fleet, lambda rows: bool((rows[place].get("beat") or {}).get("pushed")))
    h1.kill()
    # With no host's worker left to run its workflow, status still says the host is lost.
    rows = wait_for(fleet, lambda rows: rows[place]["state"] == "host-lost", seconds=60)
    assert "no host's worker has run the place" in rows[place]["words"]
    fleet.start([h2])
    rows = wait_for(fleet, lambda rows: "flume fleet retry" in rows[place]["words"], seconds=60)
    assert rows[place]["state"] == "host-lost"
    assert rows[place]["host"] == "h1"
    assert rows[place]["lost"] == ["h1"]
    told = h2.flume("fleet", "tell", place, "Still there?")
    assert told.returncode == 1
    assert "host-lost" in told.stderr
    dropped = h2.flume("fleet", "drop", place)
    assert dropped.returncode == 0, dropped.stderr
    rows = wait_for(fleet, lambda rows: rows[place]["state"] == "dropped")
    assert not rows[place]["running"]
    record(fleet, place, "drop")


#: A workflow whose turns budget its first step spends: the run pauses before its second.
PLANNED = """\
[kind]
name = "planned"
body = ["plan", "write"]
budgets = { turns = 1 }

[step.plan]
prompt = "Plan $brief: write PLAN.md."
gate = "artifact:PLAN.md"

[step.write]
prompt = "Write what PLAN.md says; commit."
gate = "commit"
"""
PLANNED_SCRIPT = """\
[[turn]]
match = ":plan:1]"
steps = [{write = {path = "PLAN.md", text = "Say hello.\\n"}}]

[[turn]]
match = ":write:1]"
steps = [
  {run = ["sh", "-c", "echo \\"$(date +%s%N)\\" >> written.txt"]},
  {commit = "Write it"},
]
"""


def test_a_paused_fleet_run_is_raised_from_another_host_and_finishes(fleet_of: Make) -> None:
    """A run paused on its turns budget says so in status --fleet; raised from h2, it ends."""
    fleet = fleet_of(hosts=2, slots=1)
    h1, h2 = fleet.hosts
    fleet.start([h1])
    kind = fleet.folder / "planned.toml"
    kind.write_text(PLANNED, encoding="utf-8")
    script = fleet.folder / "planned-script.toml"
    script.write_text(PLANNED_SCRIPT, encoding="utf-8")
    work = name("planned")
    ran = h2.flume(
        "launch", "--fleet", "--kind-file", str(kind), "--name", work, "--brief", "Greet.",
        "--agent", "test", "--agent-arg=--script", f"--agent-arg={script}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    place = f"planned--{work}"
    rows = wait_for(fleet, lambda rows: (rows[place].get("beat") or {}).get("phase") == "paused")
    assert "flume raise" in rows[place]["beat"]["paused"]
    raised = h2.flume("fleet", "raise", place, "--turns", "+2")
    assert raised.returncode == 0, raised.stderr
    assert "budgets raised" in raised.stdout
    rows = wait_for(fleet, lambda rows: rows[place]["state"] == "finished")
    assert rows[place]["host"] == "h1"
    assert fleet.journaled_on(place) == ["h1"]
    record(fleet, place, "pause-raise")


def test_temporal_killed_and_started_again_on_its_database_loses_and_repeats_nothing(
    fleet_of: Make,
) -> None:
    """Temporal SIGKILLed mid-stage and started again: each place carried on, launched once."""
    fleet = fleet_of(hosts=2, slots=1, server=None)
    for host in fleet.hosts:
        (host.folder / "home" / "slow").touch()
    fleet.start()
    h1, _ = fleet.hosts
    places = [launch(h1, fleet, name(f"s{number}"), script="slow.toml") for number in range(2)]
    wait_for(
        fleet,
        lambda rows: all((rows[place].get("beat") or {}).get("pushed") for place in places),
    )
    old = fleet.server
    os.kill(old.pid, signal.SIGKILL)
    old.stop()
    port = int(old.address.rpartition(":")[2])
    fleet.server = dev.start(old.database.parent, port=port)
    for host in fleet.hosts:
        (host.folder / "home" / "slow").unlink()
    rows = wait_for(fleet, lambda rows: all(rows[p]["state"] == "landed" for p in places), 240)
    for place in places:
        assert rows[place]["attempt"] == 1
        assert len(fleet.journaled_on(place)) == 1
    assert sorted(fleet.runs()) == sorted(places)
    assert "\n".join(fleet.base_log()).count("Part one") == 2
