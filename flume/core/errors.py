"""The two kinds of trouble: a caller's mistake and a surprising world (after h11's split).

A caller asking for something the rules forbid raises :class:`UsageError`; the shell journals
nothing for it and the CLI maps it to an exit status. A surprising world never raises: it becomes
a state plus a ``Report`` action.
"""

from __future__ import annotations

from typing import NamedTuple


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
