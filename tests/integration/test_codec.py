"""Every core value round-trips through plain data with the shell's one converter."""

from __future__ import annotations

import json

import pytest
from hypothesis import given

from flume.core.actions import ACTION_TYPES, Action, ActionName
from flume.core.kinds import BUILTIN_KINDS, Kind
from flume.core.observations import ActionFailed, Observation
from flume.core.place import Place
from flume.core.status import PlaceStatus, status
from flume.shell.store.codec import converter, decode, encode
from tests.strategies import (
    actions,
    any_places,
    declared_kinds,
    observations,
    places,
    workflow_kinds,
)


@given(seen=observations)
def test_observations_round_trip_through_journal_lines(seen: Observation) -> None:
    """An observation written as a journal line reads back equal."""
    line = encode(seen)
    assert "\n" not in line
    assert decode(line) == seen


@given(action=actions)
def test_actions_round_trip(action: Action) -> None:
    """An action goes to JSON and back equal, tagged with its type."""
    data = json.loads(json.dumps(converter.unstructure(action, Action)))
    assert data["type"] == type(action).__name__
    assert converter.structure(data, Action) == action  # type: ignore[arg-type]


@given(place=places())
def test_reachable_places_round_trip(place: Place) -> None:
    """A place reached by steps goes to JSON and back equal."""
    data = json.loads(json.dumps(converter.unstructure(place)))
    assert converter.structure(data, Place) == place


@given(place=any_places())
def test_any_place_round_trips(place: Place) -> None:
    """Any place, reachable or not, goes to JSON and back equal."""
    data = json.loads(json.dumps(converter.unstructure(place)))
    assert converter.structure(data, Place) == place


@given(place=any_places())
def test_status_round_trips(place: Place) -> None:
    """The status view goes to JSON and back equal."""
    view = status(place)
    data = json.loads(json.dumps(converter.unstructure(view)))
    assert converter.structure(data, PlaceStatus) == view


@given(kind=declared_kinds())
def test_declared_kinds_round_trip(kind: Kind) -> None:
    """A declared kind, a tree of blocks, goes to JSON and back equal."""
    data = json.loads(json.dumps(converter.unstructure(kind)))
    assert converter.structure(data, Kind) == kind


@given(kind=workflow_kinds())
def test_workflow_kinds_round_trip(kind: Kind) -> None:
    """A workflow's tree (loops, parallels, gates, step agents) and budgets go to JSON and back."""
    data = json.loads(json.dumps(converter.unstructure(kind)))
    assert converter.structure(data, Kind) == kind


@pytest.mark.parametrize("name", sorted(BUILTIN_KINDS))
def test_a_kind_without_workflow_fields_writes_none_of_them(name: str) -> None:
    """A kind of steps writes no budgets, agents or workflow keys: its journal line as before."""
    text = json.dumps(converter.unstructure(BUILTIN_KINDS[name]))  # type: ignore[index]
    for key in ('"budgets"', '"agent"', '"on_max"', '"branches"', '"gate"'):
        assert key not in text


@pytest.mark.parametrize("name", sorted(BUILTIN_KINDS))
def test_builtin_kinds_round_trip(name: str) -> None:
    """Each built-in kind goes to JSON and back equal."""
    kind = BUILTIN_KINDS[name]  # type: ignore[index]
    assert converter.structure(converter.unstructure(kind), Kind) == kind


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("not json", "not a journal line"),
        ('{"type": "Nope", "at": 1}', "not a journal line"),
        ('{"type": "Told", "at": 1}', "text"),
        ('{"type": "Told", "at": 1, "text": "x", "extra": 1}', "not a journal line"),
        ('{"type": "Tick", "at": "soon"}', "not a journal line"),
    ],
)
def test_bad_journal_lines_are_value_errors(line: str, says: str) -> None:
    """A line that is not an observation says so, as a ValueError the reader can count."""
    with pytest.raises(ValueError, match=says):
        decode(line)


#: ``ActionFailed`` lines as flume wrote them when it named the failed action by a string.
_FAILED_LINES = (
    (
        '{"at":1.5,"action":"MakeWorktree","argv":["git","worktree"],"status":128,'
        '"output":"fatal: exists","type":"ActionFailed"}'
    ),
    '{"at":2.5,"action":"Land","type":"ActionFailed"}',
)


@pytest.mark.parametrize("line", _FAILED_LINES)
def test_a_failed_action_journaled_by_name_reads_back_and_writes_the_same_line(line: str) -> None:
    """The failed action's name is read as its ``ActionName`` and written as the same line."""
    seen = decode(line)
    assert isinstance(seen, ActionFailed)
    assert isinstance(seen.action, ActionName)
    assert encode(seen) == line


def test_every_action_has_its_class_name_as_its_name() -> None:
    """An action of each type is named by its class's name, as journals write it."""
    assert [name.value for name in ActionName] == [kind.__name__ for kind in ACTION_TYPES]
    for name in ActionName:
        line = f'{{"at":1.5,"action":"{name.value}","type":"ActionFailed"}}'
        assert encode(decode(line)) == line
    with pytest.raises(ValueError, match="not a journal line"):
        decode('{"at":1,"action":"Send","type":"ActionFailed"}')
