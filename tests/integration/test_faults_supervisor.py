"""Faults of the supervisor itself, injected against the real ``flume daemon`` (issue 15).

A supervisor paused (SIGSTOP: a laptop lid, a debugger) between reading a launch and making its
worktree; a paused supervisor told apart from a dead one; a wall clock stepped back after a
``daemon stop``. Each test ends with the place tidied or the fault named with its way out.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

from flume.core.place import Life
from flume.core.settings import Settings
from flume.core.step import replay
from flume.shell import client, journal
from tests.integration.conftest import daemons_of
from tests.integration.places_kit import flume, launch_place, repository
from tests.integration.test_supervisor import drop, kinds_in, wait_until


def _daemon() -> int:
    """Start the host's supervisor and wait until it answers; its pid."""
    reply = client.ensure(wait=30.0)
    assert reply is not None
    return int(reply["pid"])


@contextlib.contextmanager
def _paused(pid: int) -> Iterator[None]:
    """The supervisor stopped by SIGSTOP for the block; continued whatever happens."""
    os.kill(pid, signal.SIGSTOP)
    wait_until(lambda: Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "T")
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


# --- a launch dropped while the supervisor was paused -----------------------------------------


def test_a_launch_dropped_while_the_supervisor_was_paused_is_tidied(host: Path) -> None:
    """Launch and drop reach the journal while the supervisor is stopped: tidied, name free.

    Resumed, the supervisor reads the launch and its drop at once: it looks for a worktree
    (one made before a crash?), finds none, and gathers tidy's facts. Before the fix, the look
    was journaled as a failed ``MakeWorktree`` that ended the batch before tidy's look: every
    ``flume tidy`` then said "waiting", even after a restart, and the name was never free again.
    """
    repo = repository(host / "repo")
    pid = _daemon()
    with _paused(pid):
        path = launch_place(repo, "paused")
        drop(path)
    wait_until(lambda: replay(Settings(), journal.read(path).observations).life is Life.TIDIED)
    assert "ActionFailed" not in kinds_in(path)
    assert not (repo / "places" / "fix--paused").exists()

    ran = flume("tidy", "--json")
    assert ran.returncode == 0, ran.stderr
    (shown,) = json.loads(ran.stdout)["places"]
    assert shown["place"] == "fix--paused"
    assert shown["state"] == "tidied"
    assert shown.get("removed", []) == []
    # Tidied and moved aside: status shows it no more, and the name launches again.
    assert json.loads(flume("status", "--json").stdout)["places"] == []
    again = launch_place(repo, "paused")
    assert again == path
    wait_until(lambda: "WorktreeMade" in kinds_in(again))
    assert (repo / "places" / "fix--paused").is_dir()
    assert daemons_of(os.environ["XDG_STATE_HOME"]) == [pid]
