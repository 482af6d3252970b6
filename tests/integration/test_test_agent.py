"""The test agent (``python -m flume.testing.agent``) in real tmux panes, seen as flume sees it.

Each test starts the agent in a tmux server of its own (a private socket, no config file) with
HOME pointed at the test's own folder, and looks only where flume looks: the screen, the
transcript and the live-session registry. Waits poll what can be seen, with a deadline.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from flume.core.launch import AgentName
from flume.shell.agents import claude, of, scripted
from flume.testing.agent import (
    PROMPT_MARK,
    SCRIPT_VARIABLE,
    Key,
    Keys,
    ScriptError,
    default_home,
    parse_script,
    slug,
)
from tests.integration.places_kit import GIT_IDENTITY, run_git

#: How long any one wait may take before the test fails.
DEADLINE = 5.0
TMUX = shutil.which("tmux")
#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = [
    pytest.mark.processes,
    pytest.mark.skipif(TMUX is None, reason="tmux is not installed"),
]
T = TypeVar("T")
#: A JSON object as ``json`` reads it.
JSON = dict[str, Any]


def wait_for(look: Callable[[], T | None], what: str, timeout: float = DEADLINE) -> T:
    """Poll ``look`` until it gives something truthy; fail saying ``what`` was awaited."""
    deadline = time.monotonic() + timeout
    while True:
        seen = look()
        if seen:
            return seen
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout}s for {what}; last saw {seen!r}")
        time.sleep(0.01)


class AgentPane:
    """One test agent in a pane of a private tmux server, and the files it keeps."""

    def __init__(self, *, socket: Path, home: Path, place: Path, session_id: str) -> None:
        self.socket = socket
        self.home = home
        self.place = place
        self.session_id = session_id
        self.pid = 0

    @property
    def root(self) -> Path:
        """Where the agent keeps its files: flume's state folder under its HOME, by default."""
        return self.home / ".local" / "state" / "flume" / "test-agent"

    def tmux(self, *args: str, stdin: str | None = None) -> str:
        """Run ``tmux -S SOCKET -f /dev/null args``; its output (a failure fails the test)."""
        assert TMUX is not None
        environment = {key: value for key, value in os.environ.items() if key != "TMUX"}
        ran = subprocess.run(  # noqa: S603 (tmux, with the test's own arguments)
            [TMUX, "-S", str(self.socket), "-f", "/dev/null", *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            env=environment,
        )
        assert ran.returncode == 0, ran.stderr
        return ran.stdout

    def start(self, *argv: str, size: tuple[int, int] = (200, 50)) -> None:
        """Start the agent with ``argv`` in its place, its pane kept when it exits."""
        command = [
            "env",
            "-u",
            "XDG_STATE_HOME",
            f"CLAUDE_CONFIG_DIR={self.home / '.claude'}",
            f"HOME={self.home}",
            f"PATH={os.environ['PATH']}",
            *(f"{key}={value}" for key, value in GIT_IDENTITY.items()),
            sys.executable,
            "-m",
            "flume.testing.agent",
            "--session-id",
            self.session_id,
            *argv,
        ]
        columns, rows = size
        self.tmux(
            "set-option", "-g", "remain-on-exit", "on", ";",
            "new-session", "-d", "-s", "t", "-x", str(columns), "-y", str(rows),
            "-c", str(self.place), *command,
        )  # fmt: skip
        self.pid = int(self.tmux("display-message", "-p", "-t", "t", "#{pane_pid}"))

    # --- acting ----------------------------------------------------------------------------

    def paste(self, text: str) -> None:
        """Paste ``text`` as flume does: from standard input into a buffer, bracketed."""
        self.tmux("load-buffer", "-b", "p", "-", stdin=text)
        self.tmux("paste-buffer", "-p", "-r", "-d", "-b", "p", "-t", "t")

    def type(self, text: str) -> None:
        """Type ``text`` literally, key by key."""
        self.tmux("send-keys", "-t", "t", "-l", text)

    def press(self, *keys: str) -> None:
        """Press named keys (``Enter``, ``BSpace``, ``C-c``)."""
        self.tmux("send-keys", "-t", "t", *keys)

    def say(self, text: str) -> None:
        """Paste ``text``, wait until the composer shows its last line, then press Enter."""
        self.paste(text)
        last = text.rstrip("\n").rsplit("\n", 1)[-1][-40:]
        wait_for(lambda: last in self.composer(), f"the composer to show {last!r}")
        self.press("Enter")
        wait_for(lambda: self.composer() == "", "the composer to empty")

    # --- looking ---------------------------------------------------------------------------

    def screen(self) -> str:
        """The pane's screen as text."""
        return self.tmux("capture-pane", "-p", "-t", "t")

    def composer(self) -> str:
        """The text in the composer on screen, its rows joined ('' when empty)."""
        rows = self.screen().rstrip("\n").split("\n")
        starts = [index for index, row in enumerate(rows) if row.startswith(PROMPT_MARK)]
        if not starts:
            return "(no composer)"
        shown = [rows[starts[-1]][2:], *(row[2:] for row in rows[starts[-1] + 1 :])]
        return "\n".join(shown).strip()

    def registry(self) -> JSON | None:
        """The agent's live-session entry, or None while there is none."""
        path = self.root / "sessions" / f"{self.pid}.json"
        try:
            entry: JSON = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return entry

    def status(self) -> str | None:
        """The registry's ``status``, or None without an entry."""
        entry = self.registry()
        return None if entry is None else str(entry["status"])

    @property
    def transcript(self) -> Path:
        """Where Claude Code's scheme puts this session's transcript."""
        return self.root / "projects" / slug(str(self.place)) / f"{self.session_id}.jsonl"

    def lines(self) -> list[JSON]:
        """The transcript's lines ([] before it exists)."""
        try:
            text = self.transcript.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines()]

    def prompts(self) -> list[str]:
        """The prompts recorded as typed: user lines whose content is a string."""
        return [
            message["content"]
            for line in self.lines()
            if line["type"] == "user"
            and isinstance(message := line["message"], dict)
            and isinstance(message["content"], str)
        ]

    def turns_ended(self) -> int:
        """How many ``turn_duration`` lines the transcript holds."""
        return sum(line.get("subtype") == "turn_duration" for line in self.lines())

    def wait_status(self, status: str) -> None:
        """Wait until the registry says ``status``."""
        wait_for(lambda: self.status() == status, f"status {status}")


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Callable[..., AgentPane]]:
    """Start a test agent with a script (TOML text) and arguments; its tmux server dies after."""
    socket_dir = Path(tempfile.mkdtemp(prefix="fta-"))  # a short path: sockets allow 107 bytes
    panes: list[AgentPane] = []

    def start(script: str | None, *argv: str, place: Path | None = None) -> AgentPane:
        """An agent running ``script`` with ``argv`` in ``place`` (a fresh folder by default)."""
        home = tmp_path / "home"
        home.mkdir()
        where = place or tmp_path / "place"
        where.mkdir(exist_ok=True)
        pane = AgentPane(
            socket=socket_dir / "tmux.sock",
            home=home,
            place=where.resolve(),
            session_id=str(uuid.uuid4()),
        )
        panes.append(pane)
        extra: list[str] = []
        if script is not None:
            script_file = tmp_path / "script.toml"
            script_file.write_text(script, encoding="utf-8")
            extra = ["--script", str(script_file)]
        pane.start(*extra, *argv)
        return pane

    try:
        yield start
    finally:
        for pane in panes:
            subprocess.run(  # noqa: S603 (tmux, with the test's own arguments)
                [TMUX or "tmux", "-S", str(pane.socket), "kill-server"],
                capture_output=True,
                check=False,
            )
        shutil.rmtree(socket_dir, ignore_errors=True)


FAST = "ready_after = 0.1\n"


def test_a_pasted_prompt_is_recorded_and_the_registry_goes_idle_busy_idle(
    agent: Callable[..., AgentPane],
) -> None:
    """A bracketed paste then Enter is a typed user line; the registry says idle, busy, idle."""
    pane = agent(FAST + '[[turn]]\nsteps = [{say = "Looking."}, {work = 0.4}, {say = "Done."}]\n')
    pane.wait_status("idle")
    entry = pane.registry()
    assert entry is not None
    assert entry["pid"] == pane.pid
    assert entry["sessionId"] == pane.session_id
    assert entry["cwd"] == str(pane.place)
    assert (entry["kind"], entry["entrypoint"], entry["version"]) == (
        "interactive",
        "cli",
        "flume-test-agent",
    )
    assert isinstance(entry["startedAt"], int)
    assert isinstance(entry["updatedAt"], int)
    assert entry["waitingFor"] is None
    pane.paste("Mend the greeting [flume:1]")
    wait_for(lambda: "Mend the greeting [flume:1]" in pane.composer(), "the paste on screen")
    assert not pane.transcript.exists(), "the transcript appears with the first prompt"
    pane.press("Enter")
    pane.wait_status("busy")
    pane.wait_status("idle")
    lines = pane.lines()
    assert [line["type"] for line in lines] == ["user", "assistant", "assistant", "system"]
    prompt = lines[0]
    assert prompt["message"] == {"role": "user", "content": "Mend the greeting [flume:1]"}
    assert prompt["parentUuid"] is None
    assert (prompt["promptSource"], prompt["userType"], prompt["entrypoint"]) == (
        "typed",
        "external",
        "cli",
    )
    assert (prompt["sessionId"], prompt["cwd"], prompt["isSidechain"]) == (
        pane.session_id,
        str(pane.place),
        False,
    )
    assert str(prompt["timestamp"]).endswith("Z")
    assert [line["parentUuid"] for line in lines[1:]] == [line["uuid"] for line in lines[:-1]]
    said = [line["message"] for line in lines[1:3]]
    assert [(m["content"], m["stop_reason"]) for m in said] == [
        ([{"type": "text", "text": "Looking."}], None),
        ([{"type": "text", "text": "Done."}], "end_turn"),
    ]
    assert lines[3]["subtype"] == "turn_duration"
    assert int(lines[3]["durationMs"]) >= 400
    wait_for(lambda: "● Done." in pane.screen(), "the answer on screen")


@pytest.mark.parametrize("script", ['lose = "all"', "record = false"])
def test_lose_all_or_record_false_records_nothing(
    agent: Callable[..., AgentPane], script: str
) -> None:
    """With ``lose = "all"`` or ``record = false`` nothing is recorded and the agent stays idle."""
    pane = agent(FAST + script + "\n")
    pane.wait_status("idle")
    pane.say("first [flume:1]")
    pane.say("second [flume:1]")
    assert pane.status() == "idle"
    assert not pane.transcript.exists()


def test_lose_one_loses_the_first_and_records_the_second(agent: Callable[..., AgentPane]) -> None:
    """``lose = 1``: the first submitted input vanishes, the second is recorded."""
    pane = agent(FAST + "lose = 1\n")
    pane.wait_status("idle")
    pane.say("send one [flume:1]")
    pane.say("send two [flume:1]")
    wait_for(pane.turns_ended, "the turn to end")
    assert pane.prompts() == ["send two [flume:1]"]


def test_keys_before_ready_are_dropped(agent: Callable[..., AgentPane]) -> None:
    """Keys typed while the agent starts are read and lost; once ready, input is taken."""
    pane = agent("ready_after = 1.0\n")
    wait_for(lambda: "starting…" in pane.screen(), "the agent to draw its start")
    assert pane.status() in {None, "busy"}
    pane.type("too early [flume:1]")
    pane.press("Enter")
    pane.wait_status("idle")
    assert pane.composer() == ""
    pane.say("in time [flume:1]")
    wait_for(pane.turns_ended, "the turn to end")
    assert pane.prompts() == ["in time [flume:1]"]


BIG = "".join(f"line {number:05} {'ä' * 20} {'x' * 70}\n" for number in range(1000)) + "end [f:9]"


@pytest.mark.parametrize(
    "text",
    [
        "Zeile eins: Grüße 🌍\n第二行 — «quoted»\n\tindented; with a tab\nlast [flume:2]",
        "run the tests and commit;",
        BIG,
    ],
    ids=["multiline-unicode", "trailing-semicolon", "100KB"],
)
def test_prompts_are_recorded_verbatim(agent: Callable[..., AgentPane], text: str) -> None:
    """Multi-line unicode, a trailing ``;`` and 100 KB are recorded exactly as pasted."""
    pane = agent(FAST)
    pane.wait_status("idle")
    pane.say(text)
    wait_for(pane.turns_ended, "the turn to end")
    assert pane.prompts() == [text]


def test_tools_commit_and_run_and_report_failures(
    agent: Callable[..., AgentPane], tmp_path: Path
) -> None:
    """``write`` and ``commit`` make a commit; a failing commit or command is an error result."""
    repo = tmp_path / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    run_git(repo, "commit", "-q", "--allow-empty", "-m", "Start")
    script = FAST + (
        "[[turn]]\nsteps = [\n"
        '  {write = {path = "web/fix.txt", text = "fixed\\n"}},\n'
        '  {commit = "Fix the greeting"},\n'
        '  {commit = "Nothing left"},\n'
        '  {run = ["git", "log", "--format=%s"]},\n'
        '  {run = ["sh", "-c", "echo broken >&2; exit 4"]},\n'
        '  {run = ["no-such-command-here"]},\n'
        "]\n"
    )
    pane = agent(script, place=repo)
    pane.wait_status("idle")
    pane.say("commit it [flume:1]")
    wait_for(pane.turns_ended, "the turn to end")
    assert run_git(repo, "log", "--format=%s").split() == ["Fix", "the", "greeting", "Start"]
    assert run_git(repo, "show", "HEAD:web/fix.txt") == "fixed\n"
    lines = pane.lines()
    uses = [
        block
        for line in lines
        if line["type"] == "assistant"
        for block in line["message"]["content"]
        if block["type"] == "tool_use"
    ]
    results = [
        block
        for line in lines
        if line["type"] == "user" and isinstance(line["message"]["content"], list)
        for block in line["message"]["content"]
    ]
    assert [use["name"] for use in uses] == ["Write", "Bash", "Bash", "Bash", "Bash", "Bash"]
    assert [result["tool_use_id"] for result in results] == [use["id"] for use in uses]
    errors = [result.get("is_error", False) for result in results]
    assert errors == [False, False, True, False, True, True]
    assert "nothing to commit" in results[2]["content"]
    assert "Fix the greeting" in results[3]["content"]
    assert results[4]["content"].startswith("Exit code 4")
    assert "broken" in results[4]["content"]
    last = [line for line in lines if line["type"] == "assistant"][-1]
    assert last["message"]["stop_reason"] == "end_turn"


def test_a_board_path_is_written_in_the_added_folder(
    agent: Callable[..., AgentPane], tmp_path: Path
) -> None:
    """``$board/...`` is written under ``--add-dir``, as Write's file_path says.

    A plain path is still the working directory's.
    """
    board = tmp_path / "board"
    script = FAST + (
        "[[turn]]\nsteps = [\n"
        '  {write = {path = "$board/review/verdict.json", text = \'{"result": "done"}\'}},\n'
        '  {write = {path = "here.txt", text = "here\\n"}},\n'
        "]\n"
    )
    pane = agent(script, "--add-dir", str(board))
    pane.wait_status("idle")
    pane.say("judge it [flume:1]")
    wait_for(pane.turns_ended, "the turn to end")
    assert json.loads((board / "review" / "verdict.json").read_text()) == {"result": "done"}
    assert (pane.place / "here.txt").read_text() == "here\n"
    assert not (pane.place / "$board").exists()
    uses = [
        block["input"]["file_path"]
        for line in pane.lines()
        if line["type"] == "assistant"
        for block in line["message"]["content"]
        if block["type"] == "tool_use"
    ]
    assert uses == [str(board / "review" / "verdict.json"), str(pane.place / "here.txt")]


def test_a_board_path_without_an_added_folder_fails_the_write(
    agent: Callable[..., AgentPane],
) -> None:
    """No ``--add-dir``: a ``$board/`` write is an error result and writes nothing."""
    script = FAST + '[[turn]]\nsteps = [{write = {path = "$board/v.json", text = "x"}}]\n'
    pane = agent(script)
    pane.wait_status("idle")
    pane.say("judge it [flume:1]")
    wait_for(pane.turns_ended, "the turn to end")
    results = [
        block
        for line in pane.lines()
        if line["type"] == "user" and isinstance(line["message"]["content"], list)
        for block in line["message"]["content"]
    ]
    assert [result.get("is_error", False) for result in results] == [True]
    assert "no folder was added" in results[0]["content"]
    assert not (pane.place / "$board").exists()


def test_ask_waits_for_input_needed_and_the_answer_goes_on(agent: Callable[..., AgentPane]) -> None:
    """``ask`` says waiting/"input needed"; the next input answers it as a tool result."""
    pane = agent(FAST + '[[turn]]\nsteps = [{ask = "Which file?"}, {say = "Thanks."}]\n')
    pane.wait_status("idle")
    pane.say("ask me [flume:1]")
    pane.wait_status("waiting")
    entry = pane.registry()
    assert entry is not None
    assert entry["waitingFor"] == "input needed"
    asked = [line for line in pane.lines() if line["type"] == "assistant"][-1]
    (block,) = asked["message"]["content"]
    assert block["name"] == "AskUserQuestion"
    assert block["input"]["questions"][0]["question"] == "Which file?"
    assert "Which file?" in pane.screen()
    pane.say("web/hello.html")
    wait_for(pane.turns_ended, "the turn to end")
    pane.wait_status("idle")
    assert pane.prompts() == ["ask me [flume:1]"]
    answer = [line for line in pane.lines() if line["type"] == "user"][-1]
    (result,) = answer["message"]["content"]
    assert result["tool_use_id"] == block["id"]
    assert "web/hello.html" in result["content"]


def test_text_typed_without_enter_is_never_recorded(agent: Callable[..., AgentPane]) -> None:
    """Typed text sits in the composer (backspace edits it) and is recorded only on Enter."""
    pane = agent(FAST)
    pane.wait_status("idle")
    pane.type("draft text")
    wait_for(lambda: pane.composer() == "draft text", "the typing on screen")
    pane.press("BSpace", "BSpace", "BSpace", "BSpace")
    pane.type("ft [flume:1]")
    wait_for(lambda: pane.composer() == "draft ft [flume:1]", "the edit on screen")
    assert not pane.transcript.exists()
    assert pane.status() == "idle"
    pane.press("Enter")
    wait_for(pane.turns_ended, "the turn to end")
    assert pane.prompts() == ["draft ft [flume:1]"]


def test_a_positional_prompt_is_recorded(agent: Callable[..., AgentPane]) -> None:
    """``agent "PROMPT"`` submits the prompt once ready, as ``claude "PROMPT"`` does."""
    pane = agent(FAST, "Start here [flume:1]")
    wait_for(pane.turns_ended, "the turn to end")
    pane.wait_status("idle")
    assert pane.prompts() == ["Start here [flume:1]"]


def test_input_during_a_turn_is_queued_and_match_picks_the_turn(
    agent: Callable[..., AgentPane],
) -> None:
    """A prompt sent while busy is taken after the turn; a ``match`` turn answers its prompt."""
    script = FAST + (
        '[[turn]]\nmatch = "beta"\nsteps = [{say = "for beta"}]\n'
        '[[turn]]\nsteps = [{work = 0.8}, {say = "plain"}]\n'
    )
    pane = agent(script)
    pane.wait_status("idle")
    pane.say("alpha [flume:1]")
    pane.wait_status("busy")
    pane.say("beta [flume:2]")
    assert pane.prompts() == ["alpha [flume:1]"], "the second waits for the turn to end"
    wait_for(lambda: pane.turns_ended() == 2, "both turns to end")
    said = [
        (line["type"], line["message"]["content"] if line["type"] != "system" else None)
        for line in pane.lines()
    ]
    assert said == [
        ("user", "alpha [flume:1]"),
        ("assistant", [{"type": "text", "text": "plain"}]),
        ("system", None),
        ("user", "beta [flume:2]"),
        ("assistant", [{"type": "text", "text": "for beta"}]),
        ("system", None),
    ]


def dead(pane: AgentPane) -> str | None:
    """``#{pane_dead_status}`` once the pane's process has ended ('' if tmux did not reap it).

    tmux 3.3a sometimes misses the child's exit (seen here about one exit in ten): the process
    stays a zombie and the pane is dead with no status. The exit status itself is checked under
    a plain pseudo-terminal by :func:`test_exit_status_under_a_pseudo_terminal`.
    """
    said = pane.tmux("display-message", "-p", "-t", "t", "#{pane_dead}:#{pane_dead_status}")
    is_dead, _, status = said.strip().partition(":")
    return status if is_dead == "1" else None


def test_exit_ends_the_process_and_removes_the_registry_entry(
    agent: Callable[..., AgentPane],
) -> None:
    """An ``exit`` step ends the agent with its status; its registry entry is gone."""
    pane = agent(FAST + '[[turn]]\nsteps = [{say = "Bye."}, {exit = 3}]\n')
    pane.wait_status("idle")
    # Not pane.say: the agent may exit before its composer is seen empty (a dead pane's
    # screen keeps what it last drew).
    pane.paste("leave [flume:1]")
    wait_for(lambda: "leave [flume:1]" in pane.composer(), "the composer to show the words")
    pane.press("Enter")
    wait_for(lambda: dead(pane) is not None, "the pane to die")
    assert dead(pane) in {"3", ""}
    assert pane.registry() is None
    assert pane.prompts() == ["leave [flume:1]"]
    assert pane.turns_ended() == 0, "an exit ends the process mid-turn"


def test_ctrl_c_ends_the_agent(agent: Callable[..., AgentPane]) -> None:
    """Ctrl-C ends the agent with status 0 and removes its registry entry."""
    pane = agent(FAST)
    pane.wait_status("idle")
    pane.press("C-c")
    wait_for(lambda: dead(pane) is not None, "the pane to die")
    assert dead(pane) in {"0", ""}
    assert pane.registry() is None


def test_exit_status_under_a_pseudo_terminal(tmp_path: Path) -> None:
    """Under a bare pseudo-terminal an ``exit = 3`` turn is the exit status.

    The script comes from ``$FLUME_TEST_AGENT_SCRIPT`` and the files go under
    ``--home``, never under a real agent's home (``$CLAUDE_CONFIG_DIR`` here).
    """
    script = tmp_path / "script.toml"
    script.write_text(FAST + "[[turn]]\nsteps = [{exit = 3}]\n", encoding="utf-8")
    root = tmp_path / "home"
    claude = tmp_path / "claude"
    main, secondary = os.openpty()
    try:
        process = subprocess.Popen(  # noqa: S603 (our own interpreter and module)
            [sys.executable, "-m", "flume.testing.agent", "--home", str(root), "go"],
            cwd=tmp_path,
            env={**os.environ, "CLAUDE_CONFIG_DIR": str(claude), SCRIPT_VARIABLE: str(script)},
            stdin=secondary,
            stdout=secondary,
            stderr=secondary,
            start_new_session=True,
        )
        os.close(secondary)
        deadline = time.monotonic() + DEADLINE
        while process.poll() is None and time.monotonic() < deadline:
            readable, _, _ = select.select([main], [], [], 0.05)
            if readable:
                with contextlib.suppress(OSError):
                    os.read(main, 65536)
        if process.poll() is None:
            process.kill()
            pytest.fail("the agent did not exit")
    finally:
        os.close(main)
    assert process.returncode == 3
    assert not list((root / "sessions").iterdir())
    (transcript,) = (root / "projects").glob("*/*.jsonl")
    assert json.loads(transcript.read_text(encoding="utf-8"))["message"]["content"] == "go"
    assert not claude.exists()


def test_its_files_go_in_flumes_state_folder_by_default(agent: Callable[..., AgentPane]) -> None:
    """Run bare, the agent keeps its files in flume's state folder, where flume looks for them.

    Nothing goes in a real agent's home: not ``~/.claude``, not ``$CLAUDE_CONFIG_DIR``.
    """
    pane = agent(FAST)
    pane.wait_status("idle")
    pane.say("hello")
    wait_for(lambda: len(pane.lines()) >= 2, "the transcript to hold the turn")
    assert pane.transcript.is_relative_to(pane.home / ".local" / "state" / "flume")
    assert not (pane.home / ".claude").exists()


def test_flume_and_the_agent_agree_where_its_files_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder flume passes as ``--home`` is the one the agent takes without it."""
    for state in (str(tmp_path / "state"), ""):
        monkeypatch.setenv("XDG_STATE_HOME", state)
        assert default_home() == scripted.home()
        assert default_home() == of(AgentName.TEST).registry_home()
        assert of(AgentName.CLAUDE).registry_home() == claude.home()


def _run_agent(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run the agent without a terminal, for its start-up checks."""
    return subprocess.run(  # noqa: S603 (our own interpreter and module)
        [sys.executable, "-m", "flume.testing.agent", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
        timeout=30,
    )


def test_a_bad_session_id_or_script_is_refused(tmp_path: Path) -> None:
    """A session id not a UUID or already in use exits 1; a bad script exits 2, saying why."""
    ran = _run_agent(tmp_path, "--session-id", "not-a-uuid")
    assert ran.returncode == 1
    assert "Invalid session ID" in ran.stderr
    used = str(uuid.uuid4())
    transcript = default_home() / "projects" / slug(str(tmp_path.resolve()))
    transcript.mkdir(parents=True)
    (transcript / f"{used}.jsonl").write_text("", encoding="utf-8")
    ran = _run_agent(tmp_path, "--session-id", used)
    assert ran.returncode == 1
    assert f"Session ID {used} is already in use" in ran.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("[[turn]]\nsteps = [{dance = 1}]\n", encoding="utf-8")
    ran = _run_agent(tmp_path, "--script", str(bad))
    assert ran.returncode == 2
    assert "turn 1 step 1" in ran.stderr


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("lose = -1", "lose"),
        ('lose = "some"', "lose"),
        ("ready_after = true", "ready_after"),
        ("record = 1", "record"),
        ("speed = 1", "unknown keys"),
        ("[[turn]]\nsteps = [{say = 1}]", "turn 1 step 1"),
        ('[[turn]]\nsteps = [{say = "a", work = 1}]', "one key"),
        ('[[turn]]\nsteps = [{write = {path = "/etc/x", text = ""}}]', "write"),
        ("[[turn]]\nsteps = [{run = []}]", "run"),
        ("[[turn]]\nsteps = [{exit = 300}]", "exit"),
        ("[[turn]]\nmatch = 3", "match"),
        ("lose = ", "not TOML"),
    ],
)
def test_parse_script_names_what_is_wrong(text: str, says: str) -> None:
    """Each kind of bad script is refused with a message naming the fault."""
    with pytest.raises(ScriptError, match=says):
        parse_script(text)


def test_parse_script_reads_every_step() -> None:
    """A script using every key and step reads into its records."""
    script = parse_script(
        'lose = "all"\nready_after = 2\nrecord = false\n'
        '[[turn]]\nmatch = "x"\nsteps = [{say = "s"}, {work = 1}, '
        '{write = {path = "a/b", text = "t"}}, {commit = "c"}, {run = ["r"]}, {ask = "q"}, '
        "{exit = 1}]\n"
    )
    assert (script.lose, script.ready_after, script.record) == ("all", 2.0, False)
    (turn,) = script.turns
    assert turn.match == "x"
    assert [type(step).__name__ for step in turn.steps] == [
        "Say",
        "Work",
        "Write",
        "Commit",
        "Run",
        "Ask",
        "Exit",
    ]


def test_slug_follows_claude_codes_scheme() -> None:
    """Every character outside ``[A-Za-z0-9]`` becomes ``-``; long slugs are cut and hashed."""
    assert slug("/home/me/src/my_app.v2") == "-home-me-src-my-app-v2"
    long = slug("/" + "a" * 300)
    assert long.startswith("-" + "a" * 199 + "-")
    assert len(long) > 200


def test_keys_read_pastes_and_keys_across_reads() -> None:
    """Paste markers and UTF-8 split between reads, arrow keys and a lone Escape read right."""
    keys = Keys()
    pasted = "a\rb\nü 🌍"
    data = b"x\x1b[A\x1by\x7f" + b"\x1b[200~" + pasted.encode() + b"\x1b[201~\r\x03"
    found: list[str | Key] = []
    for index in range(len(data)):  # one byte a read: every sequence is cut somewhere
        found.extend(keys.feed(data[index : index + 1]))
    text = "".join(each for each in found if isinstance(each, str))
    assert text == "x" + pasted
    assert [each for each in found if isinstance(each, Key)] == [Key.ERASE, Key.SUBMIT, Key.QUIT]
    whole = Keys().feed(data)
    assert whole == ["x", Key.ERASE, pasted, Key.SUBMIT, Key.QUIT], "Escape then y is Alt-y"
    alone = Keys()
    assert alone.feed(b"a\x1b") == ["a"]
    assert alone.is_waiting
    alone.expire()
    assert alone.feed(b"b") == ["b"], "an Escape left alone does not eat the next key"
