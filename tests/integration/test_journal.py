"""Journal files on disk: append with fsync under a lock, read back, survive torn writes."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import time
from pathlib import Path

import pytest

from flume.core.errors import UsageError
from flume.core.ids import Instant, SessionId
from flume.core.observations import (
    AgentReady,
    Author,
    Launched,
    Observation,
    Tick,
    Told,
    TranscriptEntry,
)
from flume.core.settings import Settings
from flume.core.step import replay
from flume.shell.store.codec import encode
from flume.shell.store.journal import JournalError, create, locked, read
from flume.shell.store.journal import append as append_line
from tests.model.test_rules import FIX, launch, made, started


def append(path: Path, seen: Observation) -> None:
    """Append to a journal, starting it with its first line (as a launch does)."""
    if path.exists():
        append_line(path, seen)
    else:
        create(path, seen)


def journal_of_a_fix() -> list[object]:
    """A fix launched, made, started and sent its prompt."""
    return [
        Launched(at=Instant(0), launch=launch(), kind=FIX, settings=Settings()),
        made(),
        started(),
        AgentReady(at=Instant(3), session=SessionId("s1")),
    ]


def test_appended_observations_read_back_and_replay(tmp_path: Path) -> None:
    """What is appended reads back in order, and replays to the place step built."""
    path = tmp_path / "flume" / "fix--typo" / "journal.jsonl"
    seen = journal_of_a_fix()
    for observation in seen:
        append(path, observation)  # type: ignore[arg-type]
    back = read(path)
    assert list(back.observations) == seen
    assert not back.torn
    assert back.mended == 0
    assert replay(Settings(), back.observations) == replay(Settings(), seen)  # type: ignore[arg-type]


def test_a_torn_last_line_is_left_out(tmp_path: Path) -> None:
    """A crash mid-write leaves half a line: reading leaves it out and says it was torn."""
    path = tmp_path / "journal.jsonl"
    append(path, Tick(at=Instant(1)))
    with path.open("ab") as file:
        file.write(encode(Tick(at=Instant(2))).encode()[:9])
    back = read(path)
    assert back.observations == (Tick(at=Instant(1)),)
    assert back.torn


def test_the_next_append_after_a_tear_starts_a_line_of_its_own(tmp_path: Path) -> None:
    """After a torn write, the next append cuts the unacknowledged half line and lands whole."""
    path = tmp_path / "journal.jsonl"
    append(path, Tick(at=Instant(1)))
    with path.open("ab") as file:
        file.write(b'{"type":"Tick","at":')
    append(path, Told(at=Instant(3), text="still here"))
    back = read(path)
    assert back.observations == (Tick(at=Instant(1)), Told(at=Instant(3), text="still here"))
    assert not back.torn
    assert back.mended == 0
    assert b'{"type":"Tick","at":' not in path.read_bytes()


def test_a_line_torn_by_an_older_flume_is_still_passed_over(tmp_path: Path) -> None:
    """A half line ended by a newline (as flume once mended tears) is skipped and counted."""
    path = tmp_path / "journal.jsonl"
    append(path, Tick(at=Instant(1)))
    with path.open("ab") as file:
        file.write(b'{"type":"Tick","at":\n')
    append(path, Tick(at=Instant(2)))
    back = read(path)
    assert back.observations == (Tick(at=Instant(1)), Tick(at=Instant(2)))
    assert back.mended == 1


@pytest.mark.parametrize("damage", [b"not json at all", b'{"type":"Nope","at":1}', b"\xff\xfe"])
def test_damage_in_the_middle_is_an_error_naming_the_line(tmp_path: Path, damage: bytes) -> None:
    """A bad line that a crash cannot have made is damage: an error naming file and line."""
    path = tmp_path / "journal.jsonl"
    append(path, Tick(at=Instant(1)))
    with path.open("ab") as file:
        file.write(damage + b"\n")
    append(path, Tick(at=Instant(2)))
    with pytest.raises(JournalError, match=r"journal\.jsonl:2:"):
        read(path)


def _writer(path: str, writer: int, count: int) -> None:
    for number in range(count):
        text = f"writer {writer} line {number} " + "x" * 3000
        append(Path(path), Told(at=Instant(number), text=text))


def test_concurrent_writers_never_interleave_lines(tmp_path: Path) -> None:
    """Four processes appending long lines at once: every line reads back whole."""
    path = tmp_path / "journal.jsonl"
    # Started first, as a launch starts it: the writers race to append, never to create.
    append(path, Tick(at=Instant(0)))
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_writer, args=(str(path), w, 40)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    back = read(path)
    assert len(back.observations) == 161
    assert not back.torn
    texts = {seen.text.split(" x")[0] for seen in back.observations[1:]}  # type: ignore[union-attr]
    assert len(texts) == 160


def test_unicode_and_long_text_survive(tmp_path: Path) -> None:
    """A transcript line with unicode and 100 KB of text is one journal line, read back equal."""
    path = tmp_path / "journal.jsonl"
    entry = TranscriptEntry(
        at=Instant(1),
        session=SessionId("s"),
        author=Author.PERSON,
        text="héllo 🌊 — line\nbreak; " * 5000,
    )
    append(path, entry)
    assert read(path).observations == (entry,)
    assert path.read_bytes().count(b"\n") == 1


def test_a_command_waits_a_bounded_time_for_a_lock_another_holds(tmp_path: Path) -> None:
    """A journal whose lock another holds (a paused supervisor) refuses, not hangs, a command."""
    path = tmp_path / "journal.jsonl"
    first = journal_of_a_fix()[0]
    create(path, first)  # type: ignore[arg-type]
    holder = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        started_at = time.monotonic()
        with pytest.raises(UsageError) as refused, locked(path, wait=0.3):
            pytest.fail("the lock was taken while another held it")
        assert 0.3 <= time.monotonic() - started_at < 5
        assert refused.value.exit_status == 1
        assert "flume daemon status" in str(refused.value)
        fcntl.flock(holder, fcntl.LOCK_UN)
        with locked(path, wait=0.3) as held:
            assert held.read().observations == (first,)
    finally:
        os.close(holder)
