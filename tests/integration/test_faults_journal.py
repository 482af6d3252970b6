"""Faults of the journal itself, against the real daemon, real git and tmux, and the test agent.

A journal damaged and then mended in place is followed again, and a tell to a place the
supervisor cannot follow is refused (issue 15, item 5). A journal that cannot be written is
named, with its path and the system's words, by the command that tried, by ``daemon status``
and on the place in ``status``, and flume goes on by itself once it can write again (item 6).

The unwritable journal is made so for real, for root too: ``chattr +i`` (the immutable flag,
which stops root's writes on ext4 with "Operation not permitted"). The test is skipped only
where the flag cannot be set (a file system without it, or no CAP_LINUX_IMMUTABLE).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flume.core.actions import StartAgent
from flume.core.ids import Instant
from flume.core.observations import Activity, DropAsked, Observation, Tick
from flume.core.place import Life, Place
from flume.core.settings import Settings
from flume.shell.panes.tmux import Tmux
from flume.shell.store import journal, places
from flume.shell.supervisor import client
from tests.integration.agents_kit import (
    TIMING,
    agent_doing,
    agent_repository,
    launch_test_agent,
    place_of,
    script,
    typed_lines,
    wait_for,
)
from tests.integration.places_kit import (
    EchoAgents,
    Harness,
    flume_process,
    launch_place,
    repository,
)

#: The agent works a few seconds on its prompt, then waits: a tell is held, then sent.
WORKS_THEN_WAITS = """
[[turn]]
steps = [{say = "On it."}, {work = 3}, {say = "Thought it through."}]
"""

#: A line a person might add by hand: JSON, but no observation flume knows.
BOGUS = b'{"type":"Bogus","at":1}\n'


def daemon_status() -> str:
    """What ``flume daemon status`` prints."""
    ran = flume_process("daemon", "status")
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def status_json(repo: Path) -> dict[str, object]:
    """What ``flume status --json`` prints for the repository."""
    ran = flume_process("status", "--json", "--repository", str(repo))
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)  # type: ignore[no-any-return]


def the_place(repo: Path) -> dict[str, object]:
    """The one place ``flume status --json`` shows in the repository."""
    (place,) = status_json(repo)["places"]  # type: ignore[misc]
    assert isinstance(place, dict)
    return place


def told(place: str, repo: Path, text: str) -> subprocess.CompletedProcess[str]:
    """``flume tell``, run as a person runs it."""
    return flume_process("tell", place, "--repository", str(repo), text)


def working_place(tmp_path: Path, name: str, text: str = WORKS_THEN_WAITS) -> tuple[Path, Path]:
    """A repository and the journal of a place whose agent has started (the daemon runs)."""
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, name, script(tmp_path, text))
    wait_for(lambda: place_of(journal_path).agent is not None, 60, "the agent to start")
    return repo, journal_path


def dropped_and_tidied(place: str, repo: Path, journal_path: Path) -> None:
    """End the test's place the way a person would: drop it, and see it tidied away."""
    worktree = Path(place_of(journal_path).path)
    dropped = flume_process("drop", place, "--repository", str(repo))
    assert dropped.returncode == 0, dropped.stderr
    wait_for(lambda: place_of(journal_path).life is Life.TIDIED, 60, "the place to be tidied")
    assert the_place(repo)["life"] == "tidied"
    assert not worktree.exists()


def log_text() -> str:
    """What the host's supervisor logged."""
    return client.log_path().read_text(errors="replace")


def test_a_journal_mended_in_place_is_followed_again_and_its_tell_delivered(
    tmp_path: Path, panes: Tmux
) -> None:
    """A line added by hand stops the following; once removed, the same file is read again."""
    del panes
    repo, journal_path = working_place(tmp_path, "mended")
    whole = journal_path.stat().st_size
    with journal_path.open("ab") as file:
        file.write(BOGUS)
    wait_for(lambda: "Bogus" in daemon_status(), 30, "the supervisor to stop following it")
    assert f"not followed: {journal_path}" in daemon_status()
    (unreadable,) = status_json(repo)["unreadable"]  # type: ignore[misc]
    assert unreadable["journal"] == str(journal_path)
    assert "Bogus" in unreadable["problem"]
    shown = flume_process("status", "--repository", str(repo)).stdout
    assert f"unreadable journal {journal_path}" in shown
    assert "mend it so it reads whole" in shown
    ran = told("fix--mended", repo, "Mind the README too.")
    assert ran.returncode == 1, ran.stdout
    assert f"the journal {journal_path} cannot be read" in ran.stderr
    assert "mend or move the journal" in ran.stderr

    # Mended in place: the same file (same inode), cut back to its whole lines.
    inode = journal_path.stat().st_ino
    os.truncate(journal_path, whole)
    assert journal_path.stat().st_ino == inode
    ran = told("fix--mended", repo, "Mind the README too.")
    assert ran.returncode == 0, ran.stderr
    wait_for(lambda: "not followed" not in daemon_status(), 30, "the journal followed again")
    agent = place_of(journal_path).agent
    assert agent is not None
    wait_for(
        lambda: typed_lines(place_of(journal_path), agent.session, "Mind the README"),
        40,
        "the tell to be delivered",
    )
    assert the_place(repo).get("fault") is None
    dropped_and_tidied("fix--mended", repo, journal_path)


def setup_waiting(folder: Path) -> str:
    """A place setup that says it began, then waits for the gate: an action held open."""
    waits = f"touch {folder}/began; while [ ! -e {folder}/gate ]; do sleep 0.05; done"
    return f"[place]\nsetup = [{json.dumps(['sh', '-c', waits])}]\n"


def test_a_tell_to_a_place_the_supervisor_cannot_follow_is_refused(
    tmp_path: Path, panes: Tmux
) -> None:
    """While its journal is not followed, a tell is refused (exit 1) saying why and what to do.

    A mend made while an action of the place runs is read once the action is done: until then
    the supervisor does not follow the place, and a tell would be held and never sent.
    """
    del panes
    repo = agent_repository(tmp_path, config=setup_waiting(tmp_path) + TIMING)
    journal_path = launch_test_agent(repo, "refused", script(tmp_path, WORKS_THEN_WAITS))
    wait_for((tmp_path / "began").exists, 60, "the place's setup to begin")
    whole = journal_path.stat().st_size
    with journal_path.open("ab") as file:
        file.write(BOGUS)
    wait_for(lambda: "Bogus" in daemon_status(), 30, "the supervisor to stop following it")
    os.truncate(journal_path, whole)

    ran = told("fix--refused", repo, "Mind the README too.")
    assert ran.returncode == 1, ran.stdout
    assert "the supervisor does not follow fix--refused" in ran.stderr
    assert "Bogus" in ran.stderr
    assert "mend the journal" in ran.stderr
    assert "Traceback" not in ran.stderr
    assert "Mind the README" not in journal_path.read_text()
    shown = flume_process("status", "--repository", str(repo))
    assert "fix--refused code: the supervisor does not follow it" in shown.stdout
    assert "mend the journal" in shown.stdout

    (tmp_path / "gate").touch()  # the setup ends; the mended journal is read again
    wait_for(lambda: "not followed" not in daemon_status(), 30, "the journal followed again")
    wait_for(lambda: place_of(journal_path).agent is not None, 60, "the agent to start")
    ran = told("fix--refused", repo, "Mind the README too.")
    assert ran.returncode == 0, ran.stderr
    dropped_and_tidied("fix--refused", repo, journal_path)


@pytest.fixture
def immutable() -> Iterator[list[Path]]:
    """Files made immutable with ``chattr +i`` (root's writes fail too), made mutable at the end."""
    made: list[Path] = []
    try:
        yield made
    finally:
        for path in made:
            subprocess.run(["chattr", "-i", str(path)], check=False)  # noqa: S603, S607


def make_immutable(path: Path, made: list[Path]) -> None:
    """``chattr +i path``, undone at the end; the test is skipped where the flag cannot be set."""
    ran = subprocess.run(  # noqa: S603
        ["chattr", "+i", str(path)],  # noqa: S607
        capture_output=True,
        text=True,
        check=False,
    )
    if ran.returncode != 0:
        pytest.skip(f"chattr +i is not possible here: {ran.stderr.strip()}")
    made.append(path)


def test_an_unwritable_journal_is_named_everywhere_and_flume_goes_on_once_it_can_write(
    tmp_path: Path, panes: Tmux, immutable: list[Path]
) -> None:
    """Commands exit 1 naming the path and the system's words; the supervisor says so; it heals."""
    del panes
    repo, journal_path = working_place(tmp_path, "stuck")
    log_before = len(log_text())
    make_immutable(journal_path, immutable)

    for argv in (("tell", "fix--stuck", "Mind the README."), ("drop", "fix--stuck")):
        ran = flume_process(*argv, "--repository", str(repo))
        assert ran.returncode == 1, (argv, ran.stdout)
        assert "Traceback" not in ran.stderr
        assert f"the journal {journal_path} cannot be written: Operation not permitted" in (
            ran.stderr
        )
        assert "free space, or make the journal's folder writable" in ran.stderr

    # The supervisor's own writes fail too (what the agent does is seen, not journaled).
    wait_for(lambda: "cannot write" in daemon_status(), 60, "the supervisor to name the fault")
    said = daemon_status()
    assert f"cannot write: the journal {journal_path} cannot be written: Operation" in said
    fault = the_place(repo)["fault"]
    assert isinstance(fault, str)
    assert "Operation not permitted" in fault
    shown = flume_process("status", "--repository", str(repo))
    assert f"fix--stuck code: the journal {journal_path} cannot be written" in shown.stdout
    assert "make its folder writable: flume goes on by itself" in shown.stdout

    subprocess.run(["chattr", "-i", str(journal_path)], check=True)  # noqa: S603, S607
    wait_for(lambda: "cannot write" not in daemon_status(), 60, "the supervisor to write again")
    assert the_place(repo).get("fault") is None
    assert "Traceback" not in log_text()[log_before:]
    ran = told("fix--stuck", repo, "Mind the README.")
    assert ran.returncode == 0, ran.stderr
    agent = place_of(journal_path).agent
    assert agent is not None
    wait_for(
        lambda: typed_lines(place_of(journal_path), agent.session, "Mind the README"),
        40,
        "the tell to be delivered",
    )
    dropped_and_tidied("fix--stuck", repo, journal_path)


def test_a_write_cut_short_by_the_system_leaves_no_line_a_crash_cut_short(
    tmp_path: Path, panes: Tmux
) -> None:
    """A write the kernel stops part-way (a file-size limit, as a full disk does) is cut back.

    The command exits 1 naming the journal and the system's words; the journal holds only
    whole lines, so nothing reads as a crash's torn line, and the next command goes through.
    """
    del panes
    repo, journal_path = working_place(tmp_path, "cut")
    wait_for(agent_doing(journal_path, Activity.WAITING), 60, "the agent to wait")
    # No supervisor writes meanwhile: the limit falls inside the tell's own line.
    assert flume_process("daemon", "stop").returncode == 0
    before = journal_path.read_bytes()
    limit = len(before) + 16  # room for part of the tell's line, not all of it

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    ran = subprocess.run(  # noqa: S603 (our own interpreter and module)
        [sys.executable, "-m", "flume", "tell", "fix--cut", "--repository", str(repo), "Hi."],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=limited,
    )
    assert ran.returncode == 1, ran.stdout
    assert "Traceback" not in ran.stderr
    assert f"the journal {journal_path} cannot be written: File too large" in ran.stderr
    after = journal_path.read_bytes()
    assert after.endswith(b"\n")
    assert b"Hi." not in after[len(before) :]
    shown = flume_process("status", "--repository", str(repo))
    assert "a crash cut short" not in shown.stderr
    ran = told("fix--cut", repo, "Hi.")  # it starts the supervisor again
    assert ran.returncode == 0, ran.stderr
    agent = place_of(journal_path).agent
    assert agent is not None
    wait_for(
        lambda: typed_lines(place_of(journal_path), agent.session, "Hi."), 40, "the tell to arrive"
    )
    dropped_and_tidied("fix--cut", repo, journal_path)


def test_a_full_disk_is_named_in_the_system_s_words(tmp_path: Path) -> None:
    """ENOSPC for real: a journal whose file is /dev/full takes no line, and says why."""
    path = tmp_path / "journal.jsonl"
    path.symlink_to("/dev/full")
    with pytest.raises(OSError, match="No space left on device") as raised:
        journal.append(path, Tick(at=Instant(1.0)))
    assert journal.write_fault(path, raised.value) == (
        f"the journal {path} cannot be written: No space left on device (errno 28)"
    )


def test_what_an_action_came_to_is_journaled_once_the_journal_can_be_written(
    host: Path, harness: Harness, immutable: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal turns unwritable while an action runs: its outcome is held, then journaled.

    In this process, tick by tick, with real git: the agent's start is made to coincide with
    the journal becoming immutable, so ``AgentStarted`` cannot be written when it is seen.
    """
    repo = repository(host / "repo")
    journal_path = launch_place(repo, "held")
    start = EchoAgents.start

    def start_then_fault(
        agents: EchoAgents, place: Place, action: StartAgent, at: Instant
    ) -> list[Observation]:
        make_immutable(journal_path, immutable)
        return start(agents, place, action, at)

    monkeypatch.setattr(EchoAgents, "start", start_then_fault)
    harness.settle()
    assert harness.place(journal_path).agent is None
    said = harness.supervisor.report().unwritable
    assert said == {
        str(journal_path): f"the journal {journal_path} cannot be written: "
        "Operation not permitted (errno 1)"
    }

    subprocess.run(["chattr", "-i", str(journal_path)], check=True)  # noqa: S603, S607
    monkeypatch.setattr(EchoAgents, "start", start)
    harness.settle()
    assert harness.supervisor.report().unwritable == {}
    place = harness.place(journal_path)
    assert place.agent is not None
    kinds = [type(seen).__name__ for seen in journal.read(journal_path).observations]
    assert kinds.count("AgentStarted") == 1
    assert len(harness.agents.started) == 1
    drop_asked = DropAsked(at=Instant(harness.clock.now))
    places.command(journal_path, drop_asked, Settings())
    harness.settle()
    assert harness.place(journal_path).life is Life.TIDIED


def test_a_launch_into_an_unwritable_journal_folder_names_it(
    tmp_path: Path, panes: Tmux, immutable: list[Path]
) -> None:
    """The repository's journal folder cannot be written: exit 1, its path and the words."""
    del panes
    repo = agent_repository(tmp_path)
    folder = repo / ".git" / "flume"
    folder.mkdir(exist_ok=True)
    make_immutable(folder, immutable)
    name = "frozen"
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind", "fix", "--name", name,
        "--brief", "Mend it.", "--agent", "test",
    )  # fmt: skip
    assert ran.returncode == 1, ran.stdout
    assert "Traceback" not in ran.stderr
    assert f"{folder}/" in ran.stderr
    assert "cannot be written: Operation not permitted (errno 1)" in ran.stderr
    assert "make the folder writable, then launch again" in ran.stderr
    assert not (folder / f"fix--{name}").exists()

    subprocess.run(["chattr", "-i", str(folder)], check=True)  # noqa: S603, S607
    journal_path = launch_test_agent(repo, name, script(tmp_path, WORKS_THEN_WAITS))
    wait_for(lambda: place_of(journal_path).agent is not None, 60, "the agent to start")
    dropped_and_tidied(f"fix--{name}", repo, journal_path)
