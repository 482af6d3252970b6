"""Report files: when each active place's report was last written.

Theory of operation. :class:`Reports` is one of the supervisor's observers. For every active place
whose current stage delivers a :class:`~flume.core.kinds.ReportFile`, it makes one ``stat`` a
tick of ``<place>/<path>`` and reports :class:`ReportSeen` with the file's modification time when
that time moved since the last report for the place (or since what the place already holds, after
a restart). Whether the report was written since the stage started is the core's to judge.
"""

from __future__ import annotations

import logging
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from flume.core.ids import Instant
from flume.core.kinds import ReportFile
from flume.core.observations import Observation, ReportSeen
from flume.core.place import Life
from flume.shell.observe.port import Steps
from flume.shell.store.follower import Followed

_log = logging.getLogger("flume.reports")

#: Which followed place, which report: its journal, that file's identity, and the report's path.
_Key = tuple[Path, tuple[int, int] | None, str]


class Reports:
    """The supervisor's observer of report files."""

    def __init__(self) -> None:
        #: The modification time last reported, per place and report.
        self.reported: dict[_Key, Instant] = {}
        self._steps = Steps()

    def observe(
        self, followed: Sequence[Followed], now: Instant
    ) -> Iterator[tuple[Followed, Observation]]:
        """A ``ReportSeen`` for each current report file whose modification time moved."""
        current: set[_Key] = set()
        for each in followed:
            place = each.place
            if place is None or place.life is not Life.ACTIVE:
                continue
            deliverable = self._steps.of(each, place).deliverable
            if not isinstance(deliverable, ReportFile):
                continue
            key = (each.journal, each.identity, deliverable.path)
            current.add(key)
            try:
                found = (Path(place.path) / deliverable.path).stat()
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError:
                _log.exception("reading %s in %s failed", deliverable.path, place.path)
                continue
            if not stat.S_ISREG(found.st_mode):
                continue
            modified = Instant(found.st_mtime)
            if modified != self.reported.get(key, place.reports.get(deliverable.path)):
                self.reported[key] = modified
                yield each, ReportSeen(at=now, path=deliverable.path, modified_at=modified)
        self.reported = {key: value for key, value in self.reported.items() if key in current}
        self._steps.tick()
