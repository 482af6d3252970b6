"""The converter's lazily tagged unions write and read what cattrs' eager strategy does."""

from __future__ import annotations

import json
from typing import Any

import cattrs
import pytest
from cattrs.strategies import configure_tagged_union
from hypothesis import given

from flume.core.actions import Action
from flume.core.observations import Observation
from flume.core.place import Place
from flume.shell.store import codec
from tests.strategies import actions, any_places, observations


def eager() -> cattrs.Converter:
    """The converter as it was built before: every union member's hooks generated at once."""
    made = codec._make_converter()
    # Inner unions first: an outer union's hooks are built with the inner ones in place.
    for union in codec.UNIONS:
        configure_tagged_union(union, made, tag_name="type")
    return made


EAGER = eager()


def _same(value: Any, kind: Any) -> None:
    lazy = codec.codec().unstructure(value, kind)
    assert json.dumps(lazy) == json.dumps(EAGER.unstructure(value, kind))
    plain = json.loads(json.dumps(lazy))
    assert codec.codec().structure(plain, kind) == EAGER.structure(plain, kind) == value


@given(seen=observations)
def test_observations_are_written_and_read_as_before(seen: Observation) -> None:
    """Every observation: the same plain data, key for key in order, and read back the same."""
    _same(seen, Observation)


@given(action=actions)
def test_actions_are_written_and_read_as_before(action: Action) -> None:
    """Every action, likewise."""
    _same(action, Action)


@given(place=any_places())
def test_places_are_written_and_read_as_before(place: Place) -> None:
    """Places hold the inner unions (phases, blocks, deliverables)."""
    _same(place, Place)


def test_an_unknown_tag_is_refused_as_before() -> None:
    """A line naming no member is not a journal line."""
    with pytest.raises(KeyError):
        codec.codec().structure({"type": "Nothing", "at": 1.0}, Observation)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a journal line"):
        codec.decode('{"type": "Nothing", "at": 1.0}')
