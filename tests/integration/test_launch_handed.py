"""``flume launch`` handed to the running supervisor is the launch the command makes itself.

With a supervisor running, the command hands its launch over the socket: the supervisor, which
has flume's rules and git loaded, runs the same checks in the caller's environment, journals it
and makes the place at once, while the command loads neither. Both ways must say the same and
make the same, for good launches and bad; a launch the supervisor does not take in time is the
command's own, and one it took is never made twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from flume.core.errors import UsageError
from flume.core.settings import Settings
from flume.shell.perform import launcher
from flume.shell.perform.launch_words import LaunchAsked
from flume.shell.perform.performer import Performer
from flume.shell.store import places
from flume.shell.supervisor import client, handover
from flume.shell.supervisor.daemon import Asks, _answer
from flume.shell.supervisor.handover import LaunchMade, LaunchOutcome
from flume.shell.supervisor.loop import Supervisor
from flume.shell.tools import sockets
from tests.integration.places_kit import flume, launch_argv, repository, run_git, world_of
from tests.integration.test_cli_imports import HEAVY, loaded

BRIEF = "Mend the greeting."
PRINTED = ("--agent", "test", "--panes", "print")
#: What the command must not load to hand a launch over: the rules, git, the journal's codec.
NOT_LOADED = (*HEAVY, "flume.core.observations", "flume.core.step", "flume.shell.tools.git")


def wait_until(predicate: Callable[[], bool], seconds: float = 60.0) -> None:
    """Wait until ``predicate()`` holds; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def supervised(host: Path) -> Path:
    """The host's supervisor, running and answering (the host fixture stops it)."""
    client.start()
    wait_until(lambda: client.ping(timeout=1.0) is not None)
    return host


@contextlib.contextmanager
def handed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Each launch handed to the supervisor: whether it took it."""
    taken: list[bool] = []
    real = handover.launch

    def spy(asked: LaunchAsked, **given: float) -> LaunchOutcome | None:
        outcome = real(asked, **given)
        taken.append(outcome is not None)
        return outcome

    with monkeypatch.context() as patched:
        patched.setattr(handover, "launch", spy)
        yield taken


@contextlib.contextmanager
def unsupervised(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Launches the command makes itself, as when no supervisor runs."""
    with monkeypatch.context() as patched:
        patched.setattr(handover, "launch", lambda *_, **__: None)
        yield


def hosts(root: Path) -> tuple[Path, Path]:
    """Two folders alike to the byte: a repository, a plain folder, one with no commits.

    ``own`` is launched in by the command itself, ``handed`` through the supervisor.
    """
    own = root / "own"
    repo = repository(own / "repo", files={"README.md": "hello\n", "sub/x.txt": "x\n"})
    run_git(repo, "branch", "fix/byhand")
    (own / "plain").mkdir()
    run_git(own, "init", "-q", "-b", "main", "empty")
    shutil.copytree(own, root / "handed", symlinks=True)
    return own, root / "handed"


def same(said: str, handed: Path, own: Path) -> str:
    """What was said in ``handed``, as if said in ``own``."""
    return said.replace(str(handed), str(own))


def first_line(made: dict[str, Any]) -> dict[str, Any]:
    """The launch's journal line, but for the moment it was made."""
    line: dict[str, Any] = json.loads(Path(made["journal"]).read_text().splitlines()[0])
    line.pop("at")
    return line


def made_place(journal: Path) -> bool:
    """The supervisor has journaled the place's worktree made."""
    return "WorktreeMade" in journal.read_text()


#: Launches that make nothing: what is given, the stdin, the environment set (None: unset).
BAD: list[tuple[tuple[str, ...], str, dict[str, str | None]]] = [
    (("--repository", "{root}/nowhere", "--kind", "fix", "--name", "x", "--brief", BRIEF), "", {}),
    (("--repository", "{root}/repo/README.md", "--kind", "fix", "--name", "x"), BRIEF, {}),
    (("--repository", "{root}/plain", "--kind", "fix", "--name", "x", "--brief", BRIEF), "", {}),
    (("--repository", "{root}/empty", "--kind", "fix", "--name", "x", "--brief", BRIEF), "", {}),
    (("--repository", "{root}/repo", "--kind", "fix", "--name", "a/b", "--brief", BRIEF), "", {}),
    (("--repository", "{root}/repo", "--kind", "fix", "--name", "x", "--base", "no"), BRIEF, {}),
    (("--repository", "{root}/repo", "--kind", "review", "--name", "x"), BRIEF, {}),
    (("--repository", "{root}/repo", "--kind", "fix", "--name", "x"), "", {}),
    (("--repository", "{root}/repo", "--kind", "fix", "--name", "x"), "x" * (1 << 20) + "x", {}),
    (("--repository", "{root}/repo", "--kind", "fix", "--name", "x", "--mark", "a b"), BRIEF, {}),
    (("--repository", "{root}/repo", "--kind", "fix", "--name", "x", "--wait", "no"), BRIEF, {}),
    (("--repository", "{root}/repo", "--kind", "fix", "--name", "byhand"), BRIEF, {}),
    (("--repository", "{root}/repo", "--name", "x", "--brief", BRIEF), "", {}),
    (("--repository", "{root}/repo", "--kind", "fix", "--name", "x", "--agent", "bogus"), "", {}),
    (("--repository", "{root}/repo", "--kind", "fix", "--name", "x", "--agent", "codex"), BRIEF,
     {"FLUME_CODEX": "{root}/nowhere/codex"}),
    (("--repository", "{root}/repo", "--kind", "fix", "--name", "x"), BRIEF,
     {"PATH": "{root}/plain", "FLUME_CLAUDE": None}),
    (("--repository", "{root}/repo", "--kind", "fix", "--name", "x", "--panes", "herdr"), BRIEF,
     {"HERDR_SOCKET_PATH": "{root}/nowhere/herdr.sock"}),
]  # fmt: skip

#: Launches that make a place: what is given, the stdin, and the folder it is run in.
GOOD: list[tuple[tuple[str, ...], str, str]] = [
    (("--repository", "{root}/repo", "--kind", "fix", "--name", "plain", *PRINTED), BRIEF, "."),
    (
        (
            "--kind", "change", "--name", "worded", "--brief", "-", "--mark", "night",
            "--wait", "verify", "--model", "m1", "--agent-arg=--effort", "--agent-arg", "high",
            *PRINTED,
        ),
        "Rate-limit the API,\nnot the health check.\n",
        "repo/sub",
    ),
    (("--repository", "repo", "--kind", "question", "--name", "why", *PRINTED), BRIEF, "."),
    (("--repository", "{root}/repo", "--kind", "fix", "--name", "tmux"), BRIEF, "."),
]  # fmt: skip


def test_launches_handed_over_say_and_make_what_the_command_s_own_do(
    supervised: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Good launches and bad, each made by the command and handed over: the same in every way.

    The same exit status and words; for a bad launch nothing made either way, for a good one the
    same journal line and the same place made. The caller's environment goes with the launch
    (PATH and ``$FLUME_CODEX`` find the agent, ``HERDR_SOCKET_PATH`` the herdr), and so do its
    folder (a relative repository, none at all) and its stdin.
    """
    own, other = hosts(supervised / "hosts")
    for args, stdin, environment in BAD:
        results = []
        for root, way in ((own, unsupervised), (other, handed)):
            before = world_of(root / "repo")
            with monkeypatch.context() as patched, way(monkeypatch) as taken:
                for name, value in environment.items():
                    if value is None:
                        patched.delenv(name, raising=False)
                    else:
                        patched.setenv(name, value.format(root=root))
                ran = flume("launch", *(arg.format(root=root) for arg in args), stdin=stdin)
            assert world_of(root / "repo") == before, args
            assert not (root / "empty" / ".git" / "flume").exists()
            results.append((ran.returncode, ran.stdout, same(ran.stderr, other, own)))
            # Handed over, unless refused before the brief is read (as the command's own is).
            at_once = "--kind" not in args or "bogus" in args
            assert taken in (None, [] if at_once else [True]), args
        assert results[0][0] == 2, (args, results[0])
        assert results[0] == results[1], args
    for args, stdin, folder in GOOD:
        said: list[tuple[int, str, str]] = []
        lines_made: list[dict[str, Any]] = []
        journals = []
        for root, way in ((own, unsupervised), (other, handed)):
            with monkeypatch.context() as patched, way(monkeypatch) as taken:
                patched.chdir(root / folder)
                ran = flume(
                    "launch", "--json", *(arg.format(root=root) for arg in args), stdin=stdin
                )
            assert ran.returncode == 0, ran.stderr
            assert taken in (None, [True]), args
            made = json.loads(ran.stdout)
            said.append((ran.returncode, same(ran.stdout, other, own), ran.stderr))
            lines_made.append(json.loads(same(json.dumps(first_line(made)), other, own)))
            journals.append(Path(made["journal"]))
        assert said[0] == said[1], args
        assert lines_made[0] == lines_made[1], args
        for journal in journals:
            wait_until(lambda journal=journal: made_place(journal))
    worlds = [world_of(root / "repo") for root in (own, other)]
    for world in worlds:
        world.pop("registry")
    assert json.loads(same(json.dumps(worlds[1]), other, own)) == worlds[0]


def test_concurrent_launches_handed_over_and_not_have_one_winner(supervised: Path) -> None:
    """A name launched at once by commands handing it over and by launches of their own."""
    repo = repository(supervised / "repo")
    argv = [*launch_argv(repo, "race", BRIEF), *PRINTED]
    commands = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # noqa: S603
        for _ in range(4)
    ]
    refused: list[str] = []

    def own() -> None:
        try:
            launcher.launch_asked(
                LaunchAsked(
                    repository=repo,
                    kind="fix",
                    name="race",
                    brief=BRIEF,
                    agent="test",
                    panes="print",
                )
            )
        except UsageError as error:
            refused.append(str(error))

    owners = [threading.Thread(target=own) for _ in range(4)]
    for each in owners:
        each.start()
    results = [(command.wait(timeout=120), *command.communicate()) for command in commands]
    for each in owners:
        each.join()
    won = [out for status, out, _err in results if status == 0]
    assert len(won) + 4 - len(refused) == 1, (results, refused)
    said = [err for status, _out, err in results if status != 0] + refused
    assert all("fix--race" in each for each in said)
    assert all("already launched" in each or "same moment" in each for each in said)
    assert all(status in {0, 2} for status, _out, _err in results)
    journals = places.journals_dir(repo)
    assert [p.name for p in journals.iterdir() if not p.name.startswith(".")] == ["fix--race"]
    assert not list(journals.glob(".launching-*"))


def test_a_launch_handed_over_loads_no_rules_git_or_codec(supervised: Path) -> None:
    """With a supervisor running, ``flume launch`` loads no plumbum, cattrs, rules or journal.

    Its place is made all the same, and a bad launch is said all the same. With none running,
    the command launches itself and loads them: the check can fail.
    """
    repo = repository(supervised / "repo")
    state = Path(os.environ["XDG_STATE_HOME"])
    launched = ("launch", "--repository", str(repo), "--kind", "fix", "--brief", BRIEF)
    modules, built = loaded(*launched, "--name", "light", *PRINTED, state=state)
    assert "flume.cli.app" in modules
    assert not built
    for heavy in NOT_LOADED:
        assert heavy not in modules, f"flume launch imported {heavy}"
    journal = places.journals_dir(repo) / "fix--light" / places.JOURNAL
    wait_until(lambda: journal.is_file() and made_place(journal))
    modules, _ = loaded(*launched, "--name", "light", *PRINTED, state=state)
    for heavy in NOT_LOADED:
        assert heavy not in modules, f"a refused flume launch imported {heavy}"
    assert client.stop() is not None
    wait_until(lambda: client.ping(timeout=0.5) is None)
    modules, _ = loaded(*launched, "--name", "itself", *PRINTED, state=state)
    assert "plumbum" in modules
    assert "flume.shell.tools.git" in modules
    assert (places.journals_dir(repo) / "fix--itself" / places.JOURNAL).is_file()


def ask(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Send the supervisor one request line; every line it answers, until it closes."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(30)
        connection.connect(str(client.socket_path()))
        connection.sendall((json.dumps(request) + "\n").encode())
        reader = sockets.Reader(connection)
        said = []
        while line := reader.line():
            said.append(json.loads(line))
    return said


def test_the_supervisor_takes_no_launch_late_unfit_or_from_another_flume(
    supervised: Path,
) -> None:
    """A launch late, worded unlike flume's, or from another flume is declined: nothing made.

    The command that asked launches itself then, or has given up.
    """
    repo = repository(supervised / "repo")
    before = world_of(repo)
    words = {
        "repository": str(repo), "name": "x", "brief": BRIEF, "kind": "fix", "base": None,
        "mark": None, "waits": [], "agent": "test", "model": None, "agent_args": [],
        "panes": "print",
    }  # fmt: skip
    request = {
        "op": "launch",
        "take_by": time.time() + 30,
        "flume": client.identity(),
        "words": words,
        "environment": dict(os.environ),
    }
    for changed in (
        {"take_by": time.time() - 1},
        {"flume": {**client.identity(), "version": "0.0.0"}},
        {"words": {**words, "repository": "repo"}},
        {"words": {**words, "waits": "code"}},
        {"words": {**words, "shell": "rm -rf /"}},
        {"environment": {"PATH": 1}},
    ):
        said = ask({**request, **changed})
        assert len(said) == 1, changed
        assert said[0]["ok"] is False, changed
        assert "launch" not in said[0]
    assert world_of(repo) == before
    taken, answer = ask(request)
    assert taken == {"ok": True, "taken": True}
    assert answer["launch"]["made"]["place"] == "fix--x"
    assert world_of(repo) != before


@contextlib.contextmanager
def stand_in(answer: Callable[[socket.socket], None]) -> Iterator[None]:
    """A supervisor's socket served by ``answer`` instead, for one connection."""
    path = client.socket_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(1)
        listener.settimeout(30)

        def serve() -> None:
            connection, _ = listener.accept()
            # One connection only: nothing else reaches this stand-in.
            listener.close()
            path.unlink()
            with connection:
                sockets.read_line(connection)
                answer(connection)

        server = threading.Thread(target=serve, daemon=True)
        server.start()
        try:
            yield
        finally:
            server.join(timeout=30)


def test_a_launch_not_taken_in_time_is_the_command_s_own(host: Path, woken: list[str]) -> None:
    """A supervisor that does not take the launch within its deadline: the command launches."""
    repo = repository(host / "repo")

    def silent(connection: socket.socket) -> None:
        connection.settimeout(30)
        connection.recv(1)  # until the command gives up and closes

    with stand_in(silent):
        ran = flume("launch", "--repository", str(repo), "--kind", "fix", "--name", "own",
                    "--brief", BRIEF, *PRINTED)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert (places.journals_dir(repo) / "fix--own" / places.JOURNAL).is_file()
    assert woken == ["wake"]


def test_a_launch_taken_and_never_answered_is_not_made_again(host: Path, woken: list[str]) -> None:
    """A supervisor that took the launch and then said nothing: exit 1, nothing made here."""
    repo = repository(host / "repo")
    before = world_of(repo)

    def takes(connection: socket.socket) -> None:
        connection.sendall(b'{"ok": true, "taken": true}\n')

    with stand_in(takes):
        ran = flume("launch", "--repository", str(repo), "--kind", "fix", "--name", "lost",
                    "--brief", BRIEF, *PRINTED)  # fmt: skip
    assert ran.returncode == 1
    assert "took the launch and said nothing more" in ran.stderr
    assert "flume status shows whether it was made" in ran.stderr
    assert world_of(repo) == before
    assert woken == []


def test_the_supervisor_starts_making_a_place_it_launched_at_once(host: Path) -> None:
    """No tick is waited for: the launch it journals is followed and its worktree made."""
    repo = repository(host / "repo")
    supervisor = Supervisor(Settings(), performer=Performer(clock=time.time), observers=())
    asked = LaunchAsked(
        repository=repo, name="now", brief=BRIEF, kind="fix", agent="test", panes="print"
    )
    try:
        outcome = supervisor.launch(asked, os.environ)
        supervisor.wait_for_actions(timeout=60)
    finally:
        supervisor.close()
    assert supervisor.stats.ticks == 0
    assert isinstance(outcome, LaunchMade)
    assert made_place(Path(outcome.document["journal"]))
    assert (repo / "places" / "fix--now").is_dir()


def test_a_launch_started_asks_no_tick_and_anything_else_asks_one(
    host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The supervisor's loop ticks at once after any request but a launch it started.

    That one is followed already and its batch wakes a tick when done: a tick now would only
    slow the worktree being made. A launch declined, refused or made but not found to follow,
    a wake, a stop: a tick looks.
    """
    repo = repository(host / "repo")
    supervisor = Supervisor(Settings(), performer=Performer(clock=time.time), observers=())
    words = {
        "repository": str(repo), "name": "now", "brief": BRIEF, "kind": "fix", "base": None,
        "mark": None, "waits": [], "agent": "test", "model": None, "agent_args": [],
        "panes": "print",
    }  # fmt: skip
    launch = {
        "op": "launch",
        "take_by": time.time() + 60,
        "flume": client.identity(),
        "words": words,
        "environment": dict(os.environ),
    }
    path = client.socket_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(8)
        listener.setblocking(False)  # noqa: FBT003 (the socket API)

        def answered(request: dict[str, Any]) -> Asks:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                connection.settimeout(30)
                connection.connect(str(path))
                connection.sendall((json.dumps(request) + "\n").encode())
                said = _answer(listener, supervisor)
                assert sockets.Reader(connection).line()  # it was answered
            return said

        try:
            assert answered(launch) == Asks(stop=False, look=False)
            assert supervisor.started(places.journals_dir(repo) / "fix--now" / places.JOURNAL)
            late = {**launch, "take_by": time.time() - 1}
            assert answered({**late, "words": {**words, "name": "late"}}).look
            assert answered({**launch, "words": {**words, "name": "a/b"}}).look  # refused
            with monkeypatch.context() as patched:
                patched.setattr(supervisor, "follow", lambda _path: None)  # not found by discovery
                assert answered({**launch, "words": {**words, "name": "unfound"}}).look
            assert answered({"op": "wake"}) == Asks(stop=False, look=True)
            assert answered({"op": "stop"}) == Asks(stop=True, look=True)
            supervisor.wait_for_actions(timeout=60)
        finally:
            supervisor.close()
    assert made_place(places.journals_dir(repo) / "fix--now" / places.JOURNAL)
    assert supervisor.stats.ticks == 0
