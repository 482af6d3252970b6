"""P3: the supervisor's cost with 1, 100 and more places in one repository, side by side.

Targets (DESIGN.md §9, issue 29): subprocesses per tick the same for 1 place as for 100 or 1,000
(per repository, not per place); idle CPU under 2% of a core with 100 idle places and under 5%
with 1,000; resident memory under 100 MB with 1,000.

One host is built for each count asked (real launches: worktrees made by the supervisor), each
followed by its own real supervisor process. Every place's code stage runs flume's test agent
in a pane of the host's tmux server; once each agent took its prompt and waits (an idle place
with a live agent: its pane is listed every tick, its registry entry, transcript and hook file
looked at on their events and at the safety net), all run together for the measuring window:
CPU time from /proc/<pid>/stat over wall time, resident memory from /proc/<pid>/status, and the
most git and tmux processes a tick ran among those read every 2 s (``daemon status``'s last
tick).

Run: ``python bench/supervisor.py [--places N [N ...]] [--seconds S]`` (1 is always measured
too). 1,000 places run 1,000 idle test agents, about 12 MB each: mind the machine's memory.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from common import private_host, small_repository

from flume.core.launch import AgentName, AgentSettings
from flume.core.observations import Activity
from flume.core.place import Working
from flume.core.settings import Settings
from flume.shell.panes.tmux import Tmux
from flume.shell.perform import launcher
from flume.shell.store import places
from flume.shell.supervisor import client

#: Idle CPU, % of a core, allowed up to (and including) so many places.
CPU_TARGETS = ((100, 2.0), (1000, 5.0))
MEMORY_TARGET_MB = 100.0


#: How long a batch of places may take to be made and idle (a loaded machine is slow).
SETTLE_SECONDS = 900.0
#: Places launched at once: a thousand asked together would queue their prompts behind one
#: another's worktrees for minutes (8 workers), past every confirmation window.
BATCH = 100


def host_with(count: int, made: list[dict[str, str]]) -> tuple[dict[str, str], Path]:
    """A host with ``count`` places launched in one repository, and its supervisor started.

    Launched :data:`BATCH` at a time, each batch idle before the next is launched.
    """
    home = private_host()
    made.append(dict(os.environ))  # stopped at the end, whatever happens
    repo = small_repository(home / "repo")
    for number in range(count):
        request = launcher.Request(
            repository=repo,
            kind="fix",
            name=f"p{number}",
            brief="Idle.",
            agent=AgentSettings(agent=AgentName.TEST),
        )
        launcher.launch(request, Settings(), time.time)
        if (number + 1) % BATCH == 0 and number + 1 < count:
            client.ensure(wait=30)
            wait_settled(repo, number + 1)
    client.ensure(wait=30)
    return dict(os.environ), repo


def wait_settled(repo: Path, count: int) -> float:
    """Wait until the repository's ``count`` places are idle; how long it took."""
    started = time.monotonic()
    while not settled(repo, count):
        if time.monotonic() - started > SETTLE_SECONDS:
            message = f"{count} places did not settle in {SETTLE_SECONDS:.0f}s"
            raise TimeoutError(message)
        time.sleep(0.5)
    return time.monotonic() - started


def settled(repo: Path, count: int) -> bool:
    """Every place made, its agent's prompt delivered and the agent waiting: idle."""
    done = 0
    for found in places.places_of(repo, Settings()):
        place = found.place
        if (
            place is not None
            and isinstance(place.stage.phase, Working)
            and place.agent is not None
            and place.agent.activity is Activity.WAITING
        ):
            done += 1
    return done == count


def at_rest(reads: int = 5, seconds: float = 180.0) -> float:
    """Wait until this host's supervisor is at rest: how long it took.

    At rest: ``reads`` answers of ``daemon status`` in a row, a second apart, with no action
    under way and its last tick having looked at no agent whole and checked no place's deadline
    (a host just made still has windows open: each place's delivery confirmed, its pane's
    output gone quiet, the first safety-net looks). Idle is measured from there.
    """
    started = time.monotonic()
    calm = 0
    while calm < reads:
        if time.monotonic() - started > seconds:
            message = f"the supervisor was not at rest after {seconds:.0f}s"
            raise TimeoutError(message)
        time.sleep(1.0)
        reply = client.status()
        assert reply is not None
        quiet = (
            reply.busy == 0
            and reply.last_tick_agents_looked == 0
            and reply.last_tick_deadlines_checked == 0
        )
        calm = calm + 1 if quiet else 0
    return time.monotonic() - started


def cpu_seconds(pid: int) -> float:
    """User and system CPU time the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    """Resident memory, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def with_environment(environment: dict[str, str]) -> None:
    """Make this process talk to that host's supervisor."""
    os.environ.clear()
    os.environ.update(environment)


def main() -> None:
    """Measure both hosts' supervisors side by side and print the figures against the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--places", type=int, nargs="+", default=[100])
    parser.add_argument("--seconds", type=float, default=20.0)
    arguments = parser.parse_args()
    counts = sorted({1, *arguments.places})
    made: list[dict[str, str]] = []
    try:
        _measure(counts, arguments.seconds, made)
    finally:
        # Every host made, measured or not (a batch that never settled included): stopped.
        for environment in made:
            with_environment(environment)
            client.stop()
            Tmux().kill_server()


def _measure(counts: list[int], seconds: float, made: list[dict[str, str]]) -> None:
    """Make a host for each count, wait until all rest, and print their figures side by side."""
    hosts = {}
    for count in counts:
        started = time.monotonic()
        environment, repo = host_with(count, made)
        wait_settled(repo, count)
        reply = client.status()
        assert reply is not None
        hosts[count] = (environment, reply.pid)
        print(f"{count} place(s): made and idle after {time.monotonic() - started:.1f}s")
    for count, (environment, _pid) in hosts.items():
        with_environment(environment)
        print(f"{count} place(s): supervisor at rest after {at_rest():.1f}s more")
    before = {count: cpu_seconds(pid) for count, (_env, pid) in hosts.items()}
    wall = time.monotonic()
    # The measuring window: every supervisor runs on its own. The observing processes of a tick
    # are read from each now and then (at most 2 a repository: one git listing, only once a ref
    # moved or at the safety net, and one tmux listing); asking costs each one request.
    most = dict.fromkeys(hosts, 0)
    while time.monotonic() - wall < seconds:
        time.sleep(min(2.0, max(0.0, seconds - (time.monotonic() - wall))))
        for count, (environment, _pid) in hosts.items():
            with_environment(environment)
            reply = client.status()
            assert reply is not None
            most[count] = max(most[count], reply.last_tick_subprocesses)
    elapsed = time.monotonic() - wall
    print(f"load average {os.getloadavg()[0]:.2f} over the window's last minute")
    subprocesses = {}
    for count, (environment, pid) in hosts.items():
        with_environment(environment)
        reply = client.status()
        assert reply is not None
        share = (cpu_seconds(pid) - before[count]) / elapsed * 100
        memory = rss_mb(pid)
        subprocesses[count] = most[count]
        target = next((cpu for most, cpu in CPU_TARGETS if count <= most), None)
        verdict = "" if target is None else f" (target < {target}%: {_met(share < target)})"
        print(
            f"{count:>5} place(s): {most[count]} git+tmux process(es) a tick at most, "
            f"{reply.ticks} ticks so far; idle CPU {share:.2f}% of a core{verdict}; "
            f"resident memory {memory:.1f} MB (target < {MEMORY_TARGET_MB:.0f} MB: "
            f"{_met(memory < MEMORY_TARGET_MB)})"
        )
    print(
        "P3 most subprocesses a tick, by places: "
        + ", ".join(f"{count}: {subprocesses[count]}" for count in counts)
        + f": {'equal' if len(set(subprocesses.values())) == 1 else 'NOT equal'}"
    )


def _met(held: bool) -> str:
    """A verdict's word."""
    return "met" if held else "NOT met"


if __name__ == "__main__":
    main()
