"""P9: the monitor: an event on an open page within 1 s, a page in 100 ms, idle under 1% of a core.

Three figures, each measured on a private host, the monitor run as a person runs it (``flume
monitor``, its own process, the port it prints):

1. **event to page**: a place's page open in a real headless Chromium (Debian's, through its
   chromedriver, as the browser tests drive it); a line that makes an event is appended to the
   place's journal, and the page's script is timed to the moment the event's row is in its DOM
   (a MutationObserver's clock, the machine's, as the append's). Median and worst of
   ``--events`` events, against 1 s.
2. **a page drawn**: the page of every place, with ``--places`` running places (as
   bench/status.py journals them) and a run of 8 lanes (launched for real, its lanes' test
   agents in tmux, as bench/lanes_supervisor.py does), and the run's own page: each asked
   ``--pages`` times over loopback once warm; median against 100 ms.
3. **idle**: the monitor of 50 places, one page's live feed open, nothing happening: its CPU
   time over ``--seconds``, as a share of one core, against 1%.

Run: ``python bench/monitor.py [--events N] [--places N] [--pages N] [--seconds S]``.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import median, private_host, small_repository
from lanes import kind_text
from status import journaled

from flume import api
from flume.core.ids import Instant, SessionId
from flume.core.observations import TranscriptUnreadable
from flume.core.place import Fanned
from flume.core.settings import Settings
from flume.shell.store import journal, places
from flume.shell.supervisor import client
from tests.integration.browser_kit import chromium

EVENT_TARGET = 1.0
PAGE_TARGET = 0.100
IDLE_TARGET = 0.01
_PRINTED = re.compile(r"flume monitor: open (http://127\.0\.0\.1:(\d+)/\?token=\S+)")


class Monitor:
    """``flume monitor`` in its own process: its URL, its pid, and a way to read its pages."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "flume", "monitor"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=dict(os.environ),
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = _PRINTED.search(line)
        if found is None:
            message = f"flume monitor printed no URL: {line!r}"
            raise RuntimeError(message)
        self.url, self.port = found.group(1), int(found.group(2))
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        with self.opener.open(self.url, timeout=30) as answer:
            answer.read()

    def get(self, path: str) -> str:
        """The page at ``path``, as text."""
        with self.opener.open(f"http://127.0.0.1:{self.port}{path}", timeout=30) as answer:
            text: str = answer.read().decode()
            return text

    def cpu_seconds(self) -> float:
        """The CPU time the monitor's process has used: user and system."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """Ctrl-C, as a person ends it."""
        self.process.send_signal(2)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def address_of(page: str, place: str) -> str:
    """The address of ``place`` on the page of every place."""
    found = re.search(rf'href="/p/([0-9a-f]+/{re.escape(place)})"', page)
    if found is None:
        message = f"{place} is not on the page"
        raise RuntimeError(message)
    return found.group(1)


#: Each row the page's script adds to its events, with the clock's time it was added.
_OBSERVE = """
window.__added = [];
new MutationObserver((changes) => {
  for (const change of changes) {
    for (const node of change.addedNodes) window.__added.push([Date.now(), node.textContent]);
  }
}).observe(document.getElementById("events"), {childList: true});
"""


def event_to_page(monitor: Monitor, path: Path, events: int) -> list[float]:
    """Seconds from each appended journal line to its event's row in an open page's DOM."""
    with chromium() as driver:
        driver.get(monitor.url)
        page = monitor.get("/")
        driver.get(f"http://127.0.0.1:{monitor.port}/p/{address_of(page, 'fix--p0')}")
        driver.execute_script(_OBSERVE)
        waited_for(
            lambda: driver.execute_script("return window.flumeMonitor && window.flumeMonitor.open"),
            "the page's live feed to open",
        )
        found: list[float] = []
        session = SessionId("p0-session")
        for number in range(events):
            seen = len(driver.execute_script("return window.__added"))
            appended = time.time()
            journal.append(
                path, TranscriptUnreadable(at=Instant(appended), session=session, count=1)
            )

            def shown(at: int = seen) -> list[Any] | None:
                added = driver.execute_script("return window.__added")
                return added[at] if len(added) > at else None

            row = waited_for(shown, f"event {number}'s row")
            found.append(row[0] / 1000 - appended)
            time.sleep(0.3)
        return found


def waited_for(predicate: Callable[[], Any], what: str, seconds: float = 30) -> Any:  # noqa: ANN401
    """``predicate``'s first true value, looked for every 10 ms."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.01)
    message = f"{what}: not within {seconds}s"
    raise TimeoutError(message)


def run_of_lanes(repo: Path, home: Path) -> None:
    """A run of 8 lanes launched for real, its lanes' test agents working in tmux."""
    kind_file = home / "lanes.toml"
    kind_file.write_text(kind_text(8).replace('name = "lanes"', 'name = "wf"'))
    api.launch(
        repository=repo, name="run", brief="Idle.", kind_file=kind_file, agent="test", panes="tmux"
    )
    client.ensure(wait=30)

    def fanned() -> bool:
        found = [each.place for each in places.places_of(repo, Settings())]
        runs = [place for place in found if place is not None and not place.launch.parent]
        lanes = [place for place in found if place is not None and place.launch.parent]
        return any(isinstance(run.stage.phase, Fanned) for run in runs) and len(lanes) == 8

    waited_for(fanned, "the run to fan out into 8 lanes", 300)


def drawn(monitor: Monitor, path: str, count: int) -> tuple[float, list[float]]:
    """Seconds to ask for and read the page at ``path``: first, then ``count`` times once warm.

    The first draw makes each place's view from its journal; the next ones make again only the
    views whose journal grew (flume/web/monitor.py), as a person's next look at the page does.
    """
    started = time.perf_counter()
    monitor.get(path)
    first = time.perf_counter() - started
    found = []
    for _ in range(count):
        started = time.perf_counter()
        monitor.get(path)
        found.append(time.perf_counter() - started)
    return first, found


def idle(monitor: Monitor, seconds: float) -> float:
    """The monitor's CPU over ``seconds`` with one page's feed open: a share of one core."""
    stop = threading.Event()

    def listen() -> None:
        with monitor.opener.open(f"http://127.0.0.1:{monitor.port}/stream", timeout=60) as feed:
            while not stop.is_set():
                feed.readline()

    threading.Thread(target=listen, daemon=True).start()
    time.sleep(2.0)
    before, started = monitor.cpu_seconds(), time.monotonic()
    time.sleep(seconds)
    used, wall = monitor.cpu_seconds() - before, time.monotonic() - started
    stop.set()
    return used / wall


def main() -> None:
    """Each figure, against its target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--places", type=int, default=200)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=30.0)
    arguments = parser.parse_args()

    home = private_host()
    quiet = journaled(small_repository(home / "idle"), 50)
    monitor = Monitor()
    try:
        share = idle(monitor, arguments.seconds)
        latencies = event_to_page(monitor, quiet[0], arguments.events)
    finally:
        monitor.stop()
    met = median(latencies) <= EVENT_TARGET
    print(
        f"event to page: median {median(latencies) * 1000:.0f} ms, worst "
        f"{max(latencies) * 1000:.0f} ms over {len(latencies)} events; target at most "
        f"{EVENT_TARGET * 1000:.0f} ms median: {'met' if met else 'NOT met'}"
    )
    print(
        f"idle with 50 places, one page's feed open: {share * 100:.2f}% of a core over "
        f"{arguments.seconds:.0f}s; target under {IDLE_TARGET * 100:.0f}%: "
        f"{'met' if share < IDLE_TARGET else 'NOT met'}"
    )

    home = private_host()
    repo = small_repository(home / "repo")
    journaled(repo, arguments.places)
    run_of_lanes(repo, home)
    monitor = Monitor()
    try:
        every = drawn(monitor, "/", arguments.pages)
        page = monitor.get("/")
        missing = [n for n in range(arguments.places) if f"fix--p{n}<" not in page]
        if missing:
            message = f"the page of every place lacks {len(missing)} of them, fix--p{missing[0]}"
            raise AssertionError(message)
        run = drawn(monitor, f"/p/{address_of(page, 'wf--run')}", arguments.pages)
    finally:
        monitor.stop()
        client.stop(timeout=10)
    for what, (first, samples) in (
        (f"every place ({arguments.places} places, a run and its 8 lanes)", every),
        ("the run of 8 lanes", run),
    ):
        print(
            f"page of {what}: first {first * 1000:.0f} ms, then median "
            f"{median(samples) * 1000:.0f} ms, best {min(samples) * 1000:.0f} ms over "
            f"{len(samples)}; target at most "
            f"{PAGE_TARGET * 1000:.0f} ms median: "
            f"{'met' if median(samples) <= PAGE_TARGET else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
