"""The one cattrs converter, the journal's line codec, and journal files.

Every core value goes to plain data (JSON-ready dicts, lists, strings, numbers) and back through
:func:`codec`, the converter (also ``journal.converter``). Unions of records are tagged with
``"type"``, the class's name; pyrsistent collections become lists and dicts. The journal and
``status --json`` both speak this form, so it is versioned with :data:`FORMAT`.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args, get_origin

import attrs
import cattrs
from pyrsistent import pmap, pset, pvector
from pyrsistent.typing import PMap, PSet, PVector

from flume.core.actions import Action
from flume.core.errors import FlumeError
from flume.core.kinds import Block, Deliverable
from flume.core.observations import Observation
from flume.core.place import StagePhase

# The version of the plain-data form, re-exported: it was always found here.
from flume.shell.host import FORMAT as FORMAT  # noqa: PLC0414


def _is(origin: type) -> Callable[[Any], bool]:
    return lambda kind: get_origin(kind) is origin


def _make_converter() -> cattrs.Converter:
    made = cattrs.Converter(forbid_extra_keys=True, omit_if_default=True)

    def structure_items(value: Any, kind: Any) -> list[Any]:
        """The members of a list, each structured as the collection's item type."""
        (item,) = get_args(kind)
        if isinstance(value, str | bytes | dict) or not isinstance(value, typing.Iterable):
            message = f"expected a list, got {type(value).__name__}"
            raise TypeError(message)
        return [made.structure(element, item) for element in value]

    def structure_vector(value: Any, kind: Any) -> PVector[Any]:
        return pvector(structure_items(value, kind))

    def structure_set(value: Any, kind: Any) -> PSet[Any]:
        return pset(structure_items(value, kind))

    def structure_map(value: Any, kind: Any) -> PMap[Any, Any]:
        key, item = get_args(kind)
        if not isinstance(value, dict):
            message = f"expected a table, got {type(value).__name__}"
            raise TypeError(message)
        return pmap(
            {made.structure(k, key): made.structure(v, item) for k, v in value.items()},
        )

    made.register_structure_hook_func(_is(PVector), structure_vector)
    made.register_structure_hook_func(_is(PSet), structure_set)
    made.register_structure_hook_func(_is(PMap), structure_map)

    def unstructure_collection(kind: Any) -> Callable[[Any], Any]:
        args = get_args(kind)
        if get_origin(kind) is PMap:
            key, item = args or (Any, Any)
            return lambda value: {
                made.unstructure(k, key): made.unstructure(v, item) for k, v in value.items()
            }
        (item,) = args or (Any,)
        return lambda value: [made.unstructure(element, item) for element in _ordered(value)]

    collections: tuple[object, ...] = (PVector, PSet, PMap)
    made.register_unstructure_hook_factory(
        lambda kind: get_origin(kind) in collections or kind in collections,
        unstructure_collection,
    )
    for union in UNIONS:
        _tag_union(union, made)
    return made


#: The unions of records, each tagged with ``"type"``: its member's class name.
UNIONS: tuple[Any, ...] = (Deliverable, Block, StagePhase, Observation, Action)


def _tag_union(union: Any, made: cattrs.Converter) -> None:
    """What cattrs' ``configure_tagged_union(union, made, tag_name="type")`` does, lazily.

    cattrs' strategy generates the code of every member's hooks at once, well over a hundred
    classes, which is most of what building the converter costs; here each member's hooks are
    generated when a value of it is first met (cattrs keeps them). The data is the same: the
    member's own fields, then ``"type"``.
    """
    members: dict[type, str] = {member: member.__name__ for member in union.__args__}
    by_tag = {tag: member for member, tag in members.items()}

    def unstructure(value: Any) -> dict[str, Any]:
        member = value.__class__
        tag = members[member]
        data: dict[str, Any] = made.get_unstructure_hook(member)(value)
        data["type"] = tag
        return data

    def structure(value: Any, _: Any) -> Any:
        value = value.copy()
        member = by_tag[value.pop("type")]
        return made.get_structure_hook(member)(value, member)

    made.register_unstructure_hook(union, unstructure)
    made.register_structure_hook(union, structure)


def _ordered(value: Any) -> list[Any]:
    """A set's members in a stable order, so equal sets write equal lines."""
    if isinstance(value, typing.AbstractSet):
        return sorted(value, key=repr)
    return list(value)


@functools.cache
def codec() -> cattrs.Converter:
    """The one converter flume uses (cattrs lives in the shell only), built on first use.

    Building it takes longer than most commands' work, so a command that reads or writes no
    journal and no JSON (``flume --help``) never does.
    """
    return _make_converter()


if TYPE_CHECKING:
    #: :func:`codec`'s converter, as an attribute: ``journal.converter``.
    converter: cattrs.Converter


def __getattr__(name: str) -> object:
    """``converter``: the one converter, built when first asked for (PEP 562)."""
    if name == "converter":
        return codec()
    message = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(message)


def encode(seen: Observation) -> str:
    """One journal line (without its newline) for an observation."""
    return json.dumps(
        codec().unstructure(seen, Observation),
        ensure_ascii=False,
        separators=(",", ":"),
    )


def decode(line: str) -> Observation:
    """The observation a journal line holds; raises ``ValueError`` on a line that is not one."""
    try:
        data = json.loads(line)
        return codec().structure(data, Observation)  # type: ignore[arg-type]
    except cattrs.BaseValidationError as error:
        message = f"not a journal line: {'; '.join(cattrs.transform_error(error))}"
        raise ValueError(message) from error
    except (ValueError, TypeError, KeyError) as error:
        message = f"not a journal line: {error}"
        raise ValueError(message) from error


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
    descriptor = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
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
class Tail:
    """The whole lines appended to a journal since an offset, and where the next read starts."""

    observations: tuple[Observation, ...]
    #: The byte offset just past the last whole line read.
    offset: int
    #: Lines cut short by a crash and ended by a later append, passed over.
    mended: int = 0


def read_from(path: Path, offset: int) -> Tail:
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
        return Tail(observations=(), offset=offset)
    observations, mended = _decode_lines(path, data[:end].split(b"\n"), first=None)
    return Tail(observations=observations, offset=offset + end + 1, mended=mended)


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


@contextlib.contextmanager
def locked(path: Path) -> Iterator[Locked]:
    """Hold ``path``'s lock for a read-check-append; the journal must exist."""
    descriptor = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
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
