"""The OpenSpec CLI: found, run with telemetry off, and what it says read (reference §0-3)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import attrs

from flume.core.ids import Sha
from flume.shell import process
from flume.shell.process import Ran
from flume.shell.tools import git
from flume.shell.tools.locate import installed

OPENSPEC_VERSION = "1.13.2"
"""The OpenSpec CLI flume is tested against (``scripts/install-agents`` installs it)."""

#: Where OpenSpec keeps changes, and the changes it has archived.
CHANGES = "openspec/changes"
ARCHIVE = f"{CHANGES}/archive"
_log = logging.getLogger("flume.openspec")
#: OpenSpec sends telemetry and checks for updates unless told not to (reference §0).
_ENV = {"OPENSPEC_TELEMETRY": "0", "DO_NOT_TRACK": "1", "NO_COLOR": "1"}
#: A CLI run that takes longer than this is taken as saying nothing.
_TIMEOUT_SECONDS = 60.0


def binary() -> Path | None:
    """The OpenSpec CLI: ``$FLUME_OPENSPEC``, else flume's ``.node``, else PATH's; or None."""
    return installed("openspec", "FLUME_OPENSPEC")


@attrs.define
class OpenSpec:
    """The OpenSpec CLI at ``path``, bound once: every call an argument list, never a shell."""

    path: Path

    def run(self, cwd: Path, *args: str) -> Ran:
        """Run ``openspec args`` in ``cwd``, telemetry off; never raises on a failure."""
        return process.run((str(self.path), *args), cwd=cwd, env=_ENV, timeout=_TIMEOUT_SECONDS)

    def is_planning_complete(self, root: Path, name: str) -> bool | None:
        """``openspec status --change <name> --json``'s ``isPlanningComplete``; None if unsaid."""
        ran = self.run(root, "status", "--change", name, "--json")
        try:
            said = json.loads(ran.out)
        except ValueError:
            said = None
        found = said.get("isPlanningComplete") if isinstance(said, dict) else None
        if ran.status != 0 or not isinstance(found, bool):
            _log.warning(
                "openspec status of %s said nothing usable (exit %s): %s",
                name,
                ran.status,
                (ran.err or ran.out).strip()[-500:],
            )
            return None
        return found

    def is_valid(self, root: Path, name: str) -> bool | None:
        """``openspec validate <name> --strict --json``: exit 0 True, 1 False, else None."""
        ran = self.run(root, "validate", name, "--strict", "--json")
        if ran.status in {0, 1}:
            return ran.status == 0
        _log.warning(
            "openspec validate of %s could not say (exit %s): %s",
            name,
            ran.status,
            (ran.err or ran.out).strip()[-500:],
        )
        return None


def is_change_archived(repository: Path, base: Sha, name: str) -> bool:
    """The base's tree has the change ``name`` under the archive, and no longer out of it.

    ``openspec archive`` moves ``openspec/changes/<name>`` to
    ``openspec/changes/archive/<YYYY-MM-DD>-<name>``. Read from git's tree at ``base``, not from
    a checkout: the lander asks it of a branch, the landings observer of a base.
    """
    ran = git.run(
        repository, "ls-tree", "-z", "--name-only", "-d", base, "--", f"{CHANGES}/", f"{ARCHIVE}/"
    )
    if not ran.ok:
        return False
    entries = [entry for entry in ran.out.split("\0") if entry]
    if f"{CHANGES}/{name}" in entries:
        return False
    archived = re.compile(rf"(?:\d{{4}}-\d{{2}}-\d{{2}}-)?{re.escape(name)}")
    return any(
        archived.fullmatch(entry.removeprefix(f"{ARCHIVE}/"))
        for entry in entries
        if entry.startswith(f"{ARCHIVE}/")
    )
