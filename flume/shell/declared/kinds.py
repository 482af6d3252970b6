"""Kinds declared in TOML (a scenario now, the repository's config file later), read into values.

The form, one table per kind::

    [kind]
    name = "review"
    prefix = "review"            # optional; the kind's name when absent
    [[kind.stages]]
    name = "draft"
    prompt = "Draft a review of $brief ..."
    deliverable = "commit"       # commit | landing | landing-archived | change-written
                                 # | tasks-ticked | report:<path inside the place>
    waits_on_caller = false      # optional

The core checks the declaration (names, prompt fields, report paths); this module only reads the
shape, naming where a field is missing or of the wrong type.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pyrsistent import pvector

from flume.core.errors import Problem, UsageError
from flume.core.ids import KindName, StageName
from flume.core.kinds import (
    ChangeWritten,
    Commit,
    Deliverable,
    Kind,
    Landing,
    ReportFile,
    Sequence,
    Step,
    TasksTicked,
    check_kind,
)

_DELIVERABLES: dict[str, Deliverable] = {
    "commit": Commit(),
    "landing": Landing(),
    "landing-archived": Landing(archived_change=True),
    "change-written": ChangeWritten(),
    "tasks-ticked": TasksTicked(),
}
_DELIVERABLE_WORDS = ", ".join([*_DELIVERABLES, "report:<path>"])


def _text(table: dict[str, Any], key: str, where: str, *, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        what = "is missing" if value is None else f"is {type(value).__name__}, not text"
        raise UsageError.one(where, f"'{key}' {what}", f"give '{key}' as a quoted string")
    return value


def parse_deliverable(value: object, where: str) -> Deliverable:
    """The deliverable a declaration names."""
    if isinstance(value, str):
        if value in _DELIVERABLES:
            return _DELIVERABLES[value]
        if value.startswith("report:"):
            return ReportFile(path=value.removeprefix("report:"))
    raise UsageError.one(
        where,
        f"deliverable {value!r} is not one flume knows",
        f"use one of {_DELIVERABLE_WORDS}",
    )


def parse_kind(table: object, where: str) -> Kind:
    """A declared kind from its TOML table; ``where`` names the file and table for errors."""
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
        steps.append(
            Step(
                name=StageName(_text(stage, "name", here)),
                prompt=_text(stage, "prompt", here),
                deliverable=parse_deliverable(stage.get("deliverable"), here),
                waits_on_caller=waits,
            ),
        )
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
    return kind


def load_kind_file(path: Path) -> Kind:
    """A kind a launch carries (``flume launch --kind-file FILE``): the file's ``[kind]`` table.

    A file that cannot be read, is not TOML, or declares a bad kind is named with its line.
    """
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
    if set(document) != {"kind"}:
        raise UsageError.one(
            str(path),
            "a kind file holds one [kind] table and nothing else",
            "write [kind] with name, stages ([[kind.stages]]) and nothing besides",
        )
    lines = text.splitlines()
    line = next((n for n, t in enumerate(lines, start=1) if re.match(r"^\s*\[\s*kind\s*\]", t)), 1)
    return parse_kind(document["kind"], f"{path}:{line}")
