"""The one cattrs converter, and the journal's line codec.

Every core value goes to plain data (JSON-ready dicts, lists, strings, numbers) and back through
:data:`converter`. Unions of records are tagged with ``"type"``, the class's name; pyrsistent
collections become lists and dicts. The journal and ``status --json`` both speak this form, so
it is versioned with :data:`FORMAT`.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from typing import Any, get_args, get_origin

import cattrs
from cattrs.strategies import configure_tagged_union
from pyrsistent import pmap, pset, pvector
from pyrsistent.typing import PMap, PSet, PVector

from flume.core.actions import Action
from flume.core.kinds import Block, Deliverable
from flume.core.observations import Observation
from flume.core.place import StagePhase

#: The version of the plain-data form; bumped on any change a reader must know about.
FORMAT = 1


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
    # Inner unions first: an outer union's hooks are built with the inner ones in place.
    for union in (Deliverable, Block, StagePhase, Observation, Action):
        configure_tagged_union(union, made, tag_name="type")
    return made


def _ordered(value: Any) -> list[Any]:
    """A set's members in a stable order, so equal sets write equal lines."""
    if isinstance(value, typing.AbstractSet):
        return sorted(value, key=repr)
    return list(value)


#: The one converter flume's shell uses (STYLE rule 13).
converter = _make_converter()


def encode(seen: Observation) -> str:
    """One journal line (without its newline) for an observation."""
    return json.dumps(
        converter.unstructure(seen, Observation),
        ensure_ascii=False,
        separators=(",", ":"),
    )


def decode(line: str) -> Observation:
    """The observation a journal line holds; raises ``ValueError`` on a line that is not one."""
    try:
        data = json.loads(line)
        return converter.structure(data, Observation)  # type: ignore[arg-type]
    except cattrs.BaseValidationError as error:
        message = f"not a journal line: {'; '.join(cattrs.transform_error(error))}"
        raise ValueError(message) from error
    except (ValueError, TypeError, KeyError) as error:
        message = f"not a journal line: {error}"
        raise ValueError(message) from error
