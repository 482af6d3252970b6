"""Scenario files for ``flume simulate``: a launch and a timed list of observations, in TOML.

A scenario is a journal written by hand::

    description = "A clean fix, from launch to landing and tidy."
    [settings]                 # optional: quiet_seconds, confirm_seconds, ready_seconds
    [launch]                   # repository, kind, name, base, brief; optional waits, mark,
                               # agent, setup (a list of argv lists), board, tests, at
    [kind]                     # optional: a kind the launch declares (see
    flume.shell.declared.kinds)
    [workflow.kind]            # optional: a workflow the launch declares, a kind file's tables
    [workflow.step.<name>]     # nested under [workflow]: [workflow.loop.<name>]...
    [[seen]]                   # one table per observation or caller command, in time order
    at = 1.0
    type = "WorktreeMade"      # an observation type of flume.core.observations
    path = "/src/app/places/fix--typo"
    ...

Every error names the file, the line of the table at fault and what to mend.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from typing import Any

import attrs
import cattrs
from pyrsistent import pmap, pset, pvector
from pyrsistent.typing import PMap, PVector

from flume.core.actions import Action
from flume.core.errors import Problem, UsageError
from flume.core.ids import BranchName, Instant, KindName, StageName, WorkName
from flume.core.kinds import Kind, known_kind
from flume.core.launch import AgentName, AgentSettings, Launch, check_launch
from flume.core.observations import OBSERVATION_TYPES, Launched, Observation
from flume.core.place import Place
from flume.core.settings import Settings
from flume.core.step import TraceRow, pending, trace
from flume.shell.declared.kinds import DeclaredKind, parse_document, parse_kind
from flume.shell.store.codec import codec

_TYPES = {kind.__name__: kind for kind in OBSERVATION_TYPES if kind is not Launched}
_SEEN_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*seen[ \t]*\]\]", re.MULTILINE)
_LAUNCH_KEYS = {
    "repository",
    "kind",
    "name",
    "base",
    "brief",
    "waits",
    "mark",
    "agent",
    "setup",
    "board",
    "tests",
    "at",
}
_TOP_KEYS = ("description", "settings", "launch", "kind", "workflow", "seen")


@attrs.frozen(kw_only=True)
class Restart:
    """The supervisor killed and started anew, at ``at``, after the first ``after`` observations.

    Not an observation: a journal never holds it. The supervisor started anew reads the journal
    and performs again what the place still waits to observe (``pending``).
    """

    at: float
    after: int


@attrs.frozen(kw_only=True)
class Restarted:
    """A restart in a trace: when, and the actions the supervisor started anew performs again."""

    at: float
    pending: tuple[Action, ...]


@attrs.frozen(kw_only=True)
class Scenario:
    """A scenario read from its file: what it is about, its settings and its observations."""

    path: str
    description: str
    settings: Settings
    observations: tuple[Observation, ...]
    #: Where the supervisor is killed and started anew (``type = "Restart"``), in order.
    restarts: tuple[Restart, ...] = ()


def rows(scenario: Scenario) -> list[TraceRow | Restarted]:
    """The scenario's trace: each observation stepped, each restart with what it asks again."""
    traced = list(trace(scenario.settings, scenario.observations))
    found: list[TraceRow | Restarted] = []
    place: Place | None = None
    restarts = list(scenario.restarts)
    for index, row in enumerate(traced):
        while restarts and restarts[0].after == index:
            found.append(_restarted(restarts.pop(0), place))
        found.append(row)
        if row.decision is not None:
            place = row.decision.place
    found.extend(_restarted(each, place) for each in restarts)
    return found


def _restarted(restart: Restart, place: Place | None) -> Restarted:
    return Restarted(at=restart.at, pending=() if place is None else pending(place))


#: The scenarios flume ships, as package data (``flume simulate --list`` names them).
SHIPPED = Path(__file__).resolve().parents[2] / "scenarios"


def shipped() -> list[Path]:
    """The scenario files flume ships, by name."""
    return sorted(SHIPPED.glob("*.toml"))


def find(given: str) -> Path:
    """The scenario file ``given`` names: a path, or the name of one flume ships (``fix-clean``).

    A path that exists is taken as it is; otherwise a bare name (no folder, with or without
    ``.toml``) is looked up among the shipped scenarios. Anything else stays the path given, for
    :func:`load` to say it cannot be read.
    """
    path = Path(given)
    if path.exists() or path.name != given:
        return path
    named = SHIPPED / (given if given.endswith(".toml") else f"{given}.toml")
    return named if named.is_file() else path


def _bad(path: Path, line: int | None, what: str, mend: str) -> UsageError:
    where = f"{path}:{line}" if line is not None else str(path)
    return UsageError((Problem(field=where, what=what, mend=mend),))


def load(path: Path) -> Scenario:
    """Read a scenario file; a malformed one raises :class:`UsageError` naming file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise _bad(
            path,
            None,
            f"cannot be read ({error.strerror})",
            "name a scenario file, or one flume ships (flume simulate --list names them)",
        ) from error
    except UnicodeDecodeError as error:
        raise _bad(path, None, "is not UTF-8 text", "save the scenario as UTF-8") from error
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"line (\d+)", str(error))
        raise _bad(
            path,
            int(found.group(1)) if found else None,
            f"is not valid TOML: {error}",
            "fix the TOML syntax there",
        ) from error
    unknown = sorted(set(document) - set(_TOP_KEYS))
    if unknown:
        raise _bad(
            path,
            None,
            f"unknown top-level keys {', '.join(unknown)}",
            "a scenario has description, settings, launch, kind, workflow and seen",
        )
    settings = _settings(path, document.get("settings", {}))
    launched = _launched(path, text, document, settings)
    observations: list[Observation] = [launched]
    lines = [text.count("\n", 0, match.start()) + 1 for match in _SEEN_HEADER.finditer(text)]
    seen = document.get("seen", [])
    if not isinstance(seen, list):
        raise _bad(path, None, "'seen' is not a list of tables", "write each as [[seen]]")
    last: float = launched.at
    restarts: list[Restart] = []
    for index, table in enumerate(seen):
        line = lines[index] if index < len(lines) else None
        entry: Observation | Restart
        if isinstance(table, dict) and table.get("type") == "Restart":
            entry = Restart(at=_restart_at(path, line, index + 1, table), after=len(observations))
        else:
            entry = _observation(path, line, index + 1, table)
        if entry.at < last:
            raise _bad(
                path,
                line,
                f"seen {index + 1} is at {entry.at:g}, before the one before it ({last:g})",
                "list observations in time order",
            )
        last = entry.at
        if isinstance(entry, Restart):
            restarts.append(entry)
        else:
            observations.append(entry)
    description = document.get("description", "")
    return Scenario(
        path=str(path),
        description=description if isinstance(description, str) else "",
        settings=settings,
        observations=tuple(observations),
        restarts=tuple(restarts),
    )


def _restart_at(path: Path, line: int | None, number: int, table: dict[str, Any]) -> float:
    """When a ``type = "Restart"`` entry kills the supervisor and starts it anew."""
    extra = sorted(set(table) - {"type", "at"})
    if extra or "at" not in table:
        raise _bad(
            path,
            line,
            f"seen {number} (Restart) "
            + (f"has unknown keys {', '.join(extra)}" if extra else "has no 'at'"),
            "a Restart takes only its time, at",
        )
    try:
        return _finite(table["at"], "at")
    except ValueError as error:
        raise _bad(
            path, line, f"seen {number} (Restart): {error}", "give its time in seconds"
        ) from error


def _settings(path: Path, table: object) -> Settings:
    mend = "give quiet_seconds, confirm_seconds and ready_seconds as numbers of seconds, >= 0"
    try:
        settings = codec().structure(table, Settings)
    except (cattrs.BaseValidationError, TypeError, ValueError) as error:
        raise _bad(
            path,
            _line_of(path, "[settings]"),
            f"[settings] is malformed: {_why(error)}",
            mend,
        ) from error
    for field in attrs.fields(Settings):
        value = getattr(settings, field.name)
        if not math.isfinite(value) or value < 0:
            raise _bad(path, _line_of(path, "[settings]"), f"{field.name} is {value}", mend)
    return settings


def _strings(value: object, what: str) -> list[str]:
    """A list of strings, or a TypeError naming ``what`` it should have been."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        message = f"{what} must be a list of strings, not {value!r}"
        raise TypeError(message)
    return value


def _line_of(path: Path, header: str) -> int | None:
    try:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip().startswith(header):
                return number
    except OSError:
        return None
    return None


def _why(error: Exception) -> str:
    if isinstance(error, cattrs.BaseValidationError):
        return "; ".join(cattrs.transform_error(error))
    return str(error)


def _launched(path: Path, text: str, document: dict[str, Any], settings: Settings) -> Launched:
    table = document.get("launch")
    line = next(
        (n for n, row in enumerate(text.splitlines(), start=1) if row.strip() == "[launch]"),
        None,
    )
    if not isinstance(table, dict):
        raise _bad(
            path, None, "there is no [launch] table", "add [launch] with the launch's fields"
        )
    unknown = sorted(set(table) - _LAUNCH_KEYS)
    missing = sorted({"repository", "kind", "name", "base", "brief"} - set(table))
    if unknown or missing:
        what = "; ".join(
            part
            for part in (
                f"unknown keys {', '.join(unknown)}" if unknown else "",
                f"missing {', '.join(missing)}" if missing else "",
            )
            if part
        )
        raise _bad(path, line, f"[launch]: {what}", f"use {', '.join(sorted(_LAUNCH_KEYS))}")
    kind, tests_gates = _kind(path, text, document, str(table["kind"]))
    try:
        agent = AgentSettings(agent=AgentName(table.get("agent", "claude")))
        launch = Launch(
            repository=str(table["repository"]),
            kind=KindName(str(table["kind"])),
            name=WorkName(str(table["name"])),
            brief=str(table["brief"]),
            base=BranchName(str(table["base"])),
            agent=agent,
            waits=pset(StageName(name) for name in _strings(table.get("waits", []), "waits")),
            mark=_mark(table.get("mark")),
        )
        setup = _setup(table.get("setup", []))
        tests = _setup(table.get("tests", []), what="tests")
        board = _mark(table.get("board"), what="board") or ""
        at = Instant(_finite(table.get("at", 0.0), "at"))
    except (ValueError, TypeError) as error:
        raise _bad(path, line, f"[launch] is malformed: {error}", "check its values") from error
    try:
        check_launch(launch, kind)
    except UsageError as error:
        where = f"{path}:{line}" if line is not None else str(path)
        raise UsageError(
            tuple(
                Problem(field=f"{where}: [launch] {p.field}", what=p.what, mend=p.mend)
                for p in error.problems
            ),
        ) from error
    if tests_gates and not tests:
        where = next(iter(tests_gates.values()))
        raise UsageError.one(
            where,
            "a step is gated on tests, but [launch] gives no tests command",
            'give [launch] tests = [["make", "test"]], the command a tests gate runs',
        )
    return Launched(
        at=at,
        launch=launch,
        kind=kind,
        setup=setup,
        settings=settings,
        board=board,
        tests=tests,
    )


def _setup(commands: object, *, what: str = "setup") -> PVector[PVector[str]]:
    if not isinstance(commands, list):
        message = f"{what} must be a list of commands, each a list of strings, not {commands!r}"
        raise TypeError(message)
    return pvector(pvector(_strings(argv, f"each {what} command")) for argv in commands)


def _mark(value: object, *, what: str = "mark") -> str | None:
    if value is None or isinstance(value, str):
        return value
    message = f"{what} must be text, not {value!r}"
    raise TypeError(message)


def _finite(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        message = f"{what} must be a finite number of seconds, not {value!r}"
        raise ValueError(message)
    return float(value)


def _kind(
    path: Path, text: str, document: dict[str, Any], name: str
) -> tuple[Kind, PMap[StageName, str]]:
    """The kind the launch names, with where its tests-gated steps are declared.

    ``[kind]`` declares a kind of stages; ``[workflow]`` a workflow, its tables a kind file's
    nested under it (``[workflow.kind]``, ``[workflow.step.<name>]``, ``[workflow.loop.<name>]``).
    """
    kinds: dict[KindName, DeclaredKind] = {}
    declared = document.get("kind")
    if declared is not None:
        kind = parse_kind(declared, f"{path}: [kind]")
        kinds[kind.name] = DeclaredKind(kind=kind)
    workflow = document.get("workflow")
    if workflow is not None:
        if not isinstance(workflow, dict):
            raise _bad(
                path,
                _line_of(path, "workflow"),
                "'workflow' is not a table",
                "declare it as [workflow.kind] with its [workflow.step.<name>] tables",
            )
        read = parse_document(path, text, workflow, within="workflow")
        if read.kind.name in kinds:
            raise _bad(
                path,
                _line_of(path, "[workflow.kind]"),
                f"[kind] and [workflow] both declare a kind named {read.kind.name}",
                "declare a kind once, in [kind] or in [workflow]",
            )
        kinds[read.kind.name] = read
    try:
        found = known_kind(name, {each: one.kind for each, one in kinds.items()})
    except UsageError as error:
        (problem,) = error.problems
        raise _bad(path, _line_of(path, "[launch]"), problem.what, problem.mend) from error
    return found, kinds[found.name].tests_gates if found.name in kinds else pmap()


def _observation(path: Path, line: int | None, number: int, table: object) -> Observation:
    if not isinstance(table, dict):
        raise _bad(path, line, f"seen {number} is not a table", "write it as [[seen]]")
    kind = table.get("type")
    if kind not in _TYPES:
        raise _bad(
            path,
            line,
            f"seen {number} has type {kind!r}, which is not an observation",
            f"use one of {', '.join(sorted(_TYPES))}, or Restart (the supervisor started anew)",
        )
    if "at" not in table:
        raise _bad(path, line, f"seen {number} ({kind}) has no 'at'", "give its time in seconds")
    try:
        _finite(table["at"], "at")
    except ValueError as error:
        raise _bad(
            path, line, f"seen {number} ({kind}): {error}", "give its time in seconds"
        ) from error
    try:
        return codec().structure(table, Observation)  # type: ignore[arg-type]
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError) as error:
        raise _bad(
            path,
            line,
            f"seen {number} ({kind}) is malformed: {_why(error)}",
            f"give the fields of {kind} (see docs/scenarios.md)",
        ) from error
