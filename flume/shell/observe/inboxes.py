"""Sandboxed agents' commands, taken from their inboxes and carried out through the rules.

Theory of operation. A sandboxed step's agent may not write its place's journal; its ``flume
needs``, ``progress``, ``ask`` and ``submit`` leave a request in its own inbox instead
(:mod:`flume.shell.store.inbox`). Each tick this observer looks in the inbox of each place's
live agent whose step is sandboxed, and nowhere else: a request is carried out only for the
agent flume started there, in its own session's name, and only if it is one of those four
commands. It is journaled as the command journals it outside a sandbox, under the journal's
lock and through the core's rules (:func:`flume.shell.store.places.give`), so a refusal
journals nothing; then the answer is written where the command waits for it. Unlike the other
observers it yields nothing: what it journals is a command, checked by the rules, not a fact the
supervisor saw, and the supervisor folds it as it folds any command's line.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

from flume.core.errors import UsageError
from flume.core.ids import Instant
from flume.core.observations import Observation
from flume.core.settings import Settings
from flume.shell.agents.port import agents_dir
from flume.shell.declared import kinds
from flume.shell.observe.port import Steps
from flume.shell.store import inbox, places
from flume.shell.store.follower import Followed

_log = logging.getLogger("flume.inboxes")


class Inboxes:
    """Each tick: the requests in the inboxes of the live sandboxed agents, carried out."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        #: The ids of the requests taken since this supervisor started: one sent again is not
        #: carried out again (its answer stays in the inbox for one sent after a restart).
        self._taken: set[str] = set()
        self._steps = Steps()

    def observe(
        self, followed: Sequence[Followed], now: Instant
    ) -> Iterator[tuple[Followed, Observation]]:
        """Carry out each waiting request; nothing is yielded (the rules journal what they take)."""
        for each in followed:
            place = each.place
            if place is None or place.agent is None or not self._steps.of(each, place).sandbox:
                continue
            session = place.agent.session
            folder = inbox.folder(agents_dir(), session)
            for taken in inbox.take(folder, self._taken):
                said: str | UsageError
                if taken.request is None:
                    said = taken.problem or UsageError.one(
                        "request", "it cannot be read", "run it again"
                    )
                else:
                    said = inbox.refused_for(taken.request, session) or self._carry_out(
                        each, taken.request, now
                    )
                try:
                    inbox.answer(folder, taken.ident, said)
                except OSError as error:
                    _log.warning("cannot answer %s in %s: %s", taken.ident, folder, error)
        self._steps.tick()
        return iter(())

    def _carry_out(self, each: Followed, request: inbox.Request, now: Instant) -> str | UsageError:
        """What the command prints once journaled through the rules; or why it was refused."""
        found = places.Found(journal=each.journal, place=each.place)
        try:
            return inbox.carry_out(found, request, now, self.settings, kinds.read_fragment)
        except UsageError as error:
            return error
