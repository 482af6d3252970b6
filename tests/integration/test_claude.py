"""The real Claude Code, driven by flume's real supervisor in tmux, against a scripted model.

Claude Code (the pinned version, ``scripts/install-agents``) runs offline: its model is a
:class:`~flume.testing.model.ScriptedModel` on loopback, its HOME a folder of the test's own,
seeded so that it starts at its prompt box (reference/claude-code.md §8). flume starts it in a
pane with its hooks installed for the run, waits until its registry says it takes input, pastes
the prompt and confirms it in Claude Code's own transcript. Where Claude Code is not installed
these tests skip with a loud reason; under scripts/test, which installs them, they fail instead.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flume.core.actions import Event, Report, SendTell
from flume.core.ids import Instant
from flume.core.observations import Activity, PaneOutput, TurnEnded, Usage
from flume.core.place import Life, PauseCause, Paused, Place, Short, ShortCause
from flume.core.settings import Settings
from flume.core.step import step
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from flume.testing.claude import CLAUDE_CODE_VERSION, claude_binary, claude_env, seed_home
from flume.testing.model import Reply, ScriptedModel, Tool
from tests import shared
from tests.integration.agents_kit import (
    TIMING,
    agent_doing,
    agent_repository,
    installed_or_skip,
    observations,
    place_of,
    prompt_sends,
    sessions_started,
    stopped_short,
    tell_sends,
    transcript_lines,
    typed_lines,
    wait_for,
)
from tests.integration.places_kit import flume_process, run_git

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

KEY = "sk-ant-flume-test-0000000000000000000000"


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The real Claude Code; a loud skip when it is not installed (a failure in scripts/test)."""
    binary = installed_or_skip(claude_binary(), f"CLAUDE CODE {CLAUDE_CODE_VERSION}")
    monkeypatch.setenv("FLUME_CLAUDE", str(binary))
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


@pytest.fixture
def model(claude: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModel]:
    """A scripted model the test fills in; Claude Code's environment points at it."""
    server = ScriptedModel()
    server.start()
    for key, value in claude_env(claude, server.url, KEY).items():
        monkeypatch.setenv(key, value)
    try:
        yield server
    finally:
        server.close()


def _launch(
    repo: Path, name: str, *flags: str, brief: str = "Mend the greeting.", kind: str = "fix"
) -> Path:
    args = [f"--agent-arg={flag}" for flag in flags]
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind", kind, "--name", name, "--brief", brief,
        "--agent", "claude", *args,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / f"{kind}--{name}" / places.JOURNAL


def _repo(tmp_path: Path, home: Path) -> Path:
    repo = agent_repository(tmp_path, TIMING.replace("confirm = 4", "confirm = 15"))
    seed_home(home, trusted=[repo], api_key=KEY)
    return repo


ALLOW_BASH = ("--permission-mode", "acceptEdits", "--allowedTools", "Bash")
COMMIT = (
    "printf 'hello\\n' > README.md && git add README.md && "
    "git commit -q -m 'Say hello' && echo committed-it"
)


def _launch_kind(tmp_path: Path, repo: Path, kind_text: str, place: str) -> Path:
    """Launch the workflow kind ``kind_text`` as ``place`` (``<kind>--<name>``) on Claude.

    Its file is written in ``tmp_path``; the place's journal is returned.
    """
    name = place.split("--", 1)[1]
    kind_file = tmp_path / f"{name}.toml"
    kind_file.write_text(kind_text, encoding="utf-8")
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", name,
        "--brief", "the greeting", "--agent", "claude",
        *(f"--agent-arg={flag}" for flag in ALLOW_BASH),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / place / places.JOURNAL


def _marker(name: str) -> str:
    return f"flume:fix--{name}:code:1"


def test_claude_takes_the_prompt_and_its_commit_ends_the_stage(
    tmp_path: Path, claude: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """R5, R7: the prompt is confirmed in Claude Code's transcript; its Bash commit ends code."""
    del panes
    repo = _repo(tmp_path, claude)
    model.script = (
        Reply(when=_marker("cc"), tool=Tool("Bash", {"command": COMMIT})),
        Reply(when="committed-it", text="Committed the fix."),
    )
    journal_path = _launch(repo, "cc", *ALLOW_BASH)
    wait_for(lambda: "code" in place_of(journal_path).completed, 120, "the code stage to end")
    (session,) = sessions_started(journal_path)
    assert prompt_sends(journal_path) == 1
    assert len(typed_lines(place_of(journal_path), session, _marker("cc"))) == 1
    place = place_of(journal_path)
    assert (Path(place.path) / "README.md").read_text() == "hello\n"


def test_the_journal_holds_the_tokens_the_scripted_model_reported(
    tmp_path: Path, claude: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """A turn's end is journaled with the usage of its model calls, each message once.

    Claude Code writes each message's usage on each of its lines (the first message here is two
    lines: its text, then its Bash call); the turn's two calls are summed, each once; its side
    requests, which offer no tools, are not the turn's.
    """
    del panes
    repo = _repo(tmp_path, claude)
    model.script = (
        Reply(when=_marker("tk"), text="Committing.", tool=Tool("Bash", {"command": COMMIT})),
        Reply(when="committed-it", text="Committed the fix."),
    )
    journal_path = _launch(repo, "tk", *ALLOW_BASH)

    def ended() -> list[TurnEnded]:
        return [seen for seen in observations(journal_path) if isinstance(seen, TurnEnded)]

    wait_for(ended, 120, "the turn's end in the journal")
    (turn,) = ended()
    (session,) = sessions_started(journal_path)
    lines = transcript_lines(place_of(journal_path), session)
    ids = [each["message"]["id"] for each in lines if each.get("type") == "assistant"]  # type: ignore[index]
    assert len(ids) == 3, "two calls, the first written over two lines"
    assert len(set(ids)) == 2
    calls = [each.usage for each in model.usages if each.tools]
    assert len(calls) == 2, model.usages
    assert turn.usage == Usage(
        input=sum(each["input_tokens"] for each in calls),
        output=sum(each["output_tokens"] for each in calls),
        cache_read=sum(each["cache_read_input_tokens"] for each in calls),
        cache_creation=sum(each["cache_creation_input_tokens"] for each in calls),
    )


def test_flume_needs_through_a_bash_call_stops_the_place_short(
    tmp_path: Path, claude: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """R8: Claude Code runs flume needs in its place; the stage stops short with those words."""
    del panes
    repo = _repo(tmp_path, claude)
    model.script = (
        Reply(
            when=_marker("needy"),
            tool=Tool("Bash", {"command": "flume needs 'the staging API key' && echo said-it"}),
        ),
        Reply(when="said-it", text="I asked for the key."),
    )
    journal_path = _launch(repo, "needy", *ALLOW_BASH)

    wait_for(
        stopped_short(journal_path, ShortCause.NEEDS), 120, "the stage to stop short on flume needs"
    )
    phase = place_of(journal_path).stage.phase
    assert isinstance(phase, Short)
    assert phase.words == "the staging API key"
    assert "the staging API key" in flume_process("status", "--repository", str(repo)).stdout


def test_a_tell_is_held_while_claude_works_and_delivered_when_it_waits(
    tmp_path: Path, claude: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """R6: told while its reply takes 6 s, the tell waits, then reaches the transcript after."""
    del panes
    repo = _repo(tmp_path, claude)
    model.script = (
        Reply(when="flume:fix--busy:tell:1", text="Noted, I will mind the README."),
        Reply(when=_marker("busy"), text="Thinking it over.", delay=6.0),
    )
    journal_path = _launch(repo, "busy", *ALLOW_BASH)

    wait_for(agent_doing(journal_path, Activity.WORKING), 120, "Claude Code to work on the prompt")
    told = flume_process("tell", "fix--busy", "--repository", str(repo), "Mind the README too.")
    assert told.returncode == 0, told.stderr
    assert place_of(journal_path).held
    assert tell_sends(journal_path) == 0
    (session,) = sessions_started(journal_path)
    wait_for(
        lambda: typed_lines(place_of(journal_path), session, "Mind the README too."),
        60,
        "the tell in the transcript",
    )
    assert tell_sends(journal_path) == 1
    lines = transcript_lines(place_of(journal_path), session)
    said = next(i for i, line in enumerate(lines) if "Thinking it over." in str(line))
    told_at = next(i for i, line in enumerate(lines) if "Mind the README too." in str(line))
    assert said < told_at  # sent only once the slow reply had come and Claude Code waited


@pytest.mark.parametrize("dialog", ["permission", "question"])
def test_a_tell_is_refused_while_claude_asks_a_person(
    tmp_path: Path, claude: Path, model: ScriptedModel, panes: Tmux, dialog: str
) -> None:
    """R6: a permission dialog or a question is open: the tell is refused, nothing typed."""
    repo = _repo(tmp_path, claude)
    name = f"asks-{dialog}"
    if dialog == "permission":
        flags: tuple[str, ...] = ("--permission-mode", "manual")
        tool = Tool("Bash", {"command": "touch asked-first"})
    else:
        flags = ALLOW_BASH
        question = {
            "question": "Which greeting?",
            "header": "Greeting",
            "options": [
                {"label": "hello", "description": "plain"},
                {"label": "hi", "description": "short"},
            ],
            "multiSelect": False,
        }
        tool = Tool("AskUserQuestion", {"questions": [question]})
    model.script = (Reply(when=_marker(name), tool=tool),)
    journal_path = _launch(repo, name, *flags)

    wait_for(agent_doing(journal_path, Activity.ASKING), 120, f"Claude Code's {dialog} dialog")
    place = place_of(journal_path)
    assert place.agent is not None
    words = "Pick the first one please"
    told = flume_process("tell", f"fix--{name}", "--repository", str(repo), words)
    assert told.returncode == 1
    assert "asking a person" in told.stderr
    screen = panes.capture(place.agent.pane) or ""
    assert words not in screen
    assert tell_sends(journal_path) == 0
    assert not (Path(place.path) / "asked-first").exists()


def test_a_long_multiline_unicode_prompt_reaches_claude_whole(
    tmp_path: Path, claude: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """R5: a long paste (Claude Code folds it to "[Pasted text ...]") is still found, whole."""
    del panes
    repo = _repo(tmp_path, claude)
    lines = [f"Zeile {n}: größer ≥ 名前 🙂 — tab\there; `x` $HOME" for n in range(400)]
    brief = "\n".join(lines)
    model.script = (Reply(when=_marker("long"), text="Read it all."),)
    journal_path = _launch(repo, "long", *ALLOW_BASH, brief=brief)

    def delivered() -> bool:
        found = sessions_started(journal_path)
        return bool(found) and bool(
            typed_lines(place_of(journal_path), next(iter(found)), _marker("long"))
        )

    wait_for(delivered, 120, "the long prompt in Claude Code's transcript")
    (session,) = sessions_started(journal_path)
    (line,) = typed_lines(place_of(journal_path), session, _marker("long"))
    message = line["message"]
    assert isinstance(message, dict)
    # Claude Code 2.1.332 keeps a pasted tab as four spaces; everything else arrives as written.
    wanted = [line.replace("\t", "    ") for line in (lines[0], lines[199], lines[-1])]
    assert all(text in message["content"] for text in wanted)
    assert prompt_sends(journal_path) == 1


SUBMIT = "flume submit && echo submitted-it"


def test_claude_carries_a_fix_to_its_landing_and_tidy(
    tmp_path: Path, claude: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """fix: Claude Code commits in code, runs flume submit in submit; main holds it; tidied."""
    del panes
    repo = _repo(tmp_path, claude)
    model.script = (
        Reply(when="flume:fix--landed:code:1", tool=Tool("Bash", {"command": COMMIT})),
        Reply(when="committed-it", text="Committed the fix."),
        Reply(when="flume:fix--landed:submit:1", tool=Tool("Bash", {"command": SUBMIT})),
        Reply(when="submitted-it", text="Submitted."),
    )
    journal_path = _launch(repo, "landed", *ALLOW_BASH)
    wait_for(lambda: place_of(journal_path).life is Life.TIDIED, 180, "the fix landed and tidied")
    assert "Say hello" in run_git(repo, "log", "--format=%s", "main")
    assert (repo / "README.md").read_text() == "hello\n"
    assert run_git(repo, "branch", "--list", "fix/landed") == ""
    # Each attempt's chat is kept: both transcripts in Claude Code's home outlive the tidy (and
    # the journal set aside by flume tidy), and are replayed from there (TRANSCRIPT-KEPT).
    assert flume_process("tidy", "--repository", str(repo)).returncode == 0
    shown = flume_process("transcript", "fix--landed", "--repository", str(repo), "--json")
    assert shown.returncode == 0, shown.stderr
    attempts = json.loads(shown.stdout)["attempts"]
    assert [(a["key"], a["attempt"], a["agent"]) for a in attempts] == [
        ("code", 1, "claude"),
        ("submit", 1, "claude"),
    ]
    for attempt in attempts:
        path = Path(attempt["transcript"])
        assert path.is_file()
        assert path.is_relative_to(claude / ".claude" / "projects")
        assert path.name == f"{attempt['session']}.jsonl"
        parts = [(line["part"], line["text"]) for line in attempt["lines"]]
        assert parts[0][0] == "prompt"
        assert f"flume:fix--landed:{attempt['key']}:1" in parts[0][1]
        assert any(part == "tool" and text.startswith("Bash: ") for part, text in parts)
    assert ("text", "Committed the fix.") in [
        (line["part"], line["text"]) for line in attempts[0]["lines"]
    ]


PLAN = (
    "mkdir -p openspec/changes/hello/specs/hello && cd openspec/changes/hello && "
    "printf '## Why\\nSay hello.\\n\\n## What Changes\\n- Greet.\\n' > proposal.md && "
    "printf '## Design\\nA greeting file.\\n' > design.md && "
    "printf '## 1. Hello\\n\\n- [ ] 1.1 Write hello.txt\\n' > tasks.md && "
    "printf '## ADDED Requirements\\n\\n### Requirement: Hello\\nThe repository SHALL greet.\\n\\n"
    "#### Scenario: Greeting\\n- **WHEN** one reads hello.txt\\n- **THEN** it says hello\\n' "
    "> specs/hello/spec.md && cd - >/dev/null && git add -A && git commit -qm 'Plan hello' && "
    "echo planned-it"
)
BUILD = (
    "printf 'hello\\n' > hello.txt && "
    "sed -i 's/- \\[ \\]/- [x]/' openspec/changes/hello/tasks.md && "
    "git add -A && git commit -qm 'Build hello' && echo built-it"
)
VERIFY = "printf 'It greets.\\n' > verify.md && echo verified-it"
ARCHIVE = (
    "mkdir -p openspec/changes/archive && "
    "git mv openspec/changes/hello openspec/changes/archive/$(date +%F)-hello && "
    "git add -A && git commit -qm 'Archive hello' && flume submit && echo archived-it"
)


def test_claude_carries_a_change_through_its_stages_to_an_archived_landing(
    tmp_path: Path, claude: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """change: construct, code, verify, submit, each a fresh Claude Code; archived on main."""
    del panes
    repo = _repo(tmp_path, claude)
    model.script = (
        Reply(when="flume:change--hello:construct:1", tool=Tool("Bash", {"command": PLAN})),
        Reply(when="planned-it", text="Planned."),
        Reply(when="flume:change--hello:code:1", tool=Tool("Bash", {"command": BUILD})),
        Reply(when="built-it", text="Built."),
        Reply(when="flume:change--hello:verify:1", tool=Tool("Bash", {"command": VERIFY})),
        Reply(when="verified-it", text="Verified."),
        Reply(when="flume:change--hello:submit:1", tool=Tool("Bash", {"command": ARCHIVE})),
        Reply(when="archived-it", text="Archived and submitted."),
    )
    journal_path = _launch(repo, "hello", *ALLOW_BASH, kind="change", brief="Greet people.")
    wait_for(lambda: place_of(journal_path).life is Life.TIDIED, 240, "the change landed")
    log = run_git(repo, "log", "--format=%s", "main")
    assert all(subject in log for subject in ("Plan hello", "Build hello", "Archive hello"))
    archived = list((repo / "openspec" / "changes" / "archive").glob("*-hello"))
    assert len(archived) == 1
    assert not (repo / "openspec" / "changes" / "hello").exists()
    place = place_of(journal_path)
    assert list(place.completed) == ["construct", "code", "verify", "submit"]


STALL_KIND = """\
[kind]
name = "wf"
body = ["review"]

[step.review]
prompt = "Review $brief. Write $verdict: done, or revise with findings."
gate = "verdict"
"""


def test_claude_waiting_on_a_model_that_never_answers_is_nudged_once_then_paused_stalled(
    tmp_path: Path, claude: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """WF-STALL-NUDGES-ONCE with the real agent, ``[timing] stall = 8``.

    The model holds its answer to the review's prompt for two minutes: Claude Code's spinner
    keeps its pane moving, its transcript and hooks say nothing. At 8 s it is nudged once
    (typed mid-turn); 8 s later the run pauses ``stalled`` and the agent is ended. Resumed, a
    fresh agent writes the verdict and the run finishes.
    """
    del panes
    repo = agent_repository(tmp_path, TIMING.replace("confirm = 4", "confirm = 15") + "stall = 8\n")
    seed_home(claude, trusted=[repo], api_key=KEY)
    verdict = repo / "places" / ".boards" / "wf--hang" / "review" / "verdict.json"
    write = f"printf '%s' '{{\"result\": \"done\"}}' > {verdict} && echo wrote-verdict"
    model.script = (
        Reply(when="flume:wf--hang:review:1", text="Reviewing.", delay=120.0),
        Reply(when="flume:wf--hang:review:2", tool=Tool("Bash", {"command": write})),
        Reply(when="wrote-verdict", text="The verdict is written: done."),
    )
    journal_path = _launch_kind(tmp_path, repo, STALL_KIND, "wf--hang")

    def paused() -> Paused | None:
        phase = place_of(journal_path).stage.phase
        return phase if isinstance(phase, Paused) else None

    wait_for(paused, 120, "the run to pause")
    stalled = paused()
    assert stalled is not None
    assert stalled.cause is PauseCause.STALLED, stalled
    # Fold the journal: one nudge, typed; the pane kept moving between it and the pause.
    nudged: Instant | None = None
    moved_after_nudge = False
    place: Place | None = None
    for seen in observations(journal_path):
        decision = step(Settings(), place, seen)
        place = decision.place
        for action in decision.actions:
            if isinstance(action, Report) and action.event is Event.NUDGED:
                assert nudged is None, "nudged twice"
                nudged = seen.at
            if isinstance(action, SendTell):
                assert "flume has seen nothing from you for 8 seconds." in action.text
        if nudged is not None and isinstance(seen, PaneOutput):
            moved_after_nudge |= seen.last_output_at > nudged
    assert nudged is not None, "never nudged"
    assert moved_after_nudge, "the pane showed nothing after the nudge: no spinner to ignore"
    wait_for(lambda: place_of(journal_path).agent is None, 30, "the stalled agent's end")
    resumed = flume_process("resume", "wf--hang", "--repository", str(repo))
    assert resumed.returncode == 0, resumed.stderr
    wait_for(lambda: place_of(journal_path).life is Life.FINISHED, 120, "the run to finish")


ASK_KIND = """\
[kind]
name = "wf"
body = ["code"]

[step.code]
prompt = "Build $brief; commit. If anything is unclear, ask with flume ask, then wait."
gate = "commit"
may = ["ask"]
"""


def test_claude_asks_the_run_pauses_named_and_the_answer_reaches_it(
    tmp_path: Path, claude: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """WF-ASK-PAUSES-WITHOUT-LEAD with the real agent, asking through its Bash tool.

    Claude Code runs ``flume ask`` and ends its turn; the run shows itself paused, question;
    ``flume answer`` is typed to it and its transcript holds it; it commits, the run finishes.
    """
    del panes
    repo = _repo(tmp_path, claude)
    model.script = (
        Reply(
            when="The answer to your question q1",
            tool=Tool("Bash", {"command": COMMIT}),
        ),
        Reply(when="committed-it", text="Committed, as you answered."),
        Reply(
            when="flume:wf--asks:code:1",
            tool=Tool("Bash", {"command": "flume ask 'Hello or Hi?' --option Hello && echo asked"}),
        ),
        Reply(when="asked q1", text="I asked; I wait for the answer."),
    )
    journal_path = _launch_kind(tmp_path, repo, ASK_KIND, "wf--asks")

    def asked() -> bool:
        place = place_of(journal_path)
        return bool(place.questions) and place.agent is not None

    wait_for(asked, 120, "Claude Code to ask")
    shown = flume_process("status", "wf--asks", "--repository", str(repo))
    assert "paused (question): q1: Hello or Hi? (options: Hello)" in shown.stdout
    answered = flume_process(
        "answer", "wf--asks", "q1", "Hello, please.", "--repository", str(repo)
    )
    assert answered.returncode == 0, answered.stderr
    wait_for(lambda: place_of(journal_path).life is Life.FINISHED, 120, "the run to finish")
    place = place_of(journal_path)
    (session,) = {q.session for q in place.questions}
    assert typed_lines(place, session, "The answer to your question q1 (Hello or Hi?)")
    assert (Path(place.path) / "README.md").read_text() == "hello\n"


SANDBOXED = """\
[kind]
name = "sb"
body = ["code"]

[step.code]
prompt = "Mend $brief; commit."
gate = "commit"
sandbox = true
may = ["progress"]
"""


def _results(place: Place, session: str) -> list[str]:
    """The text of every tool result in a session's transcript, in order."""
    found: list[str] = []
    for line in transcript_lines(place, session):
        message = line.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            found.extend(
                json.dumps(block.get("content"))
                for block in content
                if isinstance(block, dict) and block.get("type") == "tool_result"
            )
    return found


SANDBOXED_WORK = """\
[kind]
name = "sb"
body = ["code", "review"]
finalize = { land = true }

[step.code]
prompt = "Mend $brief; commit."
gate = "commit"
sandbox = true
may = ["progress", "ask"]

[step.review]
prompt = "Review $brief; write $verdict."
sandbox = true
"""


def test_a_sandboxed_step_of_claude_does_its_work_asks_is_answered_and_lands(
    tmp_path: Path, claude: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """The real Claude Code whole in flume's fence: it works as it would outside.

    Its model is reached through the fence's warden. It writes a note on the board, says its
    progress and asks a question through its inbox, is answered (in its transcript), commits
    (carried from its fence to its branch); its review's verdict passes; the run lands on main.
    Its Write tool on the worktree's ``.mcp.json`` is refused by flume's guard. Every way out
    tried through it is the escape corpus's (test_escape.py).
    """
    del panes
    shared.sandbox_programs()
    repo = _repo(tmp_path, claude)
    board = repo / "places" / ".boards" / "sb--cw"
    mcp = repo / "places" / "sb--cw" / ".mcp.json"
    journal_path = places.journals_dir(repo) / "sb--cw" / places.JOURNAL
    verdict = json.dumps({"result": "done", "summary": "hello it is"})
    model.script = (
        Reply(
            when="flume:sb--cw:code:1",
            tool=Tool(
                "Bash",
                {
                    "command": f"echo a note > {board}/notes.md && flume progress 'halfway' && "
                    "flume ask 'Hello or Hi?' && echo asked-it"
                },
            ),
        ),
        Reply(when="asked-it", text="Asked; waiting."),
        Reply(when="Hello, please", tool=Tool("Write", {"file_path": str(mcp), "content": "{}"})),
        Reply(when="is sandboxed", tool=Tool("Bash", {"command": COMMIT})),
        Reply(when="committed-it", text="Committed the fix."),
        Reply(
            when="flume:sb--cw:review:1",
            tool=Tool("Write", {"file_path": f"{board}/review/verdict.json", "content": verdict}),
        ),
        Reply(when="verdict.json", text="Reviewed."),
    )
    assert _launch_kind(tmp_path, repo, SANDBOXED_WORK, "sb--cw") == journal_path
    wait_for(lambda: place_of(journal_path).questions, 120, "Claude Code's question")
    assert place_of(journal_path).progress == "halfway"
    assert (board / "notes.md").read_text() == "a note\n"
    answered = flume_process("answer", "sb--cw", "q1", "Hello, please", "--repository", str(repo))
    assert answered.returncode == 0, answered.stderr
    wait_for(lambda: place_of(journal_path).landed_at is not None, 180, "the run to land")
    assert run_git(repo, "show", "main:README.md") == "hello\n"
    assert not mcp.exists()
    place = place_of(journal_path)
    (session,) = sessions_started(journal_path)
    results = _results(place, session)
    assert "flume: this step is sandboxed" in results[1], results
    assert len(typed_lines(place, session, "Hello, please")) == 1


#: The PR command of the crew test: records its argv, prints a URL. Run by flume with no shell.
CREW_PR = """\
import json, sys
with open(sys.argv[1], "a", encoding="utf-8") as out:
    out.write(json.dumps(sys.argv[2:]) + "\\n")
print("https://example.test/acme/app/pull/12")
"""


def _crew_kind(program: Path, record: Path) -> str:
    """The issue's example kind, its PR command the recording program above."""
    argv = [sys.executable, str(program), str(record), "--base", "{base}", "--head", "{branch}"]
    text = (Path(__file__).resolve().parents[2] / "examples" / "kinds" / "crew.toml").read_text()
    start = text.index("finalize = ")
    end = text.index("\n", start)
    return text[:start] + f'finalize = {{ push = "origin", pr = {json.dumps(argv)} }}' + text[end:]


def test_claude_as_lead_and_coders_carries_the_crew_example_to_its_pull_request(
    tmp_path: Path, claude: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """The issue's example by the real Claude Code: a plan, a lead and three coders, a review.

    The lead spawns three coders and a fourth is refused (the reason in its transcript); one
    coder asks, the lead answers (the child's transcript holds it); all commit and are merged;
    the review says done; the run's branch is pushed to a bare origin and the PR command runs
    once; status shows its URL. Every prompt and message is proven by Claude Code's transcript.
    """
    del panes
    repo = _repo(tmp_path, claude)
    origin = tmp_path / "origin.git"
    run_git(tmp_path, "init", "-q", "--bare", str(origin))
    run_git(repo, "remote", "add", "origin", str(origin))
    program, record = tmp_path / "pr.py", tmp_path / "pr-runs.jsonl"
    program.write_text(CREW_PR, encoding="utf-8")
    board = repo / "places" / ".boards" / "crew--team"
    spawn = " && ".join(
        f"flume spawn --goal 'slice {each}: write {each}.md'" for each in ("a", "b", "c")
    )

    def bash(command: str) -> Tool:
        return Tool("Bash", {"command": command})

    def commit(text: str, name: str) -> Tool:
        saved = f"printf '{text}\\n' > {name}.md && git add -A && git commit -q -m 'Slice {name}'"
        return bash(f"{saved} && echo committed-it")

    def verdict(step: str) -> Tool:
        folder = board / step
        written = f"""printf '{{"result": "done"}}' > {folder}/verdict.json"""
        return bash(f"mkdir -p {folder} && {written} && echo judged-it")

    over = "(flume spawn --goal 'slice d'; echo spawn-exit-$?)"
    answer = "flume answer crew--team+coder-2 q1 Hello && echo answered-it"
    model.script = (
        Reply(
            when=":crew--team:plan:1", tool=bash("printf 'a\\nb\\nc\\n' > PLAN.md && echo planned")
        ),
        Reply(when="planned", text="PLAN.md is written."),
        Reply(when=":crew--team:lead:1", tool=bash(f"{spawn} && {over}")),
        Reply(when="spawn-exit-1", text="Three coders spawned; I wait for their news."),
        Reply(when="Build: slice a", tool=commit("a", "a")),
        Reply(when="Build: slice c", tool=commit("c", "c")),
        Reply(
            when="Build: slice b", tool=bash("flume ask 'Hello or Hi in b.md?' && echo asked-it")
        ),
        Reply(when="asked-it", text="I asked my lead; I wait for the answer."),
        Reply(when="The answer to your question q1", tool=commit("Hello", "b")),
        Reply(when="committed-it", text="Committed."),
        Reply(when="asks q1: Hello or Hi in b.md?", tool=bash(answer)),
        Reply(when="answered-it", text="Answered; I wait."),
        Reply(when="All children of build are terminal", tool=verdict("lead")),
        Reply(when=":review-loop@1/review:1", tool=verdict("review")),
        Reply(when="judged-it", text="My verdict is written."),
    )
    path = _launch_kind(tmp_path, repo, _crew_kind(program, record), "crew--team")
    wait_for(lambda: place_of(path).life is Life.FINISHED, 420, "the crew run to finish")
    run = place_of(path)
    assert list(run.completed) == ["plan", "lead", "review-loop@1/review"]
    # Three spawned; the fourth refused, its reason in the lead's transcript.
    lead = next(each for each in run.attempts if each.stage == "lead")
    said = " ".join(str(line) for line in transcript_lines(run, lead.session))
    assert "may spawn 3 coder children at most, and 3 are spawned" in said
    assert "spawn-exit-1" in said
    children = {f"crew--team+coder-{n}" for n in (1, 2, 3)}
    journals = {name: places.journals_dir(repo) / name / places.JOURNAL for name in children}
    asker = place_of(journals["crew--team+coder-2"])
    (question,) = asker.questions
    assert question.answer == "Hello"
    assert typed_lines(asker, question.session, "The answer to your question q1")
    assert "asks q1: Hello or Hi in b.md?" in said
    for each in ("a", "b", "c"):
        assert run_git(repo, "show", f"crew/team:{each}.md").strip() in {each, "Hello"}
    # Pushed: origin holds the run's branch alone, at its head; the PR command ran once.
    heads = run_git(origin, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    assert heads == [f"refs/heads/crew/team {run.head}"]
    runs = record.read_text(encoding="utf-8").splitlines()
    assert len(runs) == 1
    assert json.loads(runs[0]) == ["--base", "main", "--head", "crew/team"]
    shown = flume_process("status", "--json", "--repository", str(repo))
    (row,) = [r for r in json.loads(shown.stdout)["places"] if r["place"] == "crew--team"]
    assert row["pr_url"] == "https://example.test/acme/app/pull/12"
    transcripts = flume_process("transcript", "crew--team", "lead", "--repository", str(repo))
    assert transcripts.returncode == 0, transcripts.stderr
    assert "flume spawn" in transcripts.stdout
    child = flume_process("transcript", "crew--team+coder-2", "--repository", str(repo))
    assert child.returncode == 0, child.stderr
    assert "The answer to your question q1" in child.stdout
