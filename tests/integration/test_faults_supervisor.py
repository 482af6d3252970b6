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
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flume.core.place import Life
from flume.core.settings import Settings
from flume.core.step import replay
from flume.shell import process
from flume.shell.commands import tidying
from flume.shell.perform import launcher
from flume.shell.store import journal, places
from flume.shell.supervisor import client
from tests.integration.conftest import daemons_of
from tests.integration.places_kit import flume, launch_place, repository
from tests.integration.test_supervisor import drop, kinds_in, wait_until


def _daemon() -> int:
    """Start the host's supervisor and wait until it answers; its pid."""
    reply = client.ensure(wait=30.0)
    assert reply is not None
    return reply.pid


def _locks(pid: int, path: Path) -> bool:
    """``pid`` holds a lock on ``path`` (/proc/locks: a holder's line names its pid and inode)."""
    inode = f":{path.stat().st_ino} "
    return any(
        "->" not in line and line.split()[4] == str(pid) and inode in line
        for line in Path("/proc/locks").read_text().splitlines()
    )


@contextlib.contextmanager
def _paused(pid: int, *unlocked: Path) -> Iterator[None]:
    """The supervisor stopped by SIGSTOP for the block; continued whatever happens.

    Stopped holding no lock on the files ``unlocked`` (journals): one stopped mid-append holds
    its journal's, and the test's own commands, run in the test's process, would wait on it.
    """
    deadline = time.monotonic() + 60
    while True:
        os.kill(pid, signal.SIGSTOP)
        wait_until(
            lambda: Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "T"
        )
        held = [path for path in unlocked if _locks(pid, path)]
        if not held:
            break
        os.kill(pid, signal.SIGCONT)
        assert time.monotonic() < deadline, f"the supervisor kept holding {held}"
        wait_until(lambda: not any(_locks(pid, path) for path in held))  # noqa: B023 (called now)
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
    # One supervisor stays: a command that found it slow to answer (a loaded machine) may start
    # another, which gives way to the lock's holder and leaves; none may stay beside it.
    wait_until(lambda: daemons_of(os.environ["XDG_STATE_HOME"]) == [pid])


# --- a paused supervisor is told from a dead one -----------------------------------------------


def _log_text() -> str:
    path = client.log_path()
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def test_a_paused_supervisor_is_named_not_replaced(host: Path) -> None:
    """SIGSTOP the supervisor: status names it and the way out; no second one is started.

    Before the fix, ``daemon status`` said "not running" and exited 0, and ``flume drop``
    waited 5 s for an answer, then started a second supervisor that left at once, and exited
    0 with nothing said. Now ``daemon status`` says it runs but does not answer, and a command
    that needs it waits a bounded time, says ``kill -CONT <pid>`` and exits 1; once continued,
    the supervisor carries out what was journaled meanwhile.
    """
    repo = repository(host / "repo")
    path = launch_place(repo, "lid")
    pid = _daemon()
    wait_until(lambda: "WorktreeMade" in kinds_in(path))
    with _paused(pid, path):
        shown = flume("daemon", "status")
        assert shown.returncode == 1, shown.stdout
        assert f"supervisor: running (pid {pid}) but not answering" in shown.stdout
        assert f"kill -CONT {pid}" in shown.stdout
        as_json = flume("daemon", "status", "--json")
        assert as_json.returncode == 1
        said = json.loads(as_json.stdout)
        assert (said["running"], said["answering"], said["pid"]) == (True, False, pid)
        assert f"kill -CONT {pid}" in said["mend"]

        dropped = flume("drop", "fix--lid")
        assert dropped.returncode == 1, dropped.stdout
        assert f"the supervisor (pid {pid}) runs but is stopped" in dropped.stderr
        assert f"kill -CONT {pid}" in dropped.stderr
        assert "journaled" in dropped.stderr
        assert "Traceback" not in dropped.stderr
        # No second supervisor was started in its stead: none came and left.
        assert "another supervisor holds the lock" not in _log_text()
        assert daemons_of(os.environ["XDG_STATE_HOME"]) == [pid]
    # Continued, it carries out the drop journaled while it was stopped.
    wait_until(lambda: replay(Settings(), journal.read(path).observations).life is Life.TIDIED)
    assert "supervisor: running, pid" in flume("daemon", "status").stdout
    assert json.loads(flume("status", "--json").stdout)["places"][0]["life"] == "tidied"


# --- the wall clock decides nothing about stops -----------------------------------------------


def test_a_clock_stepped_back_after_a_stop_starts_the_next_supervisor(host: Path) -> None:
    """After ``daemon stop`` the clock is stepped back an hour: a launch still gets a supervisor.

    The machine's clock is left alone: the stop file is given the wall-clock stamp of an hour
    from now, as a stop made before the clock was stepped back leaves it. Before the fix every
    new supervisor compared that stamp with the time it was asked for and left at once,
    saying nothing: the launch exited 0 and its place stayed queued for ever.
    """
    repo = repository(host / "repo")
    first = _daemon()
    assert flume("daemon", "stop").returncode == 0
    assert not process.alive(first)
    client.stopped_path().write_text(f"{time.time() + 3600.0!r}\n", encoding="ascii")

    ran = flume("launch", "--repository", str(repo), "--kind", "fix", "--name", "clock",
                "--brief", "Mend it.", "--json", "--agent", "test", "--panes", "print")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    path = Path(json.loads(ran.stdout)["journal"])
    wait_until(lambda: "WorktreeMade" in kinds_in(path))
    assert "a daemon stop came after" not in _log_text()
    assert json.loads(flume("daemon", "status", "--json").stdout)["running"] is True


def test_a_stop_counted_after_the_ask_is_honoured_and_named(
    host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stops are counted: a supervisor asked for before a stop leaves, and the asker says why.

    The command read the count before ``daemon stop`` counted one more (a stop racing the
    command): the supervisor it starts finds the higher count and leaves, and the command
    names that refusal (exit 1) instead of returning as if one ran. The place stays queued,
    journaled, and ``flume daemon start`` starts the supervisor that makes it.
    """
    repo = repository(host / "repo")
    _daemon()
    assert flume("daemon", "stop").returncode == 0
    assert client.stops() == 1
    with monkeypatch.context() as patched:
        patched.setattr(client, "stops", lambda: 0)  # what the command read, before the stop
        ran = flume("launch", "--repository", str(repo), "--kind", "fix", "--name", "race",
                    "--brief", "Mend it.", "--agent", "test", "--panes", "print")  # fmt: skip
        assert ran.returncode == 1
        assert (
            "no supervisor was started: a `flume daemon stop` came after this command" in ran.stderr
        )
        assert "Traceback" not in ran.stderr
        assert "a daemon stop came after this supervisor was asked for: leaving" in _log_text()
        assert json.loads(flume("daemon", "status", "--json").stdout)["running"] is False
        (shown,) = json.loads(flume("status", "--json").stdout)["places"]
        assert shown["place"] == "fix--race"
        assert "start one with `flume daemon start`" in ran.stderr
    started = flume("daemon", "start")
    assert started.returncode == 0, started.stderr
    assert "supervisor: running, pid" in started.stdout
    path = places.journals_dir(repo) / "fix--race" / places.JOURNAL
    wait_until(lambda: "WorktreeMade" in kinds_in(path))


def test_a_staging_folder_is_judged_by_its_launch_process_not_by_the_clock(host: Path) -> None:
    """A launch's staging folder goes once its process is gone, and never while it lives.

    The clock is left alone: ``sweep_staging`` is given its time, and the folders' times are
    set. Before the fix a folder was judged by its age on the wall clock: a live launch's
    folder looked stale to a clock stepped forward, and a dead launch's stayed while fresh.
    """
    repo = repository(host / "repo")
    launch_place(repo, "first")  # the journals folder exists
    folder = places.journals_dir(repo)
    live = Path(tempfile.mkdtemp(prefix=launcher.staging_prefix(), dir=folder))
    dead_pid = _a_dead_pid()
    prefix = launcher.staging_prefix().replace(f"-{os.getpid()}-", f"-{dead_pid}-")
    dead = Path(tempfile.mkdtemp(prefix=prefix, dir=folder))
    hour_ago = time.time() - 3600.0
    os.utime(live, (hour_ago, hour_ago))
    removed = tidying.sweep_staging(repo, time.time())
    assert removed == [str(dead)]
    assert live.is_dir()
    assert not dead.exists()
    # A clock stepped an hour ahead still leaves the live launch's folder alone.
    assert tidying.sweep_staging(repo, time.time() + 7200.0) == []
    assert live.is_dir()


def _a_dead_pid() -> int:
    """The pid of a process that has ended (and was reaped)."""
    child = subprocess.Popen(["true"])  # noqa: S607 (a process that ends at once)
    child.wait()
    assert not process.alive(child.pid)
    return child.pid


def test_an_agent_told_the_supervisor_does_not_answer_hears_its_request_was_journaled() -> None:
    """Through MCP, a supervisor that does not answer is not called "nothing was done"."""
    from flume.cli.mcp import failure  # noqa: PLC0415 (the MCP server's module, loaded here only)

    said = str(failure(client.not_answering(os.getpid(), client.ANSWER_SECONDS)))
    assert said.startswith("flume journaled this, but no supervisor answered")
    assert "nothing was done" not in said
    assert f"the supervisor (pid {os.getpid()}) runs but has not answered for 5 s" in said


# --- a folder named flume where the supervisor is started ------------------------------------


@pytest.mark.usefixtures("host")
def test_a_flume_folder_where_the_supervisor_is_started_is_not_what_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command run in a checkout holding a ``flume`` package starts the installed supervisor.

    ``python -m flume`` puts the current folder first on the import path: run inside flume's own
    checkout (or any project with a ``flume`` folder), it would run that folder's code instead.
    """
    decoy = tmp_path / "checkout"
    (decoy / "flume").mkdir(parents=True)
    (decoy / "flume" / "__init__.py").write_text("raise SystemExit('the folder was imported')\n")
    (decoy / "flume" / "__main__.py").write_text("raise SystemExit('the folder was run')\n")
    monkeypatch.chdir(decoy)
    assert _daemon() > 0
