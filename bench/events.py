"""The events stream's follow: one new line in one of 200 places' journals against 1 place.

``flume events --follow`` looks every fraction of a second. Each look finds the journals there
are and reads only what was appended to each, so a look should cost what changed plus a stat
per journal, never a re-read of every journal. Here each look follows one observation appended
to one journal (a tick), in a host with 1 place and in a host with 200 (64 observations each,
as in bench/status.py), taking turns; the best of each is compared, and the cost of a first
look (every journal read whole) is shown beside them.

Run: ``python bench/events.py [--rounds N] [--places N]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import best, median
from status import host_with

from flume.core.ids import Instant
from flume.core.observations import Tick
from flume.core.settings import Settings
from flume.shell.store import journal, places
from flume.shell.store.events import EventStream


def one_look(environment: dict[str, str], follower: EventStream, at: float) -> float:
    """Append a tick to the first place's journal and time the follower's look; seconds."""
    os.environ.clear()
    os.environ.update(environment)
    repository = places.remembered()[0]
    path = places.journals_dir(repository) / "fix--p0" / places.JOURNAL
    journal.append(path, Tick(at=Instant(at)))
    started = time.perf_counter()
    follower.poll()
    return time.perf_counter() - started


def first_look(environment: dict[str, str]) -> tuple[float, EventStream]:
    """A new follower's first look, which reads every journal whole; seconds, and the follower."""
    os.environ.clear()
    os.environ.update(environment)
    follower = EventStream(Settings())
    started = time.perf_counter()
    follower.poll()
    return time.perf_counter() - started, follower


def main() -> None:
    """Build both hosts, time the looks in turn, print the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--places", type=int, default=200)
    arguments = parser.parse_args()
    one, many = host_with(1), host_with(arguments.places)
    first_one, follow_one = first_look(one)
    first_many, follow_many = first_look(many)
    ones: list[float] = []
    manys: list[float] = []
    for number in range(arguments.rounds):
        at = 1000.0 + number
        if number % 2:
            ones.append(one_look(one, follow_one, at))
            manys.append(one_look(many, follow_many, at))
        else:
            manys.append(one_look(many, follow_many, at))
            ones.append(one_look(one, follow_one, at))
    print(f"first look, 1 place: {first_one * 1000:.1f} ms; {arguments.places} places: "
          f"{first_many * 1000:.1f} ms (every journal read whole, once)")  # fmt: skip
    print(f"a look after one appended line, 1 place: best {best(ones) * 1000:.2f} ms, "
          f"median {median(ones) * 1000:.2f} ms")  # fmt: skip
    print(f"a look after one appended line, {arguments.places} places: best "
          f"{best(manys) * 1000:.2f} ms, median {median(manys) * 1000:.2f} ms")  # fmt: skip
    print(f"ratio (best/best): {best(manys) / best(ones):.1f}x for {arguments.places}x the "
          f"places; a look after a change against a first look: "
          f"{best(manys) / first_many:.3f}x")  # fmt: skip


if __name__ == "__main__":
    main()
