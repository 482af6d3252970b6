"""The run's end fails it when a process the tests started is still alive (tests/conftest.py).

Each test runs a small pytest session of its own, in its own process, with flume's conftest: run
in one process, and spread over pytest-xdist's workers as scripts/test runs the suite (the
controller checks once for all its workers, whose processes carry its tag).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from flume.shell import process
from tests.shared import ROOT

CONFTEST = "from tests.conftest import _private_home, pytest_configure, pytest_sessionfinish\n"


#: How the inner session runs: in one process, or over two pytest-xdist workers.
SPREADS = pytest.mark.parametrize("spread", [(), ("-n", "2")], ids=["one process", "workers"])


def session(
    folder: Path, test: str, spread: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Run ``test`` (a test module's text) in a pytest session of its own."""
    (folder / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (folder / "test_inner.py").write_text(test, encoding="utf-8")
    return subprocess.run(  # noqa: S603 (our own interpreter and pytest)
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--rootdir", str(folder), *spread, str(folder / "test_inner.py")],
        capture_output=True, text=True, timeout=300, check=False, cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


@SPREADS
def test_a_process_left_running_fails_the_run_and_is_ended(
    tmp_path: Path, spread: tuple[str, ...]
) -> None:
    """A detached process a test started and never stopped: named, killed, the run failed."""
    ran = session(
        tmp_path,
        "import subprocess\n\n\ndef test_leaves_one():\n"
        "    subprocess.Popen(['sleep', '613'], start_new_session=True)\n",
        spread,
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "1 passed" in ran.stdout
    assert "outlived the run" in ran.stdout
    named = re.search(r"pid (\d+): sleep 613", ran.stdout)
    assert named is not None, ran.stdout
    assert not process.alive(int(named.group(1)))


@SPREADS
def test_a_process_stopped_by_its_test_passes(tmp_path: Path, spread: tuple[str, ...]) -> None:
    """The same process, stopped before the test ends: the run passes."""
    ran = session(
        tmp_path,
        "import subprocess\n\n\ndef test_stops_it():\n"
        "    made = subprocess.Popen(['sleep', '613'], start_new_session=True)\n"
        "    made.kill()\n    made.wait()\n",
        spread,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "outlived the run" not in ran.stdout
