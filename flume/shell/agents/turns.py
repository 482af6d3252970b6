"""A turn's usage, summed as its transcript is read, and the :class:`TurnEnded` where it ends.

Theory of operation. Each agent's line reader says what a line reports of tokens used, as a
:data:`Counted`: a key and the usage under it. The key names what the usage is of, so that a
usage written more than once is counted once:

- Claude Code writes one transcript line per content block of a model message, each repeating
  the message's usage (its ``output_tokens`` growing to the final count on the last block): the
  key is the message's ``id``, and the latest usage under it stands;
- Codex writes a ``token_count`` event after each model response, the call's usage
  (``last_token_usage``) beside the session's running totals (``total_token_usage``), and writes
  the same event twice at times: the key is the running totals, which only a new call moves.

:class:`Turn` keeps the usage under each key since the turn began, and when a line closes the
turn (:func:`closes`) it gives the :class:`TurnEnded` with their sum, or with no usage at all
when no line reported any (unknown, never zero), and begins the next. A closing line with no
turn open (Claude Code's ``turn_duration`` after its ``stop_hook_summary``) gives none, so each
turn ends once. The watch keeps a session's :class:`Turn` beside its offsets and saves both
together (:meth:`Turn.saved`), so a supervisor killed mid-turn reads on with the sums it had.
"""

from __future__ import annotations

from typing import Any

import attrs

from flume.core.ids import Instant, SessionId
from flume.core.observations import Author, TranscriptEntry, TurnEnded, Usage

#: A usage as one line reports it: input, output, cache read, cache creation tokens. A plain
#: tuple, as is :data:`Counted`: every line of a transcript is read, in microseconds (P4).
Tokens = tuple[int, int, int, int]
#: The usage one line reports, under the key that names what it is the usage of.
Counted = tuple[str, Tokens]


def count(value: object) -> int:
    """A token count as a line reports it: an integer, or 0 for anything else."""
    return value if type(value) is int else 0


def closes(entry: TranscriptEntry) -> bool:
    """The line closes a turn: the agent's program wrote that the turn is over.

    Claude Code's ``stop_hook_summary`` and ``turn_duration`` lines and the note of an
    interrupt, Codex's ``task_complete`` and ``turn_aborted``: the lines the readers make
    :attr:`Author.SYSTEM` entries that end a turn. A model message that ends its turn
    (``end_turn``) does not close it: a Stop hook may still send the agent on.
    """
    return entry.ends_turn and entry.author is Author.SYSTEM


@attrs.define
class Turn:
    """The turn being read: whether one is open, and the usage under each key since it began."""

    open: bool = False
    usages: dict[str, Tokens] = attrs.field(factory=dict)

    def take(
        self,
        entry: TranscriptEntry | None,
        counted: Counted | None,
        *,
        session: SessionId,
        at: Instant,
    ) -> TurnEnded | None:
        """Take one line's entry and usage; the :class:`TurnEnded` when the line closes a turn."""
        if counted is not None:
            key, tokens = counted
            self.usages[key] = tokens
            self.open = True
        if entry is None:
            return None
        if not closes(entry):
            if entry.author is not Author.SYSTEM:
                self.open = True
            return None
        if not self.open:
            return None
        usage = None
        if self.usages:
            sums = [sum(column) for column in zip(*self.usages.values(), strict=True)]
            usage = Usage(input=sums[0], output=sums[1], cache_read=sums[2], cache_creation=sums[3])
        self.open, self.usages = False, {}
        return TurnEnded(at=at, session=session, usage=usage)

    def saved(self) -> dict[str, Any]:
        """The turn as JSON-ready data, to save beside the offsets."""
        return {
            "open": self.open,
            "usages": {key: list(tokens) for key, tokens in self.usages.items()},
        }

    @classmethod
    def load(cls, data: object) -> Turn:
        """The turn :meth:`saved` wrote; a fresh one for anything else."""
        if not isinstance(data, dict):
            return cls()
        try:
            usages = {
                str(key): (int(value[0]), int(value[1]), int(value[2]), int(value[3]))
                for key, value in dict(data.get("usages", {})).items()
            }
        except (TypeError, ValueError, IndexError, KeyError):
            return cls()
        return cls(open=data.get("open") is True, usages=usages)
