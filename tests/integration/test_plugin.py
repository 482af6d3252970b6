"""flume's Claude Code plugin (``claude-plugin/``) and its marketplace, in the real Claude Code.

The pinned Claude Code validates the plugin and the marketplace, installs the plugin from the
marketplace into a home of the test's own, and runs ``/flume:launch`` typed into its prompt box:
offline, in a pane of a private tmux server, against a scripted model that answers the command's
expanded prompt with the plugin's MCP tool call (reference/claude-code.md §6 to §8). The launched
place runs flume's test agent in flume's own tmux server. Where Claude Code is not installed
these tests skip with a loud reason; under scripts/test, which installs them, they fail instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from flume import __version__, api
from flume.shell.agents import runner
from flume.shell.agents.claude import transcript_path
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from flume.testing.claude import CLAUDE_CODE_VERSION, claude_binary, claude_env, seed_home
from flume.testing.model import Reply, ScriptedModel, Tool, latest_user_text
from tests.integration.agents_kit import (
    agent_repository,
    installed_or_skip,
    place_of,
    wait_for,
)
from tests.integration.places_kit import flume_process
from tests.integration.test_claude import KEY, claude, model  # noqa: F401 (pytest's fixtures)

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "claude-plugin"
#: The plugin's MCP launch tool as Claude Code names it: mcp__plugin_<plugin>_<server>__<tool>.
LAUNCH_TOOL = "mcp__plugin_flume_flume__launch"


def _claude_cli(binary: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a non-interactive ``claude`` command with ``home`` as its HOME, offline."""
    env = {**os.environ, **claude_env(home, "http://127.0.0.1:9", KEY)}
    return subprocess.run(  # noqa: S603 (the pinned Claude Code, our own arguments)
        [str(binary), *args], capture_output=True, text=True, timeout=60, check=False, env=env
    )


@pytest.fixture
def binary() -> Path:
    """The real Claude Code; a loud skip when it is not installed (a failure in scripts/test)."""
    return installed_or_skip(claude_binary(), f"CLAUDE CODE {CLAUDE_CODE_VERSION}")


def test_claude_code_validates_the_plugin_strictly(binary: Path, tmp_path: Path) -> None:
    """``claude plugin validate --strict`` passes the plugin: one command, one MCP server."""
    ran = _claude_cli(binary, tmp_path, "plugin", "validate", "--strict", "--json", str(PLUGIN))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = json.loads(ran.stdout)
    assert report["success"] is True
    assert report["manifest"]["type"] == "plugin"
    assert report["manifest"]["errors"] == report["manifest"]["warnings"] == []
    assert report["provides"]["commands"] == ["flume:launch"]
    (server,) = report["provides"]["mcpServers"]
    assert (server["name"], server["target"], server["args"]) == ("flume", "flume", ["mcp"])
    # The plugin, its marketplace entry and flume carry one version.
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    (entry,) = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())["plugins"]
    assert manifest["version"] == entry["version"] == __version__


def test_claude_code_validates_the_marketplace_and_installs_the_plugin_from_it(
    binary: Path, tmp_path: Path
) -> None:
    """The marketplace validates strictly, and adding it then installing flume@flume works."""
    ran = _claude_cli(binary, tmp_path, "plugin", "validate", "--strict", "--json", str(ROOT))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = json.loads(ran.stdout)
    assert report["success"] is True
    assert report["manifest"]["type"] == "marketplace"
    assert report["manifest"]["errors"] == report["manifest"]["warnings"] == []
    # Validation does not follow a plugin's source (a missing one passes): installing does.
    _install(binary, tmp_path)
    listed = _claude_cli(binary, tmp_path, "plugin", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (flume,) = [each for each in json.loads(listed.stdout) if each["id"] == "flume@flume"]
    assert flume["enabled"] is True
    assert Path(flume["readFromFolder"]) == PLUGIN
    assert flume["mcpServers"] == {"flume": {"type": "stdio", "command": "flume", "args": ["mcp"]}}


def _install(binary: Path, home: Path) -> None:
    """Add this repository as a marketplace and install the plugin from it, as docs/ say."""
    for args in (("marketplace", "add", str(ROOT)), ("install", "flume@flume")):
        ran = _claude_cli(binary, home, "plugin", *args)
        assert ran.returncode == 0, ran.stdout + ran.stderr


BRIEF = "The greeting says hullo; make it hello."
#: What the person types after /flume:launch: the test agent for the place, then the brief.
WORDS = f"agent=test {BRIEF}"
#: The place those words launch: kind fix by default, the name made from the brief.
PLACE = "fix--greeting-says-hullo-hello"
#: The command's arguments as its prompt holds them (claude-plugin/commands/launch.md).
EXPANDED = f"launch-words\n{WORDS}\nlaunch-words"


def _scripted(server: ScriptedModel) -> None:
    """The model answers the expanded command with the launch tool call, as a model would.

    Claude Code 2.1.332 offers MCP tools deferred: listed by name, their schemas loaded by a
    ToolSearch call. So the model searches first, then calls the tool once it is offered (the
    search's result is a tool reference, with no text to match: hence the empty ``when``).
    """
    launch = Tool(LAUNCH_TOOL, {"words": WORDS})
    server.script = (
        Reply(when=EXPANDED, tool=launch),  # if the tool is offered at once
        Reply(when=EXPANDED, tool=Tool("ToolSearch", {"query": f"select:{LAUNCH_TOOL}"})),
        Reply(when=PLACE, text="Launched it."),  # the tool's answer names the place
        Reply(when="", tool=launch, once=True),
    )


@pytest.fixture
def flume_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin's .mcp.json runs ``flume mcp``: this flume, as installed, is found on PATH."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.usefixtures("panes", "flume_on_path")
@pytest.mark.parametrize("loaded", ["plugin-dir", "installed"])
def test_slash_launch_typed_into_claude_code_launches_a_place(
    tmp_path: Path,
    claude: Path,  # noqa: F811 (pytest's fixture)
    model: ScriptedModel,  # noqa: F811 (pytest's fixture)
    loaded: str,
) -> None:
    """/flume:launch <words> in Claude Code goes through the plugin's MCP server to a place."""
    repo = agent_repository(tmp_path)
    seed_home(claude, trusted=[repo], api_key=KEY)
    binary = Path(os.environ["FLUME_CLAUDE"])
    if loaded == "installed":
        _install(binary, claude)
        plugin_args: list[str] = []
    else:
        plugin_args = ["--plugin-dir", str(PLUGIN)]
    _scripted(model)
    session = str(uuid.uuid4())
    # Claude Code runs in a tmux server of its own, beside flume's (the panes fixture's).
    terminal = Tmux(tmp_path / "cc.sock")
    try:
        started = terminal.start(
            group="cc",
            window="cc",
            cwd=repo,
            argv=[str(binary), "--session-id", session, *plugin_args],
            env={},
        )
        assert started.ok, started.err
        pane = started.out.strip()
        wait_for(
            lambda: runner.live_sessions().get(session, {}).get("status") == "idle",
            60,
            "Claude Code at its prompt box",
        )
        typed = terminal.run("send-keys", "-t", pane, "-l", f"/flume:launch {WORDS}")
        assert typed.ok, typed.err
        wait_for(lambda: BRIEF in (terminal.capture(pane) or ""), 10, "the command typed")
        assert terminal.run("send-keys", "-t", pane, "Enter").ok
        wait_for(
            lambda: any(each["place"] == PLACE for each in api.status_dicts(repository=repo)),
            90,
            f"{PLACE} launched through Claude Code",
        )
        wait_for(lambda: "Launched it." in (terminal.capture(pane) or ""), 30, "Claude's answer")
    finally:
        terminal.kill_server()

    ran = flume_process("status", "--json", "--repository", str(repo))
    assert ran.returncode == 0, ran.stderr
    (shown,) = json.loads(ran.stdout)["places"]
    assert (shown["place"], shown["kind"], shown["repository"]) == (PLACE, "fix", str(repo))
    assert place_of(places_journal(repo)).launch.brief == BRIEF
    # The person's command reached Claude Code as typed, and its prompt reached the model.
    lines = [str(line.get("message")) for line in transcript_lines_of(repo, session)]
    assert any("<command-name>/flume:launch</command-name>" in line for line in lines)
    assert any(EXPANDED in latest_user_text(body) for body in model.requests)


def places_journal(repo: Path) -> Path:
    """The journal of the launched place."""
    return places.journals_dir(repo) / PLACE / places.JOURNAL


def transcript_lines_of(repo: Path, session: str) -> list[dict[str, object]]:
    """Claude Code's transcript lines for its session in ``repo``."""
    path = transcript_path(os.path.realpath(repo), session)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


#: The words of a launch whose place's agent is Claude Code itself, from the issue's example.
OWN_WORDS = 'agent=claude Fix the "greeting" typo in docs'
#: Its place: the kind's own word is not repeated in the name made from the brief.
OWN_PLACE = "fix--greeting-typo-docs"
#: The tools of the caller's that the place's agent tries.
APPROVE_TOOL = "mcp__plugin_flume_flume__approve"
DROP_TOOL = "mcp__plugin_flume_flume__drop"


@pytest.mark.usefixtures("flume_on_path")
def test_a_place_launched_from_claude_code_holds_none_of_the_caller_s_tools(
    tmp_path: Path,
    claude: Path,  # noqa: F811 (pytest's fixture)
    model: ScriptedModel,  # noqa: F811 (pytest's fixture)
    panes: Tmux,
) -> None:
    """The plugin installed for the user: /flume:launch's place's Claude Code has no flume tools.

    The person's Claude Code launches a place whose agent is Claude Code, under the same home
    and its user-scoped plugin. That agent's scripted calls of the plugin's ``approve`` and
    ``drop`` tools find no such tool, and its ``/mcp`` lists no server at all (captured from its
    pane): flume starts its agents with their MCP servers fixed (``--strict-mcp-config``).
    """
    repo = agent_repository(tmp_path)
    seed_home(claude, trusted=[repo], api_key=KEY)
    binary = Path(os.environ["FLUME_CLAUDE"])
    _install(binary, claude)
    expanded = f"launch-words\n{OWN_WORDS}\nlaunch-words"
    launch = Tool(LAUNCH_TOOL, {"words": OWN_WORDS})
    marker = f"flume:{OWN_PLACE}:code:1"
    # The place's agent's prompt names the place too: its own reply is found first.
    model.script = (
        Reply(when=marker, tool=Tool(APPROVE_TOOL, {"place": OWN_PLACE}, unoffered=True)),
        Reply(when=expanded, tool=launch),
        Reply(when=expanded, tool=Tool("ToolSearch", {"query": f"select:{LAUNCH_TOOL}"})),
        Reply(when=OWN_PLACE, text="Launched it."),
        Reply(when=APPROVE_TOOL, tool=Tool(DROP_TOOL, {"place": "fix--other"}, unoffered=True)),
        Reply(when=DROP_TOOL, text="Neither tool is mine."),
        Reply(when="", tool=launch, once=True),
    )
    session = str(uuid.uuid4())
    terminal = Tmux(tmp_path / "cc.sock")
    try:
        started = terminal.start(
            group="cc", window="cc", cwd=repo, argv=[str(binary), "--session-id", session], env={}
        )
        assert started.ok, started.err
        pane = started.out.strip()
        wait_for(
            lambda: runner.live_sessions().get(session, {}).get("status") == "idle",
            60,
            "Claude Code at its prompt box",
        )
        assert terminal.run("send-keys", "-t", pane, "-l", f"/flume:launch {OWN_WORDS}").ok
        wait_for(lambda: "greeting" in (terminal.capture(pane) or ""), 10, "the command typed")
        assert terminal.run("send-keys", "-t", pane, "Enter").ok
        journal = places.journals_dir(repo) / OWN_PLACE / places.JOURNAL
        wait_for(journal.exists, 90, f"{OWN_PLACE} launched through Claude Code")
    finally:
        terminal.kill_server()

    def tried_both() -> bool:
        place = place_of(journal)
        return bool(place.attempts) and any(
            "Neither tool is mine." in str(line.get("message")) for line in transcript_of(place)
        )

    wait_for(tried_both, 120, "the place's agent to try the caller's tools")
    place = place_of(journal)
    said = json.dumps(transcript_of(place))
    for tool in (APPROVE_TOOL, DROP_TOOL):
        assert f"No such tool available: {tool}" in said, said[-2000:]
    assert place.launch.brief == 'Fix the "greeting" typo in docs'
    # Its /mcp, as a person at its pane would look: no server, flume's or any.
    agent = place.agent
    assert agent is not None
    assert panes.run("send-keys", "-t", agent.pane, "-l", "/mcp").ok
    wait_for(lambda: "/mcp" in (panes.capture(agent.pane) or ""), 10, "/mcp typed")
    assert panes.run("send-keys", "-t", agent.pane, "Enter").ok

    def listed() -> bool:
        shown = panes.capture(agent.pane) or ""
        (tmp_path / "mcp-of-the-place-s-agent.txt").write_text(shown, encoding="utf-8")
        return "No MCP servers loaded" in shown

    wait_for(listed, 20, "its /mcp to list no server")
    shown = panes.capture(agent.pane) or ""
    assert "flume" not in shown.split("No MCP servers loaded", 1)[1]


def transcript_of(place: object) -> list[dict[str, object]]:
    """The place's first agent's transcript lines, from where its journal found it."""
    attempts = getattr(place, "attempts", ())
    path = Path(attempts[0].transcript) if attempts and attempts[0].transcript else None
    if path is None or not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
