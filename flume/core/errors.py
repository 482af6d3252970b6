"""The two kinds of trouble: a caller's mistake and a surprising world (after h11's split).

A caller asking for something the rules forbid raises :class:`UsageError`; the shell journals
nothing for it and the CLI maps it to an exit status. A surprising world never raises: it becomes
a state plus a ``Report`` action.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Iterable


class FlumeError(Exception):
    """The root of every error flume raises on purpose."""


class Problem(NamedTuple):
    """One thing wrong with a caller's request: which field, what is wrong, how to mend it.

    A named tuple, where flume's other records are attrs classes: a command says what is wrong
    with its input before it loads attrs (``flume launch`` handed to the supervisor loads none).
    """

    field: str
    what: str
    mend: str

    def render(self) -> str:
        """The problem as one line a person can act on."""
        return f"{self.field}: {self.what}; {self.mend}"


class UsageError(FlumeError):
    """The caller asked for something illegal; nothing was done.

    ``exit_status`` is the CLI's hint: 2 for bad input, 1 for a request refused in the place's
    present state (a tell while the agent asks a person, a retry of a landed place).
    """

    def __init__(self, problems: tuple[Problem, ...], *, exit_status: int = 2) -> None:
        """Keep every problem found, so the caller can mend them all at once."""
        self.problems = problems
        self.exit_status = exit_status
        super().__init__("\n".join(problem.render() for problem in problems))

    @classmethod
    def one(cls, field: str, what: str, mend: str, *, exit_status: int = 2) -> UsageError:
        """A usage error with a single problem."""
        return cls((Problem(field=field, what=what, mend=mend),), exit_status=exit_status)


def refused(field: str, what: str, mend: str) -> UsageError:
    """A request that is well formed but not allowed in the place's present state."""
    return UsageError.one(field, what, mend, exit_status=1)


def slips(word: str, other: str) -> int:
    """How many slips of the keyboard turn ``word`` into ``other``.

    A slip is a letter left out, one too many, one for another, or two side by side swapped (the
    optimal string alignment distance).
    """
    before: list[int] = []
    row = list(range(len(other) + 1))
    for i, letter in enumerate(word, start=1):
        above, row = row, [i]
        for j, theirs in enumerate(other, start=1):
            cost = min(above[j] + 1, row[j - 1] + 1, above[j - 1] + (letter != theirs))
            if i > 1 and j > 1 and letter == other[j - 2] and word[i - 2] == theirs:
                cost = min(cost, before[j - 2] + 1)
            row.append(cost)
        before = above
    return row[-1]


def nearest(word: str, known: Iterable[str]) -> str | None:
    """The known word ``word`` is a near miss of, for a "did you mean"; None if none is near.

    Near: at most one slip for a word of up to four letters, two up to eight, three beyond; and
    nearer than every other known word (a tie suggests nothing rather than the wrong one).
    """
    most = 1 if len(word) <= 4 else 2 if len(word) <= 8 else 3
    scored = sorted((slips(word, each), each) for each in set(known) if each != word)
    if not scored or scored[0][0] > most:
        return None
    if len(scored) > 1 and scored[1][0] == scored[0][0]:
        return None
    return scored[0][1]


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when ``word`` is a near miss of a known word, else empty."""
    found = nearest(word, known)
    return "" if found is None else f" (did you mean {found!r}?)"
