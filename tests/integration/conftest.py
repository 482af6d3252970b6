"""Integration set-up: a state directory of each test's own.

Any supervisor a test started is stopped when the test ends.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flume.shell import client, places
from tests.integration.places_kit import GIT_IDENTITY


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


def stop_supervisor() -> None:
    """Stop this host's supervisor, if one runs: asked first, killed if it will not go."""
    if client.request("stop", timeout=2.0) is not None:
        deadline = time.monotonic() + 30
        while client.request("ping", timeout=0.5) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
    lock = places.state_dir() / "supervisor.lock"
    text = lock.read_text().strip() if lock.exists() else ""
    if not text.isdigit():
        return
    try:
        command = Path(f"/proc/{text}/cmdline").read_bytes()
    except OSError:
        return
    if b"flume" in command and b"daemon" in command:
        os.kill(int(text), signal.SIGKILL)
