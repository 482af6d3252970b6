"""The scripted model server, alone over HTTP and as the model of the real Claude Code and Codex.

The first tests speak to :class:`ScriptedModel` with ``urllib``, over the Messages API and then
the Responses API. The next start the pinned Claude Code (``scripts/install-agents``) in a
private tmux server, with a seeded HOME of the test's own, and check what it wrote: its
transcript, its live-session registry, its commits. The last run the pinned Codex's ``exec``
against the model. They skip when the agent is not installed, except under scripts/test, which
installs it: there they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from flume.testing import codex as codex_kit
from flume.testing.claude import claude_binary, claude_env, seed_home
from flume.testing.model import Reply, ScriptedModel, Tool
from tests.integration.agents_kit import installed_or_skip
from tests.integration.places_kit import GIT_IDENTITY, repository, run_git

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

T = TypeVar("T")
#: A JSON object as ``json`` reads it.
JSON = dict[str, Any]
#: Any API key: the scripted model takes them all.
API_KEY = "sk-ant-flume-test-0123456789abcdefghij"
#: How long Claude Code may take to start, or to answer a scripted reply.
DEADLINE = 60.0
TMUX = shutil.which("tmux")
BASH = {"name": "Bash", "input_schema": {"type": "object"}}
EXEC = {"type": "function", "name": "exec_command", "parameters": {"type": "object"}}


def post(url: str, body: JSON) -> tuple[str, bytes]:
    """POST ``body`` as JSON; the response's content type and body."""
    request = urllib.request.Request(  # noqa: S310 (a loopback http URL of the test's own)
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (as above)
        return response.headers["Content-Type"], response.read()


def ask(model: ScriptedModel, said: str | list[JSON], *, tools: list[JSON] | None = None) -> JSON:
    """The whole (not streamed) message the model answers a user turn saying ``said`` with."""
    body: JSON = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": said}]}
    if tools is not None:
        body["tools"] = tools
    kind, data = post(f"{model.url}/v1/messages?beta=true", body)
    assert kind == "application/json"
    reply: JSON = json.loads(data)
    return reply


def sse(data: bytes) -> list[tuple[str, JSON]]:
    """Server-sent events as ``(event, data)`` pairs."""
    events = []
    for chunk in data.decode().strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


# --- the server alone ------------------------------------------------------------------------


def test_a_streamed_reply_is_the_messages_event_sequence() -> None:
    """A streamed text reply: message_start, one text block, message_delta ending the turn."""
    with ScriptedModel([Reply("hello", text="hi there")]) as model:
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hello"}]}
        kind, data = post(f"{model.url}/v1/messages", body)
    assert kind == "text/event-stream"
    events = sse(data)
    assert [name for name, _ in events] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop",
    ]  # fmt: skip
    assert all(data["type"] == name for name, data in events)
    assert events[0][1]["message"]["role"] == "assistant"
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "hi there"}
    assert events[4][1]["delta"]["stop_reason"] == "end_turn"


def test_a_streamed_tool_call_carries_its_input_as_json() -> None:
    """A streamed tool reply: a tool_use block whose input arrives as one input_json_delta."""
    tool = Tool("Bash", {"command": "git commit"})
    with ScriptedModel([Reply("go", text="running", tool=tool)]) as model:
        body = {
            "stream": True,
            "tools": [BASH],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "go"}]}],
        }
        events = sse(post(f"{model.url}/v1/messages", body)[1])
    starts = [data["content_block"] for name, data in events if name == "content_block_start"]
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert [block["type"] for block in starts] == ["text", "tool_use"]
    assert starts[1]["name"] == "Bash"
    assert starts[1]["id"].startswith("toolu_")
    assert deltas[1]["type"] == "input_json_delta"
    assert json.loads(deltas[1]["partial_json"]) == {"command": "git commit"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_a_whole_reply_is_a_message() -> None:
    """Without ``stream`` the reply is one message object; no rule matching answers ``ok``."""
    with ScriptedModel([Reply("hello", text="hi there")]) as model:
        heard = ask(model, "hello")
        unheard = ask(model, "something else")
    assert heard["type"] == "message"
    assert heard["content"] == [{"type": "text", "text": "hi there"}]
    assert heard["stop_reason"] == "end_turn"
    assert unheard["content"] == [{"type": "text", "text": "ok"}]


def test_a_tool_goes_only_to_requests_offering_it() -> None:
    """A side request without tools falls through to the next rule, never getting a tool call."""
    script = [Reply("fix", tool=Tool("Bash", {"command": "true"})), Reply("fix", text="a title")]
    with ScriptedModel(script) as model:
        side = ask(model, "fix it")
        other_tools = ask(model, "fix it", tools=[{"name": "Read", "input_schema": {}}])
        offered = ask(model, "fix it", tools=[BASH])
    assert side["content"] == [{"type": "text", "text": "a title"}]
    assert other_tools["content"] == [{"type": "text", "text": "a title"}]
    assert offered["stop_reason"] == "tool_use"
    assert offered["content"][0]["input"] == {"command": "true"}


def test_the_latest_user_turn_decides_and_tool_results_count() -> None:
    """Only the latest user turn is matched; a tool result's text answers the next step."""
    script = [
        Reply("MARKER", tool=Tool("Bash", {"command": "echo committed"})),
        Reply("committed", text="done"),
    ]
    with ScriptedModel(script) as model:
        call = ask(model, "do MARKER", tools=[BASH])
        tool_id = call["content"][0]["id"]
        body = {
            "tools": [BASH],
            "messages": [
                {"role": "user", "content": "do MARKER"},
                {"role": "assistant", "content": call["content"]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": tool_id, "content": "committed"},
                        {"type": "text", "text": "<system-reminder>MARKER</system-reminder>"},
                    ],
                },
                {"role": "system", "content": [{"type": "text", "text": "MARKER"}]},
            ],
        }
        answer = json.loads(post(f"{model.url}/v1/messages", body)[1])
    assert answer["content"] == [{"type": "text", "text": "done"}]


def test_a_once_rule_answers_once_and_tool_ids_are_unique() -> None:
    """A ``once`` rule is spent by its first answer; every tool call has an id of its own."""
    script = [Reply("", tool=Tool("Bash", {"command": "true"}), once=True), Reply("", text="again")]
    with ScriptedModel(script) as model:
        first = ask(model, "x", tools=[BASH])
        second = ask(model, "x", tools=[BASH])
    assert first["stop_reason"] == "tool_use"
    assert second["content"] == [{"type": "text", "text": "again"}]
    with ScriptedModel([Reply("", tool=Tool("Bash", {}))]) as model:
        ids = {ask(model, "x", tools=[BASH])["content"][0]["id"] for _ in range(5)}
    assert len(ids) == 5


def test_a_delay_holds_the_reply() -> None:
    """A rule's ``delay`` passes before its reply; other requests are answered meanwhile."""
    with ScriptedModel([Reply("slow", text="late", delay=0.5)]) as model:
        started = time.monotonic()
        quick = ask(model, "quick")
        quick_took = time.monotonic() - started
        slow = ask(model, "slow")
        slow_took = time.monotonic() - started - quick_took
    assert quick["content"][0]["text"] == "ok"
    assert slow["content"][0]["text"] == "late"
    assert quick_took < 0.5 <= slow_took


def test_requests_are_recorded_and_other_paths_answered() -> None:
    """Each POST body is kept in order; token counting and GET/HEAD get small JSON answers."""
    with ScriptedModel() as model:
        ask(model, "one")
        kind, counted = post(f"{model.url}/v1/messages/count_tokens?beta=true", {"n": 2})
        with urllib.request.urlopen(f"{model.url}/v1/models", timeout=10) as got:  # noqa: S310
            fetched = got.read()
        head = urllib.request.Request(f"{model.url}/", method="HEAD")  # noqa: S310 (loopback)
        with urllib.request.urlopen(head, timeout=10) as headed:  # noqa: S310 (loopback)
            assert headed.status == 200
        recorded = model.requests
    assert kind == "application/json"
    assert json.loads(counted) == {"input_tokens": 10}
    assert json.loads(fetched) == {}
    assert [body.get("n") for body in recorded] == [None, 2]
    assert recorded[0]["messages"][0]["content"] == "one"


# --- the server alone, over the Responses API ------------------------------------------------


def said(text: str) -> JSON:
    """A Responses input item: a user message typing ``text``."""
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def respond(model: ScriptedModel, items: list[JSON], *, tools: list[JSON] | None = None) -> JSON:
    """The whole (not streamed) response the model gives a Responses request of ``items``."""
    body: JSON = {"model": "m", "input": items, "stream": False}
    if tools is not None:
        body["tools"] = tools
    kind, data = post(f"{model.url}/v1/responses", body)
    assert kind == "application/json"
    answer: JSON = json.loads(data)
    return answer


def test_a_streamed_response_is_the_responses_event_sequence() -> None:
    """A streamed text reply: created, one message item with its text part, then completed."""
    with ScriptedModel([Reply("hello", text="hi there")]) as model:
        body = {"model": "m", "stream": True, "input": [said("hello")], "tools": [EXEC]}
        kind, data = post(f"{model.url}/v1/responses", body)
    assert kind == "text/event-stream"
    events = sse(data)
    assert [name for name, _ in events] == [
        "response.created", "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed",
    ]  # fmt: skip
    assert all(data["type"] == name for name, data in events)
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    assert events[3][1]["delta"] == "hi there"
    item = events[6][1]["item"]
    assert item["type"] == "message"
    assert item["role"] == "assistant"
    assert item["content"][0] == {"type": "output_text", "text": "hi there", "annotations": []}
    completed = events[-1][1]["response"]
    assert completed["status"] == "completed"
    assert completed["output"] == [item]
    assert completed["usage"]["total_tokens"] > 0


def test_a_streamed_function_call_carries_its_arguments_as_json() -> None:
    """A streamed tool reply: a function_call item whose arguments are the input as JSON."""
    tool = Tool("exec_command", {"cmd": "git commit"})
    with ScriptedModel([Reply("go", tool=tool)]) as model:
        body = {"stream": True, "tools": [EXEC], "input": [said("go")]}
        events = sse(post(f"{model.url}/v1/responses", body)[1])
    names = [name for name, _ in events]
    assert "response.output_text.delta" not in names
    assert "response.function_call_arguments.delta" in names
    (call,) = [data["item"] for name, data in events if name == "response.output_item.done"]
    assert call["type"] == "function_call"
    assert call["name"] == "exec_command"
    assert call["call_id"].startswith("call_")
    assert json.loads(call["arguments"]) == {"cmd": "git commit"}
    assert events[-1][1]["response"]["output"] == [call]


def test_a_function_call_goes_only_to_requests_offering_its_tool() -> None:
    """Codex's title request offers no tools: it falls through to a text rule, never a call."""
    script = [
        Reply("fix", text="let me look", tool=Tool("exec_command", {"cmd": "true"})),
        Reply("fix", text="Fix it"),
    ]
    with ScriptedModel(script) as model:
        title = respond(model, [said("Generate a title.\n\nUser prompt:\nfix it")], tools=[])
        offered = respond(model, [said("fix it")], tools=[EXEC])
    assert [item["type"] for item in title["output"]] == ["message"]
    assert title["output"][0]["content"][0]["text"] == "Fix it"
    assert offered["object"] == "response"
    assert [item["type"] for item in offered["output"]] == ["message", "function_call"]
    assert offered["output"][0]["content"][0]["text"] == "let me look"


def test_the_latest_user_message_or_its_tool_outputs_decide() -> None:
    """Tool outputs after the last user message answer it; before them, the message's text.

    Codex's own context messages come first; only the latest user turn is matched.
    """
    script = [
        Reply("MARKER", tool=Tool("exec_command", {"cmd": "echo committed"})),
        Reply("committed", text="done"),
    ]
    context = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "x"}]},
        said("<environment_context>committed</environment_context>"),
    ]
    with ScriptedModel(script) as model:
        call = respond(model, [*context, said("do MARKER")], tools=[EXEC])["output"][0]
        output = "Process exited with code 0\nOutput:\ncommitted\n"
        result = {"type": "function_call_output", "call_id": call["call_id"], "output": output}
        answer = respond(model, [*context, said("do MARKER"), call, result], tools=[EXEC])
        parts = {**result, "output": [{"type": "input_text", "text": "committed"}]}
        from_parts = respond(model, [said("do MARKER"), call, parts], tools=[EXEC])
        bare = respond(model, "MARKER", tools=[EXEC])  # type: ignore[arg-type]
        recorded = model.requests
    assert call["type"] == "function_call"
    assert answer["output"][0]["content"][0]["text"] == "done"
    assert from_parts["output"][0]["content"][0]["text"] == "done"
    assert bare["output"][0]["type"] == "function_call"
    assert recorded[1]["input"][-1]["type"] == "function_call_output"


def test_messages_and_responses_share_one_script() -> None:
    """One script answers both APIs; a ``once`` rule spent by one is spent for the other."""
    script = [Reply("hi", text="first", once=True), Reply("hi", text="again")]
    with ScriptedModel(script) as model:
        messages = ask(model, "hi")
        responses = respond(model, [said("hi")])
    assert messages["content"] == [{"type": "text", "text": "first"}]
    assert responses["output"][0]["content"][0]["text"] == "again"


# --- the real Claude Code ----------------------------------------------------------------------


def wait_for(look: Callable[[], T | None], what: str, timeout: float = DEADLINE) -> T:
    """Poll ``look`` until it gives something truthy; fail saying ``what`` was awaited."""
    deadline = time.monotonic() + timeout
    while True:
        seen = look()
        if seen:
            return seen
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout}s for {what}; last saw {seen!r}")
        time.sleep(0.05)


@pytest.fixture
def claude() -> Path:
    """The pinned Claude Code; a loud skip without it, a failure under scripts/test."""
    return installed_or_skip(claude_binary() if TMUX is not None else None, "CLAUDE CODE")


class ClaudePane:
    """The real Claude Code in a pane of a private tmux server, and the files it writes."""

    def __init__(self, *, socket: Path, home: Path, repo: Path) -> None:
        self.socket = socket
        self.home = home
        self.repo = repo
        self.session_id = str(uuid.uuid4())
        self.pane = ""
        self.pid = 0

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

    def start(self, binary: Path, model: ScriptedModel, *argv: str) -> None:
        """Start Claude Code in the repository with this session id and ``argv``."""
        variables = {**claude_env(self.home, model.url, API_KEY), **GIT_IDENTITY}
        command = [
            "env", "-u", "CLAUDE_CONFIG_DIR", "-u", "CLAUDECODE", "-u", "ANTHROPIC_AUTH_TOKEN",
            *(f"{key}={value}" for key, value in variables.items()),
            str(binary), "--session-id", self.session_id, *argv,
        ]  # fmt: skip
        self.pane = self.tmux(
            "new-session", "-d", "-P", "-F", "#{pane_id}", "-x", "200", "-y", "50",
            "-c", str(self.repo), *command,
        ).strip()  # fmt: skip
        self.pid = int(self.tmux("display-message", "-p", "-t", self.pane, "#{pane_pid}"))

    def registry(self) -> JSON:
        """What the live-session registry says of this process (empty before it says anything)."""
        try:
            said = json.loads((self.home / ".claude" / "sessions" / f"{self.pid}.json").read_text())
        except (OSError, ValueError):
            return {}
        return said if isinstance(said, dict) else {}

    def is_idle(self) -> bool:
        """The registry says the agent waits at an empty prompt box."""
        return self.registry().get("status") == "idle"

    def screen(self) -> str:
        """The pane's visible text."""
        return self.tmux("capture-pane", "-p", "-t", self.pane)

    def transcript(self) -> list[JSON]:
        """The transcript's lines so far."""
        slug = "".join(c if c.isascii() and c.isalnum() else "-" for c in str(self.repo))
        path = self.home / ".claude" / "projects" / slug / f"{self.session_id}.jsonl"
        try:
            lines = path.read_text().splitlines()
        except OSError:
            return []
        return [json.loads(line) for line in lines if line.strip()]

    def prompt_seen(self, marker: str) -> bool:
        """The transcript holds a typed prompt containing ``marker``."""
        return any(
            line.get("type") == "user"
            and isinstance(content := line.get("message", {}).get("content"), str)
            and marker in content
            for line in self.transcript()
        )

    def answered(self, text: str) -> bool:
        """The transcript holds an assistant text block saying exactly ``text``."""
        return any(
            line.get("type") == "assistant"
            and {"type": "text", "text": text} in line.get("message", {}).get("content", [])
            for line in self.transcript()
        )

    def say(self, text: str, marker: str) -> None:
        """Paste ``text`` bracketed from a buffer; press Enter once the screen shows ``marker``."""
        self.tmux("load-buffer", "-b", "prompt", "-", stdin=text)
        self.tmux("paste-buffer", "-p", "-r", "-d", "-b", "prompt", "-t", self.pane)
        wait_for(lambda: marker in self.screen(), f"the pane to show {marker!r}", timeout=10)
        self.tmux("send-keys", "-t", self.pane, "Enter")


@pytest.fixture
def pane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ClaudePane]:
    """A git repository, a seeded HOME trusting it, and a private tmux server killed at the end."""
    for name, value in GIT_IDENTITY.items():
        monkeypatch.setenv(name, value)
    repo = repository(tmp_path / "repo")
    home = tmp_path / "home"
    seed_home(home, trusted=[repo], api_key=API_KEY)
    made = ClaudePane(socket=tmp_path / "tmux.sock", home=home, repo=repo)
    try:
        yield made
    finally:
        if TMUX is not None and made.socket.exists():
            subprocess.run(  # noqa: S603 (tmux, with the test's own arguments)
                [TMUX, "-S", str(made.socket), "kill-server"], capture_output=True, check=False
            )


def test_claude_code_takes_a_pasted_prompt(claude: Path, pane: ClaudePane) -> None:
    """Claude Code goes idle, puts a pasted prompt in its transcript, answers and idles again.

    The prompt is a typed user line with string content; the answer is the script's text.
    """
    marker = f"MARKER-{uuid.uuid4().hex[:8]}"
    with ScriptedModel([Reply(marker, text="heard you")]) as model:
        pane.start(claude, model, "--permission-mode", "acceptEdits", "--allowedTools", "Bash")
        wait_for(pane.is_idle, "the registry to say idle")
        assert pane.registry()["sessionId"] == pane.session_id
        pane.say(f"Please listen: {marker}", marker)
        wait_for(lambda: pane.prompt_seen(marker), "the prompt in the transcript")
        wait_for(lambda: "heard you" in pane.screen(), "the scripted answer on screen")
        wait_for(pane.is_idle, "the registry to say idle after the turn")
        # The transcript may get the answer after the screen and the registry show it.
        wait_for(lambda: pane.answered("heard you"), "the answer in the transcript")
        asked = [body for body in model.requests if "tools" in body]
    assert asked, "Claude Code offered no tools"


def test_claude_code_runs_a_scripted_commit(claude: Path, pane: ClaudePane) -> None:
    """A scripted Bash call makes the real Claude Code commit on the branch, then finish."""
    marker = f"MARKER-{uuid.uuid4().hex[:8]}"
    command = (
        "echo made > made.txt && git add made.txt && git commit -q -m 'made by claude' "
        "&& echo committed"
    )
    script = [
        Reply(marker, tool=Tool("Bash", {"command": command})),
        Reply("committed", "finished the commit"),
    ]
    with ScriptedModel(script) as model:
        pane.start(claude, model, "--permission-mode", "acceptEdits", "--allowedTools", "Bash")
        wait_for(pane.is_idle, "the registry to say idle")
        pane.say(f"Please commit: {marker}", marker)
        wait_for(
            lambda: "made by claude" in run_git(pane.repo, "log", "--format=%s", "main"),
            "the commit on main",
        )
        wait_for(lambda: "finished the commit" in pane.screen(), "the scripted answer on screen")
        wait_for(pane.is_idle, "the registry to say idle after the turn")
    assert (pane.repo / "made.txt").read_text() == "made\n"
    assert run_git(pane.repo, "status", "--porcelain") == ""


# --- the real Codex ------------------------------------------------------------------------------


@pytest.fixture
def codex() -> Path:
    """The pinned Codex; a loud skip without it, a failure under scripts/test."""
    return installed_or_skip(codex_kit.codex_binary(), "CODEX")


def test_codex_exec_runs_a_scripted_exec_command(
    codex: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``codex exec`` sends the prompt, runs the scripted exec_command, and says the answer.

    Its first request offers ``exec_command`` taking ``cmd``; the next carries the command's
    output back as a ``function_call_output``; its rollout holds the prompt as typed.
    """
    for name, value in GIT_IDENTITY.items():
        monkeypatch.setenv(name, value)
    repo = repository(tmp_path / "repo")
    home = tmp_path / "home"
    marker = f"MARKER-{uuid.uuid4().hex[:8]}"
    script = [
        Reply(marker, tool=Tool("exec_command", {"cmd": "echo ran-$((40 + 2))"})),
        Reply("ran-42", text="ran the command"),
    ]
    with ScriptedModel(script) as model:
        seed = codex_kit.seed_home(home / ".codex", model_url=model.url, trusted=[repo])
        environment = {**os.environ, **codex_kit.codex_env(home / ".codex", home)}
        argv = [
            str(codex), "exec", "--strict-config", "--dangerously-bypass-approvals-and-sandbox",
            "-C", str(repo), f"Please run it: {marker}",
        ]  # fmt: skip
        ran = subprocess.run(  # noqa: S603 (the pinned Codex, with the test's own arguments)
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            env=environment,
            timeout=DEADLINE,
        )
        asked = model.requests
    assert ran.returncode == 0, ran.stderr
    assert "ran the command" in ran.stdout
    assert 'wire_api = "responses"' in seed.read_text()
    tools = {tool.get("name"): tool for tool in asked[0]["tools"]}
    assert "cmd" in tools["exec_command"]["parameters"]["required"]
    outputs = [item for item in asked[1]["input"] if item["type"] == "function_call_output"]
    assert "ran-42" in outputs[-1]["output"]
    (rollout,) = (home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl")
    lines = [json.loads(line) for line in rollout.read_text().splitlines()]
    typed = [
        line["payload"]
        for line in lines
        if line["type"] == "response_item" and line["payload"].get("role") == "user"
    ]
    assert typed[-1]["content"] == [{"type": "input_text", "text": f"Please run it: {marker}"}]
    assert lines[0]["payload"]["cwd"] == str(repo.resolve())
