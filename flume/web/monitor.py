"""What the monitor knows: every place on this host, as the one journal follower reads them.

Theory of operation. One :class:`Monitor` serves every page and every open page's live feed. It
holds one events stream (``flume.api.follower``: the journal follower ``flume events`` and
``flume watch`` read with), which it polls every ``interval`` seconds: a poll reads only what
each journal gained since the last (offsets kept), and its new events are kept (the last
:data:`KEPT` of them) and handed to every open page at once. No page reads a journal itself:
the live feed of a hundred open pages costs one poll.

A place's status (the form ``flume status --json`` prints, for the view model) is made again
only when its journal grew: each is kept with the place it was made from. Whether the host's
supervisor answers (a live agent's state is unknown while it does not) is asked every few
seconds, off the loop, and at once when a journal moved while it did not answer; it is kept,
and each open page is told when it changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flume import api, views

if TYPE_CHECKING:
    from flume.api import EventStream, PlaceEvent
    from flume.core.place import Place

#: How many of the latest events the monitor keeps for pages opened later, and of each place.
KEPT = 5000
KEPT_A_PLACE = 500
#: How often whether the supervisor answers is asked again, in seconds.
SUPERVISED_EVERY = 3.0


def key_of(repository: str, place: str) -> str:
    """A place's address in the monitor: a digest of its repository, then its name.

    Two repositories may each hold a place of the same name; the digest keeps them apart.
    """
    digest = hashlib.sha256(repository.encode()).hexdigest()[:10]
    return f"{digest}/{place}"


class Monitor:
    """Every place on the host and their events, followed by one poll for every page."""

    def __init__(
        self,
        follower: EventStream,
        *,
        interval: float = 0.25,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.follower = follower
        self.interval = interval
        self.clock = clock
        #: The latest events, oldest first, and how many were ever seen.
        self.events: deque[PlaceEvent] = deque(maxlen=KEPT)
        self._of: dict[tuple[str, str], deque[PlaceEvent]] = {}
        self.seen = 0
        #: The server is shutting down: open feeds end.
        self.closing = False
        self.known = False
        self._views: dict[str, tuple[Place, bool, dict[str, Any]]] = {}
        #: Held while the follower reads, and while its places are listed: a page may be drawn
        #: in another thread than the polls (a test's, or a command's worker).
        self._lock = threading.Lock()
        self._changed: asyncio.Event | None = None
        #: Set once a person opened the URL with the token (``flume demo --monitor`` waits).
        self.opened = threading.Event()

    # --- following ----------------------------------------------------------------------

    def poll(self) -> list[PlaceEvent]:
        """Read what the journals gained: the new events, kept."""
        with self._lock:
            new = self.follower.poll()
        self.events.extend(new)
        for event in new:
            mine = self._of.setdefault((event.repository, event.place), deque(maxlen=KEPT_A_PLACE))
            mine.append(event)
        self.seen += len(new)
        return new

    def changed(self) -> asyncio.Event:
        """The event set each time a poll finds something new (made in the running loop)."""
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    async def follow(self) -> None:
        """Poll until cancelled; wake every open page when something new was read."""
        again = asyncio.Event()
        asking = asyncio.create_task(self._ask_supervisor(again))
        try:
            while not self.closing:
                if self.poll():
                    if not self.known:
                        again.set()  # something moves: the supervisor may have started
                    self.wake()
                await asyncio.sleep(self.interval)
        finally:
            asking.cancel()
            self.wake()

    def wake(self) -> None:
        """Wake every open page's feed."""
        waiting = self.changed()
        self._changed = asyncio.Event()
        waiting.set()

    def close(self) -> None:
        """The server shuts down: every open feed ends (at its next wake)."""
        self.closing = True

    async def _ask_supervisor(self, again: asyncio.Event) -> None:
        """Ask now and then (or when ``again`` is set) whether the supervisor answers.

        Off the polls' way. When the answer changes, every open page is woken to draw it.
        """
        while True:
            known = await asyncio.to_thread(api.supervised, 1.0)
            if known != self.known:
                self.known = known
                self.wake()
            again.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(SUPERVISED_EVERY):
                    await again.wait()

    async def wait(self, seen: int, within: float) -> int:
        """Wait until more than ``seen`` events were read, or ``within`` seconds: how many now."""
        if self.seen > seen:
            return self.seen
        waiting = self.changed()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                await waiting.wait()
        return self.seen

    def since(self, seen: int) -> list[PlaceEvent]:
        """The events read after the first ``seen`` (those still kept)."""
        new = self.seen - seen
        if new <= 0:
            return []
        kept = list(self.events)
        return kept[-min(new, len(kept)) :]

    # --- what the pages show ------------------------------------------------------------

    def places(self) -> list[Place]:
        """Every place followed, as its journal reads to the last poll."""
        with self._lock:
            return api.followed(self.follower)

    def view(self, place: Place) -> dict[str, Any]:
        """The place's status as plain data, made again only when its journal grew."""
        name = f"{place.launch.repository}\0{place.launch.place}"
        kept = self._views.get(name)
        if kept is not None and kept[0] is place and kept[1] == self.known:
            return kept[2]
        made = api.view_of(place, agent_known=self.known)
        made["address"] = key_of(place.launch.repository, place.launch.place)
        self._views[name] = (place, self.known, made)
        return made

    def views(self) -> list[views.View]:
        """Every place's status, in the order the view model lists them."""
        return views.ordered(self.view(place) for place in self.places())

    def find(self, address: str) -> Place | None:
        """The place at ``address`` (:func:`key_of`), if followed."""
        for place in self.places():
            if key_of(place.launch.repository, place.launch.place) == address:
                return place
        return None

    def lanes_of(self, place: Place) -> list[Place]:
        """The places launched by ``place`` (its lanes and children), in name order."""
        name = place.launch.place
        return [
            each
            for each in self.places()
            if each.launch.parent == name and each.launch.repository == place.launch.repository
        ]

    def events_of(self, place: Place) -> list[PlaceEvent]:
        """The place's latest events (up to :data:`KEPT_A_PLACE`), oldest first."""
        return list(self._of.get((place.launch.repository, place.launch.place), ()))

    def repository_of(self, place: Place) -> Path:
        """The repository the place's commands are given in."""
        return Path(place.launch.repository)
