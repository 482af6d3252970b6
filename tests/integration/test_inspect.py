"""``flume inspect transcript``: the messages typed by the user in real transcripts, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from flume.cli.inspect import SHORT, inspect_app, shorten
from flume.core.observations import Activity
from flume.shell.agents.inspection import TranscriptFormat, TypedLine, inspect
from tests.integration.test_rollout import TURN_0171
from tests.shared import CORPUS

FIRST = "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
SECOND = "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
#: Exactly what a person (an orchestrator at the keyboard) typed into each session.
TYPED = {
    FIRST: (
        TypedLine(
            line=7,
            timestamp="2026-02-12T16:02:25.284Z",
            text=(
                "Work on bead spotter-dov. Run bd show spotter-dov to see the issue details and "
                "bd ready to find available subtasks. Start with the first ready task."
            ),
        ),
        TypedLine(line=280, timestamp="2026-02-12T20:19:00.807Z", text="continue"),
    ),
    SECOND: (
        TypedLine(
            line=7,
            timestamp="2026-02-12T14:11:57.667Z",
            text=(
                "Work on bead spotter-4te. Run bd show spotter-4te to see the issue details and "
                "bd ready to find available subtasks. Start with the first ready task."
            ),
        ),
        TypedLine(line=1491, timestamp="2026-02-12T14:51:49.955Z", text="continue implementation"),
    ),
}
#: Lines that look typed but are not, each with how it opens: the rules must pass them over.
NOT_TYPED = {
    FIRST: {
        755: "This session is being continued from a previous conversation",  # compact summary
        1502: "<task-notification>",  # carries a typed prompt's flags
    },
    SECOND: {
        102: "Base directory for this skill:",  # the skill's text, isMeta
        1482: "This session is being continued from a previous conversation",  # compact summary
        1483: "<local-command-caveat>",  # /compact's caveat, isMeta
        1484: "<command-name>/compact</command-name>",  # the /compact command itself
        1485: "<local-command-stdout>",  # /compact's output
    },
}
LINES = {FIRST: 1512, SECOND: 2385}

#: The test reads the corpus: skipped without it, failed where it is required (tests/shared.py).
needs_corpus = pytest.mark.usefixtures("corpus")

root = typer.Typer()
root.add_typer(inspect_app, name="inspect")
runner = CliRunner()


def flume_inspect(*args: str) -> tuple[int, str, str]:
    """Run ``flume inspect transcript`` on a root mounting ``inspect_app`` as app.py will."""
    result = runner.invoke(root, ["inspect", "transcript", *args])
    return result.exit_code, result.stdout, result.stderr


@needs_corpus
@pytest.mark.parametrize("name", [FIRST, SECOND])
def test_exactly_the_typed_prompts_are_listed(name: str) -> None:
    """The two prompts a person typed, whole, with line and time; the end state is waiting."""
    found = inspect(CORPUS / name)
    assert found.format is TranscriptFormat.CLAUDE_CODE
    assert found.prompts == TYPED[name]
    assert len(found.prompts) == 2
    assert (found.lines, found.unreadable, found.torn) == (LINES[name], 0, False)
    assert found.state is Activity.WAITING


@needs_corpus
@pytest.mark.parametrize("name", [FIRST, SECOND])
def test_lines_that_only_look_typed_are_not_listed(name: str) -> None:
    """Compact summaries, the task notification, the skill and /compact's lines are not prompts.

    Each is a ``user`` line with text content, so the test first checks it is really there.
    """
    lines = (CORPUS / name).read_text(encoding="utf-8").splitlines()
    listed = {prompt.line for prompt in inspect(CORPUS / name).prompts}
    for number, opening in NOT_TYPED[name].items():
        data = json.loads(lines[number - 1])
        content = data["message"]["content"]
        text = content if isinstance(content, str) else content[0]["text"]
        assert (data["type"], text.lstrip()[: len(opening)]) == ("user", opening)
        assert number not in listed


def test_a_codex_rollout_is_read_as_one(tmp_path: Path) -> None:
    """A file opening with ``session_meta`` is a rollout: one prompt, though written twice."""
    path = tmp_path / "rollout-2026-11-29T10-00-00-x.jsonl"
    path.write_text("\n".join(TURN_0171) + "\n", encoding="utf-8")
    found = inspect(path)
    assert found.format is TranscriptFormat.CODEX
    assert [(prompt.line, prompt.timestamp) for prompt in found.prompts] == [
        (5, "2026-11-29T10:00:00.000Z")
    ]
    assert found.prompts[0].text.endswith("[flume:fix--parser:code:1]")
    assert (found.lines, found.unreadable, found.state) == (11, 0, Activity.WAITING)


def test_counts_torn_and_unreadable_lines(tmp_path: Path) -> None:
    """Unreadable lines are counted; a torn last line is not read, and said to be torn."""
    path = tmp_path / "t.jsonl"
    prompt = {"type": "user", "message": {"role": "user", "content": "hello"}}
    path.write_text(f"not json\n\n{json.dumps(prompt)}\n{{torn", encoding="utf-8")
    found = inspect(path)
    assert found.prompts == (TypedLine(line=3, timestamp=None, text="hello"),)
    assert (found.lines, found.unreadable, found.torn) == (3, 1, True)
    assert found.state is Activity.WORKING


def _user_line(content: object, **flags: object) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": content}, **flags})


def test_an_interrupt_note_is_not_listed_and_leaves_the_agent_waiting(tmp_path: Path) -> None:
    """The notes Claude Code writes when a person presses Esc are nobody's prompt.

    In both shapes seen: text blocks with no flag (2.1.39, as in the corpus) and with
    ``rowSource: "harness"``. After the note the turn is over: the agent waits.
    """
    path = tmp_path / "t.jsonl"
    lines = [
        _user_line("Mend the greeting."),
        _user_line([{"type": "text", "text": "[Request interrupted by user for tool use]"}]),
        _user_line("go on"),
        _user_line(
            [{"type": "text", "text": "[Request interrupted by user]"}], rowSource="harness"
        ),
    ]
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    found = inspect(path)
    assert [prompt.text for prompt in found.prompts] == ["Mend the greeting.", "go on"]
    assert found.state is Activity.WAITING


@needs_corpus
def test_the_corpus_interrupt_note_is_not_listed() -> None:
    """A real session a person interrupted (Esc on a tool): its two typed prompts, not the note."""
    name = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    lines = (CORPUS / name).read_text(encoding="utf-8").splitlines()
    note = json.loads(lines[494])
    assert note["message"]["content"] == [
        {"type": "text", "text": "[Request interrupted by user for tool use]"}
    ]
    found = inspect(CORPUS / name)
    assert [(prompt.line, prompt.text) for prompt in found.prompts] == [
        (5, "Implement spotter-gqc"),
        (1858, "did you push?"),
    ]


def test_an_empty_file_has_nothing_to_say(tmp_path: Path) -> None:
    """An empty transcript: no lines, no prompts, the state unknown."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"")
    found = inspect(path)
    assert (found.lines, found.prompts, found.state) == (0, (), Activity.UNKNOWN)


@needs_corpus
def test_the_cli_prints_one_json_object() -> None:
    """``--json``: file, format, counts, the prompts whole, and the state."""
    path = CORPUS / SECOND
    code, out, _err = flume_inspect(str(path), "--json")
    assert code == 0
    assert json.loads(out) == {
        "file": str(path),
        "format": "claude-code",
        "lines": 2385,
        "unreadable": 0,
        "torn": False,
        "prompts": [
            {"line": p.line, "timestamp": p.timestamp, "text": p.text} for p in TYPED[SECOND]
        ],
        "state": "waiting",
    }


@needs_corpus
def test_the_cli_prints_a_table_for_a_person() -> None:
    """The table: each prompt's line, time and text shortened to one line; then the state."""
    code, out, _err = flume_inspect(str(CORPUS / FIRST))
    assert code == 0
    assert "format: claude-code" in out
    assert "lines: 1512 (0 unreadable)" in out
    assert "typed by the user: 2" in out
    first = shorten(TYPED[FIRST][0].text)
    assert len(first) == SHORT
    assert first.endswith("…")
    rows = [line for line in out.splitlines() if "2026-02-12T" in line]
    assert len(rows) == 2
    assert rows[0].split()[:2] == ["7", "2026-02-12T16:02:25.284Z"]
    assert rows[0].endswith(first)
    assert rows[1].split() == ["280", "2026-02-12T20:19:00.807Z", "continue"]
    assert out.rstrip().endswith("agent state at the end: waiting")


def test_shorten_makes_one_line_of_at_most_the_limit() -> None:
    """Newlines and runs of blanks become one space; long text is cut with an ellipsis."""
    assert shorten("a\n\n  b\tc") == "a b c"
    assert shorten("x" * 300) == "x" * (SHORT - 1) + "…"
    assert shorten("x" * SHORT) == "x" * SHORT


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    """No such file: exit status 2, and a message naming the file and how to mend it."""
    missing = tmp_path / "nope.jsonl"
    code, out, err = flume_inspect(str(missing))
    assert code == 2
    assert out == ""
    assert str(missing) in err
    assert "cannot be read" in err
    assert "name a Claude Code transcript" in err


def test_a_directory_is_a_usage_error(tmp_path: Path) -> None:
    """A folder is not a transcript: exit status 2, the same message."""
    code, _out, err = flume_inspect(str(tmp_path), "--json")
    assert code == 2
    assert str(tmp_path) in err


@pytest.mark.parametrize(
    "text",
    [
        "# A README\n\nNot a transcript at all.\n",
        '[1, 2]\n"a string"\n',
    ],
    ids=["markdown", "json-but-no-objects"],
)
def test_a_file_with_no_transcript_line_is_a_usage_error(tmp_path: Path, text: str) -> None:
    """Lines, none of them a transcript's: exit 2, naming the file and what was expected."""
    path = tmp_path / "README.md"
    path.write_text(text, encoding="utf-8")
    for args in ((str(path),), (str(path), "--json")):
        code, out, err = flume_inspect(*args)
        assert code == 2
        assert out == ""
        assert str(path) in err
        assert "no line of it is a transcript's" in err
        assert "a Claude Code transcript" in err
