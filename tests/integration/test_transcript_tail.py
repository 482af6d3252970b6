"""Following a transcript's tail: whole lines only, from the stored offset, nothing read twice."""

from __future__ import annotations

import codecs
import json
import shutil
from pathlib import Path

import pytest

from flume.core.delivery import is_typed_by_user
from flume.core.ids import Instant, SessionId
from flume.shell.agents.claude_lines import entries_of, read_from
from flume.shell.agents.tail import json_line
from flume.shell.store.transcript_words import words_of
from tests.shared import CORPUS

SESSION = SessionId("5e55-0001")
NOW = Instant(100.0)


def line(text: str, kind: str = "user") -> bytes:
    """A Claude Code line of ``kind`` whose content is ``text``, with its newline."""
    document = {"type": kind, "message": {"role": kind, "content": text}}
    return json.dumps(document, ensure_ascii=False).encode() + b"\n"


def follow(path: Path, offset: int) -> tuple[list[str], int, int]:
    """The texts, new offset and unreadable count of one look at ``path`` from ``offset``."""
    tail = read_from(path, offset, session=SESSION, at=NOW)
    return [entry.text for entry in tail.entries], tail.offset, tail.unreadable


def test_whole_lines_are_read_and_the_offset_lands_after_the_last(tmp_path: Path) -> None:
    """Every whole line is an entry of the agent's session, and the offset is the file's end."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(line("one") + line("two"))
    tail = read_from(path, 0, session=SESSION, at=NOW)
    assert [entry.text for entry in tail.entries] == ["one", "two"]
    assert {(entry.session, entry.at) for entry in tail.entries} == {(SESSION, NOW)}
    assert tail.offset == path.stat().st_size
    assert tail.unreadable == 0


def test_a_torn_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    """A last line without its newline is left for the next look; the offset stays before it."""
    path = tmp_path / "t.jsonl"
    first, second = line("one"), line("two")
    path.write_bytes(first + second[:10])
    assert follow(path, 0) == (["one"], len(first), 0)
    assert follow(path, len(first)) == ([], len(first), 0), "still torn: nothing, no move"
    with path.open("ab") as file:
        file.write(second[10:])
    assert follow(path, len(first)) == (["two"], len(first) + len(second), 0)


def test_a_line_torn_inside_a_multibyte_character_is_read_whole_later(tmp_path: Path) -> None:
    """Cutting only at newlines never splits a UTF-8 character, wherever the writer stopped."""
    path = tmp_path / "t.jsonl"
    whole = line("café ☕")
    cut = whole.index("☕".encode()) + 1
    path.write_bytes(whole[:cut])
    assert follow(path, 0) == ([], 0, 0)
    with path.open("ab") as file:
        file.write(whole[cut:])
    assert follow(path, 0) == (["café ☕"], len(whole), 0)


def test_only_the_appended_bytes_are_read(tmp_path: Path) -> None:
    """From a stored offset only later lines come back: what came before is never read again.

    The file opens with bytes that are not even UTF-8: a reader that went back to the start
    would count them unreadable.
    """
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\xff\xfe not a line\n" + line("old"))
    assert follow(path, 0) == (["old"], path.stat().st_size, 1)
    offset = path.stat().st_size
    with path.open("ab") as file:
        file.write(line("new") + line("newer"))
    assert follow(path, offset) == (["new", "newer"], path.stat().st_size, 0)


def test_unreadable_lines_are_counted_and_passed_over(tmp_path: Path) -> None:
    """Lines that are not JSON objects are counted, skipped, and the offset moves past them."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"{not json\n" + b"[1, 2]\n" + b'"text"\n' + line("fine"))
    assert follow(path, 0) == (["fine"], path.stat().st_size, 3)


def test_blank_lines_are_skipped_not_counted(tmp_path: Path) -> None:
    """Blank lines are neither entries nor unreadable."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n" + line("one") + b"   \n\r\n" + line("two"))
    assert follow(path, 0) == (["one", "two"], path.stat().st_size, 0)


def test_a_file_that_does_not_exist_yet_is_an_empty_tail(tmp_path: Path) -> None:
    """No transcript yet (no prompt submitted): nothing read, the offset kept; later it is read."""
    path = tmp_path / "projects" / "slug" / "session.jsonl"
    assert follow(path, 0) == ([], 0, 0)
    assert follow(path, 42) == ([], 42, 0)
    path.parent.mkdir(parents=True)
    path.write_bytes(line("first"))
    assert follow(path, 0) == (["first"], path.stat().st_size, 0)


def test_an_offset_at_the_end_reads_nothing(tmp_path: Path) -> None:
    """Looking again with nothing appended gives nothing and keeps the offset."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(line("one"))
    size = path.stat().st_size
    assert follow(path, size) == ([], size, 0)


@pytest.mark.usefixtures("corpus")
def test_appended_corpus_lines_follow_a_real_transcript(tmp_path: Path) -> None:
    """A real transcript read whole, then lines appended to it: only they come back, in order."""
    source = CORPUS / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    path = tmp_path / source.name
    shutil.copy(source, path)
    whole = entries_of(path)
    assert len(whole.entries) == 1512
    assert whole.offset == path.stat().st_size
    assert {entry.session for entry in whole.entries} == {SessionId(source.stem)}
    assert [entry.text for entry in whole.entries if is_typed_by_user(entry)][1] == "continue"
    with path.open("ab") as file:
        file.write(line("[flume:fix--x:code:1]") + line("working on it", "assistant"))
    tail = read_from(path, whole.offset, session=SESSION, at=NOW)
    assert [(words_of(entry).line_type, entry.text) for entry in tail.entries] == [
        ("user", "[flume:fix--x:code:1]"),
        ("assistant", "working on it"),
    ]
    assert is_typed_by_user(tail.entries[0])
    assert tail.offset == path.stat().st_size


#: Lines whose reading json.loads decides in its own way: their encoding detected from a BOM or
#: NULs, whitespace around the document, something after it, no object at all, bad UTF-8.
ODD_LINES = [
    b'{"type": "user"}',
    b'{"type": "user"} ',
    b'{"type": "user"}\r',
    b' {"type": "user"}',
    b'\t{"type": "user"}',
    b'{"type": "user"}{}',
    b'{"type": "user"}x',
    b'{"a": "\\ud800", "b": "\\u00e9"}',
    b'{"a": NaN, "b": 1e999, "c": 123456789012345678901234567890}',
    b'{"a": "\xc3\xa9\xff"}',
    b'{"a": "\xed\xa0\x80"}',
    b"{\x00}",
    b"{",
    b"}",
    b"[1]",
    b"",
    codecs.BOM_UTF8 + b'{"type": "user"}',
    '{"type": "user"}'.encode("utf-16"),
    '{"type": "user"}'.encode("utf-16-le"),
    '{"type": "user"}'.encode("utf-32"),
    '{"type": "user"}',
]


@pytest.mark.parametrize("odd", ODD_LINES, ids=repr)
def test_a_line_is_read_as_json_loads_reads_it(odd: str | bytes) -> None:
    """The tail's own JSON reading gives json.loads's value, or fails where it fails."""
    try:
        expected: object = json.loads(odd)
    except ValueError as error:
        with pytest.raises(type(error)):
            json_line(odd)
    else:
        found = json_line(odd)
        assert repr(found) == repr(expected), "same value (repr: NaN is not equal to itself)"


def test_lines_that_say_the_same_but_their_text_keep_each_its_text(tmp_path: Path) -> None:
    """Lines without text share their words; a line with text, saying the same, keeps its own."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(line("") + line("one") + line("") + line("two") + line(""))
    tail = read_from(path, 0, session=SESSION, at=NOW)
    assert [words_of(entry).text for entry in tail.entries] == ["", "one", "", "two", ""]
    assert [entry.text for entry in tail.entries] == ["", "one", "", "two", ""]
