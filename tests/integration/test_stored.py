"""What flume wrote before stays what it reads and prints: stored traces and journals.

The files under ``tests/data/stored`` were written by an earlier flume (their README says which)
and are never regenerated: a change that alters a simulate trace, the journal's line format or a
status read from an old journal fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flume.cli.app import app
from flume.core.settings import Settings
from flume.core.status import status
from flume.core.step import replay
from flume.shell.store.codec import codec, decode, encode

STORED = Path(__file__).parents[1] / "data" / "stored"
SCENARIOS = Path(__file__).parents[2] / "examples" / "scenarios"
TRACES = sorted((STORED / "simulate").glob("*.jsonl"))
JOURNALS = sorted((STORED / "journals").glob("*--*.jsonl"))


def test_every_shipped_scenario_has_a_stored_trace() -> None:
    """Each of the seventeen scenarios flume ships has its trace stored (eight are workflows)."""
    assert sorted(p.stem for p in TRACES) == sorted(p.stem for p in SCENARIOS.glob("*.toml"))
    assert len(TRACES) == 18


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.stem)
def test_simulate_prints_the_stored_trace_byte_for_byte(
    trace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``flume simulate --json`` prints what the earlier flume printed, byte for byte."""
    # The trace names its scenario as given: as it was stored, from the repository's top.
    monkeypatch.chdir(SCENARIOS.parents[1])
    ran = CliRunner().invoke(app, ["simulate", "--json", f"examples/scenarios/{trace.stem}.toml"])
    assert ran.exit_code == 0, ran.output
    assert ran.stdout == trace.read_text(encoding="utf-8")


@pytest.mark.parametrize("journal", JOURNALS, ids=lambda p: p.stem)
def test_a_stored_journal_decodes_and_encodes_to_the_same_lines(journal: Path) -> None:
    """The journal's line format is unchanged: each stored line decodes and encodes back."""
    lines = journal.read_text(encoding="utf-8").splitlines()
    assert lines
    assert [encode(decode(line)) for line in lines] == lines


@pytest.mark.parametrize("journal", JOURNALS, ids=lambda p: p.stem)
def test_a_stored_journal_replays_to_the_stored_status_after_every_line(journal: Path) -> None:
    """An old journal, replayed line by line, gives the status the earlier flume gave."""
    seen = [decode(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    expected = json.loads(journal.with_suffix(".status.json").read_text(encoding="utf-8"))
    assert len(expected) == len(seen)
    for count, want in enumerate(expected, start=1):
        place = replay(Settings(), seen[:count])
        got = codec().unstructure(status(place, agent_known=False, here=None))
        assert json.loads(json.dumps(got)) == want, f"{journal.stem}: after line {count}"
    # The stored life ends landed and tidied.
    assert expected[-1]["life"] == "tidied"
