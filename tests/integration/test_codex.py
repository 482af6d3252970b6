"""The real Codex, driven by flume's real supervisor in tmux, against a scripted model.

Codex (the pinned version, ``scripts/install-agents``) runs offline: its model is a
:class:`~flume.testing.model.ScriptedModel` on loopback, reached as a custom Responses API
provider, and its ``CODEX_HOME`` and HOME are folders of the test's own, seeded so that it
starts at its composer (:mod:`flume.testing.codex`). flume starts it in a pane, waits until its
composer is on the screen, pastes the prompt and confirms it in Codex's own rollout. Where Codex
is not installed these tests skip with a loud reason; under scripts/test, which installs it,
they fail instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from flume.core.observations import Activity, TranscriptEntry, TurnEnded, Usage
from flume.core.place import Life, Short, ShortCause
from flume.shell.agents import sandbox
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from flume.shell.store.transcript_words import words_of
from flume.testing.codex import CODEX_VERSION, codex_binary, codex_env, seed_home
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
    wait_for,
)
from tests.integration.places_kit import flume_process, run_git

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

#: Codex runs the model's commands unasked and unsandboxed (the test's folders are its sandbox).
#: flume itself asks for a non-login shell, so that ``flume needs`` is found on its PATH.
FLAGS = ("--dangerously-bypass-approvals-and-sandbox",)
COMMIT = (
    "printf 'hello\\n' > README.md && git add README.md && "
    "git commit -q -m 'Say hello' && echo committed-it"
)


@pytest.fixture
def codex(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The real Codex, or a loud skip (a failure under scripts/test) when it is not installed.

    Gives the test's own HOME, with Codex's folder (``CODEX_HOME``) in it.
    """
    binary = installed_or_skip(codex_binary(), f"CODEX {CODEX_VERSION}")
    monkeypatch.setenv("FLUME_CODEX", str(binary))
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def model(codex: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModel]:
    """A scripted model the test fills in; Codex's environment (and folder) point at it."""
    server = ScriptedModel()
    server.start()
    for key, value in codex_env(codex / ".codex", codex).items():
        monkeypatch.setenv(key, value)
    try:
        yield server
    finally:
        server.close()


def _repo(tmp_path: Path, home: Path, model: ScriptedModel, *, trusted: bool = True) -> Path:
    """A repository Codex trusts (and with it every place, a worktree of it), or does not."""
    repo = agent_repository(tmp_path, TIMING.replace("confirm = 4", "confirm = 15"))
    seed_home(home / ".codex", model_url=model.url, trusted=[repo] if trusted else [])
    return repo


def _launch(repo: Path, name: str) -> Path:
    args = [f"--agent-arg={flag}" for flag in FLAGS]
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind", "fix", "--name", name,
        "--brief", "Mend the greeting.", "--agent", "codex", *args,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / f"fix--{name}" / places.JOURNAL


def _marker(name: str) -> str:
    return f"flume:fix--{name}:code:1"


def typed_prompts(codex_home: Path, holding: str) -> list[str]:
    """The prompts typed into Codex holding ``holding``: its rollouts' user ``input_text``."""
    found = []
    for path in sorted((codex_home / "sessions").glob("*/*/*/rollout-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            data = json.loads(line)
            payload = data.get("payload") or {}
            if data.get("type") != "response_item" or payload.get("role") != "user":
                continue
            texts = [part.get("text", "") for part in payload.get("content", [])]
            found += [text for text in texts if holding in text]
    return found


def journaled_prompts(journal_path: Path, holding: str) -> list[TranscriptEntry]:
    """The user lines flume read from the rollout holding ``holding``."""
    return [
        seen
        for seen in observations(journal_path)
        if isinstance(seen, TranscriptEntry)
        and words_of(seen).line_type == "user"
        and holding in seen.text
    ]


def test_codex_takes_the_prompt_and_its_commit_ends_the_stage(
    tmp_path: Path, codex: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """R5, R7: the prompt is confirmed in Codex's rollout; its exec_command commit ends code."""
    del panes
    repo = _repo(tmp_path, codex, model)
    model.script = (
        Reply(when=_marker("cx"), tool=Tool("exec_command", {"cmd": COMMIT})),
        Reply(when="committed-it", text="Committed the fix."),
    )
    journal_path = _launch(repo, "cx")
    wait_for(lambda: "code" in place_of(journal_path).completed, 120, "the code stage to end")
    assert len(sessions_started(journal_path)) == 1
    assert prompt_sends(journal_path) == 1
    assert len(typed_prompts(codex / ".codex", _marker("cx"))) == 1
    assert len(journaled_prompts(journal_path, _marker("cx"))) == 1
    place = place_of(journal_path)
    assert (Path(place.path) / "README.md").read_text() == "hello\n"
    calls = [body for body in model.requests if "exec_command" in json.dumps(body.get("tools"))]
    assert calls, "Codex offered no exec_command tool"
    # The attempt's rollout is journaled and replayed as Codex's (TRANSCRIPT-KEPT).
    shown = flume_process("transcript", "fix--cx", "code", "--json")
    assert shown.returncode == 0, shown.stderr
    (attempt,) = json.loads(shown.stdout)["attempts"]
    assert attempt["agent"] == "codex"
    assert Path(attempt["transcript"]).is_relative_to(codex / ".codex" / "sessions")
    parts = [(line["part"], line["text"]) for line in attempt["lines"]]
    prompts = [text for part, text in parts if part == "prompt"]
    assert len(prompts) == 1
    assert f"[{_marker('cx')}]" in prompts[0]
    assert any(part == "tool" and text.startswith("exec_command: printf") for part, text in parts)
    assert ("text", "Committed the fix.") in parts


def test_the_journal_holds_the_tokens_the_scripted_model_reported(
    tmp_path: Path, codex: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """A turn's end is journaled with the usage of its model calls, from Codex's token counts.

    The turn's two calls (the exec_command call, then the answer) are summed, each once; a side
    request (the thread's title), which offers no tools, is not the turn's.
    """
    del panes
    repo = _repo(tmp_path, codex, model)
    model.script = (
        Reply(when=_marker("tk"), tool=Tool("exec_command", {"cmd": COMMIT})),
        Reply(when="committed-it", text="Committed the fix."),
    )
    journal_path = _launch(repo, "tk")

    def ended() -> list[TurnEnded]:
        return [seen for seen in observations(journal_path) if isinstance(seen, TurnEnded)]

    wait_for(ended, 120, "the turn's end in the journal")
    (turn,) = ended()
    calls = [each.usage for each in model.usages if each.tools]
    assert len(calls) == 2, model.usages
    cached = sum(each["input_tokens_details"]["cached_tokens"] for each in calls)
    assert turn.usage == Usage(
        input=sum(each["input_tokens"] for each in calls) - cached,
        output=sum(each["output_tokens"] for each in calls),
        cache_read=cached,
    )


def test_flume_needs_through_exec_command_stops_the_place_short(
    tmp_path: Path, codex: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """R8: Codex runs flume needs in its place; the stage stops short with those words."""
    del panes
    repo = _repo(tmp_path, codex, model)
    needs = "flume needs 'the staging API key' && echo said-it"
    model.script = (
        Reply(when=_marker("needy"), tool=Tool("exec_command", {"cmd": needs})),
        Reply(when="said-it", text="I asked for the key."),
    )
    journal_path = _launch(repo, "needy")

    wait_for(
        stopped_short(journal_path, ShortCause.NEEDS), 120, "the stage to stop short on flume needs"
    )
    phase = place_of(journal_path).stage.phase
    assert isinstance(phase, Short)
    assert phase.words == "the staging API key"
    assert "the staging API key" in flume_process("status", "--repository", str(repo)).stdout


def test_codex_asking_to_trust_the_place_is_left_to_a_person(
    tmp_path: Path, codex: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """R5: Codex's trust dialog is a person asked; flume types nothing, so trusts nothing.

    Its chosen line is drawn with the composer's glyph (``1. Trust and continue``), and the
    Enter after a paste would answer it, writing the trust into Codex's config.toml.
    """
    repo = _repo(tmp_path, codex, model, trusted=False)
    journal_path = _launch(repo, "wary")

    wait_for(
        agent_doing(journal_path, Activity.ASKING),
        60,
        "Codex's trust dialog to be read as a person asked",
    )
    place = place_of(journal_path)
    assert place.agent is not None
    assert "Trust this folder?" in (panes.capture(place.agent.pane) or "")
    assert prompt_sends(journal_path) == 0
    assert "trust_level" not in (codex / ".codex" / "config.toml").read_text()
    assert not model.requests


#: Codex codes; the review is a step of its own agent, flume's test agent, gated on a verdict.
CODEX_THEN_TEST = """\
[kind]
name = "wf"
body = ["code", "review"]

[step.code]
prompt = "Do $brief; commit."
gate = "commit"

[step.review]
agent = "test"
prompt = "Review $brief. Write $verdict."
gate = "verdict"
"""

REVIEW_SCRIPT = """
[[turn]]
match = ":review:1"
steps = [{write = {path = "$board/review/verdict.json", text = '{"result": "done"}'}}]
"""


def test_a_step_of_its_own_agent_runs_that_agent_and_is_read_as_it(
    tmp_path: Path, codex: Path, model: ScriptedModel, panes: Tmux, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Codex launch whose review step names the test agent: Codex codes, the test agent reviews.

    The review is started as the test agent (its transcript is Claude Code's shape, in its own
    home) and read as it: the end of its turn is seen, its verdict judged, and the run finishes.
    Read as Codex, its turn's end would never be seen and the run would wait.
    """
    del panes
    repo = _repo(tmp_path, codex, model)
    model.script = (
        Reply(when="flume:wf--mixed:code:1", tool=Tool("exec_command", {"cmd": COMMIT})),
        Reply(when="committed-it", text="Committed the fix."),
    )
    # The test agent takes no flag of the Codex launch's: its script comes by the environment.
    agent_script = tmp_path / "review.toml"
    agent_script.write_text(REVIEW_SCRIPT, encoding="utf-8")
    monkeypatch.setenv("FLUME_TEST_AGENT_SCRIPT", str(agent_script))
    kind_file = tmp_path / "wf.toml"
    kind_file.write_text(CODEX_THEN_TEST, encoding="utf-8")
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", "mixed",
        "--brief", "the greeting", "--agent", "codex",
        *[f"--agent-arg={flag}" for flag in FLAGS],
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    journal_path = places.journals_dir(repo) / "wf--mixed" / places.JOURNAL
    wait_for(lambda: place_of(journal_path).life is Life.FINISHED, 120, "the run to finish")
    assert list(place_of(journal_path).completed) == ["code", "review"]
    (review,) = sessions_started(journal_path, "review")
    transcripts = list((places.state_dir() / "test-agent" / "projects").glob(f"*/{review}.jsonl"))
    assert len(transcripts) == 1, "the review was not started as the test agent"
    ends = [
        seen
        for seen in observations(journal_path)
        if isinstance(seen, TurnEnded) and seen.session == review
    ]
    assert ends, "the test agent's turn end was never read"


SANDBOXED = """\
[kind]
name = "sb"
body = ["code"]

[step.code]
prompt = "Mend $brief; commit."
gate = "commit"
sandbox = true
"""


def test_a_sandboxed_codex_keeps_its_config_and_login(
    tmp_path: Path, codex: Path, model: ScriptedModel, panes: Tmux
) -> None:
    """A sandboxed step's Codex in flume's fence: its own home's settings are read-only to it.

    Its model is reached through the fence's warden. Its commands try to append to
    ``config.toml`` (a ``notify`` command the next unsandboxed Codex would run), to rename it
    and put another in its place, to write ``auth.json`` and a global ``AGENTS.md``: each is
    refused or lost with the fence, and the real files are as they were. Its rollout is kept in
    its session's stand-in of its home, where flume reads it, and its commit ends the step.
    """
    del panes
    shared.sandbox_programs()
    repo = _repo(tmp_path, codex, model)
    home = codex / ".codex"
    (home / "auth.json").write_text("{}\n", encoding="utf-8")
    config = (home / "config.toml").read_text(encoding="utf-8")
    tries = "; ".join(
        f"({each}); echo try{number}=$?"
        for number, each in enumerate(
            (
                f'echo \'notify = ["touch", "/tmp/x"]\' >> {home}/config.toml',
                f"mv {home}/config.toml {home}/old.toml",
                f"echo x > {home}/auth.json",
                f"echo x > {home}/AGENTS.md",
            )
        )
    )
    model.script = (
        Reply(
            when="flume:sb--cx:code:1",
            tool=Tool("exec_command", {"cmd": f"{tries}; {COMMIT}"}),
        ),
        Reply(when="committed-it", text="Committed the fix."),
    )
    kind_file = tmp_path / "sb.toml"
    kind_file.write_text(SANDBOXED, encoding="utf-8")
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", "cx",
        "--brief", "the greeting", "--agent", "codex",
        *(f"--agent-arg={flag}" for flag in FLAGS),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    journal_path = places.journals_dir(repo) / "sb--cx" / places.JOURNAL
    wait_for(lambda: "code" in place_of(journal_path).completed, 120, "the sandboxed step to end")

    place = place_of(journal_path)
    assert run_git(repo, "show", f"{place.branch}:README.md") == "hello\n"
    assert (home / "config.toml").read_text(encoding="utf-8") == config
    assert not (home / "old.toml").exists()
    assert (home / "auth.json").read_text(encoding="utf-8") == "{}\n"
    assert not (home / "AGENTS.md").exists()
    (session,) = sessions_started(journal_path)
    assert not list((home / "sessions").glob("*/*/*/rollout-*.jsonl"))
    kept = sandbox.seen_home(session, home)
    assert kept != home
    assert list((kept / "sessions").glob("*/*/*/rollout-*.jsonl"))
