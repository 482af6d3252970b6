"""flume's herdr plugin: its manifest by herdr's rules, its reports and actions via the fake.

Every report the plugin sends goes to a fake herdr that checks it against herdr's published
schema and documented limits (source characters, at most 16 tokens, token names, texts cut at
80 characters); the places reported are real ones, carried by the real supervisor with flume's
test agent in herdr tabs.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from flume.cli.herdr import PluginAction, Popup
from flume.core.observations import Activity, StopAsked, Told
from flume.core.place import Life
from flume.shell.agents.runner import tmux_group
from flume.shell.commands.herdr_plugin import HerdrRequest, in_flight, planned, reports, send
from flume.shell.panes.herdr import SESSION_TOKEN, Client
from flume.shell.store import places
from flume.testing.herdr import FakeHerdr, Schema, connect_line
from tests.integration.agents_kit import (
    TIMING,
    agent_doing,
    agent_repository,
    observations,
    place_of,
    script,
    wait_for,
)
from tests.integration.herdr_kit import herdr_fixture, herdr_schema
from tests.integration.places_kit import flume, flume_process, launch_place

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

__all__ = ["herdr_fixture"]

MANIFEST = Path(__file__).resolve().parents[2] / "herdr-plugin" / "herdr-plugin.toml"
_ID = re.compile(r"[A-Za-z0-9.:_-]+")
_SOURCE = re.compile(r"[A-Za-z0-9:._-]{1,80}")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,32}")
#: Event names herdr's hooks know (reference/herdr.md §5), and those it never hooks (§6).
_EVENTS = {
    *(f"workspace.{e}" for e in ("created", "updated", "renamed", "moved", "closed", "focused")),
    *(f"worktree.{e}" for e in ("created", "opened", "removed")),
    *(f"tab.{e}" for e in ("created", "closed", "focused", "renamed", "moved")),
    *(f"pane.{e}" for e in ("created", "closed", "focused", "moved", "exited", "agent_detected")),
    "pane.agent_status_changed",
}


def _manifest() -> dict[str, object]:
    return tomllib.loads(MANIFEST.read_text(encoding="utf-8"))


def _argv_ok(command: object) -> bool:
    return isinstance(command, list) and bool(command) and all(isinstance(p, str) for p in command)


def test_the_manifest_keeps_herdrs_rules() -> None:
    """Required keys, id characters, action contexts, argv commands, known events and popups."""
    manifest = _manifest()
    for key in ("id", "name", "version", "min_herdr_version"):
        assert isinstance(manifest.get(key), str), f"{key} is required"
    assert _ID.fullmatch(str(manifest["id"]))
    assert re.fullmatch(r"\d+\.\d+\.\d+", str(manifest["min_herdr_version"]))
    assert set(manifest["platforms"]) <= {"linux", "macos", "windows"}  # type: ignore[arg-type]
    schema = Schema(herdr_schema())
    definitions = "#/schemas/success_response/$defs/"
    tables = {
        "actions": "PluginManifestAction",
        "panes": "PluginManifestPane",
        "startup": "PluginManifestStartup",
        "events": "PluginManifestEventHook",
    }
    for table, definition in tables.items():
        entries = manifest.get(table)
        assert isinstance(entries, list)
        assert entries, f"no [[{table}]]"
        for entry in entries:
            assert schema.problems(definitions + definition, entry) == [], entry
            assert _argv_ok(entry["command"]), entry
            assert entry["command"][:2] == ["flume", "herdr"], entry
    actions = manifest["actions"]
    assert isinstance(actions, list)
    ids = [action["id"] for action in actions]
    assert len(ids) == len(set(ids))
    for action in actions:
        assert _ID.fullmatch(action["id"])
        assert action["contexts"], action
        assert set(action["contexts"]) <= {"workspace", "tab", "pane", "selection", "global"}
        command = action["command"]
        if command[2] == "action":
            assert PluginAction(command[3]).value == action["id"]
        else:
            assert command[2:] == ["sidebar"]
    panes = manifest["panes"]
    assert isinstance(panes, list)
    assert {pane["id"] for pane in panes} == {popup.value for popup in Popup}
    for pane in panes:
        assert pane["command"] == ["flume", "herdr", "pane", Popup(pane["id"]).value]
    # Every popup an action opens is declared; every event hook is one herdr runs hooks for.
    opened = {a["id"] for a in actions if a["command"][2:3] == ["action"]} & {
        p.value for p in Popup
    }
    assert opened <= {pane["id"] for pane in panes}
    events = manifest["events"]
    assert isinstance(events, list)
    assert {event["on"] for event in events} <= _EVENTS
    # The commands the manifest names are flume's own: each parses as its CLI has it.
    for entry in [*actions, *panes, *manifest["startup"], *events]:  # type: ignore[misc]
        ran = flume(*entry["command"][1:], "--help")
        assert ran.returncode == 0, (entry["command"], ran.stderr)


def _check_limits(sent: list[HerdrRequest]) -> None:
    """Each report keeps herdr's documented limits (reference/herdr.md §4)."""
    for each in sent:
        assert _SOURCE.fullmatch(each.params["source"]), each
        tokens = each.params["tokens"]
        assert len(tokens) <= 16, each
        for name, value in tokens.items():
            assert _TOKEN.fullmatch(name), name
            assert value is None or (0 < len(value) <= 80 and value == value.strip()), value
            assert value is None or not re.search(r"[\x00-\x1f\x7f]", value), value


def test_many_places_and_long_names_report_within_herdrs_limits(
    tmp_path: Path, herdr: FakeHerdr
) -> None:
    """Fourteen places, one named at flume's longest: rows cut to 80, 16 tokens, herdr takes all."""
    repo = agent_repository(tmp_path)
    long_name = "a" * 64
    names = [long_name, *(f"p{n:02}" for n in range(13))]
    for name in names:
        launch_place(repo, name)
    made = connect_line(
        herdr.socket_path,
        {"id": "w", "method": "workspace.create", "params": {"label": tmux_group(str(repo))}},
    )
    workspace = made["result"]["workspace"]["workspace_id"]
    found = in_flight([repo])
    assert sorted(each.name for each in found) == sorted(f"fix--{name}" for name in names)
    client = Client(herdr.socket_path)
    sent = planned(client, "plugin:flume", [repo])
    _check_limits(sent)
    assert [each.method for each in sent] == ["workspace.report_metadata"]
    tokens = sent[0].params["tokens"]
    assert tokens["flume"] == "flume: 14 in flight"
    assert tokens["flume_more"] == "+2 more: flume status"
    rows = [tokens[f"flume_{n}"] for n in range(1, 13)]
    assert rows[0].startswith(f"fix--{long_name[:40]}")
    assert rows[0].endswith("\u2026")
    assert len(rows[0]) == 80
    assert send(client, sent) == []
    listed = connect_line(
        herdr.socket_path,
        {"id": "g", "method": "workspace.get", "params": {"workspace_id": workspace}},
    )
    assert listed["result"]["workspace"]["tokens"]["flume_2"] == rows[1]
    # Nothing in flight any more: every flume token is cleared, the rest of the workspace kept.
    cleared = reports([], [], [listed["result"]["workspace"]], "plugin:flume")
    _check_limits(cleared)
    assert set(cleared[0].params["tokens"].values()) == {None}
    assert send(client, cleared) == []
    after = connect_line(
        herdr.socket_path,
        {"id": "h", "method": "workspace.get", "params": {"workspace_id": workspace}},
    )
    assert after["result"]["workspace"]["tokens"] == {}
    assert reports([], [], [after["result"]["workspace"]], "plugin:flume") == []
    herdr.assert_clean()


NOTHING_DONE = "inputs = {inputs!r}\n"
ANSWER = '[[turn]]\nsteps = [{write = {path = "conclusion.md", text = "Yes.\\n"}}]\n'


def _two_places(tmp_path: Path) -> tuple[Path, str, Path]:
    """A question answered (waiting on its caller) and a fix whose agent waits, both in herdr.

    The fix's journal, its agent's pane, and the file its agent logs its inputs to.
    """
    repo = agent_repository(tmp_path, TIMING)
    common = ("--repository", str(repo), "--agent", "test", "--panes", "herdr")
    answer = script(tmp_path, ANSWER, "answer.toml")
    ran = flume_process(
        "launch", *common, "--kind", "question", "--name", "scale", "--brief", "Scale?",
        "--agent-arg=--script", f"--agent-arg={answer}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    question = places.journals_dir(repo) / "question--scale" / places.JOURNAL
    wait_for(lambda: place_of(question).life is Life.FINISHED, 60, "the question answered")
    inputs = tmp_path / "inputs.log"
    idle = script(tmp_path, NOTHING_DONE.format(inputs=str(inputs)), "idle.toml")
    ran = flume_process(
        "launch", *common, "--kind", "fix", "--name", "slow", "--brief", "Take your time.",
        "--agent-arg=--script", f"--agent-arg={idle}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    fix = places.journals_dir(repo) / "fix--slow" / places.JOURNAL
    wait_for(agent_doing(fix, Activity.WAITING), 60, "the fix's agent to wait")
    wait_for(lambda: place_of(fix).stage.phase.__class__.__name__ == "Working", 30, "delivery")
    agent = place_of(fix).agent
    assert agent is not None
    return fix, agent.pane, inputs


def _sidebar_shown(herdr: FakeHerdr, pane: str) -> None:
    """The sidebar's reports: the fix's pane row, and the workspace's rows, waiting first."""
    shown = flume("herdr", "sidebar")
    assert shown.returncode == 0, shown.stderr
    sent = [r for r in herdr.requests if str(r.get("method", "")).endswith("report_metadata")]
    flume_reports = [
        HerdrRequest(method=r["method"], params=r["params"])
        for r in sent
        if SESSION_TOKEN not in r["params"].get("tokens", {})
        and "flume_typed" not in r["params"].get("tokens", {})
    ]
    _check_limits(flume_reports)
    by_method = {each.method: each.params for each in flume_reports}
    pane_tokens = by_method["pane.report_metadata"]["tokens"]
    assert by_method["pane.report_metadata"]["pane_id"] == pane
    assert pane_tokens["flume"] == "fix--slow code#1 waiting"
    assert pane_tokens["flume_kind"] == "fix"
    assert pane_tokens["flume_stage"] == "code#1"
    assert pane_tokens["flume_tasks"] is None
    space = by_method["workspace.report_metadata"]["tokens"]
    assert space["flume"] == "flume: 2 in flight, 1 wait on you"
    # The question waiting on its caller comes first.
    assert space["flume_1"] == "question--scale session#1 finished: read its report, then tidy"
    assert space["flume_2"] == "fix--slow code#1 waiting"
    assert space["flume_3"] is None
    dry = flume("herdr", "sidebar", "--dry-run")
    assert [json.loads(line)["method"] for line in dry.stdout.splitlines()] == [
        "pane.report_metadata",
        "workspace.report_metadata",
    ]


def test_the_sidebar_shows_places_in_herdr_and_its_actions_act_on_them(
    tmp_path: Path, herdr: FakeHerdr, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pane and workspace rows for real places; open, tell and stop act on the focused one."""
    fix, pane, inputs = _two_places(tmp_path)
    _sidebar_shown(herdr, pane)
    # Actions mean the focused pane's place.
    context = {"workspace_id": pane.split(":")[0], "focused_pane_id": pane}
    monkeypatch.setenv("HERDR_PLUGIN_CONTEXT_JSON", json.dumps(context))
    before = len(herdr.requests)
    opened = flume("herdr", "action", "open")
    assert opened.returncode == 0, opened.stderr
    # The supervisor asks herdr things meanwhile: the action's own request is among the new ones.
    focused = [r for r in herdr.requests[before:] if r.get("method") == "pane.focus"]
    assert [r["params"] for r in focused] == [{"pane_id": pane}]
    told = flume("herdr", "pane", "tell", stdin="Mind the tests.\n\n")
    assert told.returncode == 0, told.stderr
    assert "fix--slow: tell 1" in told.stdout
    assert any(isinstance(seen, Told) for seen in observations(fix))
    wait_for(lambda: "Mind the tests." in inputs.read_text(), 30, "the tell typed to the agent")
    stopped = flume("herdr", "action", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert "is ended" in stopped.stdout
    assert any(isinstance(seen, StopAsked) for seen in observations(fix))
    toast = [r for r in herdr.requests if r.get("method") == "notification.show"]
    assert toast[-1]["params"]["title"] == "flume stop"
    # A context that names no place is refused, and says so, with nothing done.
    monkeypatch.setenv("HERDR_PLUGIN_CONTEXT_JSON", json.dumps({"focused_pane_cwd": "/"}))
    nothing = flume("herdr", "action", "retry")
    assert nothing.returncode == 1
    assert "no single place in flight" in nothing.stderr
    herdr.assert_clean()
