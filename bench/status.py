"""P2: ``flume status --json`` with 200 places against 1 place, side by side.

Target (DESIGN.md §9): at most 3x. Each place's journal holds a fix's launch, its worktree
made, its setup, an agent started and ready, and transcript lines and ticks of its work (64
observations), as a running place's journal does. Both commands run as a user runs them, in
their own processes, taking turns; the best of each is compared.

Run: ``python bench/status.py [--rounds N] [--places N]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from common import best, median, private_host, small_repository

from flume.core.ids import BranchName, Instant, KindName, SessionId, Sha, StageName, WorkName
from flume.core.kinds import BUILTIN_KINDS
from flume.core.launch import Launch
from flume.core.observations import (
    Activity,
    AgentReady,
    AgentStarted,
    AgentStateSeen,
    Author,
    Launched,
    Observation,
    Tick,
    TranscriptEntry,
    WorktreeMade,
)
from flume.core.settings import Settings
from flume.shell.store import journal, places

TARGET = 3.0


def journal_of(repo: Path, name: str) -> list[Observation]:
    """A running fix's journal: 64 observations."""
    kind = BUILTIN_KINDS[KindName("fix")]
    launch = Launch(
        repository=str(repo),
        kind=kind.name,
        name=WorkName(name),
        brief="Mend the greeting.",
        base=BranchName("main"),
    )
    session = SessionId(f"{name}-session")
    seen: list[Observation] = [
        Launched(at=Instant(0), launch=launch, kind=kind, settings=Settings()),
        WorktreeMade(
            at=Instant(1),
            path=f"{repo}/places/fix--{name}",
            branch=BranchName(f"fix/{name}"),
            head=Sha("a" * 40),
        ),
        AgentStarted(at=Instant(2), stage=StageName("code"), attempt=1, session=session, pane="%1"),
        AgentReady(at=Instant(3), session=session),
    ]
    for number in range(30):
        at = Instant(4 + number)
        seen.append(
            TranscriptEntry(
                at=at,
                session=session,
                author=Author.AGENT,
                text=f"working on it {number}",
            )
        )
        seen.append(
            Tick(at=at)
            if number % 2
            else AgentStateSeen(at=at, session=session, activity=Activity.WORKING)
        )
    return seen


def journaled(repo: Path, count: int) -> list[Path]:
    """``count`` running places' journals in ``repo`` (:func:`journal_of` each), remembered."""
    folder = places.journals_dir(repo)
    made = []
    for number in range(count):
        path = folder / f"fix--p{number}" / places.JOURNAL
        first, *rest = journal_of(repo, f"p{number}")
        journal.create(path, first)
        for seen in rest:
            journal.append(path, seen)
        made.append(path)
    places.remember(repo)
    return made


def host_with(count: int) -> dict[str, str]:
    """A host whose one repository has ``count`` places; its environment."""
    home = private_host()
    journaled(small_repository(home / "repo"), count)
    return dict(os.environ)


def timed(environment: dict[str, str]) -> float:
    """``flume status --json`` in its own process; seconds."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "flume", "status", "--json"],
        env=environment,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def main() -> None:
    """Build both hosts, time status on each in turn, print the ratio against the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--places", type=int, default=200)
    arguments = parser.parse_args()
    one, many = host_with(1), host_with(arguments.places)
    ones: list[float] = []
    manys: list[float] = []
    for number in range(arguments.rounds):
        pair = (one, many) if number % 2 else (many, one)
        for environment in pair:
            (ones if environment is one else manys).append(timed(environment))
    ratio = best(manys) / best(ones)
    one_best, one_median = best(ones) * 1000, median(ones) * 1000
    print(f"status --json, 1 place:   best {one_best:.0f} ms, median {one_median:.0f} ms")
    print(
        f"status --json, {arguments.places} places: best {best(manys) * 1000:.0f} ms, "
        f"median {median(manys) * 1000:.0f} ms"
    )
    print(
        f"P2 ratio (best/best): {ratio:.2f}x; median/median {median(manys) / median(ones):.2f}x; "
        f"target at most {TARGET}x: {'met' if ratio <= TARGET else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
