"""``flume demo`` as a new user runs it: where Python writes bytecode, cut short, or signalled.

Each test gives the demo a temporary folder of its own (``TMPDIR``, where the demo makes its
folder), so what it leaves behind, folders or processes, is found there and nowhere else.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from flume.cli import board
from flume.core.settings import Settings
from flume.shell.store.events import EventStream
from tests import processes
from tests.integration.agents_kit import wait_for
from tests.integration.places_kit import launch_place, repository

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

#: The places the demo launches, and what each one's story must tell.
PLACES = ("fix--typo", "change--farewell")
TOLD = (
    "prompt-delivered: the transcript holds the prompt (send 1 of 2)",
    "submitted:",
    "landed:",
    "tidied:",
)


@pytest.fixture
def world() -> Iterator[Path]:
    """A short temporary folder for the demo to make its own in (a tmux socket's path is short).

    Nothing the demo started may outlive the test: any such process fails it (and is killed).
    """
    folder = Path(tempfile.mkdtemp(prefix="fld-", dir="/tmp"))
    try:
        yield folder
        left = processes.survivors(str(folder), grace=10)
        processes.end(left)
        assert not left, f"the demo left processes running: {', '.join(map(str, left))}"
    finally:
        processes.end(processes.carrying(str(folder)))
        shutil.rmtree(folder, ignore_errors=True)


def user_environment(world: Path) -> dict[str, str]:
    """A user's environment: Python writes bytecode (no PYTHONDONTWRITEBYTECODE); TMPDIR private."""
    environment = {**os.environ, "TMPDIR": str(world)}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    return environment


def demo(world: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``flume demo`` piped, as its own process, the way a user would."""
    return subprocess.run(  # noqa: S603 (our own interpreter and module)
        [sys.executable, "-m", "flume", "demo", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=user_environment(world),
        stdin=subprocess.DEVNULL,
    )


def left_in(world: Path) -> list[str]:
    """The demo folders left in ``world``."""
    return sorted(path.name for path in world.glob("flume-demo-*"))


def test_the_demo_lands_both_and_tidies_them_where_python_writes_bytecode(world: Path) -> None:
    """The README's first command on a user's machine: both land, both are tidied, exit 0.

    Piped, it tells the story one event a line, as ``flume events`` prints them.
    """
    ran = demo(world, "--seconds", "240", timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "places left: none (tidied)" in ran.stdout
    for subject in ("Say hello, not hullo", "Archive the farewell change"):
        assert subject in ran.stdout
    for place in PLACES:
        events = [line for line in ran.stdout.splitlines() if f" {place} " in line]
        for told in TOLD:
            assert any(told in line for line in events), f"{place}: no {told!r} in {events}"
    # The story, not a state dump per change.
    assert "deliverable no" not in ran.stdout
    assert left_in(world) == []


def test_a_demo_that_does_not_finish_exits_non_zero(world: Path) -> None:
    """Time up before anything landed: it says so, exits 1, and leaves nothing behind."""
    ran = demo(world, "--seconds", "0", timeout=120)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "the demo did not finish: change--farewell, fix--typo" in ran.stdout
    assert left_in(world) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_a_signal_ends_the_demo_and_leaves_nothing(world: Path, signum: signal.Signals) -> None:
    """Ended by SIGTERM (kill, timeout) or SIGHUP (a closed terminal) while its agents work.

    Its supervisor, tmux server and agents are stopped and its folder removed.
    """
    output = world / "output.txt"
    with output.open("w") as sink:
        started = subprocess.Popen(
            [sys.executable, "-m", "flume", "demo"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=user_environment(world),
        )
    try:
        wait_for(
            lambda: "stage-started" in output.read_text(), 60, "the demo's first stage to start"
        )
        started.send_signal(signum)
        status = started.wait(timeout=120)
    finally:
        if started.poll() is None:
            started.kill()
    assert status == 128 + signum, output.read_text()
    assert left_in(world) == []


def test_timeout_ends_the_demo_and_leaves_nothing(world: Path) -> None:
    """``timeout -s TERM 5 flume demo``: no process and no folder is left."""
    timeout = shutil.which("timeout")
    assert timeout is not None
    ran = subprocess.run(  # noqa: S603 (coreutils' timeout, our own interpreter and module)
        [timeout, "-s", "TERM", "5", sys.executable, "-m", "flume", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=user_environment(world),
        stdin=subprocess.DEVNULL,
    )
    assert ran.returncode == 124, ran.stdout + ran.stderr  # timeout's: the time ran out
    assert left_in(world) == []


def test_the_board_ends_once_the_demo_has_settled(host: Path) -> None:
    """The board the demo draws stops after the look that found its ``until`` to hold."""
    repo = repository(host / "repo")
    launch_place(repo, "greet")
    output = io.StringIO()
    looks: list[int] = []

    def until() -> bool:
        looks.append(len(looks))
        return len(looks) == 2

    follower = EventStream(Settings(), repository=repo)
    board.watch(follower, Console(file=output, width=120), interval=0.01, where="r", until=until)
    assert len(looks) == 2
    assert "fix--greet" in output.getvalue()


def test_the_demo_with_its_monitor_starts_once_its_page_is_open_and_shows_the_demo(
    world: Path,
) -> None:
    """``flume demo --monitor`` at a terminal: nothing launched until its URL is opened, then both.

    Opened as the printed URL says (its token, then the cookie): the demo then lands both, its
    page lists them, and it serves on until Enter, leaving nothing behind.
    """
    import http.cookiejar  # noqa: PLC0415 (this test's alone)
    import re  # noqa: PLC0415
    import urllib.request  # noqa: PLC0415

    output = world / "output.txt"
    terminal, its_end = os.openpty()
    with output.open("w") as sink:
        started = subprocess.Popen(
            [sys.executable, "-m", "flume", "demo", "--monitor", "--seconds", "240"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=its_end,
            env=user_environment(world),
        )
    os.close(its_end)
    try:
        printed = re.compile(r"flume monitor: open (\S+)")
        wait_for(lambda: "once that page is open" in output.read_text(), 60, "the demo to wait")
        url = printed.search(output.read_text())
        assert url is not None
        assert "launched" not in output.read_text()
        opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        with opener.open(url.group(1), timeout=10) as answer:
            assert "Places on this host" in answer.read().decode()
        wait_for(lambda: "serves until you press Enter" in output.read_text(), 240, "the end")
        with opener.open(url.group(1).split("?")[0], timeout=10) as answer:
            page = answer.read().decode()
        for place in PLACES:
            assert f">{place}</a>" in page
        os.write(terminal, b"\n")
        status = started.wait(timeout=30)
    finally:
        if started.poll() is None:
            started.kill()
        os.close(terminal)
    assert status == 0, output.read_text()
    text = output.read_text()
    assert text.index("once that page is open") < text.index("launched fix--typo")
    assert "places left: none (tidied)" in text
    assert left_in(world) == []
