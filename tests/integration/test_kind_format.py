"""The kind file's format as data (flume/core/kindfile.py) is the format the reader reads.

The manual's reference page is drawn from that data, so the data must say what the reader does:
each default written out reads the same as the key left out, another value reads otherwise, and
each key it lists is one the reader takes.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import attrs
import pytest

from flume.core import kindfile
from flume.core.kinds import Budgets, Kind
from flume.shell.declared import kinds

#: A workflow holding every block table, each key at what the reader takes when it is left out.
BASE = """\
[kind]
name = "every"
body = ["plan", "loop", "fan", "crew"]

[step.plan]
prompt = "Plan."

[loop.loop]
body = ["judge"]
until = "judge"
max = 2

[step.judge]
prompt = "Judge; $verdict."

[parallel.fan]
branches = ["a"]

[step.a]
prompt = "A."

[orchestrate.crew]
lead = "lead"
children = { template = "coder" }

[step.lead]
prompt = "Lead."
may = ["spawn"]

[step.coder]
prompt = "Code."
"""

#: Where each table's keys are written out: (table, the line its keys go after).
HOMES = {
    "step": "[step.plan]",
    "loop": "[loop.loop]",
    "parallel": "[parallel.fan]",
    "orchestrate": "[orchestrate.crew]",
}


def _read(text: str) -> Kind:
    return kinds.parse_document(Path("every.toml"), text, tomllib.loads(text)).kind


CASES = [
    pytest.param(table, key, id=f"{table}.{key.name}")
    for table, declared in kindfile.BLOCKS.items()
    for key in declared.keys
    if key.literal
]


def test_every_block_table_has_a_default_written_out() -> None:
    """Each block table has keys whose default is a TOML value, so the check below bites."""
    assert {case.values[0] for case in CASES} == set(kindfile.BLOCKS)


@pytest.mark.parametrize(("table", "key"), CASES)
def test_a_default_written_out_reads_as_the_key_left_out(table: str, key: kindfile.Key) -> None:
    """``key = <its default>`` in its table: the same kind as without it."""
    home = HOMES[table]
    assert key.default is not None
    written = BASE.replace(home, f"{home}\n{key.name} = {key.default}", 1)
    assert _read(written) == _read(BASE)


@pytest.mark.parametrize(
    ("table", "key"),
    [
        pytest.param(inner, key, id=f"{inner.called}.{key.name}")
        for inner in (kindfile.CHILDREN, kindfile.COMPOSE)
        for key in inner.keys
        if key.literal
    ],
)
def test_an_orchestrate_table_s_default_written_out_reads_as_left_out(
    table: kindfile.Table, key: kindfile.Key
) -> None:
    """``children`` and ``compose``: each default written out is the same kind."""
    inner = f"{table.called} = {{ {key.name} = {key.default} }}"
    if table is kindfile.CHILDREN:
        inner = f'children = {{ template = "coder", {key.name} = {key.default} }}'
        written = BASE.replace('children = { template = "coder" }', inner)
    else:
        written = BASE.replace("[orchestrate.crew]", f"[orchestrate.crew]\n{inner}")
    assert _read(written) == _read(BASE)


#: For each block key with a default, another value it takes, and what it needs beside it:
#: ``(value, lines in its table, tables it names)``. None: it takes one value alone.
OTHER: dict[str, tuple[str, str, str] | None] = {
    "step.gate": ('"commit"', "", ""),
    "step.waits_on_caller": ("true", "", ""),
    "step.may": ('["progress"]', "", ""),
    "step.sandbox": ("true", "", ""),
    "loop.on_max": ('"pause"', "", ""),
    "parallel.join": ('"first"', 'merge = "none"', ""),
    "parallel.merge": ('"none"', "", ""),
    "parallel.spread": ("true", "", ""),
    "orchestrate.branches": ('["b"]', "", '\n[step.b]\nprompt = "B."\n'),
    "orchestrate.join": None,
    "orchestrate.merge": ('"none"', "", ""),
    "orchestrate.compose": ("{ runs = 1, depth = 2 }", "", ""),
    "orchestrate.spread": ("true", "", ""),
}


@pytest.mark.parametrize(("table", "key"), CASES)
def test_a_value_other_than_the_default_reads_otherwise(table: str, key: kindfile.Key) -> None:
    """A key the format lists is one the reader reads: another value makes another kind.

    So a key declared in flume/core/kindfile.py (shown on the reference page) that the reader
    took but never read fails here, until the reader reads it.
    """
    name = f"{table}.{key.name}"
    assert name in OTHER, f"{name}: give OTHER a value it takes other than {key.default}"
    other = OTHER[name]
    if other is None:
        assert " or " not in key.type, f"{name} takes more than one value: give OTHER one"
        return
    value, beside, after = other
    home = HOMES[table]
    base = BASE.replace('may = ["spawn"]', 'may = ["spawn", "compose"]')
    control = base.replace(home, f"{home}\n{beside}", 1) if beside else base
    written = control.replace(home, f"{home}\n{key.name} = {value}", 1) + after
    assert _read(written) != _read(control), f"{name} = {value} reads as left out: never read"


def test_the_budgets_are_the_kind_s_budgets() -> None:
    """``budgets`` lists exactly the caps a kind holds, in their order."""
    assert kindfile.BUDGETS.names() == tuple(field.name for field in attrs.fields(Budgets))


def _said(text: str) -> str:
    """What reading ``text`` says is wrong; empty when it reads."""
    try:
        _read(text)
    except kinds.UsageError as error:
        return str(error)
    return ""


def test_every_key_the_format_names_is_one_the_reader_takes() -> None:
    """No key the data lists is refused as unknown (written where its table has none yet)."""
    for table, declared in kindfile.BLOCKS.items():
        home = HOMES[table]
        present = BASE.split(home, 1)[1].split("\n\n", 1)[0]
        for key in declared.keys:
            if f"\n{key.name} =" in present:
                continue
            said = _said(BASE.replace(home, f"{home}\n{key.name} = 1", 1))
            assert "has no key" not in said, (table, key.name, said)


def test_every_gate_word_reads_as_its_gate() -> None:
    """Each gate word the page lists is read by the reader, paths given."""
    for word in kindfile.GATE_WORDS:
        given = word.replace("<path>", "out.md")
        assert kindfile.gate_of(given) is not None, word
    assert kindfile.gate_of("merged") is None
