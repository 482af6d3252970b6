#!/usr/bin/env python3
"""The monitor's screenshots in docs/, made from real runs: ``scripts/screenshots.py``.

Two runs of the kinds in examples/kinds/, carried by flume's test agent in a host of their own
(as ``flume demo`` is): ``slices--greet`` (examples/kinds/slices.toml), whose two lanes write
the same file, so that merging them pauses the run, ``merge-conflict``; and ``crew--team``
(examples/kinds/crew.toml), whose lead spawns two coders, one of whom asks it a question it has
not answered. The monitor serves the host; Debian's headless Chromium shows each run's page at
1280x800 and at 390x844, and each is written to ``docs/monitor-<run>-<width>.png``. The README
shows ``docs/monitor-slices-1280.png``.

Needs flume's monitor extra, Selenium (the test extra), Debian's chromium and chromium-driver,
git and tmux; run it from the repository's root with the .venv scripts/test makes
(``.venv/bin/python scripts/screenshots.py``). Nothing of the user's is read or written but
docs/.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flume import api
from flume.core.place import Fanned, LaneState, PauseCause, Paused, Place, leading
from flume.core.settings import Settings
from flume.shell.store import places
from flume.shell.tools import git
from flume.testing import scenario
from flume.web.monitor import key_of
from flume.web.serve import Served
from tests.integration.browser_kit import chromium

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
KINDS = ROOT / "examples" / "kinds"
SIZES = ((1280, 800), (390, 844))
SAMPLE = {
    "README.md": "# greet\n\nSays hello.\n",
    "greet.py": 'def greeting() -> str:\n    return "hullo"\n',
}
#: The slices' agents: a plan, then both lanes write GREETING.md, which their merge conflicts on.
SLICES = """
[[turn]]
match = ":plan:1"
steps = [{write = {path = "PLAN.md", text = "a: say hello\\nb: say hi\\n"}}]

[[turn]]
match = ":slice-a:1"
steps = [
    {say = "Slice a: the greeting says hello."},
    {write = {path = "GREETING.md", text = "hello\\n"}},
    {commit = "Greet with hello"},
]

[[turn]]
match = ":slice-b:1"
steps = [
    {say = "Slice b: the greeting says hi."},
    {write = {path = "GREETING.md", text = "hi\\n"}},
    {commit = "Greet with hi"},
]
"""
#: The crew's agents: a plan; the lead spawns two coders; one commits, one asks and waits.
CREW = """
[[turn]]
match = ":plan:1"
steps = [{write = {path = "PLAN.md", text = "a: the greeting\\nb: the farewell\\n"}}]

[[turn]]
match = ":lead:1"
steps = [
    {run = ["flume", "spawn", "--goal", "slice a: the greeting in greet.py"]},
    {run = ["flume", "spawn", "--goal", "slice b: a farewell beside it"]},
    {say = "Two coders at work; I answer their questions as they come."},
    {work = 900},
]

[[turn]]
match = "Build: slice a"
steps = [
    {write = {path = "greet.py", text = "def greeting() -> str:\\n    return 'hello'\\n"}},
    {commit = "Say hello"},
]

[[turn]]
match = "Build: slice b"
steps = [
    {run = ["flume", "progress", "read the plan; the farewell's words are unclear"]},
    {run = ["flume", "ask", "Goodbye or farewell?", "--option", "Goodbye", "--option", "Farewell"]},
]
"""


def wait(predicate: Callable[[], Any], what: str, seconds: float = 180) -> None:
    """Wait on ``predicate``, looking every 0.2 s; fail naming ``what``."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            message = f"{what} did not happen within {seconds:.0f}s"
            raise TimeoutError(message)
        time.sleep(0.2)


def place_of(repository: Path, name: str) -> Place | None:
    """The place ``name`` of ``repository`` as its journal reads now."""
    for found in places.places_of(repository, Settings()):
        if found.place is not None and found.place.launch.place == name:
            return found.place
    return None


def launched(repository: Path, kind: str, name: str, script: str, folder: Path) -> None:
    """Launch ``examples/kinds/<kind>.toml`` as ``name``, its agents the test agent's."""
    steps = scenario.write_script(folder, script, name=f"{kind}.toml")
    api.launch(
        repository=repository,
        name=name,
        brief="Greet the reader, then bid them farewell.",
        kind_file=KINDS / f"{kind}.toml",
        agent="test",
        agent_args=scenario.agent_args(steps),
    )


def conflicted(repository: Path) -> bool:
    """The slices run is paused on its lanes' merge."""
    run = place_of(repository, "slices--greet")
    phase = run.stage.phase if run is not None else None
    return isinstance(phase, Paused) and phase.cause is PauseCause.MERGE_CONFLICT


def asking(repository: Path) -> bool:
    """The crew's lead has two children, one done and one asking it."""
    run = place_of(repository, "crew--team")
    if run is None or leading(run) is None or isinstance(run.stage.phase, Fanned):
        return False
    lanes = list(run.lanes.values())
    return (
        len(lanes) == 2
        and any(lane.asking for lane in lanes)
        and any(lane.state is LaneState.FINISHED for lane in lanes)
    )


def shot(served: Served, repository: Path) -> list[Path]:
    """Each run's page at each size, written to docs/; the files written."""
    written = []
    with chromium() as browser:
        browser.get(served.url)
        for name, run in (("slices", "slices--greet"), ("crew", "crew--team")):
            address = key_of(str(repository), run)
            for width, height in SIZES:
                browser.set_window_size(width, height)
                # The window's own size includes its frame: the page's is made what is named.
                inner = browser.execute_script("return [window.innerWidth, window.innerHeight]")
                browser.set_window_size(2 * width - inner[0], 2 * height - inner[1])
                browser.get(f"http://127.0.0.1:{served.port}/p/{address}")
                path = DOCS / f"monitor-{name}-{width}.png"
                browser.save_screenshot(str(path))
                written.append(path)
    return written


def main() -> None:
    """Carry both runs to the moment shown, serve the monitor, take the pictures."""
    with scenario.private_host(Path(tempfile.mkdtemp(prefix="fls-", dir="/tmp"))) as folder:
        repository = scenario.make_repository(folder / "greet", SAMPLE)
        # The crew's finalize pushes to origin: a bare repository beside it.
        git.run(folder, "init", "-q", "--bare", "origin.git")
        git.run(repository, "remote", "add", "origin", str(folder / "origin.git"))
        launched(repository, "slices", "greet", SLICES, folder)
        launched(repository, "crew", "team", CREW, folder)
        wait(lambda: conflicted(repository), "the slices' merge conflict")
        wait(lambda: asking(repository), "the crew's coder asking its lead")
        served = Served(repository=repository, interval=0.1)
        served.start()
        try:
            for path in shot(served, repository):
                sys.stdout.write(f"written: {path.relative_to(ROOT)}\n")
        finally:
            served.stop()
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
