"""The observer port: a batch source the supervisor asks, each tick, about every place at once."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from flume.core.ids import Instant
from flume.core.observations import Observation
from flume.shell.store.follower import Followed


class Observer(Protocol):
    """A batch source of observations: it sees every followed place at once, each tick."""

    def observe(
        self, followed: Sequence[Followed], now: Instant
    ) -> Iterator[tuple[Followed, Observation]]:
        """What changed since the places' states, as (place, observation) pairs."""
        ...
