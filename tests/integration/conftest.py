"""Integration set-up: a state directory of each test's own.

Any supervisor a test started is stopped when the test ends, and its tmux server too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from flume.shell.supervisor import client
from tests import processes
from tests.integration.places_kit import GIT_IDENTITY, Harness

#: How long no supervisor must be seen before a host is taken to have none.
_SETTLE_SECONDS = 0.5


@pytest.fixture
def woken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The commands' wake-ups of the host's supervisor, recorded instead of done."""
    calls: list[str] = []

    def ensure(wait: float = 0.0) -> None:
        del wait
        calls.append("wake")

    monkeypatch.setattr(client, "ensure", ensure)
    return calls


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A host of the test's own: flume's state, registry and supervisor live under ``tmp_path``."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name, value in GIT_IDENTITY.items():
        monkeypatch.setenv(name, value)
    try:
        yield tmp_path
    finally:
        stop_supervisor()
        # The supervisor's own tmux server, with any agent it started (a stand-in's dead pane).
        Tmux(places.state_dir() / "tmux.sock").kill_server()
        # Anything else still pointing into the test's folder (its state, repositories, HOME)
        # was started by the test and outlived it: ended here, as the run's end would fail it.
        processes.end(processes.carrying(f"{tmp_path}/"))


def stop_supervisor() -> None:
    """Stop every supervisor of this host: asked first, then any left is killed.

    One still starting, not yet listening, is found by its environment. One that was only just
    started can be caught mid-exec, its command line and environment not yet readable in /proc
    (seen under load): so where a supervisor was asked for (its log exists), the look goes on
    until none has been seen for :data:`_SETTLE_SECONDS`.
    """
    if client.stop(timeout=2.0) is not None:
        deadline = time.monotonic() + 30
        while client.ping(timeout=0.5) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
    settle = _SETTLE_SECONDS if client.log_path().exists() else 0.0
    deadline = time.monotonic() + 5
    seen = time.monotonic()
    while time.monotonic() < deadline:
        left = daemons_of(os.environ["XDG_STATE_HOME"])
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if left:
            seen = time.monotonic()
        elif time.monotonic() - seen >= settle:
            return
        time.sleep(0.05)


def daemons_of(state_home: str) -> list[int]:
    """The pids of ``flume daemon run`` processes whose state directory is ``state_home``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            b"daemon" in command
            and b"flume" in command
            and (f"XDG_STATE_HOME={state_home}".encode() in environment)
        ):
            found.append(int(entry.name))
    return found


@pytest.fixture
def harness(host: Path) -> Iterator[Harness]:
    """A supervisor in this process for the test's host, its workers stopped at the end."""
    del host
    made = Harness.make()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def panes(host: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Tmux]:
    """A tmux server of this test's own; it and the supervisor end with the test."""
    del host
    folder = Path(tempfile.mkdtemp(prefix="flt-", dir="/tmp"))
    socket = folder / "tmux.sock"
    monkeypatch.setenv("FLUME_TMUX_SOCKET", str(socket))
    tmux = Tmux(socket)
    try:
        yield tmux
    finally:
        end_host(tmux)
        shutil.rmtree(folder, ignore_errors=True)


def end_host(tmux: Tmux) -> None:
    """Stop the host's supervisors and its tmux server, until neither comes back.

    An agent still running in a pane can wake a supervisor anew (``flume submit``) after the
    first was stopped; once the tmux server is gone, and its agents with it, that one is
    stopped too.
    """
    for _ in range(5):
        stop_supervisor()
        tmux.kill_server()
        if not daemons_of(os.environ["XDG_STATE_HOME"]):
            return


# --- the fleet's (tests/integration/fleet_kit.py) ------------------------------------------


@pytest.fixture(scope="session")
def temporal() -> Iterator[Any]:
    """Temporal's dev server for the session, on free loopback ports; stopped at its end.

    Skipped, saying why, where flume's fleet extra (Temporal's SDK and server) is not installed.
    """
    pytest.importorskip(
        "temporalio", reason="the fleet's tests need flume's fleet extra: pip install '.[fleet]'"
    )
    from flume.fleet import server as dev  # noqa: PLC0415 (only where the extra is)

    folder = Path(tempfile.mkdtemp(prefix="flt-"))
    running = dev.start(folder)
    try:
        yield running
    finally:
        running.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def fleet_of(temporal: Any) -> Iterator[Callable[..., Any]]:
    """Make local fleets on the session's server (or a server of their own); all ended after."""
    from tests.integration import fleet_kit  # noqa: PLC0415 (it loads Temporal's SDK)

    made: list[Any] = []

    def make(**options: Any) -> Any:
        fleet = fleet_kit.made_fleet(temporal, **options)
        made.append(fleet)
        return fleet

    try:
        yield make
    finally:
        for fleet in made:
            fleet_kit.ended(fleet)


# --- the monitor's (tests/integration/browser_kit.py) --------------------------------------


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the session's browser tests; quit at its end.

    Skipped, saying why, where Debian's chromium and chromium-driver are not installed (a
    failure where scripts/test installed them).
    """
    from tests.integration import browser_kit  # noqa: PLC0415 (it loads Selenium)

    with browser_kit.started() as made:
        yield made


@pytest.fixture
def monitored(host: Path) -> Iterator[Any]:
    """The monitor of the test's host, served in this process on a loopback port; stopped after."""
    del host
    pytest.importorskip("jinja2", reason="the monitor's tests need flume's monitor extra")
    from flume.web.serve import Served  # noqa: PLC0415 (the monitor extra's)

    served = Served(interval=0.1)
    served.start()
    try:
        yield served
    finally:
        served.stop()
