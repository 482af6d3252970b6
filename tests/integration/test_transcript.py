"""``flume transcript``, status and events on journals that name each attempt's transcript.

The journals are written as the supervisor writes them (an agent started, its transcript
found); the transcripts are files of each agent's own format: a real Claude Code transcript of
the corpus where it is there, Codex's rollout written by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flume import api
from flume.cli.app import app
from flume.core.ids import Instant, SessionId, StageName
from flume.core.observations import (
    AgentExited,
    AgentStarted,
    Author,
    NeedsSaid,
    RetryAsked,
    TranscriptEntry,
    TranscriptFound,
)
from flume.core.place import Life
from flume.core.settings import Settings
from flume.core.step import replay
from flume.shell.perform import launcher
from flume.shell.store import journal, places
from tests import shared
from tests.integration.test_corpus import TYPED
from tests.integration.test_rollout import TURN_0171
from tests.integration.test_status import append, place, repository

runner = CliRunner()
CORPUS_FILE = "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


@pytest.fixture(autouse=True)
def _own_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test has a registry of its own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def _claude_transcript(folder: Path) -> Path:
    """A short transcript in Claude Code's format: the prompt, a tool call, its result, words."""
    lines = [
        {"type": "user", "message": {"role": "user", "content": "Mend it.\n[flume:fix--a:code:1]"}},
        {
            "type": "assistant",
            "message": {
                "content": [{"type": "tool_use", "name": "Bash", "input": {"command": "make"}}]
            },
        },
        {"type": "user", "message": {"content": [{"type": "tool_result", "content": "built"}]}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "Mended."}]}},
    ]
    path = folder / "s1.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _retried(repo: Path, first: Path, second: Path | None, *, written: bool = True) -> Path:
    """A fix whose code stage ran twice: attempt 1 with ``first``, attempt 2 with ``second``.

    ``written``: a line of attempt 2's transcript was read (its agent wrote it).
    """
    path = place(repo, "fix", "a")
    code = StageName("code")
    for seen in (
        TranscriptFound(at=Instant(4), session=SessionId("s1"), path=str(first)),
        NeedsSaid(at=Instant(5), words="a key", session=SessionId("s1")),
        AgentExited(at=Instant(6), session=SessionId("s1")),
        RetryAsked(at=Instant(7), words="here"),
        AgentStarted(at=Instant(8), stage=code, attempt=2, session=SessionId("s2"), pane="%2"),
    ):
        append(path, seen)
    if second is not None:
        append(path, TranscriptFound(at=Instant(9), session=SessionId("s2"), path=str(second)))
    if second is not None and written:
        append(path, TranscriptEntry(at=Instant(10), session=SessionId("s2"), author=Author.AGENT))
    return path


def _run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["transcript", *args])
    return result.exit_code, result.stdout, result.stderr


def test_every_attempt_is_shown_in_order_with_its_header(tmp_path: Path) -> None:
    """No step named: each attempt, its key, agent, session and file, then its conversation."""
    repo = repository(tmp_path / "repo")
    first = _claude_transcript(tmp_path)
    second = tmp_path / "s2.jsonl"
    second.write_text(first.read_text(encoding="utf-8"), encoding="utf-8")
    _retried(repo, first, second)
    code, out, err = _run("fix--a")
    assert code == 0, err
    assert out.splitlines()[:7] == [
        "== fix--a code#1 (claude, session s1)",
        f"   transcript: {first}",
        "prompt | Mend it.",
        "       | [flume:fix--a:code:1]",
        "tool   | Bash: make",
        "result | built",
        "text   | Mended.",
    ]
    assert "== fix--a code#2 (claude, session s2)" in out
    assert f"   transcript: {second}" in out
    assert out.count("text   | Mended.") == 2


def test_a_codex_attempt_is_read_as_codex_s(tmp_path: Path) -> None:
    """An attempt whose agent is Codex reads its rollout; --json has every part."""
    repo = repository(tmp_path / "repo")
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text("\n".join(TURN_0171) + "\n", encoding="utf-8")
    path = place(repo, "fix", "b")
    # The journal's launch names Codex for the place.
    lines = path.read_text(encoding="utf-8").splitlines()
    launched = json.loads(lines[0])
    launched["launch"]["agent"] = {"agent": "codex"}
    path.write_text("\n".join([json.dumps(launched), *lines[1:]]) + "\n", encoding="utf-8")
    append(path, TranscriptFound(at=Instant(4), session=SessionId("s1"), path=str(rollout)))
    code, out, err = _run("fix--b", "code", "--attempt", "1", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["format"] == 1
    assert document["place"] == "fix--b"
    (attempt,) = document["attempts"]
    assert (attempt["key"], attempt["attempt"], attempt["agent"]) == ("code", 1, "codex")
    assert attempt["transcript"] == str(rollout)
    assert attempt["missing"] is None
    assert [line["part"] for line in attempt["lines"]] == ["prompt", "tool", "result", "text"]
    assert attempt["lines"][-1]["text"] == "Fixed."


def test_a_real_claude_code_transcript_is_replayed(tmp_path: Path) -> None:
    """A real transcript of the corpus: its typed prompts, and its tool calls one a line."""
    corpus = shared.corpus()
    repo = repository(tmp_path / "repo")
    path = place(repo, "fix", "real")
    append(
        path,
        TranscriptFound(at=Instant(4), session=SessionId("s1"), path=str(corpus / CORPUS_FILE)),
    )
    code, out, err = _run("fix--real", "code")
    assert code == 0, err
    prompts = [line for line in out.splitlines() if line.startswith("prompt | ")]
    assert [line.removeprefix("prompt | ")[:40] for line in prompts] == [
        text[:40] for text in TYPED[CORPUS_FILE]
    ]
    assert any(line.startswith("tool   | Bash: ") for line in out.splitlines())


def test_status_and_events_name_each_attempt_s_transcript(tmp_path: Path) -> None:
    """Status --json: the current attempt's transcript and each attempt's; an event for each."""
    repo = repository(tmp_path / "repo")
    first = _claude_transcript(tmp_path)
    _retried(repo, first, tmp_path / "s2.jsonl")
    (view,) = api.status_dicts(place="fix--a", repository=repo)
    assert view["transcript"] == str(tmp_path / "s2.jsonl")
    assert view["transcripts"] == [
        {
            "key": "code",
            "stage": "code",
            "attempt": 1,
            "agent": "claude",
            "session": "s1",
            "path": str(first),
        },
        {
            "key": "code",
            "stage": "code",
            "attempt": 2,
            "agent": "claude",
            "session": "s2",
            "path": str(tmp_path / "s2.jsonl"),
        },
    ]
    told = [event for event in api.events(repository=repo) if event.event.value == "transcript"]
    assert [(event.stage, event.attempt) for event in told] == [("code", 1), ("code", 2)]
    assert str(first) in told[0].text


def test_a_place_s_status_has_no_transcript_until_one_is_found(tmp_path: Path) -> None:
    """A journal naming no transcript (an older flume's) shows none: its status is as it was."""
    repo = repository(tmp_path / "repo")
    place(repo, "fix", "old")
    (view,) = api.status_dicts(place="fix--old", repository=repo)
    assert "transcript" not in view
    assert "transcripts" not in view
    code, out, err = _run("fix--old")
    assert code == 1
    assert "no transcript was found for it" in out
    assert "fix--old code#1: no transcript was found" in err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["fix--nope"], "no place fix--nope"),
        (["fix--a", "review"], "fix--a has no step review; name one of its steps (code, submit)"),
        (["fix--a", "code", "--attempt", "3"], "its attempts are 1, 2"),
        (["fix--a", "--attempt", "1"], "no step is named"),
        (["fix--a", "code", "--attempt", "x"], "'x' is not a valid int"),
    ],
)
def test_bad_input_says_what_is_wrong_exits_2_and_writes_nothing(
    tmp_path: Path, args: list[str], says: str
) -> None:
    """An unknown place, step or attempt: named, with the way to mend it; nothing changes."""
    repo = repository(tmp_path / "repo")
    path = _retried(repo, _claude_transcript(tmp_path), None)
    before = path.read_bytes()
    code, out, err = _run(*args)
    assert code == 2
    assert says in " ".join(err.split())
    assert out == ""
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.parent.iterdir() if p.name != ".names.lock"] == ["fix--a"]


def test_a_step_not_run_yet_has_nothing_to_show(tmp_path: Path) -> None:
    """A step of the kind no agent ran yet: said so, exit status 1."""
    repo = repository(tmp_path / "repo")
    _retried(repo, _claude_transcript(tmp_path), None)
    code, _out, err = _run("fix--a", "submit")
    assert code == 1
    assert "no agent has run submit in fix--a yet" in err


def test_a_transcript_gone_is_said_for_its_attempt_and_the_others_shown(tmp_path: Path) -> None:
    """One attempt's file removed: it says so; with another shown, exit 0; alone, exit 1."""
    repo = repository(tmp_path / "repo")
    _retried(repo, _claude_transcript(tmp_path), tmp_path / "gone.jsonl")
    code, out, err = _run("fix--a")
    assert code == 0, err
    assert "text   | Mended." in out
    assert f"not shown: its transcript {tmp_path / 'gone.jsonl'} is gone" in out
    assert "fix--a code#2: its transcript" in err
    code, out, err = _run("fix--a", "code", "--attempt", "2")
    assert code == 1
    assert "is gone" in out


def test_a_transcript_never_written_is_not_called_removed(tmp_path: Path) -> None:
    """Named, and never a line read from it: its agent died first; never said to be removed.

    The fault (issue 25, 2.8): the test agent died at once, and ``flume transcript`` said its
    file was removed, as Claude Code removes old transcripts.
    """
    repo = repository(tmp_path / "repo")
    _retried(repo, _claude_transcript(tmp_path), tmp_path / "unwritten.jsonl", written=False)
    code, out, _ = _run("fix--a", "code", "--attempt", "2")
    assert code == 1
    assert f"its transcript {tmp_path / 'unwritten.jsonl'} was never written" in out
    assert "removed" not in out


def test_a_tidied_place_set_aside_is_still_replayed(tmp_path: Path) -> None:
    """Its journal set aside by tidy, the place's attempts are still found, transcripts whole."""
    repo = repository(tmp_path / "repo")
    path = _retried(repo, _claude_transcript(tmp_path), None)
    with places.names_locked(repo):
        launcher.archive(path.parent.parent, path.parent)
    assert not path.exists()
    code, out, err = _run("fix--a", "code", "--attempt", "1")
    assert code == 0, err
    assert "text   | Mended." in out
    (chat,) = api.transcript("fix--a", "code", attempt=1, repository=repo)
    assert chat.place == "fix--a"
    assert chat.lines[0].text.startswith("Mend it.")
    # What was set aside replays as it was: the life is the journal's own.
    (kept,) = (places.journals_dir(repo) / ".tidied").glob("fix--a.*/fix--a/journal.jsonl")
    assert replay(Settings(), journal.read(kept).observations).life is Life.ACTIVE
