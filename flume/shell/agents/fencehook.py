"""A sandboxed step's guard on Claude Code's file tools: a write outside the fence is refused.

Claude Code's sandbox holds its Bash commands (and all they start) to the folders flume allows,
but not its own file tools: Write, Edit, MultiEdit and NotebookEdit write from Claude Code's own
process, where only its permission rules apply (seen with 2.1.332: under ``bypassPermissions``
the Write tool wrote outside the sandbox's folders; under ``acceptEdits`` it asked a person).
flume installs this as a ``PreToolUse`` hook for those tools in a sandboxed step's run
(``--settings``): given the folders the step may write as arguments and the hook's JSON on
standard input (reference/claude-code.md §4), it exits 2 with the reason on standard error for a
path outside them, which blocks the call and tells the model why; 0 otherwise, saying nothing.
Standard library only, so it starts fast.
"""

from __future__ import annotations

import json
import os
import sys

#: The fields Claude Code's file tools name their file in.
_PATH_FIELDS = ("file_path", "notebook_path")


def main(allowed: list[str]) -> int:
    """0 when the tool call writes inside ``allowed`` (or names no file); 2 when it does not."""
    try:
        call = json.load(sys.stdin)
    except ValueError:
        call = {}
    given = call.get("tool_input") if isinstance(call, dict) else None
    named = [given.get(field) for field in _PATH_FIELDS] if isinstance(given, dict) else []
    cwd = call.get("cwd") if isinstance(call, dict) else None
    roots = [os.path.realpath(each) for each in allowed]
    for path in (each for each in named if isinstance(each, str) and each):
        full = os.path.realpath(os.path.join(cwd if isinstance(cwd, str) else ".", path))  # noqa: PTH118 (no pathlib: a fast start)
        if not any(full == root or full.startswith(root + os.sep) for root in roots):
            sys.stderr.write(
                f"flume: this step is sandboxed: {path} is outside the folders it may write "
                f"({', '.join(allowed)})\n"
            )
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
