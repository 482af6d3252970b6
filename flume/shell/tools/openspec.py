"""The OpenSpec CLI: found, run with telemetry off, and what it says read (reference §0-3)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import attrs

from flume.shell import process
from flume.shell.process import Ran
from flume.shell.tools.locate import installed

OPENSPEC_VERSION = "1.13.2"
"""The OpenSpec CLI flume is tested against (``scripts/install-agents`` installs it)."""

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
