"""A fleet launch handed to this host's running worker, which has Temporal's SDK loaded already.

``flume launch --fleet`` in a process of its own would spend most of its time loading Temporal's
SDK and connecting (bench/fleet.py): where the host's ``flume fleet worker`` runs, the command
hands it the launch over a Unix socket in the host's state folder (one JSON line each way, as a
launch is handed to the supervisor) and the worker checks it and starts its workflow, with the
same checks and the same answers. This module loads no Temporal: the worker's side is
:func:`serve_one` (called from :mod:`flume.fleet.worker`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from flume.core.errors import Problem, UsageError
from flume.shell.host import state_dir
from flume.shell.supervisor.client import identity
from flume.shell.tools import sockets

#: How long the command waits to connect, and then for the worker's answer.
CONNECT_SECONDS = 1.0
ANSWER_SECONDS = 60.0


def socket_path() -> Path:
    """Where this host's worker listens for launches."""
    return state_dir() / "fleet" / "worker.sock"


def hand_over(words: dict[str, Any], relaunch: bool | None) -> dict[str, Any] | None:
    """The launch handed to the host's worker: what it made, or None when none took it.

    None, and nothing done, when no worker listens here or it is another flume (another
    version or code: the same checks are not sure). Raises :class:`UsageError` as the launch's
    own checks do, when the worker refused it.
    """
    path = socket_path()
    if not path.exists():
        return None
    line = json.dumps({"launch": words, "relaunch": relaunch, "identity": identity()})
    try:
        said = sockets.exchange(
            path, line.encode("utf-8"), connect=CONNECT_SECONDS, answer=ANSWER_SECONDS
        )
        answer = json.loads(said)
    except (OSError, ValueError):
        return None
    if not isinstance(answer, dict) or answer.get("declined"):
        return None
    if "problems" in answer:
        problems = tuple(Problem(**each) for each in answer["problems"])
        raise UsageError(problems, exit_status=int(answer.get("exit_status", 2)))
    made = answer.get("made")
    return made if isinstance(made, dict) else None


async def serve_one(
    line: bytes, launch: Callable[[Any, bool | None], Awaitable[dict[str, Any]]]
) -> bytes:
    """The worker's answer to one handed launch: ``launch(asked, relaunch)`` did it, or why not."""
    from flume.shell.perform.launch_words import LaunchAsked  # noqa: PLC0415 (the worker's side)

    try:
        asked = json.loads(line)
    except ValueError:
        asked = None
    if not isinstance(asked, dict) or asked.get("identity") != identity():
        return b'{"declined": true}\n'
    words = LaunchAsked.from_words(asked.get("launch"))
    relaunch = asked.get("relaunch")
    if words is None or relaunch not in {None, True, False}:
        return b'{"declined": true}\n'
    try:
        made = await launch(words, relaunch)
    except UsageError as error:
        problems = [problem._asdict() for problem in error.problems]
        said: dict[str, Any] = {"problems": problems, "exit_status": error.exit_status}
    else:
        said = {"made": made}
    return json.dumps(said).encode("utf-8") + b"\n"
