"""A transcript line's journal form: Claude Code's words, read into the core's neutral facts.

The core's :class:`~flume.core.observations.TranscriptEntry` says who wrote a line
(:class:`~flume.core.observations.Author`), whether the agent asks a person and whether the
line ends a turn. The journal's format 1 spells each line in Claude Code's words instead
(``line_type``, ``content``, ``row_source``, ``stop_reason``, ...), as flume wrote them when it
read only Claude Code: :class:`Words`. Those words are kept beside the facts
(``TranscriptEntry.spelling``), so a journal line encodes back byte for byte, and
:func:`entry_of` reads them into the facts, whether they come from a Claude Code transcript
(:mod:`flume.shell.agents.claude_lines`) or a journal written before the facts existed.

The mapping is here, beside the codec that needs it to decode a journal, and not in
``agents/claude_lines.py``, because the store sits below the agents (flume/shell/__init__.py).
See reference/claude-code.md §2 for the words.
"""

from __future__ import annotations

import enum

import attrs

from flume.core.ids import Instant, SessionId
from flume.core.observations import Author, TranscriptEntry


class Content(enum.Enum):
    """The shape of a Claude Code transcript line's ``message.content``."""

    STRING = "string"  #: a plain string
    TEXT = "text"  #: a list of text blocks only
    TOOL_RESULT = "tool_result"  #: a list holding a tool_result block
    TOOL_USE = "tool_use"  #: an assistant tool_use block
    THINKING = "thinking"  #: an assistant thinking block
    NONE = "none"  #: no message content (bookkeeping lines)


@attrs.frozen(kw_only=True)
class Words:
    """One transcript line in Claude Code's words, as format 1 of the journal spells it.

    ``line_type`` is the JSONL ``type``; the field order and defaults are the journal's.
    """

    line_type: str
    content: Content = Content.NONE
    text: str = ""
    is_meta: bool = False
    is_compact_summary: bool = False
    is_sidechain: bool = False
    row_source: str | None = None
    tool_name: str | None = None
    stop_reason: str | None = None
    #: A ``system`` line's ``subtype`` (``turn_duration`` and ``stop_hook_summary`` end a turn).
    subtype: str | None = None


#: Text Claude Code injects as a user-role line with a typed prompt's flags; never typed.
_HARNESS_OPENINGS = (
    "<task-notification>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<command-name>",
    "<command-message>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<system-reminder>",
    "<user-prompt-submit-hook>",
)

#: ``system`` line subtypes Claude Code writes when a turn has ended.
_TURN_ENDS = frozenset({"turn_duration", "stop_hook_summary"})

#: The whole text of the ``user`` line Claude Code writes itself when a person presses Esc: the
#: turn ended there, and the agent waits for input. Older versions write it as a text block with
#: no flag at all (the corpus, 2.1.39); newer ones add ``rowSource: "harness"``.
_INTERRUPT_NOTES = frozenset(
    {"[Request interrupted by user]", "[Request interrupted by user for tool use]"}
)

#: Claude Code's tool for asking the person a question.
ASKING_TOOL = "AskUserQuestion"

#: The lines of the conversation; the rest is Claude Code's bookkeeping (api requests,
#: snapshots, attachments), which can be large and says nothing the rules read.
CONVERSATION = frozenset({"user", "assistant", "system"})


def is_interrupt_note(words: Words) -> bool:
    """The line is the note Claude Code writes when a person interrupts a turn (Esc)."""
    return (
        words.line_type == "user"
        and words.content in {Content.STRING, Content.TEXT}
        and words.text.strip() in _INTERRUPT_NOTES
    )


def is_typed(words: Words) -> bool:
    """The line is a message a person typed (or pasted): the core's DELIVERY-TRANSCRIPT-ONLY.

    A ``user`` line that is not meta, not a compact summary, not a sidechain, not a harness row,
    whose content is a string or text blocks (no tool result), that does not open with one of
    the tags Claude Code uses for text it injects itself (reference/claude-code.md §2 and the
    corpus: a ``<task-notification>`` carries a typed prompt's flags), and that is not the note
    of an interrupt (:func:`is_interrupt_note`).
    """
    return (
        words.line_type == "user"
        and not words.is_meta
        and not words.is_compact_summary
        and not words.is_sidechain
        and words.row_source != "harness"
        and words.content in {Content.STRING, Content.TEXT}
        and not words.text.lstrip().startswith(_HARNESS_OPENINGS)
        and not is_interrupt_note(words)
    )


def entry_of(words: Words, *, at: Instant, session: SessionId) -> TranscriptEntry:
    """The neutral entry Claude Code's words make, its words kept as its spelling.

    Who wrote the line: a person typed it (:func:`is_typed`), the agent said it, a tool
    returned it, or else Claude Code wrote it itself (notes, injected context, a subagent's
    prompt, bookkeeping). It asks a person when the agent calls ``AskUserQuestion``. It ends a
    turn when it is the agent's last message, a turn's closing ``system`` line, or the note of
    an interrupt (no Stop hook fires for it, reference §4).
    """
    author, asks, ends = Author.SYSTEM, False, False
    match words.line_type:
        case "assistant":
            author = Author.AGENT
            asks = words.tool_name == ASKING_TOOL
            ends = words.stop_reason == "end_turn"
        case "user" if words.content is Content.TOOL_RESULT:
            author = Author.TOOL
        case "user":
            ends = is_interrupt_note(words)
            if not ends and is_typed(words):
                author = Author.PERSON
        case "system":
            ends = words.subtype in _TURN_ENDS
    return TranscriptEntry(
        at=at,
        session=session,
        author=author,
        text=words.text,
        asks=asks,
        ends_turn=ends,
        spelling=words,
    )


def words_of(entry: TranscriptEntry) -> Words:
    """The words an entry is spelled in.

    Those it was read from, or, for an entry made from the facts alone (by a test, or a reader
    that keeps no words), words that read back to the same facts.
    """
    if isinstance(entry.spelling, Words):
        return entry.spelling
    match entry.author:
        case Author.PERSON:
            return Words(line_type="user", content=Content.STRING, text=entry.text)
        case Author.TOOL:
            return Words(line_type="user", content=Content.TOOL_RESULT, text=entry.text)
        case Author.AGENT:
            return Words(
                line_type="assistant",
                content=Content.TOOL_USE if entry.asks else Content.TEXT,
                text=entry.text,
                tool_name=ASKING_TOOL if entry.asks else None,
                stop_reason="end_turn" if entry.ends_turn else None,
            )
        case Author.SYSTEM:
            return Words(
                line_type="system",
                text=entry.text,
                subtype="turn_duration" if entry.ends_turn else None,
            )


def in_conversation(entry: TranscriptEntry) -> bool:
    """The line is the conversation's, not Claude Code's bookkeeping (:data:`CONVERSATION`)."""
    return words_of(entry).line_type in CONVERSATION
