"""The integration fixtures stop what a test started, even what is only just starting."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from flume.shell.supervisor import client
from tests import processes
from tests.integration.conftest import stop_supervisor


def test_a_supervisor_not_yet_recognisable_is_stopped(host: Path) -> None:
    """A supervisor asked for that shows as one only a moment later is stopped all the same.

    A process caught mid-exec shows neither its command line nor its environment in /proc for a
    moment; here a shell that execs the supervisor after 0.2 s stands for that moment.
    """
    del host  # the test's own state folder, where the supervisor is asked for
    client.log_path().parent.mkdir(parents=True, exist_ok=True)
    client.log_path().touch()  # a supervisor was asked for, as client.start() leaves it
    state = os.environ["XDG_STATE_HOME"]
    delayed = f"sleep 0.2; exec {sys.executable} -m flume daemon run"
    subprocess.Popen(["sh", "-c", delayed], start_new_session=True)  # noqa: S603, S607
    stop_supervisor()
    left = processes.survivors(f"XDG_STATE_HOME={state}", grace=0, settle=1.0)
    processes.end(left)
    assert left == [], f"a supervisor outlived stop_supervisor: {left}"
