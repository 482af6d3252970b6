"""Following a place's journal: where a reader has got to in it, and what it has still to do."""

from __future__ import annotations

import collections
from pathlib import Path

import attrs

from flume.core.actions import Action
from flume.core.observations import Observation
from flume.core.place import Place


@attrs.define(eq=False)
class Followed:
    """One place the supervisor follows: its journal, how far it has read, and what is to do."""

    journal: Path
    offset: int = 0
    place: Place | None = None
    #: Never read yet: its first read performs what it is pending, not its history.
    fresh: bool = True
    #: A batch of its actions is being performed.
    busy: bool = False
    batches: collections.deque[tuple[Action, ...]] = attrs.field(factory=collections.deque)
    #: Why the journal can no longer be followed (damaged, or edited by hand).
    problem: str | None = None
    #: The journal file's (device, inode): a name launched again gets a new file, read anew.
    identity: tuple[int, int] | None = None
    #: Another host launched the place: its supervisor carries it, this one only reads it.
    foreign: bool = False
    #: The journal's (size, mtime, ctime) when its problem was found: once the file changes
    #: (mended in place), it is read again from its start, and followed if it reads whole.
    problem_mark: tuple[int, int, int] | None = None
    #: The journal's (size, mtime, ctime) at the last look.
    mark: tuple[int, int, int] | None = None
    #: Why the supervisor's last write to the journal failed (a full disk, a read-only folder).
    fault: str | None = None
    #: What could not be journaled yet (the journal could not be written): written, in order,
    #: once it can be, before anything seen later.
    unwritten: collections.deque[Observation] = attrs.field(factory=collections.deque)

    def restart(self, identity: tuple[int, int]) -> None:
        """Follow a new journal at this path from its start."""
        self.offset, self.place, self.fresh, self.problem = 0, None, True, None
        self.foreign = False
        self.problem_mark, self.fault = None, None
        self.batches.clear()
        self.unwritten.clear()
        self.identity = identity

    def give_up(self, problem: str) -> None:
        """Stop following the journal as it is now, for ``problem``, until it changes."""
        self.problem, self.problem_mark = problem, self.mark
