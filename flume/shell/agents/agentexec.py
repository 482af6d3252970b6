"""The first program of an agent's pane: it becomes the agent, with the environment flume gave.

flume writes the agent's command line and environment to a file only its user can read, and
starts the pane as ``env -C PLACE FLUME_SESSION=ID python -I agentexec.py FILE``. This reads the
file, removes it, and execs the agent from the argument list: no shell reads any of it, and no
API key or caller's argument ever stands on a command line where ``ps`` would show it. Standard
library only, so it adds little to the agent's start.
"""

from __future__ import annotations

import json
import os
import sys


def main(arguments: list[str]) -> int:
    """Exec the agent the file names; 127 with a message when it cannot."""
    if len(arguments) != 1:
        sys.stderr.write("usage: agentexec.py FILE (flume starts agents this way)\n")
        return 2
    path = arguments[0]
    try:
        with open(path, encoding="utf-8") as file:  # noqa: PTH123 (no pathlib: a fast start)
            data = json.load(file)
        os.unlink(path)  # noqa: PTH108
        argv = [str(part) for part in data["argv"]]
        env = {str(key): str(value) for key, value in data["env"].items()}
        # Variables the pane's multiplexer set for this pane (herdr's pane ids), by name.
        for name in data.get("keep", ()):
            if str(name) in os.environ:
                env[str(name)] = os.environ[str(name)]
    except (OSError, ValueError, KeyError, AttributeError, TypeError) as error:
        sys.stderr.write(f"flume: cannot start the agent from {path}: {error}\n")
        return 127
    try:
        os.execvpe(argv[0], argv, env)  # noqa: S606 (an argument list, no shell)
    except OSError as error:
        sys.stderr.write(f"flume: cannot start {argv[0]}: {error}\n")
        return 127
    return 0  # pragma: no cover (exec does not return)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
