"""A sandboxed step's guard on Claude Code's file tools: a write outside the fence is refused.

Claude Code's sandbox holds its Bash commands (and all they start) to the folders flume allows,
but not its own file tools: Write, Edit, MultiEdit and NotebookEdit write from Claude Code's own
process, where only its permission rules apply (seen with 2.1.332: under ``bypassPermissions``
the Write tool wrote outside the sandbox's folders; under ``acceptEdits`` it asked a person).
flume installs this as a ``PreToolUse`` hook for those tools in a sandboxed step's run
(``--settings``): given the folders the step may write as arguments (the worktree first) and
the hook's JSON on standard input (reference/claude-code.md §4), it exits 0, saying nothing,
for a path inside them, and 2 with the reason on standard error otherwise, which blocks the
call and tells the model why.

It fails closed: input it cannot read, a call it cannot make sense of, or any error of its own
is a refusal (2), never a pass. Inside the worktree, what would outlive the step or run outside
its sandbox is refused too: its ``.git`` (a file naming the git folder, or the folder), and
Claude Code's own project settings, ``.claude/`` and ``.mcp.json`` (hooks, permissions and MCP
servers the next unsandboxed Claude Code there would run). Standard library only, so it starts
fast.
"""

from __future__ import annotations

import json
import os
import sys

#: The fields Claude Code's file tools name their file in.
_PATH_FIELDS = ("file_path", "notebook_path")
#: Inside the worktree (the first folder allowed), names a file tool may not write at its top.
_WORKTREE_KEPT = (".git", ".claude", ".mcp.json")


class RefusedError(Exception):
    """The call may not go on: the reason says why."""


def main(allowed: list[str]) -> int:
    """0 when the tool call writes inside ``allowed`` (or names no file); 2 when it does not.

    Any failure, of the input or of this guard, is a refusal.
    """
    try:
        check(allowed, sys.stdin.read())
    except RefusedError as refused:
        return _refuse(str(refused))
    except Exception as error:  # noqa: BLE001 (failing closed: any error refuses the call)
        return _refuse(f"flume's guard could not check this call ({type(error).__name__}: {error})")
    return 0


def _refuse(reason: str) -> int:
    sys.stderr.write(f"flume: this step is sandboxed: {reason}\n")
    return 2


def check(allowed: list[str], given: str) -> None:
    """Raise :class:`RefusedError` unless the call ``given`` (hook JSON) writes inside the fence."""
    if not allowed:
        raise RefusedError("no folder is allowed to it")
    cwd, tool_input = _call(given)
    roots = [os.path.realpath(each) for each in allowed]
    kept = [os.path.join(roots[0], name) for name in _WORKTREE_KEPT]  # noqa: PTH118
    named = [field for field in _PATH_FIELDS if field in tool_input]
    if not named:
        raise RefusedError("the tool call names no file")
    for field in named:
        path = tool_input[field]
        if not isinstance(path, str) or not path:
            raise RefusedError(f"the tool call's {field} is not a path")
        full = os.path.realpath(os.path.join(cwd, path))  # noqa: PTH118
        if not any(_within(full, root) for root in roots):
            raise RefusedError(f"{path} is outside the folders it may write ({', '.join(allowed)})")
        if any(_within(full, each) for each in kept):
            raise RefusedError(
                f"{path} is kept from the agent ({', '.join(_WORKTREE_KEPT)} in the worktree: "
                "git's folder, and settings the next Claude Code there would run)"
            )


def _call(given: str) -> tuple[str, dict[str, object]]:
    """The call's working folder and its tool's input; :class:`RefusedError` if it has not both."""
    try:
        call = json.loads(given)
    except ValueError as error:
        raise RefusedError(f"its hook input is not JSON ({error})") from error
    if not isinstance(call, dict):
        raise RefusedError("its hook input is not a JSON object")
    tool_input = call.get("tool_input")
    if not isinstance(tool_input, dict):
        raise RefusedError("the tool call names no input")
    cwd = call.get("cwd")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):  # noqa: PTH117 (no pathlib: a fast start)
        raise RefusedError("the tool call names no working folder")
    return cwd, tool_input


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
