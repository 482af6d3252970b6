"""flume's own folder on this host, and its registry of repositories that have places.

Apart from :mod:`flume.shell.store.places` (which re-exports them) so that what needs only these,
such
as asking the supervisor (:mod:`flume.shell.supervisor.client`), loads neither git nor the core.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The version of flume's plain-data form (journal lines, ``status --json``, ``launch --json``);
#: bumped on any change a reader must know about.
FORMAT = 1
#: The version of ``flume status --json`` (and the supervisor's survey, its source). Format 2
#: is format 1 with a workflow run's fields and phases added, and every place's transcripts once
#: found (docs/status.md): a place of a kind of stages carries format 1's fields alone besides
#: those, so a reader of format 1 reads it unchanged.
STATUS_FORMAT = 2


def state_dir() -> Path:
    """The XDG state directory where flume keeps its own files."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "flume"


def private(folder: Path) -> Path:
    """``folder``, made if missing, this user's alone (0700): what flume keeps there is private.

    flume's state (its log, its agents' files, the repositories it knows), a repository's
    journals (briefs, tells, answers) and its boards (``task.md`` holds the brief) are read by
    no one else on the host, whatever their files' own modes.
    """
    folder.mkdir(parents=True, exist_ok=True)
    if folder.stat().st_mode & 0o777 != 0o700:
        folder.chmod(0o700)
    return folder


def registry_path() -> Path:
    """The file that lists the repositories with places."""
    return state_dir() / "repositories"


def remembered() -> list[Path]:
    """Every registered repository that is still there."""
    try:
        lines = registry_path().read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    return [Path(line) for line in dict.fromkeys(lines) if line and Path(line).is_dir()]
