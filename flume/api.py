"""flume's Python API, for tools that drive flume: launch, status, the caller's commands, events.

Each function does what its ``flume`` command does, with the same checks, and returns what the
command prints, as values: a tracker, a release tool or an MCP server calls these instead of
running the CLI and reading its output. The CLI itself is built on them. Documented in
docs/api.md.

Bad input, or a command the place's rules refuse, raises :class:`UsageError` (the one from
:mod:`flume.core.errors`): its ``problems`` say what is wrong and how to mend it, and its
``exit_status`` is what the CLI would exit with (2 for bad input, 1 for a refusal). Nothing is
created or journaled then. No function here exits the process or prints.

A command that journals something for the supervisor to act on (``launch``, ``tell``, ``stop``,
``retry``, ``drop``, ``proceed``) wakes the host's supervisor, starting one when none runs, as
the CLI does. ``status``, ``status_dicts`` and ``events`` only read journals and start nothing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from flume.core.actions import SendTell
from flume.core.errors import UsageError, refused
from flume.core.ids import BranchName, Instant, PlaceName
from flume.core.launch import place_name
from flume.core.observations import (
    DropAsked,
    Observation,
    ProceedAsked,
    RetryAsked,
    StopAsked,
    Told,
)
from flume.core.place import Place
from flume.core.settings import Settings
from flume.core.status import PlaceStatus
from flume.core.status import status as core_status
from flume.core.step import Decision
from flume.shell.commands import verbs as commands
from flume.shell.perform import launch as shell_launch
from flume.shell.store import places
from flume.shell.store.codec import codec
from flume.shell.store.events import Cursor, EventStream, PlaceEvent
from flume.shell.store.journal import fault_words
from flume.shell.supervisor import client
from flume.shell.supervisor.protocol import DaemonReport

__all__ = [
    "Cursor",
    "Launched",
    "PlaceEvent",
    "PlaceStatus",
    "Survey",
    "UsageError",
    "drop",
    "events",
    "launch",
    "proceed",
    "retry",
    "status",
    "status_dicts",
    "stop",
    "survey",
    "tell",
]


# --- launch --------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Launched:
    """A launch journaled: the place's id and where it lives (``flume launch --json``)."""

    #: ``<kind>--<name>``: how every other function names the place.
    place: str
    #: The repository's main worktree.
    repository: Path
    #: The place's worktree, made by the supervisor soon after the launch.
    path: Path
    branch: str
    base: str
    journal: Path

    def as_dict(self) -> dict[str, Any]:
        """The launch as JSON-ready data: what ``flume launch --json`` prints (format 1)."""
        return shell_launch.Made(
            place=PlaceName(self.place),
            repository=self.repository,
            path=self.path,
            branch=BranchName(self.branch),
            base=BranchName(self.base),
            journal=self.journal,
        ).as_dict()


def launch(  # noqa: PLR0913 (each is one thing a launch names)
    *,
    repository: str | Path,
    name: str,
    brief: str | Callable[[], str],
    kind: str | None = None,
    kind_file: str | Path | None = None,
    base: str | None = None,
    mark: str | None = None,
    waits: Sequence[str] = (),
    agent: str = "claude",
    model: str | None = None,
    agent_args: Sequence[str] = (),
    panes: str = "tmux",
) -> Launched:
    """Launch work (``flume launch``): check it whole, journal it, wake the supervisor.

    ``kind`` is fix, change, question or a kind the repository declares; ``kind_file`` is a
    TOML file with a ``[kind]`` table the launch carries (``kind`` may then be left out).
    ``brief`` may be a function returning the brief, called once the kind file, the agent and
    the panes are read, before the rest is checked (the CLI reads stdin so). ``waits`` names
    stages that wait on the caller's word (:func:`proceed`). ``agent`` is claude, codex or
    test; ``agent_args`` go on the agent's command line, in order; ``panes`` is tmux, herdr or
    print. Raises :class:`UsageError`, creating nothing, when
    anything is wrong; with exit status 1 when a folder it writes cannot be written (a full
    disk, a read-only folder), naming it and the system's words.
    """
    # A lone string is one stage or argument, not a sequence of letters.
    made = shell_launch.launch_asked(
        repository=Path(repository),
        name=name,
        brief=brief,
        kind=kind,
        kind_file=Path(kind_file) if kind_file is not None else None,
        base=base,
        mark=mark,
        waits=(waits,) if isinstance(waits, str) else waits,
        agent=agent,
        model=model,
        agent_args=(agent_args,) if isinstance(agent_args, str) else agent_args,
        panes=panes,
    )
    client.ensure()
    return Launched(
        place=made.place,
        repository=made.repository,
        path=made.path,
        branch=made.branch,
        base=made.base,
        journal=made.journal,
    )


# --- status --------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Survey:
    """What ``flume status`` read: the places, and the journals it could not read whole."""

    places: tuple[PlaceStatus, ...]
    #: (journal, problem) for each journal that could not be read at all.
    unreadable: tuple[tuple[str, str], ...]
    #: Journals whose last line a crash cut short: read without that line.
    torn: tuple[str, ...]
    #: The repositories looked in.
    repositories: tuple[Path, ...]


def _repositories(repository: str | Path | None) -> list[Path]:
    """The repository named (its main worktree), or every one flume knows."""
    if repository is not None:
        return [places.repository_of(Path(repository))]
    return places.remembered()


def survey(
    *, place: str | None = None, repository: str | Path | None = None, mark: str | None = None
) -> Survey:
    """Every place's status, with what could not be read; never raises for a missing place.

    ``place`` keeps one place (``<kind>--<name>``), ``mark`` the places launched with it, and
    ``repository`` one repository's places (default: every repository flume knows). A live
    agent's state is ``unknown`` while no supervisor runs (R11).
    """
    repositories = _repositories(repository)
    views: list[PlaceStatus] = []
    unreadable: list[tuple[str, str]] = []
    torn: list[str] = []
    # R11: with no supervisor following the places, what an agent does now cannot be read.
    said = client.status(timeout=1.0)
    supervised = said is not None
    here = places.host_id()
    for found_in in repositories:
        for found in places.places_of(found_in, Settings()):
            if found.place is None:
                unreadable.append((str(found.journal), found.problem or "unreadable"))
                continue
            if found.torn:
                torn.append(str(found.journal))
            view = core_status(found.place, agent_known=supervised, here=here)
            fault = _fault_of(found.journal, said)
            if fault is not None:
                view = attrs.evolve(view, fault=fault)
            if (mark is None or view.mark == mark) and (place is None or view.place == place):
                views.append(view)
    return Survey(
        places=tuple(views),
        unreadable=tuple(unreadable),
        torn=tuple(torn),
        repositories=tuple(repositories),
    )


def _fault_of(journal_path: Path, said: DaemonReport | None) -> str | None:
    """What the supervisor's ``status`` answer says keeps it from carrying a place on."""
    if said is None:
        return None
    return fault_words(
        unwritable=said.unwritable.get(str(journal_path)),
        unread=said.unreadable.get(str(journal_path)),
    )


def no_such_place(place: str, repositories: Sequence[Path]) -> UsageError:
    """The error for a place that is in none of ``repositories``."""
    return UsageError.one(
        "place",
        f"no place {place} in {', '.join(map(str, repositories)) or 'any repository'}",
        "run flume status to list the places there are",
    )


def status(
    *, place: str | None = None, repository: str | Path | None = None, mark: str | None = None
) -> list[PlaceStatus]:
    """The status of each place (``flume status``), as :class:`PlaceStatus` views.

    Filters as :func:`survey`; a ``place`` found nowhere raises :class:`UsageError`.
    """
    found = survey(place=place, repository=repository, mark=mark)
    if place is not None and not found.places:
        raise no_such_place(place, found.repositories)
    return list(found.places)


def status_dicts(
    *, place: str | None = None, repository: str | Path | None = None, mark: str | None = None
) -> list[dict[str, Any]]:
    """:func:`status` as JSON-ready data: the ``places`` of ``flume status --json`` (format 1)."""
    views = status(place=place, repository=repository, mark=mark)
    return [codec().unstructure(view) for view in views]


# --- the caller's commands -----------------------------------------------------------------


def _now() -> Instant:
    return Instant(time.time())


def _give(place: str, repository: str | Path | None, seen: Observation) -> Decision:
    """Journal the caller's command for the place and wake the supervisor."""
    settings = Settings()
    where = Path(repository) if repository is not None else None
    found = places.find(place, where, settings)
    decision = commands.give(found, seen, settings)
    client.ensure()
    return decision


def _followed_or_refuse(found: places.Found) -> None:
    """Refuse (exit status 1) a command for a place the host's supervisor cannot follow now.

    A tell journaled there would be said to be held, and never be sent: the supervisor that
    would send it does not read the journal (a line it cannot read, found before a mend, while
    an action of the place still runs). No supervisor answering is no refusal: the one the
    command starts reads every journal anew.
    """
    if found.place is None:
        return
    reply = client.follows(found.journal, timeout=2.0)
    problem = reply.problem if reply is not None else None
    if problem:
        name = _name(found.place)
        raise refused(
            "place",
            f"the supervisor does not follow {name}, so nothing would be sent: {problem}",
            f"mend the journal so it reads whole (flume daemon status names what is wrong), "
            f"then run it again; flume drop {name} abandons the work",
        )


def _name(place: Place) -> str:
    return place_name(place.launch.kind, place.launch.name)


def tell(place: str, text: str, *, repository: str | Path | None = None) -> str:
    """Tell the place's agent ``text`` (R6): held while it works, sent once it waits.

    Returns what ``flume tell`` prints. Refused (exit status 1) with no live agent, while the
    agent asks a person, or while the host's supervisor cannot follow the place's journal; bad
    words (empty, not text, over 1 MiB) are exit status 2.
    """
    words = commands.checked_text("tell", text)
    settings = Settings()
    found = places.find(place, Path(repository) if repository is not None else None, settings)
    _followed_or_refuse(found)
    decision = commands.give(found, Told(at=_now(), text=words), settings)
    client.ensure()
    number = decision.place.tells_given
    sent = any(
        isinstance(action, SendTell) and action.number == number for action in decision.actions
    )
    if sent:
        return (
            f"{_name(decision.place)}: tell {number} is sent now, as the agent waits; it is "
            "delivered once the agent's transcript holds it"
        )
    return (
        f"{_name(decision.place)}: tell {number} is held while the agent works; "
        "it is sent once the agent waits"
    )


def stop(place: str, *, repository: str | Path | None = None) -> str:
    """End the agent that went the wrong way; its stage waits for a retry (R9)."""
    decision = _give(place, repository, StopAsked(at=_now()))
    name = _name(decision.place)
    return (
        f"{name}: the agent of stage {decision.place.stage.name} is ended; the stage waits: "
        f"flume retry {name} [--words TEXT] runs it again, flume drop {name} abandons the work"
    )


def retry(place: str, *, words: str = "", repository: str | Path | None = None) -> str:
    """Run the stage that stopped short again, with a fresh agent and ``words`` (R9)."""
    given = commands.checked_text("words", words, empty_ok=True)
    decision = _give(place, repository, RetryAsked(at=_now(), words=given))
    stage = decision.place.stage
    with_words = " and your words in its prompt" if stage.words.strip() else ""
    return (
        f"{_name(decision.place)}: stage {stage.name} starts again (attempt {stage.attempt}) "
        f"with a fresh agent{with_words}"
    )


def proceed(place: str, *, repository: str | Path | None = None) -> str:
    """Give your word to a stage that waits on it, so that it starts (R7)."""
    decision = _give(place, repository, ProceedAsked(at=_now()))
    return (
        f"{_name(decision.place)}: stage {decision.place.stage.name} is released; "
        "it starts with a fresh agent"
    )


def drop(place: str, *, repository: str | Path | None = None) -> str:
    """Abandon the work: its agent ends; tidy removes its place, and keeps a branch with work."""
    _give(place, repository, DropAsked(at=_now()))
    return (
        f"{place} dropped: the supervisor removes its place if clean, and keeps its branch if it "
        "holds commits its base lacks or the work is a change"
    )


# --- events --------------------------------------------------------------------------------


def seconds(field: str, value: float) -> float:
    """``value``, a time between looks; a :class:`UsageError` (exit 2) unless finite and over 0."""
    if not (math.isfinite(value) and value > 0):
        raise UsageError.one(field, f"it is {value}", "give a number of seconds over 0")
    return value


def events(  # noqa: PLR0913 (each narrows the stream or says how to follow it)
    *,
    repository: str | Path | None = None,
    mark: str | None = None,
    place: str | None = None,
    follow: bool = False,
    after: str | None = None,
    poll: float = 0.2,
    until: Callable[[], bool] | None = None,
    on_problem: Callable[[Path, str], None] | None = None,
) -> Iterator[PlaceEvent]:
    """The places' events (``flume events``), derived from their journals (docs/events.md).

    Every event so far, in time order across places and journal order within one; with
    ``follow``, then each new one as its journal line appears (``poll`` seconds between looks,
    places launched later included) until ``until()`` is true. ``after`` is a cursor
    (``str(event.cursor)``): only later events come. ``on_problem(journal, problem)`` hears of
    each journal that cannot be read. The arguments are checked at once, before the first event:
    a bad repository or cursor raises :class:`UsageError`, as does a ``place`` found nowhere
    when not following.
    """
    where = places.repository_of(Path(repository)) if repository is not None else None
    cursor = Cursor.parse(after) if after is not None else None
    seconds("poll", poll)
    follower = EventStream(
        Settings(), repository=where, place=place, mark=mark, after=cursor, on_problem=on_problem
    )
    first = follower.poll()
    if place is not None and not follow and not follower.followed:
        raise no_such_place(place, [where] if where is not None else places.remembered())
    return _stream(follower, first, follow=follow, poll=poll, until=until)


def _stream(
    follower: EventStream,
    first: list[PlaceEvent],
    *,
    follow: bool,
    poll: float,
    until: Callable[[], bool] | None,
) -> Iterator[PlaceEvent]:
    """The events read so far, then, when following, each poll's new ones."""
    yield from first
    while follow and not (until is not None and until()):
        time.sleep(poll)
        yield from follower.poll()
