"""Claude Code's words for a transcript line, read into the neutral facts the core reads.

The same words are how a Claude Code transcript line reads (``agents/claude_lines.py``) and how
the journal spells every transcript line (``store/codec.py``), so old journals read as before.
"""

from __future__ import annotations

import pytest

from flume.core.delivery import infer_activity, is_typed_by_user
from flume.core.ids import Instant, SessionId
from flume.core.observations import Activity, Author, TranscriptEntry
from flume.shell.store.codec import decode, encode
from flume.shell.store.transcript_words import Content, Words, entry_of, is_interrupt_note

SESSION = SessionId("s1")
MARKER = "[flume:fix--typo:code:1]"


def entry(**fields: object) -> TranscriptEntry:
    """The entry Claude Code's words make."""
    fields.setdefault("text", MARKER)
    return entry_of(Words(**fields), at=Instant(0), session=SESSION)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "author"),
    [
        ({"line_type": "user", "content": Content.STRING}, Author.PERSON),
        ({"line_type": "user", "content": Content.TEXT}, Author.PERSON),
        ({"line_type": "user", "content": Content.TOOL_RESULT}, Author.TOOL),
        ({"line_type": "user", "content": Content.STRING, "is_meta": True}, Author.SYSTEM),
        (
            {"line_type": "user", "content": Content.STRING, "is_compact_summary": True},
            Author.SYSTEM,
        ),
        ({"line_type": "user", "content": Content.STRING, "is_sidechain": True}, Author.SYSTEM),
        ({"line_type": "user", "content": Content.TEXT, "row_source": "harness"}, Author.SYSTEM),
        ({"line_type": "user", "content": Content.NONE}, Author.SYSTEM),
        ({"line_type": "assistant", "content": Content.TEXT}, Author.AGENT),
        ({"line_type": "progress"}, Author.SYSTEM),
        ({"line_type": "queue-operation"}, Author.SYSTEM),
        ({"line_type": "attachment"}, Author.SYSTEM),
        ({"line_type": "system", "subtype": "turn_duration"}, Author.SYSTEM),
    ],
)
def test_r5_only_lines_typed_by_the_user_are_a_persons(
    fields: dict[str, object], author: Author
) -> None:
    """Tool results, meta lines, compact summaries, progress and assistant text are not typed."""
    made = entry(**fields)
    assert made.author is author
    assert is_typed_by_user(made) is (author is Author.PERSON)


@pytest.mark.parametrize(
    "opening", ["<task-notification>", "<local-command-stdout>", "<command-name>"]
)
def test_r5_text_the_harness_injects_is_not_typed(opening: str) -> None:
    """A user line opening with a tag Claude Code injects is not typed by the user."""
    made = entry(line_type="user", content=Content.STRING, text=f"  {opening}{MARKER}")
    assert made.author is Author.SYSTEM
    assert not is_typed_by_user(made)


@pytest.mark.parametrize(
    "note", ["[Request interrupted by user]", "[Request interrupted by user for tool use]"]
)
@pytest.mark.parametrize("content", [Content.TEXT, Content.STRING])
def test_r5_an_interrupt_note_is_not_typed_and_ends_the_turn(note: str, content: Content) -> None:
    """The note Claude Code writes when a person presses Esc: not typed, and the agent waits.

    A typed prompt that only quotes the note is still typed.
    """
    words = Words(line_type="user", content=content, text=f"{note}\n")
    assert is_interrupt_note(words)
    made = entry_of(words, at=Instant(0), session=SESSION)
    assert (made.author, made.ends_turn) == (Author.SYSTEM, True)
    assert infer_activity(made, Activity.WORKING) is Activity.WAITING
    quoting = Words(line_type="user", content=content, text=f"Why did I see {note}? {MARKER}")
    assert not is_interrupt_note(quoting)
    assert is_typed_by_user(entry_of(quoting, at=Instant(0), session=SESSION))


@pytest.mark.parametrize(
    ("fields", "known", "expected"),
    [
        ({"line_type": "system", "subtype": "turn_duration"}, Activity.WORKING, Activity.WAITING),
        (
            {"line_type": "system", "subtype": "stop_hook_summary"},
            Activity.WORKING,
            Activity.WAITING,
        ),
        (
            {"line_type": "system", "subtype": "compact_boundary"},
            Activity.WORKING,
            Activity.WORKING,
        ),
        (
            {"line_type": "assistant", "tool_name": "AskUserQuestion"},
            Activity.WORKING,
            Activity.ASKING,
        ),
        (
            {"line_type": "assistant", "tool_name": "AskUserQuestion", "stop_reason": "end_turn"},
            Activity.WORKING,
            Activity.ASKING,
        ),
        (
            {"line_type": "user", "content": Content.TOOL_USE, "tool_name": "AskUserQuestion"},
            Activity.WAITING,
            Activity.WAITING,
        ),
        ({"line_type": "assistant", "stop_reason": "end_turn"}, Activity.WORKING, Activity.WAITING),
        ({"line_type": "user", "stop_reason": "end_turn"}, Activity.WORKING, Activity.WORKING),
        ({"line_type": "system", "stop_reason": "end_turn"}, Activity.WORKING, Activity.WORKING),
        (
            {"line_type": "assistant", "content": Content.TOOL_USE},
            Activity.WAITING,
            Activity.WORKING,
        ),
        ({"line_type": "user", "content": Content.TOOL_RESULT}, Activity.WAITING, Activity.WORKING),
        (
            {"line_type": "user", "content": Content.STRING, "is_meta": True},
            Activity.WAITING,
            Activity.WAITING,
        ),
        ({"line_type": "progress"}, Activity.ASKING, Activity.ASKING),
    ],
)
def test_activity_from_one_claude_line(
    fields: dict[str, object], known: Activity, expected: Activity
) -> None:
    """What one of Claude Code's lines says of the agent, and what it leaves as it was."""
    assert infer_activity(entry(**fields), known) is expected


@pytest.mark.parametrize(
    "made",
    [
        TranscriptEntry(at=Instant(1.0), session=SESSION, author=Author.PERSON, text=MARKER),
        TranscriptEntry(at=Instant(1.0), session=SESSION, author=Author.AGENT, text="hm"),
        TranscriptEntry(at=Instant(1.0), session=SESSION, author=Author.AGENT, asks=True),
        TranscriptEntry(at=Instant(1.0), session=SESSION, author=Author.AGENT, ends_turn=True),
        TranscriptEntry(at=Instant(1.0), session=SESSION, author=Author.TOOL, text="ok"),
        TranscriptEntry(at=Instant(1.0), session=SESSION, author=Author.SYSTEM, ends_turn=True),
        TranscriptEntry(at=Instant(1.0), session=SESSION, author=Author.SYSTEM, text="note"),
    ],
)
def test_an_entry_made_from_facts_alone_is_journaled_in_words_that_read_back_to_them(
    made: TranscriptEntry,
) -> None:
    """An entry with no words of its own is spelled in words that make the same facts."""
    line = encode(made)
    assert decode(line) == made
    assert encode(decode(line)) == line


def test_a_journaled_line_keeps_the_words_it_was_read_from() -> None:
    """Words the facts do not hold (the tool's name, the stop reason) are journaled as read."""
    line = (
        '{"at":1.5,"session":"s1","line_type":"assistant","content":"tool_use",'
        '"tool_name":"Write","stop_reason":"tool_use","type":"TranscriptEntry"}'
    )
    seen = decode(line)
    assert seen == TranscriptEntry(at=Instant(1.5), session=SESSION, author=Author.AGENT)
    assert encode(seen) == line
