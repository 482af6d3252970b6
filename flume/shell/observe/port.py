"""The observer port: a batch source the supervisor asks, each tick, about every place at once."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

from flume.core.ids import Instant
from flume.core.kinds import Step
from flume.core.observations import Observation
from flume.core.place import Place, current_step
from flume.shell.store.follower import Followed


class Observer(Protocol):
    """A batch source of observations: it sees every followed place at once, each tick."""

    def observe(
        self, followed: Sequence[Followed], now: Instant
    ) -> Iterator[tuple[Followed, Observation]]:
        """What changed since the places' states, as (place, observation) pairs."""
        ...


class Steps:
    """Each place's current step, computed again only once its place changed (asked each tick)."""

    def __init__(self) -> None:
        self._kept: dict[Path, tuple[Place, Step]] = {}
        self._now: dict[Path, tuple[Place, Step]] = {}

    def of(self, each: Followed, place: Place) -> Step:
        """The current step of ``place``, the place ``each`` follows."""
        kept = self._kept.get(each.journal)
        if kept is None or kept[0] is not place:
            kept = (place, current_step(place))
        self._now[each.journal] = kept
        return kept[1]

    def tick(self) -> None:
        """Keep only the steps asked for since the last call (places gone are forgotten)."""
        self._kept, self._now = self._now, {}
