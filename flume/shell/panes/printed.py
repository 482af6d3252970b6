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

:class:`Printed` is this backend behind the pane port (:class:`~flume.shell.panes.port.
PaneServer`), as tmux and herdr are: a pane is a file, its id the file's path after ``print:``
(:func:`pane_of`; the journal keeps it as the agent's pane), starting one writes the file,
pasting the prompt puts it in the file with the send it is, closing it removes the file. Only
this module reads or makes that id (:func:`is_printed`, :func:`file_of`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from flume.shell.panes.port import send_of
from flume.shell.panes.tmux import SESSION_VARIABLE, Pane
from flume.shell.process import Ran
from flume.shell.store import places

#: Seconds the printed command waits for its prompt when run before flume wrote it.
PROMPT_WAIT = 60.0
#: A printed agent's pane id is its file's path after this (no multiplexer holds it).
_PANE = "print:"


def is_printed(pane: str) -> bool:
    """The pane id is a printed agent's (its file), not a multiplexer's."""
    return pane.startswith(_PANE)


def file_of(pane: str) -> Path:
    """The file a printed agent's pane id names."""
    return Path(pane.removeprefix(_PANE))


def pane_of(path: Path) -> str:
    """The pane id of the printed agent whose file is ``path``."""
    return f"{_PANE}{path}"


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


class Printed:
    """The print backend behind the pane port: each pane a file whose command a person runs."""

    def start(
        self, *, group: str, window: str, cwd: Path, argv: Sequence[str], env: Mapping[str, str]
    ) -> Ran:
        """Write the agent down as ``window``'s file; its pane id on standard output.

        The file is kept as it is when it is already the same session's (``env`` names it): a
        start asked again finds its prompt, if one was written, still there (R4). ``group`` is
        the multiplexers' grouping of panes; a file needs none.
        """
        del group
        path = path_of(window)
        session = env.get(SESSION_VARIABLE, "")
        found = read(path)
        if found is None or found.get("session") != session:
            write(path, session=session, cwd=str(cwd), argv=argv, env=env)
        return Ran(argv=tuple(command(path)), status=0, out=pane_of(path))

    def panes(self) -> dict[str, Pane] | None:
        """Every printed agent's file, as a pane of its session; {} with none.

        A file has no process flume can see: none is dead, and none has a screen's activity.
        """
        found: dict[str, Pane] = {}
        for path in sorted(folder().glob("*.json")):
            data = read(path)
            session = data.get("session") if data is not None else None
            if not isinstance(session, str):
                continue  # being replaced, or not a printed agent's file
            pane = pane_of(path)
            found[pane] = Pane(
                id=pane,
                dead=False,
                dead_status=None,
                activity=0.0,
                pid=0,
                session_name="",
                window_name=path.stem,
                session=session,
            )
        return found

    def capture(self, pane: str) -> str | None:
        """None: the agent runs in a person's terminal, whose screen flume cannot read."""
        del pane
        return None

    def paste(self, pane: str, text: str, *, mark: str = "", settle: float = 5.0) -> Ran:
        """Put ``text`` in the file as the prompt, with the send ``mark`` names (``send_of``).

        The printed command runs the agent with it; no terminal is typed into. A file that is
        gone, or holds no agent, is reported as a failed paste.
        """
        del settle
        path = file_of(pane)
        data = read(path)
        session = data.get("session") if data is not None else None
        argv = ("print", str(path))
        if not isinstance(session, str) or not set_prompt(path, session, text, send_of(mark)):
            return Ran(argv=argv, status=1, err=f"{path} holds no printed agent")
        return Ran(argv=argv, status=0)

    def kill_pane(self, pane: str) -> Ran:
        """Remove the agent's file: its command, if not run yet, has nothing to run."""
        path = file_of(pane)
        path.unlink(missing_ok=True)
        return Ran(argv=("print", str(path)), status=0)

    def attach_argv(self, pane: str) -> list[str]:
        """The command a person runs to start the printed agent (``flume attach`` prints it)."""
        return command(file_of(pane))


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
