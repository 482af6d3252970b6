"""What goes over the supervisor's socket: its commands, and each answer as a typed record.

Each request is one JSON line ``{"op": <Op>, ...}`` and gets one JSON line back; a launch gets
two (``taken`` at once, then what came of it: :mod:`.handover`, loaded by the commands that
launch, not by ``flume status``). The bytes are those flume has always sent:
:func:`wire` writes each record as the line it was, and the ``decode_*`` functions read each
line back once, in the client, by hand (``flume status`` answers in tens of milliseconds, so it
never builds the converter: a place's status stays the ``status --json`` document it is sent
as). A line that is not the answer asked for decodes to None, as no answer does.

The answers are named tuples, not attrs classes: ``flume status`` and an agent's ``flume submit``
load this module, and attrs would cost them more than their work (bench/cli.py).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, NamedTuple


class Op(enum.Enum):
    """A command the supervisor answers; its value is the request's ``op``."""

    #: Whether one answers: :class:`Answered`.
    PING = "ping"
    #: Look now, not at the next tick: :class:`Answered`.
    WAKE = "wake"
    #: What ``flume daemon status`` shows: :class:`DaemonReport`.
    STATUS = "status"
    #: What ``flume status`` shows: :class:`SurveyAnswer`.
    SURVEY = "survey"
    #: Why a journal is not followed: :class:`FollowsAnswer`.
    FOLLOWS = "follows"
    #: Stop once the running actions finish: :class:`Answered`.
    STOP = "stop"
    #: Take a launch ``flume launch`` hands over (:mod:`.handover`).
    LAUNCH = "launch"


#: A place's status as ``flume status --json`` prints it (docs/status.md): a document, passed on
#: as it came, so what a supervisor answers prints byte for byte as a command's own reading.
PlaceView = Mapping[str, Any]


class Answered(NamedTuple):
    """The supervisor ``pid`` answered (``ping``, ``wake``, ``stop``)."""

    pid: int


class DaemonReport(NamedTuple):
    """What ``flume daemon status`` shows; the fields in the order they are sent."""

    pid: int
    started_at: float
    ticks: int
    #: Places this host's supervisor follows.
    places: int
    #: Places other hosts launched in these repositories: read, never followed here.
    other_hosts_places: int
    #: How many places are in each life (its value), in the order first met.
    lives: Mapping[str, int]
    repositories: int
    #: Places whose actions are being performed.
    busy: int
    actions: int
    #: git and tmux processes the last tick ran to observe.
    last_tick_subprocesses: int
    #: requests the last tick sent herdr to observe.
    last_tick_herdr_requests: int
    last_tick_seconds: float
    #: Journals not followed, and why.
    unreadable: Mapping[str, str]
    #: Journals that cannot be written, and the fault.
    unwritable: Mapping[str, str]
    #: How changes to files are found: ``inotify``, or the poller and why (an older supervisor's
    #: answer, without it: ``unknown``).
    watching: str = "unknown"
    #: Places whose deadlines the last tick checked; agents it looked at whole (the rest rest).
    last_tick_deadlines_checked: int = 0
    last_tick_agents_looked: int = 0

    def answer(self) -> dict[str, Any]:
        """The answer as sent, and as ``flume daemon status --json`` prints it after its own."""
        return {"ok": True, **self._asdict()}


class Unreadable(NamedTuple):
    """A journal that could not be read at all, and why."""

    journal: str
    problem: str


class SurveyAnswer(NamedTuple):
    """What ``flume status`` shows: ``status --json``'s data, with ``torn`` and ``repositories``."""

    format: int
    places: tuple[PlaceView, ...]
    unreadable: tuple[Unreadable, ...]
    #: Journals whose last line a crash cut short: read without that line.
    torn: tuple[str, ...]
    #: The repositories looked in.
    repositories: tuple[str, ...]


class FollowsAnswer(NamedTuple):
    """Why the journal asked of is not followed; ``problem`` None when it is (or is not known)."""

    pid: int
    problem: str | None


class Declined(NamedTuple):
    """The supervisor does not do what was asked (an unknown op, a launch not its to take)."""

    error: str


#: Any answer the supervisor sends.
Reply = Answered | DaemonReport | SurveyAnswer | FollowsAnswer | Declined


# --- writing: the daemon ---------------------------------------------------------------------


def wire(reply: Reply, pid: int) -> dict[str, Any]:
    """``reply`` as the JSON object sent for it (by the supervisor ``pid``)."""
    match reply:
        case Answered():
            return {"ok": True, "pid": reply.pid}
        case DaemonReport():
            return reply.answer()
        case SurveyAnswer():
            return {
                "ok": True,
                "pid": pid,
                "format": reply.format,
                "places": list(reply.places),
                "unreadable": [each._asdict() for each in reply.unreadable],
                "torn": list(reply.torn),
                "repositories": list(reply.repositories),
            }
        case FollowsAnswer():
            return {"ok": True, "pid": reply.pid, "problem": reply.problem}
        case Declined():
            return {"ok": False, "error": reply.error}


# --- reading: the client ---------------------------------------------------------------------


def number_of(value: object) -> int | None:
    """A JSON whole number (not a boolean), or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def texts_of(value: object) -> dict[str, str] | None:
    """A JSON object of text by text, or None."""
    if not isinstance(value, dict):
        return None
    if not all(isinstance(key, str) and isinstance(each, str) for key, each in value.items()):
        return None
    return value


def _answered(said: Mapping[str, Any]) -> bool:
    return said.get("ok") is True and number_of(said.get("pid")) is not None


def decode_answered(said: Mapping[str, Any]) -> Answered | None:
    """A ``ping``, ``wake`` or ``stop`` answer."""
    return Answered(pid=said["pid"]) if _answered(said) else None


def decode_report(said: Mapping[str, Any]) -> DaemonReport | None:
    """A ``status`` answer."""
    if not _answered(said):
        return None
    counts = ("ticks", "places", "repositories", "busy", "actions", "last_tick_subprocesses")
    lives: object = said.get("lives")
    unreadable, unwritable = (
        texts_of(said.get("unreadable", {})),
        texts_of(said.get("unwritable", {})),
    )
    fine = (
        all(number_of(said.get(name)) is not None for name in counts)
        and isinstance(said.get("started_at"), int | float)
        and isinstance(said.get("last_tick_seconds"), int | float)
        and isinstance(lives, dict)
        and all(isinstance(key, str) and number_of(each) is not None for key, each in lives.items())
    )
    if not fine or not isinstance(lives, dict) or unreadable is None or unwritable is None:
        return None
    return DaemonReport(
        pid=said["pid"],
        started_at=said["started_at"],
        ticks=said["ticks"],
        places=said["places"],
        other_hosts_places=number_of(said.get("other_hosts_places")) or 0,
        lives=lives,
        repositories=said["repositories"],
        busy=said["busy"],
        actions=said["actions"],
        last_tick_subprocesses=said["last_tick_subprocesses"],
        last_tick_herdr_requests=number_of(said.get("last_tick_herdr_requests")) or 0,
        last_tick_seconds=said["last_tick_seconds"],
        unreadable=unreadable,
        unwritable=unwritable,
        watching=str(said.get("watching", "unknown")),
        last_tick_deadlines_checked=number_of(said.get("last_tick_deadlines_checked")) or 0,
        last_tick_agents_looked=number_of(said.get("last_tick_agents_looked")) or 0,
    )


def _unreadable(said: object) -> bool:
    """A journal not read, and why: ``{"journal": ..., "problem": ...}``."""
    texts = texts_of(said)
    return texts is not None and set(texts) == {"journal", "problem"}


def decode_survey(said: Mapping[str, Any]) -> SurveyAnswer | None:
    """A ``survey`` answer."""
    views, unreadable = said.get("places"), said.get("unreadable")
    torn, repositories = said.get("torn"), said.get("repositories")
    if (
        not _answered(said)
        or number_of(said.get("format")) is None
        or not isinstance(views, list)
        or not all(isinstance(view, dict) for view in views)
        or not isinstance(unreadable, list)
        or not all(_unreadable(each) for each in unreadable)
        or not isinstance(torn, list)
        or not all(isinstance(each, str) for each in torn)
        or not isinstance(repositories, list)
        or not all(isinstance(each, str) for each in repositories)
    ):
        return None
    return SurveyAnswer(
        format=said["format"],
        places=tuple(views),
        unreadable=tuple(Unreadable(each["journal"], each["problem"]) for each in unreadable),
        torn=tuple(torn),
        repositories=tuple(repositories),
    )


def decode_follows(said: Mapping[str, Any]) -> FollowsAnswer | None:
    """A ``follows`` answer."""
    problem = said.get("problem")
    if not _answered(said) or not isinstance(problem, str | None):
        return None
    return FollowsAnswer(pid=said["pid"], problem=problem)
