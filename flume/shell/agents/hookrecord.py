"""Claude Code's hooks, recorded: one JSON line per hook call, appended to the file named.

Claude Code runs this for each hook flume installs for a run (``--settings``), with the hook's
JSON on standard input (reference/claude-code.md §4). It keeps what flume reads of it (the event,
the tool, the notification's type, whether a subagent spoke) and the time it was called, appends
one line under a lock, and always exits 0 with nothing on standard output: a hook's output could
steer Claude Code, and this one only listens. Standard library only, so it starts fast.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time

_KEPT = (
    "hook_event_name",
    "session_id",
    "tool_name",
    "notification_type",
    "agent_id",
    "source",
    "reason",
    "transcript_path",
)


def main() -> int:
    """Append the hook's call to ``argv[1]``; exit 0 whatever happens."""
    try:
        data = json.loads(sys.stdin.read() or "{}")
        record = {key: data[key] for key in _KEPT if isinstance(data, dict) and key in data}
        record["at"] = time.time()
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        descriptor = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            os.write(descriptor, line)
        finally:
            os.close(descriptor)
    except Exception:  # noqa: BLE001, S110 (a hook must never fail the agent it listens to)
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
