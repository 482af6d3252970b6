"""flume's herdr backend against a fake herdr that checks every request with herdr's own schema.

The fake's panes run real processes (a private tmux server underneath), so the backend is tested
as flume uses it: a tab started from an argument list, listed back by its session, pasted into
with its typed mark, read and closed; and a fix carried to its landing and tidied with flume's
test agent in a herdr pane, through the real supervisor.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flume.core.delivery import prompt_marker
from flume.core.ids import BranchName, Instant, KindName, WorkName
from flume.core.kinds import known_kind
from flume.core.launch import AgentName, AgentSettings, Launch, Panes
from flume.core.observations import Launched
from flume.core.place import Life
from flume.core.settings import Settings
from flume.core.step import replay
from flume.shell.agents import runner
from flume.shell.panes import herdr as herdr_module
from flume.shell.panes import port
from flume.shell.panes.herdr import SESSION_TOKEN, TYPED_TOKEN, Client, Herdr, HerdrError
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from flume.testing.herdr import FakeHerdr, connect_line, running
from tests.integration.agents_kit import (
    TIMING,
    agent_repository,
    place_of,
    script,
    sessions_started,
    typed_lines,
    wait_for,
)
from tests.integration.herdr_kit import herdr_fixture, herdr_schema
from tests.integration.places_kit import flume_process, run_git, world_of
from tests.integration.test_kinds_e2e import FIX_THEN_SUBMIT

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

__all__ = ["herdr_fixture"]

SESSION = "5b7f0c1e-3c8e-4f1a-9a51-6e2d6f6c7a10"


def _reader(tmp_path: Path) -> list[str]:
    """A program that prints what it reads, line by line, until it is closed."""
    program = tmp_path / "echoer.py"
    program.write_text(
        "import sys\nprint('ready', flush=True)\n"
        "for line in sys.stdin:\n    print('got:' + line.strip(), flush=True)\n",
        encoding="utf-8",
    )
    return ["python3", "-u", str(program)]


def test_the_protocol_is_checked_by_ping_first(tmp_path: Path) -> None:
    """A herdr speaking protocol 20 or 22 is used; another is refused by name, nothing asked."""
    schema = herdr_schema()
    for protocol in (20, 22):
        with running(schema, protocol=protocol) as fake:
            client = Client(fake.socket_path)
            assert client.call("workspace.list", {})["type"] == "workspace_list"
            assert client.protocol == protocol
            assert fake.methods() == ["ping", "workspace.list"]
            fake.assert_clean()
    with running(schema, protocol=23, version="0.10.0") as fake:
        client = Client(fake.socket_path)
        with pytest.raises(HerdrError) as refused:
            client.call("workspace.list", {})
        assert refused.value.code == "protocol_mismatch"
        assert "protocol 23" in refused.value.message
        assert "20 and 22" in refused.value.message
        assert fake.methods() == ["ping"]
        assert Herdr(fake.socket_path).panes() is None
    missing = Client(tmp_path / "none.sock")
    with pytest.raises(HerdrError) as unreachable:
        missing.call("pane.list", {})
    assert unreachable.value.code == "unreachable"


def test_a_herdr_away_for_moments_leaves_its_panes_unknown_and_gone_for_long_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unreachable for less than the grace: its agents are unknown, never taken as exited."""
    away = Herdr(tmp_path / "none.sock")
    clock = [1000.0]
    monkeypatch.setattr(herdr_module.time, "time", lambda: clock[0])
    assert away.panes() is None
    clock[0] += herdr_module.GONE_AFTER_SECONDS - 1
    assert away.panes() is None
    clock[0] += 1
    assert away.panes() == {}
    with running(herdr_schema()) as fake:  # back: the count starts again after an answer
        away.client.path = fake.socket_path
        assert away.panes() == {}
        away.client.path = tmp_path / "none.sock"
        assert away.panes() is None


def test_a_launch_for_a_missing_or_foreign_herdr_is_refused_and_makes_nothing(
    tmp_path: Path, host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--panes herdr with no herdr, or one of another protocol: exit 2, said why, nothing made."""
    del host
    repo = agent_repository(tmp_path)
    before = world_of(repo)
    monkeypatch.setenv("HERDR_SOCKET_PATH", str(tmp_path / "absent.sock"))
    argv = ("launch", "--repository", str(repo), "--kind", "fix", "--name", "x", "--brief", "b",
            "--agent", "test", "--panes", "herdr")  # fmt: skip
    ran = flume_process(*argv)
    assert ran.returncode == 2
    assert "no herdr server listens at" in ran.stderr
    assert "HERDR_SOCKET_PATH" in ran.stderr
    assert world_of(repo) == before
    with running(herdr_schema(), protocol=19, version="0.7.0") as fake:
        monkeypatch.setenv("HERDR_SOCKET_PATH", str(fake.socket_path))
        ran = flume_process(*argv)
        assert ran.returncode == 2
        assert "speaks socket protocol 19" in ran.stderr
        assert fake.methods() == ["ping"]
    assert world_of(repo) == before


def test_the_backend_starts_lists_pastes_reads_and_closes_in_schema(
    tmp_path: Path, herdr: FakeHerdr
) -> None:
    """Every call of the pane port, as herdr's schema allows; the typed mark set before a paste."""
    server = Herdr(herdr.socket_path)
    ran = server.start(
        group="repo-abc123", window="fix--greet", cwd=tmp_path, argv=_reader(tmp_path),
        env={"FLUME_SESSION": SESSION, "FLUME_PLACE": "fix--greet"},
    )  # fmt: skip
    assert ran.ok, ran.err
    pane = ran.out.strip()
    wait_for(lambda: "ready" in (server.capture(pane) or ""), 10, "the program to start")
    listed = server.panes()
    assert listed is not None
    assert list(listed) == [pane]
    assert listed[pane].session == SESSION
    assert listed[pane].typed == ""
    # The command ran from its argument list, in the place, with the marks as environment.
    exported = connect_line(
        herdr.socket_path, {"id": "t", "method": "layout.export", "params": {"pane_id": pane}}
    )
    assert exported["result"]["layout"]["root"]["command"] == _reader(tmp_path)
    assert exported["result"]["layout"]["root"]["cwd"] == str(tmp_path)
    pasted = server.paste(pane, "tell me; $(rm -rf ~) `x` 'q'", mark="flume:fix--greet:code:1#1")
    assert pasted.ok, pasted.err
    wait_for(
        lambda: "got:tell me; $(rm -rf ~) `x` 'q'" in (server.capture(pane) or ""),
        10,
        "the paste read back whole, as text",
    )
    listed = server.panes()
    assert listed is not None
    assert listed[pane].typed == "flume:fix--greet:code:1#1"
    methods = herdr.methods()
    marked = next(
        i
        for i, request in enumerate(herdr.requests)
        if request.get("method") == "pane.report_metadata"
        and TYPED_TOKEN in request["params"]["tokens"]
    )
    assert marked < methods.index("pane.send_input") < methods.index("pane.send_keys")
    assert server.kill_pane(pane).ok
    assert server.panes() == {}
    assert server.kill_pane(pane).ok  # gone already: no failure
    herdr.assert_clean()


def test_a_start_cut_short_before_its_token_is_found_again_not_started_twice(
    tmp_path: Path, herdr: FakeHerdr
) -> None:
    """A tab made but never tokened (a supervisor killed between) is adopted by the same start."""
    exec_file = tmp_path / f"{SESSION}.exec.json"
    argv = ["sh", "-c", "echo up; sleep 60", str(exec_file)]
    made = connect_line(
        herdr.socket_path,
        {"id": "1", "method": "workspace.create", "params": {"label": "repo-abc123"}},
    )
    workspace = made["result"]["workspace"]["workspace_id"]
    node = {"type": "pane", "label": "fix--greet", "cwd": str(tmp_path), "command": argv}
    applied = connect_line(
        herdr.socket_path,
        {
            "id": "2",
            "method": "layout.apply",
            "params": {"workspace_id": workspace, "tab_label": "fix--greet", "root": node},
        },
    )
    orphan = applied["result"]["layout"]["root"]["pane_id"]
    server = Herdr(herdr.socket_path)
    assert server.panes() == {}  # untokened: not known as flume's
    ran = server.start(
        group="repo-abc123", window="fix--greet", cwd=tmp_path, argv=argv,
        env={"FLUME_SESSION": SESSION},
    )  # fmt: skip
    assert ran.ok, ran.err
    assert ran.out.strip() == orphan
    listed = server.panes()
    assert listed is not None
    assert [(p.id, p.session) for p in listed.values()] == [(orphan, SESSION)]
    assert herdr.methods().count("layout.apply") == 1
    herdr.assert_clean()


def test_the_fake_refuses_and_records_what_herdr_would_not_take(herdr: FakeHerdr) -> None:
    """A request off herdr's schema or rules is answered with an error and recorded."""
    path = herdr.socket_path
    missing = connect_line(path, {"id": "a", "method": "pane.read", "params": {"pane_id": "w1:p1"}})
    assert missing == {"id": "a", "error": missing["error"]}
    assert missing["error"]["code"] == "invalid_params"
    unknown = connect_line(path, {"id": "b", "method": "pane.frobnicate", "params": {}})
    assert unknown["error"]["code"] == "invalid_request"
    typo = connect_line(path, {"id": "c", "method": "pane.list", "params": {"workspace": "w1"}})
    assert typo["error"]["code"] == "invalid_params"
    assert connect_line(path, {"id": "d", "method": "pane.list", "params": {}})["result"] == {
        "type": "pane_list",
        "panes": [],
    }
    made = connect_line(path, {"id": "e", "method": "workspace.create", "params": {}})
    workspace = made["result"]["workspace"]["workspace_id"]
    bad_source = connect_line(
        path,
        {
            "id": "f",
            "method": "workspace.report_metadata",
            "params": {"workspace_id": workspace, "source": "flume sidebar", "tokens": {}},
        },
    )
    assert bad_source["error"]["code"] == "invalid_params"
    long_text = connect_line(
        path,
        {
            "id": "g",
            "method": "workspace.report_metadata",
            "params": {"workspace_id": workspace, "source": "flume", "tokens": {"x": "y" * 81}},
        },
    )
    assert long_text["result"] == {"type": "ok"}  # herdr cuts it, and says nothing
    gone = connect_line(path, {"id": "h", "method": "pane.close", "params": {"pane_id": "w9:p9"}})
    assert gone["error"]["code"] == "pane_not_found"
    kinds = [(v.kind, v.method) for v in herdr.violations]
    assert kinds == [
        ("request", "pane.read"),
        ("request", "pane.frobnicate"),
        ("request", "pane.list"),
        ("rule", "workspace.report_metadata"),
        ("rule", "report_metadata"),
    ]
    with pytest.raises(AssertionError, match="5 violations"):
        herdr.assert_clean()
    herdr.violations.clear()


def test_a_fix_runs_through_herdr_to_its_landing_and_is_tidied(
    tmp_path: Path, panes: Tmux, herdr: FakeHerdr
) -> None:
    """--panes herdr: each stage's test agent runs in a herdr tab; the fix lands and is tidied."""
    repo = agent_repository(tmp_path, TIMING)
    agent_script = script(tmp_path, FIX_THEN_SUBMIT)
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind", "fix", "--name", "greet",
        "--brief", "Mend the greeting.", "--agent", "test", "--panes", "herdr",
        "--agent-arg=--script", f"--agent-arg={agent_script}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    journal_path = places.journals_dir(repo) / "fix--greet" / places.JOURNAL
    wait_for(lambda: place_of(journal_path).life is Life.TIDIED, 90, "the fix landed and tidied")
    place = place_of(journal_path)
    assert (repo / "greet.txt").read_text() == "hello\n"
    assert "Say hello" in run_git(repo, "log", "--format=%s", "main")
    assert not Path(place.path).exists()
    assert run_git(repo, "branch", "--list", "fix/greet") == ""
    # Each stage's prompt was confirmed by the transcript, as a message typed by the user.
    for stage in ("code", "submit"):
        (session,) = sessions_started(journal_path, stage)
        marker = f"flume:fix--greet:{stage}:1"
        assert typed_lines(place, session, marker), f"{stage}'s prompt is not in the transcript"
    assert prompt_marker(place).startswith("flume:fix--greet:")
    # The agents ran in herdr: tabs made from argument lists, tokened with their sessions.
    applied = [r for r in herdr.requests if r.get("method") == "layout.apply"]
    assert len(applied) == 2
    for request in applied:
        command = request["params"]["root"]["command"]
        assert command[1:3] == ["-I", str(Path(runner.__file__).with_name("agentexec.py"))]
        assert "Mend the greeting." not in json.dumps(request)  # the brief is in no request
    tokened = [
        r["params"]["tokens"][SESSION_TOKEN]
        for r in herdr.requests
        if r.get("method") == "pane.report_metadata" and SESSION_TOKEN in r["params"]["tokens"]
    ]
    assert sorted(tokened) == sorted(
        s for stage in ("code", "submit") for s in sessions_started(journal_path, stage)
    )
    assert panes.panes() == {}  # nothing ran in flume's own tmux server
    herdr.assert_clean()


def test_a_typed_mark_fits_herdrs_token_and_names_its_send() -> None:
    """A long place's marker is kept as a digest: under 80 characters, one mark a send."""
    short = "flume:fix--greet:code:1"
    assert port.typed_mark(short, 1) == f"{short}#1"
    long_marker = f"flume:fix--{'a' * 64}:code:1"
    marks = {port.typed_mark(long_marker, send) for send in (1, 2)}
    assert len(marks) == 2
    assert all(len(mark) <= 80 and mark.startswith("sha256:") for mark in marks)
    assert port.typed_mark(long_marker, 1) != port.typed_mark(long_marker + "x", 1)


def test_an_agent_in_herdr_keeps_its_own_panes_ids_not_the_supervisors(tmp_path: Path) -> None:
    """Agentexec gives the agent herdr's ids for its own pane; other callers' are not passed on."""
    exec_file = tmp_path / "x.exec.json"
    shown = tmp_path / "env.json"
    program = f"import json, os; json.dump(dict(os.environ), open({str(shown)!r}, 'w'))"
    exec_file.write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-c", program],
                "env": {"PATH": os.environ["PATH"], "HERDR_PANE_ID": "w1:p1"},
                "keep": ["HERDR_PANE_ID", "HERDR_TAB_ID"],
            }
        ),
        encoding="utf-8",
    )
    agentexec = Path(runner.__file__).with_name("agentexec.py")
    environment = {"PATH": os.environ["PATH"], "HERDR_PANE_ID": "w7:p3", "HERDR_ENV": "1"}
    ran = subprocess.run(  # noqa: S603 (our own interpreter and file)
        [sys.executable, "-I", str(agentexec), str(exec_file)],
        env=environment,
        check=False,
        timeout=30,
    )
    assert ran.returncode == 0
    seen = json.loads(shown.read_text(encoding="utf-8"))
    assert seen["HERDR_PANE_ID"] == "w7:p3"  # the pane's own, kept by name
    assert "HERDR_ENV" not in seen  # not named: the file's environment is the whole of it
    assert "HERDR_TAB_ID" not in seen  # named, but the pane had none


def test_the_supervisors_own_herdr_pane_is_never_an_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A supervisor started inside a herdr pane does not hand that pane's ids to its agents."""
    for name in ("HERDR_ENV", "HERDR_PANE_ID", "HERDR_TAB_ID", "HERDR_WORKSPACE_ID"):
        monkeypatch.setenv(name, "w1:p1")
    monkeypatch.setenv("HERDR_SOCKET_PATH", str(tmp_path / "herdr.sock"))
    launch = Launch(
        repository=str(tmp_path),
        kind=KindName("fix"),
        name=WorkName("greet"),
        brief="b",
        base=BranchName("main"),
        agent=AgentSettings(agent=AgentName.TEST, panes=Panes.HERDR),
    )
    seen = Launched(at=Instant(1.0), launch=launch, kind=known_kind("fix", {}))
    place = replay(Settings(), [seen])
    env = runner.environment(place, runner.session_for(place, "code", 1))
    assert not {"HERDR_ENV", "HERDR_PANE_ID", "HERDR_TAB_ID", "HERDR_WORKSPACE_ID"} & set(env)
    assert env["HERDR_SOCKET_PATH"] == str(tmp_path / "herdr.sock")
