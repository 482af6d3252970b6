"""Where flume finds the outside programs it drives: agents and the OpenSpec CLI."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

#: Where ``scripts/install-agents`` puts the pinned npm packages' programs, beside flume.
NODE_BIN = Path(__file__).resolve().parents[2] / ".node" / "node_modules" / ".bin"


def installed(name: str, variable: str) -> Path | None:
    """``$variable`` if set, else the pinned ``.node`` install's ``name``, else PATH's; or None."""
    chosen = os.environ.get(variable)
    if chosen:
        return Path(chosen)
    pinned = NODE_BIN / name
    if pinned.exists():
        return pinned
    found = shutil.which(name)
    return Path(found) if found else None
