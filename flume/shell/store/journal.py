"""Journal files: a place's observations, a line each, appended under a lock and fsync'd.

Each line is an observation in the codec's form (:mod:`flume.shell.store.codec`). Appends take
the journal's exclusive lock, mend a line a crash cut short, and return only once the line is
on disk; reads take whole lines only, from the start (:func:`read`) or from a byte offset
(:func:`read_from`), telling a line a crash cut short from damage.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

import attrs

from flume.core.errors import FlumeError, refused
from flume.core.observations import Observation
from flume.shell.store.codec import decode, encode


@attrs.frozen(kw_only=True)
class Read:
    """What a journal file held, and the crash damage that was passed over."""

    observations: tuple[Observation, ...]
    #: The last line was cut short by a crash mid-write and was left out.
    torn: bool
    #: Lines cut short by earlier crashes, ended by the next append, and left out.
    mended: int


class JournalError(FlumeError):
    """A journal line other than the last cannot be read: the file was damaged, not torn."""


def append(path: Path, seen: Observation) -> None:
    """Append one observation as a line, under an exclusive lock, flushed and fsync'd.

    The lock keeps two writers (the supervisor and a CLI command) from interleaving lines; the
    fsync means that once this returns, the line survives a crash of this process or the host.
    """
    descriptor = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        _write_line(descriptor, seen)
    finally:
        os.close(descriptor)


def create(path: Path, seen: Observation) -> None:
    """Start a new journal with its first line (its folder is made if need be).

    Only a launch starts a journal; :func:`append` never creates one, so nothing written to a
    place that was archived meanwhile can bring back a journal without its launch.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        _write_line(descriptor, seen)
    finally:
        os.close(descriptor)


def _write_line(descriptor: int, seen: Observation) -> None:
    """Write one line after ending any torn one, then fsync; the lock is the caller's.

    A write that fails part-way (a full disk) is cut back to where it began, so the fault
    leaves no line a crash seems to have cut short, and the ``OSError`` is raised.
    """
    line = (encode(seen) + "\n").encode("utf-8")
    _mend_torn_tail(descriptor)
    start = os.fstat(descriptor).st_size
    written = 0
    try:
        while written < len(line):
            written += os.write(descriptor, line[written:])
        os.fsync(descriptor)
    except OSError:
        if written:
            with contextlib.suppress(OSError):
                os.ftruncate(descriptor, start)
        raise


def write_fault(path: Path, error: OSError) -> str:
    """What a failed write to the journal ``path`` says: the path and the system's words."""
    words = error.strerror or str(error)
    return f"the journal {path} cannot be written: {words} (errno {error.errno})"


def _mend_torn_tail(descriptor: int) -> None:
    """Cut a torn last line away, so the next line starts on a line of its own.

    A line without its newline was never acknowledged (an append returns only after the whole
    line and its fsync), so nothing anyone was told of is lost. Cutting it, rather than ending
    it, leaves no damaged line behind for readers to judge.
    """
    size = os.fstat(descriptor).st_size
    if size == 0 or os.pread(descriptor, 1, size - 1) == b"\n":
        return
    start = max(0, size - 65536)
    while True:
        chunk = os.pread(descriptor, size - start, start)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            os.ftruncate(descriptor, start + newline + 1)
            return
        if start == 0:
            os.ftruncate(descriptor, 0)
            return
        start = max(0, start - 65536)


@attrs.frozen(kw_only=True)
class JournalTail:
    """The whole lines appended to a journal since an offset, and where the next read starts."""

    observations: tuple[Observation, ...]
    #: The byte offset just past the last whole line read.
    offset: int
    #: Lines cut short by a crash and ended by a later append, passed over.
    mended: int = 0


def read_from(path: Path, offset: int) -> JournalTail:
    """The observations of the lines appended to ``path`` since byte ``offset``.

    Only whole lines are taken: a last line still being written (or torn by a crash) is left
    for the next read, which starts where this one stopped. The cost is in proportion to the
    bytes appended, not to the journal's size.
    """
    with path.open("rb") as file:
        file.seek(offset)
        data = file.read()
    end = data.rfind(b"\n")
    if end < 0:
        return JournalTail(observations=(), offset=offset)
    observations, mended = _decode_lines(path, data[:end].split(b"\n"), first=None)
    return JournalTail(observations=observations, offset=offset + end + 1, mended=mended)


def _decode_lines(
    path: Path, lines: list[bytes], first: int | None
) -> tuple[tuple[Observation, ...], int]:
    """Decode whole lines; a line torn by a crash and ended later is passed over and counted."""
    observations: list[Observation] = []
    mended = 0
    for number, raw in enumerate(lines, start=1):
        try:
            observations.append(decode(raw.decode("utf-8")))
        except (ValueError, UnicodeDecodeError) as error:
            if raw.startswith(b"{") and not raw.rstrip().endswith(b"}"):
                mended += 1
                continue
            where = f"{path}:{number}" if first is not None else f"{path}"
            message = f"{where}: {error}"
            raise JournalError(message) from error
    return tuple(observations), mended


class Locked:
    """A journal held under its exclusive lock: read it whole, then append to it.

    A caller's command is checked against the place the journal describes and appended in one
    hold of the lock, so no other writer can slip a line in between the check and the append.
    """

    def __init__(self, path: Path, descriptor: int) -> None:
        self.path = path
        self._descriptor = descriptor

    def read(self) -> Read:
        """Everything the journal holds now."""
        return read(self.path)

    def append(self, seen: Observation) -> None:
        """Append one observation, flushed and fsync'd, under the lock already held."""
        _write_line(self._descriptor, seen)


#: How long a caller's command waits for a journal's lock another process holds.
LOCK_WAIT_SECONDS = 10.0
#: How often it looks again meanwhile.
_LOCK_LOOK_SECONDS = 0.01


def _lock_within(descriptor: int, path: Path, wait: float) -> None:
    """Take the lock on ``descriptor``, waiting ``wait`` seconds at most for its holder."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise refused(
                    "journal",
                    f"another process has held {path}'s lock for {wait:g}s, so nothing was "
                    "written (a supervisor paused with Ctrl-Z or SIGSTOP holds it)",
                    "run flume daemon status: it names a paused supervisor and how to continue "
                    "it (kill -CONT <pid>); then run this again",
                ) from None
            time.sleep(_LOCK_LOOK_SECONDS)
        else:
            return


@contextlib.contextmanager
def locked(path: Path, *, wait: float | None = None) -> Iterator[Locked]:
    """Hold ``path``'s lock for a read-check-append; the journal must exist.

    A caller's command waits ``wait`` seconds at most (default :data:`LOCK_WAIT_SECONDS`) for a
    lock another process holds: a supervisor paused (SIGSTOP) mid-append would otherwise hold
    the command forever. It is then refused (exit status 1), naming the way out.
    """
    descriptor = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        _lock_within(descriptor, path, LOCK_WAIT_SECONDS if wait is None else wait)
        yield Locked(path, descriptor)
    finally:
        os.close(descriptor)


def read(path: Path) -> Read:
    """Every observation of a journal file.

    A write that a crash cut short never has its newline (the newline is the last byte
    written): as the last line it is left out and ``torn`` says so; in the middle, ended by a
    later append, it is left out and counted in ``mended``. It is recognised by what a cut can
    leave: the start of a JSON object without its closing brace. Any other bad line is damage,
    not a crash, and raises :class:`JournalError` naming the file and line.
    """
    lines = path.read_bytes().split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    observations, mended = _decode_lines(path, complete, first=1)
    return Read(observations=observations, torn=bool(tail), mended=mended)


def fault_words(*, unwritable: str | None = None, unread: str | None = None) -> str | None:
    """What keeps the supervisor from carrying a place on, with the way out; None for nothing.

    ``unwritable``: why its last write to the journal failed; ``unread``: why it does not follow
    the journal (a line it cannot read, since a hand's edit).
    """
    if unwritable:
        return f"{unwritable}; free space or make its folder writable: flume goes on by itself then"
    if unread:
        return (
            f"the supervisor does not follow it: {unread}; mend the journal so it reads whole: "
            "flume follows it again by itself then"
        )
    return None
