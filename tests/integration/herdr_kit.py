"""What the herdr tests share: herdr's published schema, and a fake herdr of each test's own.

The schema is read from ``../shared/reference/herdr-api.schema.json`` beside the checkout (or
``$FLUME_HERDR_SCHEMA``), never copied into flume. Without it the tests cannot check what herdr
would accept: they fail under CI, and skip loudly elsewhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from flume.testing.herdr import FakeHerdr, running, schema_path


def herdr_schema() -> Path:
    """The schema herdr publishes; a failure under CI when it is missing, else a loud skip."""
    path = schema_path()
    if path is not None and path.exists():
        return path
    why = "NOT TESTED AGAINST HERDR'S SCHEMA: ../shared/reference/herdr-api.schema.json is missing"
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(name="herdr")
def herdr_fixture(host: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHerdr]:
    """A fake herdr for this test, its socket in ``HERDR_SOCKET_PATH``, stopped when it ends.

    A test using it imports this fixture; it asks the fake itself whether it stayed clean.
    """
    del host
    with running(herdr_schema()) as fake:
        monkeypatch.setenv("HERDR_SOCKET_PATH", str(fake.socket_path))
        yield fake
