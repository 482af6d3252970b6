"""The print backend: a stage's agent as a command flume writes down for you to run (R4).

Theory of operation. With ``--panes print`` flume starts no pane: it writes what the agent needs
(its folder, its command line, its environment, and, once the stage is ready, its prompt) to a
file, and ``flume attach PLACE`` prints the one command that runs it in a terminal of your
choice: ``python -m flume.shell.panes.printed FILE``. That command waits until the prompt is there,
then becomes the agent with the prompt as its first message (``agent ... -- PROMPT``, as
``claude "prompt"`` takes one). flume then follows the agent's transcript like any other:
delivery is proven there (R5), never assumed because the command was printed.

Nothing a caller wrote is ever shell source: the file is JSON, and the command execs the agent
from an argument list. flume cannot type into your terminal, so tells are refused (R6).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from flume.shell.store import places

#: Seconds the printed command waits for its prompt when run before flume wrote it.
PROMPT_WAIT = 60.0


def folder() -> Path:
    """Where the printed agents' files live."""
    return places.state_dir() / "print"


def path_of(place: str) -> Path:
    """The file of the place's printed agent."""
    return folder() / f"{place}.json"


def command(path: Path) -> list[str]:
    """The command a person runs to start the printed agent."""
    return [sys.executable, "-P", "-m", "flume.shell.panes.printed", str(path)]


def write(  # noqa: PLR0913 (each is one thing the agent needs)
    path: Path,
    *,
    session: str,
    cwd: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    prompt: str | None = None,
    send: int | None = None,
) -> None:
    """Write the agent's file whole (a new file renamed over the old).

    ``send``: which send of the stage's prompt ``prompt`` is. The file is the pane's own mark:
    it holds no prompt until one is written (:func:`prompt_written`).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, object] = {
        "session": session,
        "cwd": cwd,
        "argv": list(argv),
        "env": dict(env),
        "prompt": prompt,
    }
    if send is not None:
        data["send"] = send
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data), encoding="utf-8")
    temporary.replace(path)


def read(path: Path) -> dict[str, object] | None:
    """The agent's file; None when there is none (or it is being replaced)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def prompt_written(path: Path, session: str) -> int | None:
    """Which send of the prompt the session's file holds: 0 when none was written yet.

    None when it cannot say: no file, another session's, or one being replaced. A file written
    before sends were numbered, holding a prompt, holds the first.
    """
    data = read(path)
    if data is None or data.get("session") != session:
        return None
    if not isinstance(data.get("prompt"), str):
        return 0
    send = data.get("send", 1)
    return send if isinstance(send, int) else 1


def set_prompt(path: Path, session: str, text: str, send: int | None = None) -> bool:
    """Put the prompt in the session's file; False when the file is another session's."""
    data = read(path)
    if data is None or data.get("session") != session:
        return False
    argv = data.get("argv")
    env = data.get("env")
    if not isinstance(argv, list) or not isinstance(env, dict):
        return False
    cwd = str(data["cwd"])
    write(path, session=session, cwd=cwd, argv=argv, env=env, prompt=text, send=send)
    return True


def main(arguments: Sequence[str]) -> int:
    """Run the printed agent: wait for its prompt, then become it."""
    if len(arguments) != 1:
        sys.stderr.write(
            "usage: python -m flume.shell.panes.printed FILE (flume attach prints it)\n"
        )
        return 2
    path = Path(arguments[0])
    deadline = time.monotonic() + PROMPT_WAIT
    while True:
        data = read(path)
        if data is None and not path.exists():
            sys.stderr.write(f"flume: {path} is gone: the stage ended or was tidied\n")
            return 1
        if data is not None and isinstance(data.get("prompt"), str):
            break
        if time.monotonic() > deadline:
            sys.stderr.write("flume: the stage's prompt is not written yet; run this again\n")
            return 1
        time.sleep(0.1)
    given_argv, given_env = data.get("argv"), data.get("env")
    if not isinstance(given_argv, list) or not isinstance(given_env, dict):
        sys.stderr.write(f"flume: {path} is not a printed agent's file\n")
        return 2
    argv = [str(part) for part in given_argv]
    env = os.environ | {str(key): str(value) for key, value in given_env.items()}
    os.chdir(str(data["cwd"]))
    os.execvpe(argv[0], [*argv, "--", str(data["prompt"])], env)  # noqa: S606 (an argv, no shell)
    return 0  # pragma: no cover (exec does not return)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
