"""Totality: every (state, observation) pair gives a Decision or a UsageError, never a crash."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flume.core.errors import UsageError
from flume.core.observations import OBSERVATION_TYPES, Launched, Observation
from flume.core.place import Place
from flume.core.settings import Settings
from flume.core.status import status
from flume.core.step import Decision, step
from tests.strategies import FACTS, any_places, fitting, launched, places

SETTINGS = Settings()
#: Totality runs once per observation type; the profile's count is meant for the machines.
ENOUGH = settings(max_examples=min(settings().max_examples, 250))


def _step_is_total(place: Place | None, seen: Observation) -> None:
    try:
        decision = step(SETTINGS, place, seen)
    except UsageError as error:
        refusal = error
    else:
        assert isinstance(decision, Decision)
        assert place is None or decision.place.now >= place.now
        status(decision.place)
        return
    assert refusal.problems
    assert refusal.exit_status in {1, 2}


@pytest.mark.parametrize(
    "kind", [t for t in OBSERVATION_TYPES if t is not Launched], ids=lambda t: t.__name__
)
@ENOUGH
@given(data=st.data())
def test_every_observation_type_in_any_state(kind: type[Observation], data: st.DataObject) -> None:
    """Each observation type, fed to a place in any life, phase, agent and tells, is handled."""
    place = data.draw(any_places())
    _step_is_total(place, data.draw(FACTS[kind]))


@given(place=places(), data=st.data())
def test_reachable_states_take_fitting_observations(place: Place, data: st.DataObject) -> None:
    """A place reached by real steps takes any fitting observation without crashing."""
    _step_is_total(place, data.draw(fitting(place)))


@given(place=any_places(), seen=launched())
def test_a_second_launch_is_refused(place: Place, seen: Launched) -> None:
    """A launch fed to a place that exists is a usage error, never a new state."""
    with pytest.raises(UsageError):
        step(SETTINGS, place, seen)


@given(seen=st.one_of(*FACTS.values()))
def test_nothing_but_a_launch_starts_a_place(seen: Observation) -> None:
    """Any observation but a launch, with no place yet, is a usage error."""
    with pytest.raises(UsageError):
        step(SETTINGS, None, seen)
