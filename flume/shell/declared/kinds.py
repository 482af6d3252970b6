"""Kinds declared in TOML (a kind file, a scenario, the repository's config), read into values.

Two forms. The first, one table per kind, a list of stages::

    [kind]
    name = "review"
    prefix = "review"            # optional; the kind's name when absent
    [[kind.stages]]
    name = "draft"
    prompt = "Draft a review of $brief ..."
    deliverable = "commit"       # commit | landing | landing-archived | change-written
                                 # | tasks-ticked | report:<path inside the place>
    waits_on_caller = false      # optional

The second, a workflow (docs/config.md, "Workflows"): ``[kind]`` names its ``body``, a list of
block names, and its ``budgets``; each block is declared once, as ``[step.<name>]``,
``[loop.<name>]``, ``[parallel.<name>]`` or ``[orchestrate.<name>]``, and named exactly once in a
``body`` or ``branches``, so the file reads top-down::

    [kind]
    name = "feature"
    body = ["plan", "review-loop"]
    budgets = { turns = 100, wall_minutes = 480, turns_per_attempt = 10, retries = 2 }
    [step.plan]
    prompt = "Plan $brief in PLAN.md."
    gate = "artifact:PLAN.md"
    [loop.review-loop]
    body = ["review", "fix"]
    until = "review"
    max = 3

Every table and key, its type, default and meaning, is data in :mod:`flume.core.kindfile`: the
keys a table takes come from there, and the manual's reference page is drawn from the same.

The core checks the declaration (names, prompt fields, paths, loops, parallels, budgets); this
module reads the shape (unknown, unused, twice-used names, cycles, types), and names the file and
line of every problem, the core's included. What a person reads is the file's words: a block is
called what its table calls it (``step plan``), a near miss gets a "did you mean", every unknown
key of the file is named at once, each at its line, and no Python error text is shown.
"""

from __future__ import annotations

import enum
import functools
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs
from pyrsistent import pmap, pset, pvector
from pyrsistent.typing import PMap

from flume.core import kindfile
from flume.core.choices import AgentName
from flume.core.errors import Problem, UsageError, did_you_mean
from flume.core.ids import BlockName, KindName, StageName
from flume.core.kinds import (
    Block,
    Budgets,
    Finalize,
    Gate,
    Join,
    Kind,
    Loop,
    Merge,
    OnMax,
    Orchestrate,
    Parallel,
    PassingTests,
    Sequence,
    Step,
    StepAgent,
    has_sandbox,
    kind_flaws,
)

_GATE_WORDS = ", ".join(kindfile.GATE_WORDS)


def _text(table: dict[str, Any], key: str, where: str, *, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        what = "is missing" if value is None else f"is {_type_word(value)}, not text"
        raise UsageError.one(where, f"'{key}' {what}", f"give '{key}' as a quoted string")
    return value


def _type_word(value: object) -> str:
    """A TOML value's type in the file's words (never Python's: no ``int``, no ``None``)."""
    match value:
        case bool():
            return "true or false"
        case int() | float():
            return "a number"
        case str():
            return "text"
        case list():
            return "a list"
        case dict():
            return "a table"
        case _:
            return "a date or time"


def _shown(value: object) -> str:
    """A value as the file writes it (``true``, ``"3"``, ``{ agent = "gpt" }``), for a message."""
    match value:
        case bool():
            return "true" if value else "false"
        case str():
            return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        case list():
            return "[" + ", ".join(_shown(each) for each in value) + "]"
        case dict():
            return "{ " + ", ".join(f"{key} = {_shown(each)}" for key, each in value.items()) + " }"
        case _:
            return str(value)


def parse_gate(value: object, where: str, key: str = "gate") -> Gate:
    """The gate (a deliverable, or a workflow's gate) a declaration names as ``key``."""
    found = kindfile.gate_of(value) if isinstance(value, str) else None
    if found is not None:
        return found
    if value is None:
        raise UsageError.one(where, f"{key} is missing", f"give {key} as one of {_GATE_WORDS}")
    near = did_you_mean(value, kindfile.GATE_WORDS) if isinstance(value, str) else ""
    raise UsageError.one(
        where,
        f"{key} = {_shown(value)} is not a gate flume knows{near}",
        f"use one of {_GATE_WORDS}",
    )


def unreadable(path: Path | str, error: OSError | UnicodeDecodeError) -> str:
    """Why a file cannot be read, in a person's words (never Python's ``[Errno 2] ...``)."""
    match error:
        case FileNotFoundError():
            return "no such file"
        case IsADirectoryError():
            return "is a folder, not a file"
        case PermissionError():
            return "cannot be read: permission denied"
        case UnicodeDecodeError():
            return f"is not UTF-8 text (byte {error.start + 1} is not, counting from 1)"
        case _:
            said = (error.strerror or str(error)).lower() if isinstance(error, OSError) else ""
            return f"cannot be read: {said}" if said else f"{path} cannot be read"


def toml_problem(error: tomllib.TOMLDecodeError) -> tuple[int | None, str]:
    """The line a TOML error is at, and what is wrong, without its ``(at line N, column M)``."""
    said = str(error)
    found = re.search(r"\s*\(at line (\d+), column (\d+)\)", said)
    if found is None:
        return None, said
    what = said[: found.start()] + said[found.end() :]
    return int(found.group(1)), f"{what} (column {found.group(2)})"


def parse_kind(table: object, where: str) -> Kind:
    """A declared kind from its TOML table; ``where`` names the file and table for errors."""
    return parse_declared(table, where).kind


#: Where a key of a kind of stages is written: ``(stage, key)`` -> ``file:line``; stage None for
#: the ``[kind]`` table, key None for the table itself.
Locate = Callable[[int | None, str | None], str]


def parse_declared(table: object, where: str, locate: Locate | None = None) -> DeclaredKind:
    """:func:`parse_kind`, with where its steps gated on tests are declared.

    ``locate`` names the line of a stage's key; without it every problem is named at ``where``
    (and its stage's number).
    """
    find = locate or _at_where(where)
    if not isinstance(table, dict):
        raise UsageError.one(where, "a kind must be a table", "write it as [kind] with its stages")
    stages = table.get("stages")
    unknown = _unknown(table, kindfile.KIND_OF_STAGES, functools.partial(find, None))
    for index, stage in enumerate(stages if isinstance(stages, list) else [], start=1):
        if isinstance(stage, dict):
            unknown += _unknown(stage, kindfile.STAGE, functools.partial(find, index))
    if unknown:
        raise UsageError(tuple(unknown))
    name = _text(table, "name", find(None, "name"))
    prefix = _text(table, "prefix", find(None, "prefix"), default=name)
    if not isinstance(stages, list) or not stages:
        empty = isinstance(stages, list)
        raise UsageError.one(
            find(None, "stages" if empty else None),
            f"kind {name} declares no stages",
            "add at least one [[kind.stages]] table with name, prompt and deliverable",
        )
    steps = [_stage(stage, index, find) for index, stage in enumerate(stages, start=1)]
    tests = {
        found.name: find(index, "deliverable")
        for index, found in enumerate(steps, start=1)
        if isinstance(found.gate, PassingTests)
    }
    kind = Kind(name=KindName(name), prefix=prefix, body=Sequence(blocks=pvector(steps)))
    flaws = kind_flaws(kind)
    if flaws:
        order = [found.name for found in steps]
        raise UsageError(
            tuple(
                Problem(
                    field=find(
                        None if flaw.block is None else order.index(StageName(flaw.block)) + 1,
                        flaw.key,
                    )
                    if flaw.block is None or flaw.block in order
                    else where,
                    what=f"{flaw.problem.field}: {flaw.problem.what}",
                    mend=flaw.problem.mend,
                )
                for flaw in flaws
            ),
        )
    return DeclaredKind(kind=kind, tests_gates=pmap(tests))


def _stage(stage: object, index: int, locate: Locate) -> Step:
    """Stage ``index`` (from 1) of a kind of stages."""
    if not isinstance(stage, dict):
        raise UsageError.one(locate(index, None), "a stage must be a table", "use [[kind.stages]]")
    waits = stage.get("waits_on_caller", False)
    if not isinstance(waits, bool):
        raise UsageError.one(
            locate(index, "waits_on_caller"),
            f"waits_on_caller = {_shown(waits)} is not true or false",
            "write true or false",
        )
    return Step(
        name=StageName(_text(stage, "name", locate(index, "name"))),
        prompt=_text(stage, "prompt", locate(index, "prompt")),
        deliverable=parse_gate(
            stage.get("deliverable"), locate(index, "deliverable"), "deliverable"
        ),
        waits_on_caller=waits,
    )


def _at_where(where: str) -> Locate:
    """Problems named at ``where``, a stage's by its number."""

    def locate(stage: int | None, key: str | None) -> str:
        del key
        return where if stage is None else f"{where}: stage {stage}"

    return locate


def _unknown(
    table: dict[str, Any], known: kindfile.Table, line_of: Callable[[str], str]
) -> list[Problem]:
    """A problem for every key of ``table`` that ``known`` does not take, each at its line."""
    return [
        Problem(
            field=line_of(key),
            what=f"{known.called} has no key {key!r}{did_you_mean(key, known.names())}",
            mend=f"{known.called} takes {', '.join(known.names())}",
        )
        for key in table
        if key not in known.names()
    ]


def load_kind_file(path: Path) -> Kind:
    """A kind a launch carries (``flume launch --kind-file FILE``): the file's ``[kind]`` table.

    A file that cannot be read, is not TOML, or declares a bad kind is named with its line.
    """
    return read_kind_file(path).kind


def read_kind_file(path: Path, *, named_at: str | None = None) -> DeclaredKind:
    """:func:`load_kind_file`, with where its steps gated on tests are declared.

    ``named_at`` is where the file is named (``.flume.toml:7``), for a file that cannot be read.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        if named_at is not None:
            raise UsageError.one(
                named_at,
                f"the kind file {path} named here: {unreadable(path, error)}",
                "name a readable UTF-8 TOML file inside the repository",
            ) from error
        raise UsageError.one(
            str(path), unreadable(path, error), "name a readable UTF-8 TOML file"
        ) from error
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line, what = toml_problem(error)
        where = f"{path}:{line}" if line is not None else str(path)
        raise UsageError.one(where, f"is not valid TOML: {what}", "fix the TOML there") from error
    return parse_document(path, text, document)


def read_fragment(name: str, text: str) -> Kind:
    """A fragment a lead composes (``flume compose``): a kind file's text, named ``name``."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line, what = toml_problem(error)
        where = f"{name}:{line}" if line is not None else name
        raise UsageError.one(where, f"is not valid TOML: {what}", "fix the TOML there") from error
    return parse_document(Path(name), text, document).kind


def parse_document(
    path: Path, text: str, document: dict[str, Any], *, within: str = ""
) -> DeclaredKind:
    """The kind a file's TOML declares, in either form; ``path`` and ``text`` name its lines.

    ``within`` is the table the declaration is nested in, when it is (a scenario's ``[workflow]``
    holds ``[workflow.kind]``, ``[workflow.step.<name>]``...): its headers are found with it.
    """
    nest = rf"{re.escape(within)}\s*\.\s*" if within else ""
    lines = text.splitlines()
    extra = [each for each in document if each not in {"kind", *BLOCK_TABLES}]
    if extra:
        raise UsageError(
            tuple(
                Problem(
                    field=_found_at(path, lines, rf"^\s*\[*\s*{nest}[\"']?{re.escape(found)}\b"),
                    what=f"a kind file holds one [kind] table and its blocks: {found!r} is "
                    f"neither{did_you_mean(found, ('kind', *BLOCK_TABLES))}",
                    mend="write [kind] with name and stages ([[kind.stages]]), or with name, "
                    "body and its [step.<name>], [loop.<name>], [parallel.<name>] and "
                    "[orchestrate.<name>] tables",
                )
                for found in extra
            )
        )
    if "kind" not in document:
        raise UsageError.one(
            str(path),
            "a kind file holds one [kind] table, and this one has none",
            "write [kind] with name and stages ([[kind.stages]]), or with name, body and its "
            "[step.<name>], [loop.<name>], [parallel.<name>] and [orchestrate.<name>] tables",
        )
    header = re.compile(rf"^\s*\[\s*{nest}kind\s*\]")
    line = next((n for n, t in enumerate(lines, start=1) if header.match(t)), 1)
    table = document["kind"]
    at = _Lines(path, text, line, within=within)
    stages = isinstance(table, dict) and "stages" in table
    if isinstance(table, dict) and ("body" in table or (len(document) > 1 and not stages)):
        return _Reader(document, at).read()
    if len(document) > 1:
        raise UsageError.one(
            at.stage(None, "stages"),
            "[kind] declares stages, but the file declares blocks",
            'name the blocks in order with body = ["first", ...] instead of [[kind.stages]]',
        )
    return parse_declared(table, f"{path}:{line}", at.stage)


def _found_at(path: Path, lines: list[str], pattern: str) -> str:
    """``path:line`` of the first line matching ``pattern``, or ``path`` alone."""
    regex = re.compile(pattern)
    line = next((n for n, text in enumerate(lines, start=1) if regex.match(text)), None)
    return f"{path}:{line}" if line is not None else str(path)


# --- The workflow form: named blocks, each declared once, read top-down -----------------------

#: The tables of named blocks, by the word a file names them with.
BLOCK_TABLES = tuple(kindfile.BLOCKS)
_E = TypeVar("_E", bound=enum.StrEnum)


@attrs.frozen(kw_only=True)
class DeclaredKind:
    """A kind read from a file, with where its steps gated on tests are declared (``file:line``).

    Whether a test command exists is the repository's to say, so the launch checks those gates
    against the repository's config, naming the line of each.
    """

    kind: Kind
    tests_gates: PMap[StageName, str] = attrs.field(factory=pmap)


class _Lines:
    """Where a table or a key of one is in a file's text, for messages naming file and line."""

    def __init__(self, path: Path, text: str, kind_line: int, *, within: str = "") -> None:
        self.path = path
        self.lines = text.splitlines()
        self.kind_line = kind_line
        self.nest = rf"{re.escape(within)}\s*\.\s*" if within else ""
        #: What a table's name is written after, in messages: ``workflow.`` in a scenario.
        self.within = f"{within}." if within else ""

    def header(self, table: str, name: str) -> int | None:
        pattern = re.compile(
            rf"^\s*\[\s*{self.nest}{re.escape(table)}\s*\.\s*[\"']?{re.escape(name)}[\"']?\s*\]"
        )
        return next((n for n, t in enumerate(self.lines, 1) if pattern.match(t)), None)

    def stage(self, index: int | None, key: str | None) -> str:
        """``file:line`` of a key of stage ``index`` (from 1; None: of ``[kind]``)."""
        start: int | None = self.kind_line
        if index is not None:
            pattern = re.compile(rf"^\s*\[\[\s*{self.nest}kind\s*\.\s*stages\s*\]\]")
            headers = [n for n, t in enumerate(self.lines, 1) if pattern.match(t)]
            start = headers[index - 1] if index <= len(headers) else None
        if start is None:
            return self.where(None)
        return self.where((self.key(start, key) if key is not None else None) or start)

    def key(self, start: int, key: str) -> int | None:
        """The line of ``key = ...`` in the table whose header is at line ``start``."""
        pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
        for number in range(start + 1, len(self.lines) + 1):
            text = self.lines[number - 1]
            if re.match(r"^\s*\[", text):
                return None
            if pattern.match(text):
                return number
        return None

    def where(self, line: int | None) -> str:
        return f"{self.path}:{line if line is not None else self.kind_line}"


@attrs.frozen(kw_only=True)
class _Declared:
    table: str
    name: str
    data: dict[str, Any]
    line: int | None


class _Reader:
    """Reads the workflow form of a kind file into a :class:`Kind`, naming file and line."""

    def __init__(self, document: dict[str, Any], at: _Lines) -> None:
        self.document = document
        self.at = at
        self.declared: dict[str, _Declared] = {}
        self.used: dict[str, int | None] = {}
        self.tests: dict[StageName, str] = {}

    def line_of(self, block: str | None, key: str | None) -> int | None:
        """The line of ``key`` in ``block``'s table (the ``[kind]`` table for None)."""
        start = self.at.kind_line if block is None else self.declared[block].line
        if start is None:
            return None
        return (self.at.key(start, key) if key is not None else None) or start

    def error(self, block: str | None, key: str | None, what: str, mend: str) -> UsageError:
        return UsageError.one(self.at.where(self.line_of(block, key)), what, mend)

    def header(self, block: str | None) -> str:
        """A block's table as the file writes it (``[step.plan]``); None: ``[kind]``."""
        if block is None:
            return f"[{self.at.within}kind]"
        return f"[{self.at.within}{self.declared[block].table}.{block}]"

    def called(self, block: str | None) -> str:
        """A block as the file calls it (``step plan``, ``loop review-loop``); None: ``[kind]``."""
        if block is None or block not in self.declared:
            return self.header(None)
        return f"{self.declared[block].table} {block}"

    def read(self) -> DeclaredKind:
        kind = self.document["kind"]
        self.collect()
        unknown = self.unknown_keys(kind)
        if unknown:
            raise UsageError(tuple(unknown))
        name = self.text(None, "name")
        prefix = self.text(None, "prefix", default=name)
        budgets = self.budgets(kind.get("budgets", {}))
        body = self.sequence(None, "body", kind.get("body"), ())
        unused = [each for each in self.declared if each not in self.used]
        if unused:
            raise self.error(
                unused[0],
                None,
                f"block {unused[0]} is declared but no body or branches name it",
                f"name {unused[0]} where it runs, or delete its table",
            )
        finalize = self.finalize(kind["finalize"]) if "finalize" in kind else None
        built = Kind(
            name=KindName(name),
            prefix=prefix,
            body=body,
            budgets=budgets,
            finalize=finalize,
            fenced=has_sandbox(body),
        )
        flaws = kind_flaws(built)
        if flaws:
            raise UsageError(
                tuple(
                    Problem(
                        field=self.at.where(self.line_of(flaw.block, flaw.key)),
                        what=f"{self.called(flaw.block)}: {flaw.problem.what}",
                        mend=flaw.problem.mend,
                    )
                    for flaw in flaws
                ),
            )
        return DeclaredKind(kind=built, tests_gates=pmap(self.tests))

    def unknown_keys(self, kind: dict[str, Any]) -> list[Problem]:
        """Every key of the file its table does not take, each at its line, in the file's order.

        The tables inside tables too: ``budgets``, ``finalize``, a step's ``agent``, an
        orchestrate block's ``children`` and ``compose``.
        """
        found: list[tuple[int, Problem]] = []

        def check(table: object, known: kindfile.Table, block: str | None, inside: str) -> None:
            if not isinstance(table, dict):
                return
            called = f"{inside} of {self.header(block)}" if inside else self.header(block)
            for key in table:
                if key not in known.names():
                    line = self.line_of(block, inside or key)
                    problem = Problem(
                        field=self.at.where(line),
                        what=f"{called} has no key {key!r}{did_you_mean(key, known.names())}",
                        mend=f"{known.called} takes {', '.join(known.names())}",
                    )
                    found.append((line or 0, problem))

        check(kind, kindfile.KIND, None, "")
        check(kind.get("budgets"), kindfile.BUDGETS, None, "budgets")
        check(kind.get("finalize"), kindfile.FINALIZE, None, "finalize")
        for name, declared in self.declared.items():
            check(declared.data, kindfile.BLOCKS[declared.table], name, "")
            if declared.table == "step":
                check(declared.data.get("agent"), kindfile.AGENT, name, "agent")
            if declared.table == "orchestrate":
                check(declared.data.get("children"), kindfile.CHILDREN, name, "children")
                check(declared.data.get("compose"), kindfile.COMPOSE, name, "compose")
        return [problem for _, problem in sorted(found, key=lambda each: each[0])]

    def collect(self) -> None:
        """Every block the file declares, each once, whatever its table."""
        for table in BLOCK_TABLES:
            blocks = self.document.get(table, {})
            if not isinstance(blocks, dict):
                raise UsageError.one(
                    self.at.where(None),
                    f"{table!r} must hold tables",
                    f"declare each as [{table}.<name>]",
                )
            for name, data in blocks.items():
                line = self.at.header(table, name)
                if not isinstance(data, dict):
                    raise UsageError.one(
                        self.at.where(line),
                        f"{table}.{name} is not a table",
                        f"declare it as [{table}.{name}] with its keys below",
                    )
                if name in self.declared:
                    first = self.declared[name]
                    raise UsageError.one(
                        self.at.where(line),
                        f"block {name} is declared twice, as [{first.table}.{name}] "
                        f"(line {first.line}) and [{table}.{name}]",
                        "give each block its own name",
                    )
                self.declared[name] = _Declared(table=table, name=name, data=data, line=line)

    def finalize(self, value: object) -> Finalize:
        """``finalize = { push = "origin", pr = [...] }`` or ``{ land = true }``, checked."""
        if not isinstance(value, dict):
            raise self.error(
                None,
                "finalize",
                f"finalize is {_type_word(value)}, not a table",
                'write finalize = { push = "origin" } or [kind.finalize]',
            )
        push = value.get("push", "")
        if not isinstance(push, str):
            raise self.error(
                None,
                "finalize",
                f"finalize push = {_shown(push)} is not text",
                'write push = "origin"',
            )
        pr = value.get("pr", [])
        if not isinstance(pr, list) or not all(isinstance(each, str) and each for each in pr):
            raise self.error(
                None,
                "finalize",
                "finalize pr is not a list of strings",
                'write pr = ["gh", "pr", "create", "--head", "{branch}", ...], no shell',
            )
        land = value.get("land", False)
        if not isinstance(land, bool):
            raise self.error(
                None,
                "finalize",
                f"finalize land = {_shown(land)} is not true or false",
                "write land = true",
            )
        return Finalize(push=push, pr=pvector(pr), land=land)

    def budgets(self, value: object) -> Budgets:
        if not isinstance(value, dict):
            raise self.error(
                None,
                "budgets",
                f"budgets is {_type_word(value)}, not a table",
                "write budgets = { turns = 100 }",
            )
        for key, count in value.items():
            self.whole(None, "budgets", f"budget {key}", count)
        return Budgets(**value)

    def whole(self, block: str | None, key: str, what: str, value: object) -> int:
        if value is None:
            raise self.error(
                block,
                key,
                f"{self.header(block)} has no {key}",
                f"give {what} as a whole number of at least 1, unquoted",
            )
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error(
                block,
                key,
                f"{what} = {_shown(value)} is not a whole number",
                f"give {what} as a whole number of at least 1, unquoted",
            )
        return value

    def names(
        self, block: str | None, key: str, value: object, *, empty_ok: bool = False
    ) -> list[str]:
        if isinstance(value, list) and not value and not empty_ok:
            raise self.error(
                block,
                key,
                f"{key} is empty",
                "name at least one block, each declared as a [step.<name>], [loop.<name>], "
                "[parallel.<name>] or [orchestrate.<name>] table",
            )
        if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
            what = (
                f"{self.header(block)} has no {key}"
                if value is None
                else f"{key} must be a list of block names"
            )
            raise self.error(
                block,
                key,
                what,
                f'write {key} = ["first", "second"], each declared as a [step.<name>], '
                "[loop.<name>], [parallel.<name>] or [orchestrate.<name>] table",
            )
        return value

    def sequence(
        self, owner: str | None, key: str, value: object, inside: tuple[str, ...]
    ) -> Sequence:
        names = self.names(owner, key, value)
        return Sequence(blocks=pvector(self.block(owner, key, each, inside) for each in names))

    def block(self, owner: str | None, key: str, name: str, inside: tuple[str, ...]) -> Block:
        """The block ``name``, named in ``owner``'s ``key``, ``inside`` the blocks around it."""
        if name in inside:
            path = " -> ".join([*inside[inside.index(name) :], name])
            raise self.error(
                owner,
                key,
                f"block {name} holds itself: {path}",
                "a loop or parallel cannot name itself or a block around it",
            )
        found = self.declared.get(name)
        if found is None:
            known = ", ".join(self.declared) or "none"
            raise self.error(
                owner,
                key,
                f"{key} names block {name!r}, which is not declared"
                f"{did_you_mean(name, self.declared)}",
                f"declare [step.{name}], [loop.{name}], [parallel.{name}] or "
                f"[orchestrate.{name}], or name a declared block ({known})",
            )
        if name in self.used:
            raise self.error(
                owner,
                key,
                f"block {name} is used twice (also at line {self.used[name]})",
                "a block runs in one place of the tree: declare another block for the second use",
            )
        self.used[name] = self.line_of(owner, key)
        inner = (*inside, name)
        match found.table:
            case "step":
                return self.step(found)
            case "loop":
                return Loop(
                    name=BlockName(name),
                    body=self.sequence(name, "body", found.data.get("body"), inner),
                    until=StageName(self.text(name, "until")),
                    max=self.whole(name, "max", "max", found.data.get("max")),
                    on_max=self.choice(found, "on_max", OnMax),
                )
            case "orchestrate":
                return self.orchestrate(found, inner)
            case _:
                branches = self.names(name, "branches", found.data.get("branches"))
                cap = found.data.get("cap")
                return Parallel(
                    name=BlockName(name),
                    branches=pvector(self.block(name, "branches", b, inner) for b in branches),
                    join=self.choice(found, "join", Join),
                    merge=self.choice(found, "merge", Merge),
                    cap=None if cap is None else self.whole(name, "cap", "cap", cap),
                    spread=self.spread(found),
                )

    def spread(self, found: _Declared) -> bool:
        """A block's ``spread``: its lanes (or children) carried by the fleet's hosts."""
        spread = found.data.get("spread", False)
        if not isinstance(spread, bool):
            raise self.error(
                found.name,
                "spread",
                f"spread = {spread!r} is not true or false",
                "write spread = true to carry each lane on whichever host of the fleet takes "
                "it, or leave it out",
            )
        return spread

    def orchestrate(self, found: _Declared, inner: tuple[str, ...]) -> Orchestrate:
        """``[orchestrate.<name>]``: its lead and template (steps), children, branches, compose."""
        name, data = found.name, found.data
        if any(self.declared[each].table == "orchestrate" for each in inner[:-1]):
            raise self.error(
                name,
                None,
                f"orchestrate {name} is nested in another orchestrate block",
                "an orchestrate block is never nested in another: move it out",
            )
        lead = self.named_step(found, "lead", self.text(name, "lead"), inner)
        children = data.get("children", {})
        if not isinstance(children, dict):
            raise self.error(
                name,
                "children",
                f"children is {_type_word(children)}, not a table of template and max",
                'write children = { template = "coder", max = 3 }',
            )
        template = None
        most = 0
        if "template" in children:
            if not isinstance(children["template"], str):
                raise self.error(
                    name, "children", "children template is not a step's name", 'template = "coder"'
                )
            template = self.named_step(found, "children", children["template"], inner)
            most = self.whole(name, "children", "children max", children.get("max", 1))
        compose = data.get("compose", {})
        if not isinstance(compose, dict):
            raise self.error(
                name,
                "compose",
                f"compose is {_type_word(compose)}, not a table of runs and depth",
                "write compose = { runs = 1, depth = 2 }",
            )
        branches = data.get("branches", [])
        cap = data.get("cap")
        return Orchestrate(
            name=BlockName(name),
            lead=lead,
            template=template,
            max=most,
            branches=pvector(
                self.block(name, "branches", each, inner)
                for each in self.names(name, "branches", branches, empty_ok=True)
            ),
            join=self.choice(found, "join", Join),
            merge=self.choice(found, "merge", Merge),
            cap=None if cap is None else self.whole(name, "cap", "cap", cap),
            compose_runs=self.whole(name, "compose", "compose runs", compose.get("runs", 0)),
            compose_depth=self.whole(name, "compose", "compose depth", compose.get("depth", 2)),
            spread=self.spread(found),
        )

    def named_step(self, owner: _Declared, key: str, name: str, inside: tuple[str, ...]) -> Step:
        """The step ``name``, which ``owner``'s ``key`` names: a ``[step.<name>]``, used once."""
        found = self.declared.get(name)
        if found is None or found.table != "step":
            steps = [each for each, one in self.declared.items() if one.table == "step"]
            what = (
                f"is not declared{did_you_mean(name, steps)}"
                if found is None
                else f"is a {found.table}, not a step"
            )
            raise self.error(
                owner.name,
                key,
                f"{key} names {name!r}, which {what}",
                f"declare [step.{name}] and name it here",
            )
        block = self.block(owner.name, key, name, inside)
        assert isinstance(block, Step)  # noqa: S101 (a [step.] table reads as a Step)
        return block

    def text(self, block: str | None, key: str, *, default: str | None = None) -> str:
        """The text of ``key`` in ``block``'s table (None: ``[kind]``), or its default."""
        data = self.document["kind"] if block is None else self.declared[block].data
        value = data.get(key, default)
        if not isinstance(value, str):
            what = (
                f"{self.header(block)} has no {key}"
                if value is None
                else f"{key} is {_type_word(value)}, not text"
            )
            raise self.error(block, key, what, f"give {key} as a quoted string")
        return value

    def choice(self, found: _Declared, key: str, kind: type[_E]) -> _E:
        """The word ``key`` names, one of ``kind``'s; its default is the format's."""
        table = kindfile.BLOCKS[found.table]
        default = table.key(key).default or ""
        value = found.data.get(key, default.strip('"'))
        words = [each.value for each in kind]
        if value not in words:
            near = did_you_mean(value, words) if isinstance(value, str) else ""
            raise self.error(
                found.name,
                key,
                f"{key} = {_shown(value)} is not one of {', '.join(words)}{near}",
                f"write {key} = {words[0]!r}, or another of {', '.join(words)}",
            )
        return kind(value)

    def step(self, found: _Declared) -> Step:
        data, name = found.data, found.name
        if "gate" in data and "deliverable" in data:
            raise self.error(
                name, "deliverable", "the step names both a gate and a deliverable", "keep gate"
            )
        key = "deliverable" if "deliverable" in data else "gate"
        where = self.at.where(self.line_of(name, key))
        default = kindfile.STEP.key("gate").default or ""
        gate = parse_gate(data.get(key, default.strip('"')), where, key)
        if isinstance(gate, PassingTests):
            self.tests[StageName(name)] = where
        waits = data.get("waits_on_caller", False)
        if not isinstance(waits, bool):
            raise self.error(
                name,
                "waits_on_caller",
                f"waits_on_caller = {_shown(waits)} is not true or false",
                "write true or false",
            )
        may = data.get("may", [])
        if not isinstance(may, list) or not all(isinstance(edge, str) for edge in may):
            raise self.error(
                name,
                "may",
                "'may' is not a list of edges",
                'write may = ["progress", "ask"]',
            )
        sandbox = data.get("sandbox", False)
        if not isinstance(sandbox, bool):
            raise self.error(
                name,
                "sandbox",
                f"sandbox = {_shown(sandbox)} is not true or false",
                "write sandbox = true to keep the step's agent to its worktree and board, "
                "or leave it out",
            )
        return Step(
            name=StageName(name),
            prompt=self.text(name, "prompt"),
            deliverable=gate,
            waits_on_caller=waits,
            agent=self.agent(found),
            may=pset(may),
            sandbox=sandbox,
        )

    def agent(self, found: _Declared) -> StepAgent | None:
        value = found.data.get("agent")
        if value is None:
            return None
        table = {"agent": value} if isinstance(value, str) else value
        names = [each.value for each in AgentName]
        good = (
            isinstance(table, dict)
            and table.get("agent") in names
            and isinstance(table.get("model", ""), str)
        )
        if not good:
            said = table.get("agent") if isinstance(table, dict) else None
            near = did_you_mean(said, names) if isinstance(said, str) else ""
            raise self.error(
                found.name,
                "agent",
                f"agent = {_shown(value)} is not an agent flume starts{near}",
                f'write agent = {{ agent = "codex" }} (one of {", ".join(names)}), with model '
                "optional",
            )
        return StepAgent(agent=AgentName(table["agent"]), model=table.get("model"))
