"""What the herdr tests share: herdr's published schema, and a fake herdr of each test's own.

The schema is read from ``../shared/reference/herdr-api.schema.json`` beside the checkout (or
``$FLUME_HERDR_SCHEMA``), never copied into flume. Without it the tests cannot check what herdr
would accept: they skip loudly, or fail where the run requires ``shared/`` (tests/shared.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flume.testing.herdr import FakeHerdr, running, schema_path
from tests import shared


def herdr_schema() -> Path:
    """The schema herdr publishes; without it a loud skip, or a failure where it is required."""
    path = schema_path()
    if path is None or not path.exists():
        where = path or "shared/reference/herdr-api.schema.json beside the clone"
        shared.lacking(
            f"NOT TESTED AGAINST HERDR'S SCHEMA: no {where} "
            "(lay shared/ beside the clone, or set FLUME_HERDR_SCHEMA)",
            shared.REQUIRE_SHARED,
        )
    return path


@pytest.fixture(name="herdr")
def herdr_fixture(host: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHerdr]:
    """A fake herdr for this test, its socket in ``HERDR_SOCKET_PATH``, stopped when it ends.

    A test using it imports this fixture; it asks the fake itself whether it stayed clean.
    """
    del host
    with running(herdr_schema()) as fake:
        monkeypatch.setenv("HERDR_SOCKET_PATH", str(fake.socket_path))
        yield fake
