"""Processes flume starts and watches: whether one still runs.

The bottom of the shell: it imports nothing of flume's.
"""

from __future__ import annotations

import os
from pathlib import Path


def alive(pid: int) -> bool:
    """The process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rsplit(")", 1)[-1].split()[0] not in {"Z", "X"}
