"""flume's herdr plugin: its popups, and the actions that act on a place's stage, via the fake.

The popup actions (``tell``, ``launch``, ``places``) ask herdr for a plugin pane; the fake runs
the pane's manifest command for real, with herdr's environment, so a popup is driven as a
person would drive it in herdr: its screen read, its answers typed. The popups' own programs
(``flume herdr pane ...``) are also run with their answers on stdin. The places are real: real
repositories, flume's test agent in herdr tabs (or in flume's own tmux), the real supervisor.
"""

from __future__ import annotations

import json
import os
import platform
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flume.core.launch import AgentName, Panes
from flume.core.observations import Launched, ProceedAsked, RetryAsked, StopAsked, Told
from flume.core.place import AwaitingWord, ShortCause
from flume.shell.commands.herdr_plugin import in_flight
from flume.shell.panes.herdr import SESSION_TOKEN
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from flume.testing.herdr import FakeHerdr, PluginPopup, connect_line
from tests.integration.agents_kit import (
    TIMING,
    agent_repository,
    observations,
    place_of,
    script,
    sessions_started,
    stopped_short,
    taken_and_waiting,
    wait_for,
)
from tests.integration.herdr_kit import herdr_fixture
from tests.integration.places_kit import flume, flume_process, world_of
from tests.integration.test_kinds_e2e import FIX_THEN_SUBMIT

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

__all__ = ["herdr_fixture"]

PLUGIN_ROOT = Path(__file__).resolve().parents[2] / "herdr-plugin"
#: A test agent that does nothing but log what it is told (and answer "ok").
IDLE = "inputs = {inputs!r}\n"
#: A test agent that says what it needs and stops its stage short (``flume needs``).
NEEDS = """
[[turn]]
steps = [{say = "I cannot reach staging."}, {run = ["flume", "needs", "the API key for staging"]}]
"""
#: The popup actions, and what each popup says when no place or repository is focused.
POPUPS = {
    "tell": "flume: place: no place is in flight; launch work first",
    "launch": "flume: repository: the focused workspace stands in no git repository",
    "places": "flume: place: no place is in flight; launch work first",
}


def _herdr_path() -> str:
    """The PATH herdr runs the plugin with: ``flume`` on it, as docs/herdr.md asks."""
    return f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"


def _workspace(herdr: FakeHerdr, cwd: Path) -> tuple[str, str]:
    """A herdr workspace standing in ``cwd``, focused: its id and its pane's."""
    made = connect_line(
        herdr.socket_path,
        {"id": "w", "method": "workspace.create", "params": {"cwd": str(cwd), "focus": True}},
    )
    return made["result"]["workspace"]["workspace_id"], made["result"]["root_pane"]["pane_id"]


def _as_plugin(monkeypatch: pytest.MonkeyPatch, context: dict[str, str]) -> None:
    """Run the next commands as herdr runs the plugin's: its id, and the invoking context."""
    monkeypatch.setenv("HERDR_PLUGIN_ID", "flume")
    monkeypatch.setenv("HERDR_PLUGIN_CONTEXT_JSON", json.dumps(context))


def _requests(herdr: FakeHerdr, method: str, since: int = 0) -> list[dict[str, object]]:
    return [r for r in herdr.requests[since:] if isinstance(r, dict) and r.get("method") == method]


def _shows(herdr: FakeHerdr, popup: PluginPopup, text: str) -> None:
    """Wait until the popup shows ``text``."""
    wait_for(lambda: text in (herdr.popup_screen(popup) or ""), 30, f"the popup to show {text!r}")


def _close(herdr: FakeHerdr, popup: PluginPopup) -> None:
    """Press the Enter the popup waits for; it closes."""
    _shows(herdr, popup, "Enter closes this.")
    assert herdr.is_popup_open(popup)  # it waits for the Enter, whatever it said
    herdr.popup_type(popup, "")
    wait_for(lambda: not herdr.is_popup_open(popup), 30, "the popup to close")


def _toasts(herdr: FakeHerdr, title: str) -> list[str]:
    """The bodies of herdr notifications with ``title``."""
    return [
        str(r["params"]["body"])  # type: ignore[index]
        for r in _requests(herdr, "notification.show")
        if r["params"]["title"] == title  # type: ignore[index]
    ]


def _launch_in_herdr(repo: Path, name: str, agent_script: Path, *extra: str) -> Path:
    """Launch a fix whose agent, flume's test agent, runs in a herdr tab; its journal."""
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind", "fix", "--name", name,
        "--brief", "Mend the greeting.", "--agent", "test", "--panes", "herdr",
        "--agent-arg=--script", f"--agent-arg={agent_script}", *extra,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / f"fix--{name}" / places.JOURNAL


# --- the popup actions -----------------------------------------------------------------------


def test_the_popup_actions_open_their_popup_in_herdr_and_refuse_outside_it(
    tmp_path: Path, herdr: FakeHerdr, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tell, launch, places: herdr opens the manifest's pane as a popup; outside herdr, exit 2."""
    assert herdr.link_plugin(PLUGIN_ROOT, path=_herdr_path()) == "flume"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    workspace, pane = _workspace(herdr, elsewhere)
    _as_plugin(monkeypatch, {"workspace_id": workspace, "focused_pane_id": pane})
    for action, said in POPUPS.items():
        before = len(herdr.requests)
        ran = flume("herdr", "action", action)
        assert ran.returncode == 0, ran.stderr
        (opened,) = _requests(herdr, "plugin.pane.open", before)
        assert opened["params"] == {
            "plugin_id": "flume",
            "entrypoint": action,
            "placement": "popup",
            "focus": True,
        }
        assert herdr.schema.problems("#/schemas/request", opened) == []
        # herdr ran the manifest's pane in the plugin's folder, with a plugin pane's environment.
        popup = herdr.popups[-1]
        assert (popup.entrypoint, popup.command) == (action, ["flume", "herdr", "pane", action])
        assert popup.cwd == str(PLUGIN_ROOT)
        assert popup.env["HERDR_PLUGIN_ID"] == "flume"
        assert popup.env["HERDR_PLUGIN_ENTRYPOINT_ID"] == action
        assert popup.env["HERDR_SOCKET_PATH"] == str(herdr.socket_path)
        assert popup.context["focused_pane_id"] == pane
        assert popup.context["workspace_cwd"] == str(elsewhere)
        if action == "tell":
            # One popup at a time: herdr refuses another while this one is open, and flume says so.
            busy = flume("herdr", "action", "places")
            assert busy.returncode == 1
            expected = "flume: herdr: popup panes can only open from the normal workspace view"
            assert expected in busy.stderr
        # The popup runs flume's pane: nothing is focused to act on, so it says that, and waits.
        _shows(herdr, popup, said)
        _close(herdr, popup)
    assert len(herdr.popups) == len(POPUPS)
    # A plugin id herdr does not know: herdr's refusal, said as herdr's.
    monkeypatch.setenv("HERDR_PLUGIN_ID", "not-linked")
    unknown = flume("herdr", "action", "tell")
    assert unknown.returncode == 1
    assert "flume: herdr: plugin not found" in unknown.stderr
    # Outside herdr (no plugin id): refused with exit status 2; herdr is asked for no popup.
    monkeypatch.delenv("HERDR_PLUGIN_ID")
    before = len(herdr.requests)
    for action in POPUPS:
        ran = flume("herdr", "action", action)
        assert ran.returncode == 2
        assert (
            f"flume: action: the {action} popup opens only when herdr runs this as its plugin; "
            f"run flume herdr pane {action} in a terminal inside herdr instead"
        ) in ran.stderr
    assert _requests(herdr, "plugin.pane.open", before) == []
    assert len(herdr.popups) == len(POPUPS)
    herdr.assert_clean()


# --- the launch popup ------------------------------------------------------------------------


def test_the_launch_popup_launches_in_the_focused_repository_with_herdr_panes(
    tmp_path: Path, panes: Tmux, herdr: FakeHerdr, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Typed into herdr's popup: kind, name, brief, agent; the place runs its agent in herdr.

    ``panes`` (flume's own tmux, set before the fake starts) is there to be found empty.
    """
    repo = agent_repository(tmp_path, TIMING)
    herdr.link_plugin(PLUGIN_ROOT, path=_herdr_path())
    workspace, pane = _workspace(herdr, repo)
    _as_plugin(monkeypatch, {"workspace_id": workspace, "focused_pane_id": pane})
    ran = flume("herdr", "action", "launch")
    assert ran.returncode == 0, ran.stderr
    popup = herdr.popups[-1]
    _shows(herdr, popup, f"Launch work in {repo}")
    answers = {
        "Kind (fix, change, question or declared) [fix]: ": "fix",
        "Name (letters, digits, . _ -): ": "greet",
        "Brief (one line): ": "Mend the greeting.",
        "Agent (claude, codex) [claude]: ": "test",
    }
    for prompt, answer in answers.items():
        _shows(herdr, popup, prompt)
        herdr.popup_type(popup, answer)
    journal_path = places.journals_dir(repo) / "fix--greet" / places.JOURNAL
    _shows(herdr, popup, "fix--greet: ")
    _close(herdr, popup)
    launched = observations(journal_path)[0]
    assert isinstance(launched, Launched)
    launch = launched.launch
    assert (launch.repository, launch.kind, launch.name) == (str(repo), "fix", "greet")
    assert launch.brief == "Mend the greeting."
    assert (launch.agent.agent, launch.agent.panes) == (AgentName.TEST, Panes.HERDR)
    # Its agent runs in a herdr tab of its own, tokened with its session.
    wait_for(lambda: sessions_started(journal_path), 60, "the agent to start")
    (session,) = sessions_started(journal_path)

    def tokened() -> bool:
        listed = connect_line(herdr.socket_path, {"id": "l", "method": "pane.list", "params": {}})
        return any(
            p.get("tokens", {}).get(SESSION_TOKEN) == session for p in listed["result"]["panes"]
        )

    wait_for(tokened, 30, "the agent's herdr pane")
    (applied,) = _requests(herdr, "layout.apply")
    assert applied["params"]["tab_label"] == "fix--greet"  # type: ignore[index]
    assert panes.panes() == {}  # nothing ran in flume's own tmux server
    herdr.assert_clean()


def _read_until(process: subprocess.Popen[bytes], text: str, seconds: float) -> str:
    """What the process wrote to stdout until it wrote ``text`` (a prompt, with no newline)."""
    assert process.stdout is not None
    seen = b""
    deadline = time.monotonic() + seconds
    while text.encode() not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            message = f"waited {seconds}s for {text!r}; saw {seen.decode(errors='replace')!r}"
            raise AssertionError(message)
        ready, _, _ = select.select([process.stdout], [], [], left)
        if ready:
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                message = f"the popup ended before {text!r}: {seen.decode(errors='replace')!r}"
                raise AssertionError(message)
            seen += chunk
    return seen.decode()


#: read(2)'s number, as Linux's ``/proc/PID/syscall`` names it, where it is known.
_READ = {"x86_64": 0, "aarch64": 63}.get(platform.machine())


def _reads_stdin(pid: int) -> bool:
    """Whether the process is blocked reading its stdin (Linux's ``/proc/PID/syscall``)."""
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text(encoding="ascii").split()
    except OSError:
        return False
    return len(fields) > 1 and fields[0] == str(_READ) and fields[1] == "0x0"


def test_a_bad_launch_answer_is_said_waits_for_enter_exits_2_and_makes_nothing(
    tmp_path: Path, herdr: FakeHerdr, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unknown kind: flume's message, the popup kept until Enter, exit status 2, nothing made."""
    repo = agent_repository(tmp_path, TIMING)
    workspace, pane = _workspace(herdr, repo)
    context = {"workspace_id": workspace, "focused_pane_id": pane, "focused_pane_cwd": str(repo)}
    _as_plugin(monkeypatch, context)
    before = world_of(repo)
    popup = subprocess.Popen(
        [sys.executable, "-m", "flume", "herdr", "pane", "launch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
    )
    try:
        assert popup.stdin is not None
        popup.stdin.write(b"nosuch\ngreet\nMend the greeting.\ntest\n")
        popup.stdin.flush()
        shown = _read_until(popup, "Enter closes this.", 60)
        # Refused, and still there: it waits on the Enter that closes it (every answer before
        # it was read, so the read it is blocked in is that Enter's).
        if _READ is not None:
            wait_for(lambda: _reads_stdin(popup.pid), 30, "the popup to wait for its Enter")
        assert popup.poll() is None
        assert f"Launch work in {repo}" in shown
        popup.stdin.write(b"\n")
        popup.stdin.close()
        assert popup.wait(timeout=30) == 2
    finally:
        if popup.poll() is None:
            popup.kill()
            popup.wait()
    assert popup.stderr is not None
    said = popup.stderr.read().decode()
    assert "flume: kind: no kind 'nosuch' is built in or declared" in said
    assert world_of(repo) == before
    assert not places.journals_dir(repo).exists() or not list(
        places.journals_dir(repo).glob("*/journal.jsonl")
    )
    assert _requests(herdr, "layout.apply") == []
    herdr.assert_clean()


# --- the places and tell popups --------------------------------------------------------------


def _two_idle_places(tmp_path: Path) -> tuple[Path, dict[str, Path], dict[str, Path]]:
    """Two fixes in one repository, their agents in herdr, waiting: journals and input logs."""
    repo = agent_repository(tmp_path, TIMING)
    journals: dict[str, Path] = {}
    inputs: dict[str, Path] = {}
    for name in ("alpha", "beta"):
        inputs[name] = tmp_path / f"{name}-inputs.log"
        idle = script(tmp_path, IDLE.format(inputs=str(inputs[name])), f"{name}.toml")
        journals[name] = _launch_in_herdr(repo, name, idle)
    for name, journal_path in journals.items():
        wait_for(taken_and_waiting(journal_path), 60, f"{name}'s agent to take its prompt")
    return repo, journals, inputs


def _number_of(name: str) -> int:
    """The number the places popup lists ``name`` under (it lists :func:`in_flight`'s order)."""
    return [each.name for each in in_flight()].index(name) + 1


def _told(journal_path: Path) -> list[str]:
    return [seen.text for seen in observations(journal_path) if isinstance(seen, Told)]


def test_the_places_popup_picks_a_place_by_number_and_the_tell_popup_asks_which(
    tmp_path: Path, herdr: FakeHerdr, monkeypatch: pytest.MonkeyPatch
) -> None:
    """places: a number, then t, o or s acts on that place alone; tell asks which when unsure."""
    repo, journals, inputs = _two_idle_places(tmp_path)
    alpha, beta = _number_of("fix--alpha"), _number_of("fix--beta")
    # Focused on the repository, not on one place in it: the popups must ask.
    _as_plugin(monkeypatch, {"focused_pane_cwd": str(repo)})
    told = flume("herdr", "pane", "places", stdin=f"{beta}\nt\nUse the tests.\n\n")
    assert told.returncode == 0, told.stderr
    assert f"{beta:>3}  fix--beta code#1 waiting" in told.stdout
    assert f"{alpha:>3}  fix--alpha code#1 waiting" in told.stdout
    assert "fix--beta: tell 1" in told.stdout
    assert told.stdout.endswith("Enter closes this.")
    assert _told(journals["beta"]) == ["Use the tests."]
    assert _told(journals["alpha"]) == []
    wait_for(lambda: "Use the tests." in inputs["beta"].read_text(), 30, "the tell typed")
    # o: the place's agent pane is focused in herdr.
    before = len(herdr.requests)
    opened = flume("herdr", "pane", "places", stdin=f"{alpha}\no\n\n")
    assert opened.returncode == 0, opened.stderr
    agent = place_of(journals["alpha"]).agent
    assert agent is not None
    focused = _requests(herdr, "pane.focus", before)
    assert [r["params"] for r in focused] == [{"pane_id": agent.pane}]
    # The tell popup, with no single place meant, lists them and asks which.
    asked = flume("herdr", "pane", "tell", stdin=f"{beta}\nAnd the docs.\n\n")
    assert asked.returncode == 0, asked.stderr
    assert "Which place (its number): " in asked.stdout
    assert "Tell fix--beta (one line, Enter sends): " in asked.stdout
    assert "fix--beta: tell 2" in asked.stdout
    assert _told(journals["beta"]) == ["Use the tests.", "And the docs."]
    wait_for(lambda: "And the docs." in inputs["beta"].read_text(), 30, "the second tell typed")
    # Answers that name nothing: said, the closing Enter still asked for, exit status 2.
    for answers, said in (
        ("9\n\n", "flume: place: '9' is no number listed; type one of them"),
        (f"{alpha}\nx\n\n", "flume: action: 'x' is none of o t s r p; type one of them"),
    ):
        wrong = flume("herdr", "pane", "places", stdin=answers)
        assert wrong.returncode == 2
        assert said in wrong.stderr
        assert wrong.stdout.endswith("Enter closes this.")
    assert _told(journals["alpha"]) == []
    # s: the chosen place's agent is stopped, the other's not.
    stopped = flume("herdr", "pane", "places", stdin=f"{alpha}\ns\n\n")
    assert stopped.returncode == 0, stopped.stderr
    assert "fix--alpha: the agent of stage code is ended" in stopped.stdout
    assert any(isinstance(seen, StopAsked) for seen in observations(journals["alpha"]))
    assert not any(isinstance(seen, StopAsked) for seen in observations(journals["beta"]))
    # Run where no herdr listens, the popup still acts and exits 0: only the sidebar's refresh
    # after the tell is left undone, and it is no failure of what the popup was asked to do.
    monkeypatch.setenv("HERDR_SOCKET_PATH", str(tmp_path / "absent.sock"))
    offline = flume("herdr", "pane", "places", stdin=f"{beta}\nt\nNo herdr here.\n\n")
    assert offline.returncode == 0, offline.stderr
    assert "fix--beta: tell 3" in offline.stdout
    assert _told(journals["beta"])[-1] == "No herdr here."
    herdr.assert_clean()


# --- retry and proceed -----------------------------------------------------------------------


def test_the_proceed_action_releases_a_stage_waiting_on_the_callers_word(
    tmp_path: Path, herdr: FakeHerdr, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proceed action on the focused place: journaled, in a herdr toast; the stage starts."""
    repo = agent_repository(tmp_path, TIMING)
    journal_path = _launch_in_herdr(
        repo, "crew", script(tmp_path, FIX_THEN_SUBMIT), "--wait", "submit"
    )

    def waits() -> bool:
        place = place_of(journal_path)
        return place.stage.name == "submit" and isinstance(place.stage.phase, AwaitingWord)

    wait_for(waits, 60, "the submit stage to wait on the caller's word")
    assert not sessions_started(journal_path, "submit")
    _as_plugin(monkeypatch, {"focused_pane_cwd": place_of(journal_path).path})
    ran = flume("herdr", "action", "proceed")
    assert ran.returncode == 0, ran.stderr
    said = "fix--crew: stage submit is released; it starts with a fresh agent"
    assert f"flume proceed: {said}" in ran.stdout
    assert sum(isinstance(seen, ProceedAsked) for seen in observations(journal_path)) == 1
    assert _toasts(herdr, "flume proceed") == [said]
    wait_for(lambda: sessions_started(journal_path, "submit"), 60, "the submit stage's agent")
    herdr.assert_clean()


def test_the_retry_action_runs_a_stage_stopped_short_again(
    tmp_path: Path, herdr: FakeHerdr, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retry action on the focused place: journaled, in a herdr toast; a fresh agent starts."""
    repo = agent_repository(tmp_path, TIMING)
    journal_path = _launch_in_herdr(repo, "needy", script(tmp_path, NEEDS))
    wait_for(stopped_short(journal_path, ShortCause.NEEDS), 60, "the stage to stop short")
    _as_plugin(monkeypatch, {"focused_pane_cwd": place_of(journal_path).path})
    ran = flume("herdr", "action", "retry")
    assert ran.returncode == 0, ran.stderr
    said = "fix--needy: stage code starts again (attempt 2) with a fresh agent"
    assert f"flume retry: {said}" in ran.stdout
    assert sum(isinstance(seen, RetryAsked) for seen in observations(journal_path)) == 1
    assert _toasts(herdr, "flume retry") == [said]
    wait_for(lambda: sessions_started(journal_path, "code", 2), 60, "attempt 2's agent")
    herdr.assert_clean()


# --- open, for an agent in flume's own tmux --------------------------------------------------


def test_open_shows_an_agent_in_flumes_tmux_in_a_new_herdr_tab(
    tmp_path: Path, panes: Tmux, herdr: FakeHerdr, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tmux-run agent opens in a herdr tab of the focused workspace running flume attach.

    ``panes`` comes before ``herdr``: the fake's tmux server, started after flume's tmux socket
    was set, hands that socket to the tab's ``flume attach``.
    """
    repo = agent_repository(tmp_path, TIMING)
    idle = script(tmp_path, IDLE.format(inputs=str(tmp_path / "inputs.log")))
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind", "fix", "--name", "tmuxed",
        "--brief", "Mend the greeting.", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={idle}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    journal_path = places.journals_dir(repo) / "fix--tmuxed" / places.JOURNAL
    wait_for(taken_and_waiting(journal_path), 60, "the agent to take its prompt")
    place = place_of(journal_path)
    assert place.agent is not None
    assert place.agent.pane in (panes.panes() or {})  # in flume's own tmux, not herdr
    workspace, pane = _workspace(herdr, repo)
    context = {"workspace_id": workspace, "focused_pane_id": pane, "focused_pane_cwd": place.path}
    _as_plugin(monkeypatch, context)
    before = len(herdr.requests)
    opened = flume("herdr", "action", "open")
    assert opened.returncode == 0, opened.stderr
    (applied,) = _requests(herdr, "layout.apply", before)
    assert herdr.schema.problems("#/schemas/request", applied) == []
    params = applied["params"]
    assert isinstance(params, dict)
    assert "workspace_id" not in params  # the focused workspace's
    assert (params["tab_label"], params["focus"]) == ("fix--tmuxed", True)
    root = params["root"]
    assert root["command"] == [
        sys.executable, "-P", "-m", "flume", "attach", "fix--tmuxed", "--repository", str(repo),
    ]  # fmt: skip
    assert root["cwd"] == place.path
    assert _requests(herdr, "pane.focus", before) == []
    # The tab is in the focused workspace, and shows the agent's screen from flume's tmux.
    listed = connect_line(herdr.socket_path, {"id": "l", "method": "pane.list", "params": {}})
    (tab,) = [p for p in listed["result"]["panes"] if p.get("label") == "fix--tmuxed"]
    assert tab["workspace_id"] == workspace
    assert tab["focused"] is True

    def shown() -> str:
        read = connect_line(
            herdr.socket_path,
            {"id": "r", "method": "pane.read", "params": {"pane_id": tab["pane_id"],
                                                           "source": "visible"}},
        )  # fmt: skip
        return str(read["result"]["read"]["text"])

    wait_for(lambda: "flume test agent" in shown(), 30, "the agent's screen in the herdr tab")
    herdr.assert_clean()
