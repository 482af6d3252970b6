"""The repository's flume config file, ``.flume.toml`` at the top of its main worktree.

The form (every table optional; see docs/config.md)::

    [place]
    setup = [["uv", "sync"], ["npm", "ci"]]   # run in a new place, in order, exactly as named
    copy = [".env", "config/local.toml"]      # ignored files copied from the main worktree

    [land]
    checks = [["pytest", "-q"]]               # the embedded lander runs these before base moves
    # submit = ["sluice", "submit", "{branch}"]  # or hand the branch to a merge queue instead

    [tests]
    command = ["pytest", "-q"]                # what a step gated on "tests" runs (else: checks)

    [[kinds]]                                 # kinds of the repository's own
    name = "review"
    [[kinds.stages]]
    name = "read"
    prompt = "Review $brief ..."
    deliverable = "report:review.md"

    [[kinds]]                                 # or a kind file of its own, such as a workflow
    file = "flume/feature.toml"               # (relative to the repository; flume launch
                                              # --kind-file's form)

    [prompts.fix]                             # prompt overrides, by kind and stage
    code = "..."

    [timing]                                  # seconds; frozen into each place at launch
    quiet = 5.0       # the agent is quiet once it waits and its pane is still this long (R7)
    confirm = 30.0    # a send not in the transcript by then counts as missing (R5)
    ready = 60.0      # an agent that never says it takes input is sent the prompt anyway
    stall = 600.0     # a workflow step's agent saying nothing mid-turn this long is nudged,
                      # and as long again after, the run pauses stalled
    tests = 600.0     # a tests gate's commands may run this long, all told

Nothing here decides: the file is read into a :class:`Config`; a malformed one raises
:class:`UsageError` naming the file and the line, with how to mend it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import attrs
from pyrsistent import pmap, pvector
from pyrsistent.typing import PMap, PVector

from flume.core.errors import Problem, UsageError
from flume.core.ids import KindName, StageName
from flume.core.kinds import BUILTIN_KINDS, Kind, known_kind, with_prompts
from flume.core.settings import Settings
from flume.shell.declared.kinds import DeclaredKind, parse_declared, read_kind_file

FILE_NAME = ".flume.toml"
_TABLES = {"place", "land", "tests", "kinds", "prompts", "timing"}
_PLACE_KEYS = {"setup", "copy"}
_LAND_KEYS = {"checks", "submit"}
_TIMING_KEYS = {
    "quiet": "quiet_seconds",
    "confirm": "confirm_seconds",
    "ready": "ready_seconds",
    "stall": "stall_seconds",
    "tests": "tests_seconds",
}


@attrs.frozen(kw_only=True)
class Config:
    """What a repository's config file declares."""

    setup: PVector[PVector[str]] = attrs.field(factory=pvector)
    copy: PVector[str] = attrs.field(factory=pvector)
    checks: PVector[PVector[str]] = attrs.field(factory=pvector)
    submit: PVector[str] | None = None
    kinds: PMap[KindName, Kind] = attrs.field(factory=pmap)
    #: (kind, stage) -> the prompt template that replaces the kind's own.
    prompts: PMap[tuple[KindName, StageName], str] = attrs.field(factory=pmap)
    #: The ``[timing]`` table, as Settings field -> seconds.
    timing: PMap[str, float] = attrs.field(factory=pmap)
    #: ``[tests] command``: the command a step gated on tests runs; None: the checks do.
    tests: PVector[str] | None = None
    #: Where each declared kind's steps gated on tests are declared (``file:line``).
    tests_gates: PMap[KindName, PMap[StageName, str]] = attrs.field(factory=pmap)

    def test_commands(self) -> PVector[PVector[str]]:
        """What a tests gate runs: ``[tests] command``, else ``[land] checks``; empty: none."""
        return pvector([self.tests]) if self.tests is not None else self.checks

    def settings(self, default: Settings) -> Settings:
        """``default`` with the repository's ``[timing]`` applied."""
        return attrs.evolve(default, **dict(self.timing)) if self.timing else default

    def kind(self, name: str) -> Kind:
        """The kind called ``name``, the repository's own before a built-in, prompts applied.

        Raises :class:`UsageError` when no kind of that name is built in or declared.
        """
        found = known_kind(name, self.kinds)
        overrides = {stage: text for (kind, stage), text in self.prompts.items() if kind == name}
        return with_prompts(found, overrides)

    def kind_names(self) -> tuple[str, ...]:
        """Every kind a launch may name here."""
        return tuple(sorted({*BUILTIN_KINDS, *self.kinds}))


class _Located:
    """Finds the line of a key or table header in the file's text, for error messages."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def line(self, pattern: str) -> int | None:
        regex = re.compile(pattern)
        return next((n for n, line in enumerate(self.lines, start=1) if regex.search(line)), None)

    def error(self, pattern: str, what: str, mend: str) -> UsageError:
        line = self.line(pattern)
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        return UsageError((Problem(field=where, what=what, mend=mend),))


def load(repository: Path) -> Config:
    """The config of the repository whose main worktree is ``repository``; empty when absent."""
    path = repository / FILE_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError.one(
            str(path), f"cannot be read ({error})", "make it readable UTF-8"
        ) from error
    return parse(path, text)


def parse(path: Path, text: str) -> Config:
    """A config from its file's text; ``path`` names it in errors."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"line (\d+)", str(error))
        where = f"{path}:{found.group(1)}" if found else str(path)
        raise UsageError.one(
            where, f"is not valid TOML: {error}", "fix the TOML syntax there"
        ) from error
    at = _Located(path, text)
    unknown = sorted(set(document) - _TABLES)
    if unknown:
        raise at.error(
            rf"^\s*\[*\s*{re.escape(unknown[0])}\b",
            f"unknown table or key {unknown[0]!r}",
            f"a flume config has {', '.join(sorted(_TABLES))}",
        )
    place = _table(at, document, "place", _PLACE_KEYS)
    land = _table(at, document, "land", _LAND_KEYS)
    setup = _commands(at, place.get("setup", []), "setup")
    copy = _copies(at, place.get("copy", []))
    checks = _commands(at, land.get("checks", []), "checks")
    submit = land.get("submit")
    if submit is not None:
        submit = _argv(at, submit, "submit")
        if checks:
            raise at.error(
                r"^\s*submit\s*=",
                "[land] names both checks and a submit command",
                "a merge queue runs its own checks: keep one of them",
            )
    tests_table = _table(at, document, "tests", {"command"})
    tests = _argv(at, tests_table["command"], "command") if "command" in tests_table else None
    declared = _kinds(at, document.get("kinds", []))
    kinds = pmap({name: found.kind for name, found in declared.items()})
    prompts = _prompts(at, document.get("prompts", {}), kinds)
    timing = _timing(at, _table(at, document, "timing", set(_TIMING_KEYS)))
    return Config(
        setup=setup,
        copy=copy,
        checks=checks,
        submit=submit,
        kinds=kinds,
        prompts=prompts,
        timing=timing,
        tests=tests,
        tests_gates=pmap(
            {name: found.tests_gates for name, found in declared.items() if found.tests_gates}
        ),
    )


#: The longest wait ``[timing]`` takes: a day.
_MAX_SECONDS = 86400.0


def _timing(at: _Located, table: dict[str, Any]) -> PMap[str, float]:
    found: dict[str, float] = {}
    for key, value in table.items():
        good = isinstance(value, int | float) and not isinstance(value, bool)
        if not good or not 0 < value <= _MAX_SECONDS:
            raise at.error(
                rf"^\s*{key}\s*=",
                f"[timing] {key} = {value!r} is not a number of seconds",
                f"give a number above 0 and at most {_MAX_SECONDS:g}",
            )
        found[_TIMING_KEYS[key]] = float(value)
    return pmap(found)


def _table(at: _Located, document: dict[str, Any], name: str, keys: set[str]) -> dict[str, Any]:
    table = document.get(name, {})
    if not isinstance(table, dict):
        raise at.error(rf"^\s*{name}\s*=", f"{name!r} must be a table", f"write it as [{name}]")
    unknown = sorted(set(table) - keys)
    if unknown:
        raise at.error(
            rf"^\s*{re.escape(unknown[0])}\s*=",
            f"[{name}] has no key {unknown[0]!r}",
            f"[{name}] takes {', '.join(sorted(keys))}",
        )
    return table


def _argv(at: _Located, value: object, key: str) -> PVector[str]:
    if not isinstance(value, list) or not value or not all(isinstance(a, str) and a for a in value):
        raise at.error(
            rf"^\s*{key}\s*=",
            f'{key} must be a command: a list of non-empty strings, such as ["make", "test"]',
            "give the program and its arguments as separate strings; no shell is involved",
        )
    return pvector(value)


def _commands(at: _Located, value: object, key: str) -> PVector[PVector[str]]:
    if not isinstance(value, list):
        raise at.error(
            rf"^\s*{key}\s*=", f"{key} must be a list of commands", f'write {key} = [["make"]]'
        )
    return pvector(_argv(at, command, key) for command in value)


def _copies(at: _Located, value: object) -> PVector[str]:
    bad = (
        not isinstance(value, list)
        or not all(isinstance(p, str) and p and not p.startswith("/") for p in value)
        or any(".." in p.split("/") for p in value)
    )
    if bad:
        raise at.error(
            r"^\s*copy\s*=",
            "copy must be a list of paths inside the repository",
            'name files relative to the repository, such as [".env"]',
        )
    return pvector(value)  # type: ignore[arg-type]


def _kinds(at: _Located, value: object) -> dict[KindName, DeclaredKind]:
    if not isinstance(value, list):
        raise at.error(
            r"^\s*kinds\s*=", "kinds must be a list of tables", "write each as [[kinds]]"
        )
    found: dict[KindName, DeclaredKind] = {}
    headers = [
        n for n, line in enumerate(at.lines, start=1) if re.match(r"^\s*\[\[\s*kinds\s*\]\]", line)
    ]
    for index, table in enumerate(value):
        line = headers[index] if index < len(headers) else None
        where = f"{at.path}:{line}" if line is not None else str(at.path)
        if isinstance(table, dict) and "file" in table:
            declared = _kind_file(at, table, where)
        else:
            declared = parse_declared(table, where)
        kind = declared.kind
        if kind.name in found:
            raise UsageError.one(
                where, f"kind {kind.name} is declared twice", "give each kind its own name"
            )
        found[kind.name] = declared
    return found


def _kind_file(at: _Located, table: dict[str, Any], where: str) -> DeclaredKind:
    """A ``[[kinds]]`` entry naming a kind file, relative to the repository, read as launched."""
    file = table["file"]
    plain = (
        isinstance(file, str) and file and not file.startswith("/") and ".." not in file.split("/")
    )
    if set(table) != {"file"} or not plain:
        raise UsageError.one(
            where,
            "a [[kinds]] entry naming a file has file and nothing else, a path inside the "
            "repository",
            'write file = "flume/feature.toml": the kind file\'s own [kind] table names it',
        )
    return read_kind_file(at.path.parent / str(file), named_at=where)


def _prompts(
    at: _Located,
    value: object,
    kinds: PMap[KindName, Kind],
) -> PMap[tuple[KindName, StageName], str]:
    if not isinstance(value, dict):
        raise at.error(r"^\s*prompts\s*=", "prompts must be a table", "write [prompts.<kind>]")
    found: dict[tuple[KindName, StageName], str] = {}
    for kind_name, stages in value.items():
        kind = kinds.get(kind_name) or BUILTIN_KINDS.get(kind_name)
        header = rf"^\s*\[\s*prompts\.{re.escape(kind_name)}\s*\]"
        if kind is None:
            raise at.error(
                header, f"prompts for kind {kind_name!r}, which does not exist", "name a kind"
            )
        if not isinstance(stages, dict):
            raise at.error(header, f"[prompts.{kind_name}] must be a table", 'stage = "..."')
        for stage, text in stages.items():
            if not isinstance(text, str):
                raise at.error(
                    rf"^\s*{re.escape(stage)}\s*=",
                    f"the prompt for {kind_name} {stage} is not text",
                    "quote it",
                )
            found[KindName(kind_name), StageName(stage)] = text
        try:
            with_prompts(kind, {StageName(s): t for (k, s), t in found.items() if k == kind_name})
        except UsageError as error:
            problem = error.problems[0]
            raise at.error(header, f"{problem.field}: {problem.what}", problem.mend) from error
    return pmap(found)
