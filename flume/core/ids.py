"""Names for the things flume talks about, so a branch cannot pass as a sha.

Every id is a ``NewType`` over ``str`` (or ``float`` for instants): free at run time, checked by
mypy. ``Instant`` is seconds since the epoch as the shell's clock read it; the core only compares
and subtracts instants and never reads a clock of its own: the time is an observation too.
"""

from __future__ import annotations

from typing import NewType

#: A place's name: ``<kind>--<name>``, unique in its repository.
PlaceName = NewType("PlaceName", str)
#: The work's name as the caller gave it; names the branch and the place.
WorkName = NewType("WorkName", str)
KindName = NewType("KindName", str)
StageName = NewType("StageName", str)
#: A block's name in a kind's tree: a step's (its stage's), a loop's or a parallel's.
BlockName = NewType("BlockName", str)
BranchName = NewType("BranchName", str)
Sha = NewType("Sha", str)
#: The agent session's id, chosen by the shell (randomness is the shell's) and observed.
SessionId = NewType("SessionId", str)
#: The unique text flume puts in each prompt and tell, to find it again in a transcript.
Marker = NewType("Marker", str)
#: Seconds since the epoch, as observed by the shell.
Instant = NewType("Instant", float)
