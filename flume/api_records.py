"""The records :mod:`flume.api` returns, which it re-exports (docs/api.md).

A launch made, a status survey, the supervisor's state, a scenario simulated, a journal compared
under a changed definition.

A module of their own, loaded by the functions that return them, and named tuples, not attrs
classes: an agent's command refused outside any place, and a launch handed to the supervisor,
load no attrs (bench/cli.py, bench/launch.py; tests/integration/test_cli_imports.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from flume.core.errors import Problem
    from flume.core.status import PlaceStatus
    from flume.core.step import TraceRow
    from flume.core.workflow.versions import Comparison
    from flume.shell.declared.scenario import Restarted
    from flume.shell.perform.launch_words import Made
    from flume.shell.supervisor.protocol import DaemonReport


class Launched(NamedTuple):
    """A launch journaled: the place's id and where it lives (``flume launch --json``)."""

    #: ``<kind>--<name>``: how every other function names the place.
    place: str
    #: The repository's main worktree.
    repository: Path
    #: The place's worktree, made by the supervisor soon after the launch.
    path: Path
    branch: str
    base: str
    journal: Path

    @classmethod
    def of(cls, made: Made) -> Launched:
        """The launch the shell journaled."""
        return cls(
            place=made.place,
            repository=made.repository,
            path=made.path,
            branch=made.branch,
            base=made.base,
            journal=made.journal,
        )

    def as_dict(self) -> dict[str, Any]:
        """The launch as JSON-ready data: what ``flume launch --json`` prints (format 1)."""
        from flume.core.ids import BranchName, PlaceName
        from flume.shell.perform.launch_words import Made

        return Made(
            place=PlaceName(self.place),
            repository=self.repository,
            path=self.path,
            branch=BranchName(self.branch),
            base=BranchName(self.base),
            journal=self.journal,
        ).as_dict()


class Survey(NamedTuple):
    """What ``flume status`` read: the places, and the journals it could not read whole."""

    places: tuple[PlaceStatus, ...]
    #: (journal, problem) for each journal that could not be read at all.
    unreadable: tuple[tuple[str, str], ...]
    #: Journals whose last line a crash cut short: read without that line.
    torn: tuple[str, ...]
    #: The repositories looked in.
    repositories: tuple[Path, ...]


class DaemonStatus(NamedTuple):
    """What ``flume daemon status`` says of the host's supervisor."""

    #: The pid of the process holding the host's supervisor lock; None when none runs.
    pid: int | None
    #: It is stopped (SIGSTOP, a debugger): it was not asked.
    paused: bool
    #: Its answer to ``status``: None when none runs, or when it does not answer.
    reply: DaemonReport | None
    #: Why one that runs does not answer, and the way out.
    problem: Problem | None


class Simulated(NamedTuple):
    """A scenario run through flume's rules, with no I/O (``flume simulate``)."""

    path: str
    description: str
    #: Each step: what was seen, the place's state, the actions decided; and each restart of the
    #: supervisor the scenario names, with what it performs again.
    rows: tuple[TraceRow | Restarted, ...]


class Versioned(NamedTuple):
    """A journal folded under its own definition and a changed one (``simulate --kind-file``)."""

    #: The journal, as given.
    journal: str
    #: The changed definition's kind file, as given.
    kind_file: str
    #: The journal's kind, as its launch carried it, and the name the kind file declares.
    journal_kind: str
    file_kind: str
    #: Whether the journal's place is a lane of a parallel (compared with the file's lane block).
    lane: str
    #: No torn or mended lines were left out: an observation's number is its journal line.
    whole: bool
    comparison: Comparison
