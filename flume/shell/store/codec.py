"""The one cattrs converter, and the journal's line codec.

Every core value goes to plain data (JSON-ready dicts, lists, strings, numbers) and back through
:func:`codec`, the converter (also ``codec.converter``). Unions of records are tagged with
``"type"``, the class's name; pyrsistent collections become lists and dicts. The journal (a line
an observation: :func:`encode`, :func:`decode`) and ``status --json`` both speak this form, so it
is versioned with :data:`FORMAT`.

The converter is built on first use, never on import: building it takes longer than most
commands' work, and a command that reads or writes no journal and no JSON (``flume --help``)
never does (tests/integration/test_cli_imports.py).
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, get_args, get_origin

import cattrs
from pyrsistent import pmap, pset, pvector
from pyrsistent.typing import PMap, PSet, PVector

from flume.core.actions import Action
from flume.core.ids import Instant, SessionId
from flume.core.kinds import Block, Deliverable, Gate
from flume.core.observations import Observation, TranscriptEntry
from flume.core.place import StagePhase, Tidy

# The version of the plain-data form, re-exported: the codec's form is what it versions.
from flume.shell.host import FORMAT as FORMAT  # noqa: PLC0414
from flume.shell.store.transcript_words import Words, entry_of, words_of


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

    _spell_transcript_entries(made)
    for union in UNIONS:
        _tag_union(union, made)
    return made


def _spell_transcript_entries(made: cattrs.Converter) -> None:
    """A transcript entry is journaled in the words of format 1: Claude Code's (transcript_words).

    Its facts are not written: they are what the words make, read back.
    """

    @functools.cache
    def hooks() -> tuple[Callable[[Words], dict[str, Any]], Callable[[Any, Any], Words]]:
        """The converter's own hooks for the words, made when a line is first met."""
        return made.get_unstructure_hook(Words), made.get_structure_hook(Words)

    def unstructure_entry(entry: TranscriptEntry) -> dict[str, Any]:
        """A transcript line as format 1 writes it: its time and session, then its words."""
        data: dict[str, Any] = {"at": entry.at, "session": entry.session}
        data.update(hooks()[0](words_of(entry)))
        return data

    def structure_entry(value: dict[str, Any], _: Any) -> TranscriptEntry:
        """A transcript line read back: its words make the facts (transcript_words)."""
        words = value.copy()
        at, session = words.pop("at"), words.pop("session")
        return entry_of(
            hooks()[1](words, Words),
            # What cattrs' own hooks for a float and a str do, without their dispatch.
            at=Instant(float(at)),
            session=SessionId(str(session)),
        )

    made.register_unstructure_hook(TranscriptEntry, unstructure_entry)
    made.register_structure_hook(TranscriptEntry, structure_entry)


#: The unions of records, each tagged with ``"type"``: its member's class name.
UNIONS: tuple[Any, ...] = (Deliverable, Gate, Block, StagePhase, Tidy, Observation, Action)


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
    #: :func:`codec`'s converter, as an attribute: ``codec.converter``.
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
