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
``[loop.<name>]`` or ``[parallel.<name>]``, and named exactly once in a ``body`` or ``branches``,
so the file reads top-down::

    [kind]
    name = "feature"
    body = ["plan", "review-loop"]
    budgets = { turns = 100, wall_minutes = 480, turns_per_attempt = 10, retries = 2 }
    [step.plan]
    prompt = "Plan $brief in PLAN.md."
    gate = "artifact:PLAN.md"    # the deliverables above, or verdict (the default),
                                 # artifact:<path>, tests, approval
    sandbox = true               # optional: its agent writes only its worktree and board
    [loop.review-loop]
    body = ["review", "fix"]
    until = "review"             # a verdict-gated step of the loop
    max = 3
    on_max = "continue"          # or "pause"
    [parallel.slices]            # branches, join = "all" | "first",
                                 # merge = "merge" | "pick" | "none", cap = N,
                                 # spread = true (each lane on a fleet host)

The core checks the declaration (names, prompt fields, paths, loops, parallels, budgets); this
module reads the shape (unknown, unused, twice-used names, cycles, types), and names the file and
line of every problem, the core's included.
"""

from __future__ import annotations

import enum
import re
import tomllib
from pathlib import Path
from typing import Any, TypeVar

import attrs
from pyrsistent import pmap, pset, pvector
from pyrsistent.typing import PMap

from flume.core.choices import AgentName
from flume.core.errors import Problem, UsageError
from flume.core.ids import BlockName, KindName, StageName
from flume.core.kinds import (
    Approval,
    Artifact,
    Block,
    Budgets,
    ChangeWritten,
    Commit,
    Finalize,
    Gate,
    Join,
    Kind,
    Landing,
    Loop,
    Merge,
    OnMax,
    Orchestrate,
    Parallel,
    PassingTests,
    ReportFile,
    Sequence,
    Step,
    StepAgent,
    TasksTicked,
    Verdict,
    check_kind,
    has_sandbox,
    kind_flaws,
)

_GATES: dict[str, Gate] = {
    "commit": Commit(),
    "landing": Landing(),
    "landing-archived": Landing(archived_change=True),
    "change-written": ChangeWritten(),
    "tasks-ticked": TasksTicked(),
    "verdict": Verdict(),
    "tests": PassingTests(),
    "approval": Approval(),
}
_GATE_WORDS = ", ".join([*_GATES, "report:<path>", "artifact:<path>"])


def _text(table: dict[str, Any], key: str, where: str, *, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        what = "is missing" if value is None else f"is {type(value).__name__}, not text"
        raise UsageError.one(where, f"'{key}' {what}", f"give '{key}' as a quoted string")
    return value


def parse_gate(value: object, where: str) -> Gate:
    """The gate (a deliverable, or a workflow's gate) a declaration names."""
    if isinstance(value, str):
        if value in _GATES:
            return _GATES[value]
        if value.startswith("report:"):
            return ReportFile(path=value.removeprefix("report:"))
        if value.startswith("artifact:"):
            return Artifact(path=value.removeprefix("artifact:"))
    raise UsageError.one(
        where,
        f"deliverable {value!r} is not a gate flume knows",
        f"use one of {_GATE_WORDS}",
    )


def parse_kind(table: object, where: str) -> Kind:
    """A declared kind from its TOML table; ``where`` names the file and table for errors."""
    return parse_declared(table, where).kind


def parse_declared(table: object, where: str) -> DeclaredKind:
    """:func:`parse_kind`, with where its steps gated on tests are declared."""
    if not isinstance(table, dict):
        raise UsageError.one(where, "a kind must be a table", "write it as [kind] with its stages")
    name = _text(table, "name", where)
    prefix = _text(table, "prefix", where, default=name)
    stages = table.get("stages")
    if not isinstance(stages, list) or not stages:
        raise UsageError.one(
            where,
            f"kind {name} declares no stages",
            "add at least one [[kind.stages]] table with name, prompt and deliverable",
        )
    steps: list[Step] = []
    tests: dict[StageName, str] = {}
    for index, stage in enumerate(stages, start=1):
        here = f"{where}: stage {index}"
        if not isinstance(stage, dict):
            raise UsageError.one(here, "a stage must be a table", "use [[kind.stages]]")
        unknown = sorted(set(stage) - {"name", "prompt", "deliverable", "waits_on_caller"})
        if unknown:
            raise UsageError.one(
                here,
                f"unknown keys {', '.join(unknown)}",
                "a stage has name, prompt, deliverable and waits_on_caller",
            )
        waits = stage.get("waits_on_caller", False)
        if not isinstance(waits, bool):
            raise UsageError.one(
                here, "'waits_on_caller' is not true or false", "write true or false"
            )
        step = Step(
            name=StageName(_text(stage, "name", here)),
            prompt=_text(stage, "prompt", here),
            deliverable=parse_gate(stage.get("deliverable"), here),
            waits_on_caller=waits,
        )
        if isinstance(step.gate, PassingTests):
            tests[step.name] = here
        steps.append(step)
    kind = Kind(name=KindName(name), prefix=prefix, body=Sequence(blocks=pvector(steps)))
    try:
        check_kind(kind)
    except UsageError as error:
        raise UsageError(
            tuple(
                Problem(field=f"{where}: {problem.field}", what=problem.what, mend=problem.mend)
                for problem in error.problems
            ),
        ) from error
    return DeclaredKind(kind=kind, tests_gates=pmap(tests))


def load_kind_file(path: Path) -> Kind:
    """A kind a launch carries (``flume launch --kind-file FILE``): the file's ``[kind]`` table.

    A file that cannot be read, is not TOML, or declares a bad kind is named with its line.
    """
    return read_kind_file(path).kind


def read_kind_file(path: Path) -> DeclaredKind:
    """:func:`load_kind_file`, with where its steps gated on tests are declared."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError.one(
            str(path), f"cannot be read ({error})", "name a readable UTF-8 TOML file"
        ) from error
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"line (\d+)", str(error))
        where = f"{path}:{found.group(1)}" if found else str(path)
        raise UsageError.one(where, f"is not valid TOML: {error}", "fix the TOML there") from error
    return parse_document(path, text, document)


def read_fragment(name: str, text: str) -> Kind:
    """A fragment a lead composes (``flume compose``): a kind file's text, named ``name``."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise UsageError.one(name, f"is not valid TOML: {error}", "fix the TOML there") from error
    return parse_document(Path(name), text, document).kind


def parse_document(
    path: Path, text: str, document: dict[str, Any], *, within: str = ""
) -> DeclaredKind:
    """The kind a file's TOML declares, in either form; ``path`` and ``text`` name its lines.

    ``within`` is the table the declaration is nested in, when it is (a scenario's ``[workflow]``
    holds ``[workflow.kind]``, ``[workflow.step.<name>]``...): its headers are found with it.
    """
    nest = rf"{re.escape(within)}\s*\.\s*" if within else ""
    extra = sorted(set(document) - {"kind", *BLOCK_TABLES})
    if "kind" not in document or extra:
        found = extra[0] if extra else "kind"
        line = next(
            (
                n
                for n, t in enumerate(text.splitlines(), 1)
                if re.match(rf"^\s*\[*\s*{nest}[\"']?{re.escape(found)}\b", t)
            ),
            None,
        )
        raise UsageError.one(
            f"{path}:{line}" if extra and line is not None else str(path),
            "a kind file holds one [kind] table and nothing else but its blocks"
            + (f": {found!r} is neither" if extra else ""),
            "write [kind] with name and stages ([[kind.stages]]), or with name, body and its "
            "[step.<name>], [loop.<name>] and [parallel.<name>] tables",
        )
    lines = text.splitlines()
    header = re.compile(rf"^\s*\[\s*{nest}kind\s*\]")
    line = next((n for n, t in enumerate(lines, start=1) if header.match(t)), 1)
    table = document["kind"]
    if isinstance(table, dict) and "body" in table:
        return _Reader(document, _Lines(path, text, line, within=within)).read()
    if set(document) != {"kind"}:
        raise UsageError.one(
            f"{path}:{line}",
            "[kind] declares no body, but the file declares blocks",
            'name the blocks in order with body = ["first", ...], or declare [[kind.stages]]',
        )
    return parse_declared(table, f"{path}:{line}")


# --- The workflow form: named blocks, each declared once, read top-down -----------------------

#: The tables of named blocks, by the word a file names them with.
BLOCK_TABLES = ("step", "loop", "parallel", "orchestrate")
_NEW_KIND_KEYS = {"name", "prefix", "body", "budgets", "finalize"}
_FINALIZE_KEYS = ("push", "pr", "land")
_STEP_KEYS = {"prompt", "gate", "deliverable", "agent", "waits_on_caller", "may", "sandbox"}
_LOOP_KEYS = {"body", "until", "max", "on_max"}
_PARALLEL_KEYS = {"branches", "join", "merge", "cap", "spread"}
_ORCHESTRATE_KEYS = {"lead", "children", "branches", "join", "merge", "cap", "compose", "spread"}
_BUDGET_KEYS = [field.name for field in attrs.fields(Budgets)]
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

    def read(self) -> DeclaredKind:
        kind = self.document["kind"]
        unknown = sorted(set(kind) - _NEW_KIND_KEYS)
        if unknown:
            raise self.error(
                None,
                unknown[0],
                f"[{self.at.within}kind] has no key {unknown[0]!r}",
                f"[kind] takes {', '.join(sorted(_NEW_KIND_KEYS))} (or name, prefix and "
                "[[kind.stages]] in the older form)",
            )
        where = self.at.where(self.at.kind_line)
        name = _text(kind, "name", where)
        prefix = _text(kind, "prefix", where, default=name)
        self.collect()
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
                        what=f"{flaw.problem.field}: {flaw.problem.what}",
                        mend=flaw.problem.mend,
                    )
                    for flaw in flaws
                ),
            )
        return DeclaredKind(kind=built, tests_gates=pmap(self.tests))

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
                "finalize is not a table",
                'write finalize = { push = "origin" } or [kind.finalize]',
            )
        unknown = sorted(set(value) - set(_FINALIZE_KEYS))
        if unknown:
            raise self.error(
                None,
                "finalize",
                f"finalize has no {unknown[0]!r}",
                f"finalize takes {', '.join(_FINALIZE_KEYS)}",
            )
        push = value.get("push", "")
        if not isinstance(push, str):
            raise self.error(
                None, "finalize", f"finalize push = {push!r} is not text", 'write push = "origin"'
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
                f"finalize land = {land!r} is not true or false",
                "write land = true",
            )
        return Finalize(push=push, pr=pvector(pr), land=land)

    def budgets(self, value: object) -> Budgets:
        if not isinstance(value, dict):
            raise self.error(
                None, "budgets", "budgets is not a table", "write budgets = { turns = 100 }"
            )
        unknown = sorted(set(value) - set(_BUDGET_KEYS))
        if unknown:
            raise self.error(
                None,
                "budgets",
                f"budgets has no {unknown[0]!r}",
                f"budgets takes {', '.join(_BUDGET_KEYS)}",
            )
        for key, count in value.items():
            self.whole(None, "budgets", f"budget {key}", count)
        return Budgets(**value)

    def whole(self, block: str | None, key: str, what: str, value: object) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error(
                block,
                key,
                f"{what} = {value!r} is not a whole number",
                f"give {what} as a whole number of at least 1, unquoted",
            )
        return value

    def names(self, block: str | None, key: str, value: object) -> list[str]:
        if not isinstance(value, list) or not value or not all(isinstance(n, str) for n in value):
            raise self.error(
                block,
                key,
                f"{key} must be a list of block names",
                f'write {key} = ["first", "second"], each declared as a [step.<name>], '
                "[loop.<name>] or [parallel.<name>] table",
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
                f"{key} names block {name!r}, which is not declared",
                f"declare [step.{name}], [loop.{name}] or [parallel.{name}], "
                f"or name a declared block ({known})",
            )
        if name in self.used:
            raise self.error(
                owner,
                key,
                f"block {name} is used twice (also at line {self.used[name]})",
                "a block runs in one place of the tree: declare another block for the second use",
            )
        self.used[name] = self.line_of(owner, key)
        self.known_keys(found)
        inner = (*inside, name)
        match found.table:
            case "step":
                return self.step(found)
            case "loop":
                return Loop(
                    name=BlockName(name),
                    body=self.sequence(name, "body", found.data.get("body"), inner),
                    until=StageName(self.text(found, "until")),
                    max=self.whole(name, "max", "max", found.data.get("max")),
                    on_max=self.choice(found, "on_max", OnMax, OnMax.CONTINUE),
                )
            case "orchestrate":
                return self.orchestrate(found, inner)
            case _:
                branches = self.names(name, "branches", found.data.get("branches"))
                cap = found.data.get("cap")
                return Parallel(
                    name=BlockName(name),
                    branches=pvector(self.block(name, "branches", b, inner) for b in branches),
                    join=self.choice(found, "join", Join, Join.ALL),
                    merge=self.choice(found, "merge", Merge, Merge.MERGE),
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
        lead = self.named_step(found, "lead", self.text(found, "lead"), inner)
        children = data.get("children", {})
        if not isinstance(children, dict) or not set(children) <= {"template", "max"}:
            raise self.error(
                name,
                "children",
                f"children = {children!r} is not a table of template and max",
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
        if not isinstance(compose, dict) or not set(compose) <= {"runs", "depth"}:
            raise self.error(
                name,
                "compose",
                f"compose = {compose!r} is not a table of runs and depth",
                "write compose = { runs = 1, depth = 2 }",
            )
        branches = data.get("branches")
        cap = data.get("cap")
        return Orchestrate(
            name=BlockName(name),
            lead=lead,
            template=template,
            max=most,
            branches=pvector(
                self.block(name, "branches", each, inner)
                for each in ([] if branches is None else self.names(name, "branches", branches))
            ),
            join=self.choice(found, "join", Join, Join.ALL),
            merge=self.choice(found, "merge", Merge, Merge.MERGE),
            cap=None if cap is None else self.whole(name, "cap", "cap", cap),
            compose_runs=self.whole(name, "compose", "compose runs", compose.get("runs", 0)),
            compose_depth=self.whole(name, "compose", "compose depth", compose.get("depth", 2)),
            spread=self.spread(found),
        )

    def named_step(self, owner: _Declared, key: str, name: str, inside: tuple[str, ...]) -> Step:
        """The step ``name``, which ``owner``'s ``key`` names: a ``[step.<name>]``, used once."""
        found = self.declared.get(name)
        if found is None or found.table != "step":
            what = "is not declared" if found is None else f"is a {found.table}, not a step"
            raise self.error(
                owner.name,
                key,
                f"{key} names {name!r}, which {what}",
                f"declare [step.{name}] and name it here",
            )
        block = self.block(owner.name, key, name, inside)
        assert isinstance(block, Step)  # noqa: S101 (a [step.] table reads as a Step)
        return block

    def known_keys(self, found: _Declared) -> None:
        keys = {
            "step": _STEP_KEYS,
            "loop": _LOOP_KEYS,
            "parallel": _PARALLEL_KEYS,
            "orchestrate": _ORCHESTRATE_KEYS,
        }[found.table]
        unknown = sorted(set(found.data) - keys)
        if unknown:
            raise self.error(
                found.name,
                unknown[0],
                f"[{self.at.within}{found.table}.{found.name}] has no key {unknown[0]!r}",
                f"a {found.table} takes {', '.join(sorted(keys))}",
            )

    def text(self, found: _Declared, key: str) -> str:
        value = found.data.get(key)
        if not isinstance(value, str):
            what = "is missing" if value is None else f"is {type(value).__name__}, not text"
            table = f"[{self.at.within}{found.table}.{found.name}]"
            raise self.error(found.name, key, f"{table} {key} {what}",
                             f"give {key} as a quoted string")  # fmt: skip
        return value

    def choice(self, found: _Declared, key: str, kind: type[_E], default: _E) -> _E:
        value = found.data.get(key, default.value)
        words = [each.value for each in kind]
        if value not in words:
            raise self.error(
                found.name,
                key,
                f"{key} = {value!r} is not one of {', '.join(words)}",
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
        gate = parse_gate(data.get(key, "verdict"), where)
        if isinstance(gate, PassingTests):
            self.tests[StageName(name)] = where
        waits = data.get("waits_on_caller", False)
        if not isinstance(waits, bool):
            raise self.error(
                name,
                "waits_on_caller",
                "'waits_on_caller' is not true or false",
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
                f"sandbox = {sandbox!r} is not true or false",
                "write sandbox = true to keep the step's agent to its worktree and board, "
                "or leave it out",
            )
        return Step(
            name=StageName(name),
            prompt=self.text(found, "prompt"),
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
            and set(table) <= {"agent", "model"}
            and table.get("agent") in names
            and isinstance(table.get("model", ""), str)
        )
        if not good:
            raise self.error(
                found.name,
                "agent",
                f"agent = {value!r} is not an agent flume starts",
                f'write agent = {{ agent = "codex" }} (one of {", ".join(names)}), with model '
                "optional",
            )
        return StepAgent(agent=AgentName(table["agent"]), model=table.get("model"))
