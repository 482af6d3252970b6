"""Hosts, model-checked: several hosts' supervisors read one repository's places.

Each host's supervisor reads every journal of the repository, as a real one does (the journals
live in the repository, not on the host). The simpler model beside it: a place belongs to the
host that launched it, and only that host's supervisor ever steps it; a place launched before
hosts were recorded belongs to whichever host follows it, as before.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from flume.core.launch import Host, followed_by
from flume.core.observations import Tick
from flume.core.settings import Settings
from flume.core.status import status
from flume.core.step import replay
from tests.model.world import FakeWorld, fix_world

#: The hosts on the machine: two users (two state folders) on one repository.
HOSTS = {
    "a": Host(id="1f3a", state="/home/ann/.local/state/flume"),
    "b": Host(id="9c07", state="/home/bob/.local/state/flume"),
}
NAMES = sorted(HOSTS)


class HostsMachine(RuleBasedStateMachine):
    """Places launched by either host, or by none; each host's supervisor ticks what it follows."""

    @initialize()
    def start(self) -> None:
        """No places yet."""
        #: Each place's world and its launcher's name (None: a launch from before hosts).
        self.worlds: list[tuple[FakeWorld, str | None]] = []
        #: For each place, the hosts whose supervisor stepped it.
        self.stepped_by: list[set[str]] = []

    @rule(launcher=st.sampled_from([*NAMES, None]))
    def launch(self, launcher: str | None) -> None:
        """A host launches a fix (or one was launched before hosts were recorded)."""
        world = fix_world(Settings(quiet_seconds=5, confirm_seconds=30, ready_seconds=60))
        world.host = HOSTS[launcher] if launcher is not None else None
        assert world.launch(name=f"p{len(self.worlds)}") is None
        self.worlds.append((world, launcher))
        self.stepped_by.append(set())

    @rule(host=st.sampled_from(NAMES), seconds=st.sampled_from([1.0, 31.0, 61.0]))
    def a_supervisor_ticks(self, host: str, seconds: float) -> None:
        """One host's supervisor reads every journal and steps the places it follows."""
        for (world, _), stepped in zip(self.worlds, self.stepped_by, strict=True):
            place = replay(world.settings, world.journal)
            if not followed_by(place.launch, HOSTS[host].id):
                continue
            world.now += seconds
            assert world.feed(Tick(at=world.instant())) is None
            stepped.add(host)

    @invariant()
    def only_the_launching_host_carries_a_place(self) -> None:
        """HOST-OWNS-PLACE: only the launching host's supervisor steps a place; status names it.

        A place launched by a host is stepped by that host's supervisor alone, never by another
        reading the same journals; one launched before hosts were recorded may be stepped by
        any. Status shown on a host names the launcher's state folder exactly when the place is
        another host's.
        """
        for (world, launcher), stepped in zip(self.worlds, self.stepped_by, strict=True):
            if launcher is not None:
                assert stepped <= {launcher}, (launcher, stepped)
            assert world.place is not None
            assert world.place.launch.host == (HOSTS[launcher] if launcher else None)
            for here in [*NAMES, None]:
                shown = status(world.place, here=HOSTS[here].id if here else None).host
                theirs = launcher is not None and launcher != here
                assert shown == (HOSTS[launcher].state if theirs and launcher else None)


TestHosts = HostsMachine.TestCase
