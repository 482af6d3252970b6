"""A launch handed over: ``flume launch`` asks the running supervisor to make it.

The supervisor has flume's rules and git already loaded, so it launches sooner than the command
could load them. The command sends one request (:attr:`~.protocol.Op.LAUNCH`), with its words
and its environment; the supervisor answers ``taken`` at once (:class:`Taken`), then a second
line, what came of it (:data:`LaunchOutcome`), or declines (:class:`~.protocol.Declined`). A
launch no supervisor takes is the command's own to do. The bytes are those flume always sent.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from flume.core.errors import Problem
from flume.shell.perform.launch_words import LaunchAsked
from flume.shell.supervisor.client import decoded, identity, socket_path
from flume.shell.supervisor.protocol import Declined, Op, number_of, texts_of
from flume.shell.tools import sockets

#: How long ``flume launch`` waits for the supervisor to take its launch before doing it itself.
TAKE_SECONDS = 1.0
#: How long it then waits for the supervisor to say what came of it.
LAUNCH_SECONDS = 120.0
#: What the supervisor's ``taken`` may lag its deadline to take a launch (the request's
#: ``take_by``) and still be waited for: a supervisor takes nothing after its deadline.
_SLACK_SECONDS = 0.5


class Taken(NamedTuple):
    """The supervisor took the launch: what came of it follows."""


class LaunchMade(NamedTuple):
    """The launch was journaled; ``document`` is ``flume launch --json``'s, printed as it is."""

    document: Mapping[str, Any]


class LaunchRefused(NamedTuple):
    """Bad input made nothing: the command's own problems and exit status."""

    problems: tuple[Problem, ...]
    exit_status: int


class LaunchCrashed(NamedTuple):
    """The supervisor's launch crashed: its traceback."""

    output: str


#: What came of a launch the supervisor took.
LaunchOutcome = LaunchMade | LaunchRefused | LaunchCrashed


def wire_taken() -> dict[str, Any]:
    """The first line of a launch taken."""
    return {"ok": True, "taken": True}


def wire_outcome(outcome: LaunchOutcome, pid: int) -> dict[str, Any]:
    """The second line of a launch taken: what came of it."""
    match outcome:
        case LaunchMade():
            said: dict[str, Any] = {"made": dict(outcome.document)}
        case LaunchRefused():
            problems = [problem._asdict() for problem in outcome.problems]
            said = {"problems": problems, "exit_status": outcome.exit_status}
        case LaunchCrashed():
            said = {"failed": outcome.output}
    return {"ok": True, "pid": pid, "launch": said}


def decode_taken(said: Mapping[str, Any]) -> Taken | Declined | None:
    """A launch's first line: taken, or declined with why."""
    if said.get("ok") is True and said.get("taken") is True:
        return Taken()
    error = said.get("error")
    return Declined(error) if said.get("ok") is False and isinstance(error, str) else None


def decode_outcome(said: Mapping[str, Any]) -> LaunchOutcome | None:
    """A launch's second line: what came of it."""
    outcome = said.get("launch")
    if not isinstance(outcome, dict):
        return None
    made, failed = outcome.get("made"), outcome.get("failed")
    if isinstance(made, dict):
        return LaunchMade(made)
    problems, status = outcome.get("problems"), number_of(outcome.get("exit_status"))
    if isinstance(problems, list) and status is not None:
        fitting = all(
            texts_of(each) is not None and set(each) == {"field", "what", "mend"}
            for each in problems
        )
        if fitting:
            return LaunchRefused(tuple(Problem(**each) for each in problems), status)
        return None
    return LaunchCrashed(failed) if isinstance(failed, str) else None


class Unanswered(Exception):  # noqa: N818 (what happened, not a kind of error)
    """The supervisor took a launch and then said nothing of it: whether it was made is unknown."""


def launch(
    asked: LaunchAsked,
    *,
    take_within: float = TAKE_SECONDS,
    answer_within: float = LAUNCH_SECONDS,
) -> LaunchOutcome | None:
    """Hand a launch to the running supervisor; what came of it, or None when none took it.

    The launch goes as its JSON (:meth:`.LaunchAsked.words`); this process's environment goes
    with it, for the checks to read. What came of it is :class:`LaunchMade` (``flume launch
    --json``'s document), else :class:`LaunchRefused` (nothing made), else
    :class:`LaunchCrashed` (the supervisor's error).

    None, and nothing done, when the launch cannot be handed (it carries a kind file, read
    here), when no supervisor runs, when the one running does not take this launch (it is
    another flume or installation's, or another user's), or when it has not taken it within
    ``take_within`` seconds: it takes none after that. A launch taken and then not
    answered within ``answer_within`` raises :class:`Unanswered`: it may have been made, so it
    is not made again.
    """
    words = asked.words()
    if words is None:
        return None
    request = {
        "op": Op.LAUNCH.value,
        "take_by": time.time() + take_within,
        "flume": identity(),
        "words": words,
        "environment": dict(os.environ),
    }
    # ASCII, \u-escaped: a name or a path that is not UTF-8 (a surrogate) goes as it is.
    line = (json.dumps(request) + "\n").encode("ascii")
    if len(line) > sockets.LONGEST:
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        reader = sockets.Reader(connection)
        try:
            connection.settimeout(take_within + _SLACK_SECONDS)
            connection.connect(str(socket_path()))
            connection.sendall(line)
            said = decoded(reader.line())
        except OSError:
            return None
        if said is None or not isinstance(decode_taken(said), Taken):
            return None
        try:
            connection.settimeout(answer_within)
            answer = decoded(reader.line())
        except OSError as error:
            raise Unanswered(str(error)) from error
    if answer is None:
        message = "no answer came"
        raise Unanswered(message)
    outcome = decode_outcome(answer)
    if outcome is None:
        message = f"it answered {answer!r}"
        raise Unanswered(message)
    return outcome
