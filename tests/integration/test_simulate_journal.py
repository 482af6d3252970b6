"""``flume simulate --journal``: a real journal, run again, tells what ``flume events`` tells.

The trace's reports are the events ``flume events`` prints of the place, in the same order, with
the same words, at the same instants.

The places are real (a repository, a worktree, a journal, a supervisor in this process with echo
agents, as tests/integration/test_pauses.py drives them); the end of an agent's turn, which the
transcript readers report, is journaled by the test, and so are the verdicts its agents would
write on the board.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyrsistent import pvector

from flume.core.ids import BlockName, Instant, KindName, StageName
from flume.core.kinds import Approval, Commit, Kind, Loop, Sequence, Step, Verdict
from flume.core.observations import Launched, TurnEnded, Usage
from flume.core.place import Paused, Working
from flume.core.settings import Settings
from flume.shell.perform import launcher
from flume.shell.store import journal
from tests.integration.places_kit import Harness, commit, flume, repository
from tests.integration.test_supervisor import carry_to_landing

PLACE = "feature--journaled"

#: A review loop (review's verdict, fix's commit; at most 2 passes), then a person's approval.
KIND = Kind(
    name=KindName("feature"),
    prefix="feature",
    body=Sequence(
        blocks=pvector(
            [
                Loop(
                    name=BlockName("review-loop"),
                    body=Sequence(
                        blocks=pvector(
                            [
                                Step(
                                    name=StageName("review"),
                                    prompt="Review pass $pass. Write $verdict.",
                                    deliverable=Verdict(),
                                ),
                                Step(
                                    name=StageName("fix"),
                                    prompt="Mend the findings; commit.",
                                    deliverable=Commit(),
                                ),
                            ]
                        )
                    ),
                    until=StageName("review"),
                    max=2,
                ),
                Step(
                    name=StageName("sign-off"), prompt="Say what was done.", deliverable=Approval()
                ),
            ]
        )
    ),
)


def _turn_ends(harness: Harness, path: Path, tokens: int = 100) -> None:
    """The live agent's turn ends, its model reporting ``tokens``; the supervisor acts on it."""
    place = harness.place(path)
    assert place.agent is not None
    harness.clock.now += 1
    usage = Usage(input=tokens, output=tokens // 10)
    journal.append(
        path, TurnEnded(at=Instant(harness.clock.now), session=place.agent.session, usage=usage)
    )
    harness.settle()


def _verdict(path: Path, result: str, summary: str) -> None:
    """The live reviewer writes its verdict on the place's board."""
    (launched, *_rest) = journal.read(path).observations
    assert isinstance(launched, Launched)
    # A launch that names no board (this flume's launcher does not write one yet) has its
    # verdicts looked for from the folder flume runs in: the test's own (see the fixture).
    folder = Path(launched.board or ".") / "review"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "verdict.json").write_text(json.dumps({"result": result, "summary": summary}))


def _stale(path: Path) -> None:
    """Pass 1's verdict moved aside, as ArchiveVerdict would before pass 2's review starts.

    The launch names no board yet, and the core asks for no archive without one: left there,
    pass 1's verdict would pass pass 2's gate.
    """
    (launched, *_rest) = journal.read(path).observations
    assert isinstance(launched, Launched)
    if not launched.board:
        (Path("review") / "verdict.json").unlink()


def _events(place: str) -> list[dict[str, Any]]:
    ran = flume("events", place, "--json")
    assert ran.returncode == 0, ran.stderr
    return [json.loads(line) for line in ran.stdout.splitlines()]


def _simulated(path: Path) -> list[dict[str, Any]]:
    ran = flume("simulate", "--journal", str(path), "--json")
    assert ran.returncode == 0, ran.stderr
    return [json.loads(line) for line in ran.stdout.splitlines()]


def _reports(rows: list[dict[str, Any]]) -> list[tuple[float, str, str | None, str]]:
    """Each Report the trace decided: (instant of its step, event, stage, text)."""
    return [
        (row["status"]["updated_at"], action["event"], action.get("stage"), action["text"])
        for row in rows
        if row["row"] == "step"
        for action in row["actions"]
        if action["type"] == "Report"
    ]


def _told(events: list[dict[str, Any]]) -> list[tuple[float, str, str | None, str]]:
    return [(each["at"], each["event"], each["stage"], each["text"]) for each in events]


def _same_text(path: Path, place: str) -> None:
    """Each line ``flume events`` prints for people is a Report line of the text trace, in order."""
    told = flume("events", place).stdout.splitlines()
    traced = [
        line.strip().removeprefix("-> Report ")
        for line in flume("simulate", "--journal", str(path)).stdout.splitlines()
        if line.strip().startswith("-> Report ")
    ]
    assert len(told) == len(traced)
    for line, report in zip(told, traced, strict=True):
        assert line.endswith(report.splitlines()[0]), (line, report)


def test_a_workflow_journal_simulates_to_the_events_flume_events_printed(
    host: Path, harness: Harness, woken: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loop (revise, fix, a missing verdict told once, done) and an approval, run for real."""
    del woken
    monkeypatch.chdir(host)
    repo = repository(host / "repo")
    request = launcher.Request(
        repository=repo, kind="feature", name="journaled", brief="the greeting", carried=KIND
    )
    path = launcher.launch(request, Settings(), harness.clock).journal
    harness.settle()
    assert harness.place(path).stage.key == "review-loop@1/review"
    _verdict(path, "revise", "say Hello")
    _turn_ends(harness, path)
    _stale(path)
    place = harness.place(path)
    assert (place.stage.key, type(place.stage.phase)) == ("review-loop@1/fix", Working)
    commit(Path(place.path), "greeting.txt", "Hello\n")
    _turn_ends(harness, path)
    harness.pass_time(Settings().quiet_seconds + 1)
    assert harness.place(path).stage.key == "review-loop@2/review"
    _turn_ends(harness, path)  # no verdict yet: told once why
    _verdict(path, "done", "it says Hello")
    _turn_ends(harness, path)
    _turn_ends(harness, path)  # the sign-off's turn: paused for approval
    assert isinstance(harness.place(path).stage.phase, Paused)
    assert flume("approve", PLACE).returncode == 0
    harness.settle()
    events = _events(PLACE)
    assert [each["event"] for each in events if each["event"].startswith("gate")] == [
        "gate-passed",
        "gate-failed",
        "gate-passed",
        "gate-passed",
    ]
    assert events[-1]["event"] == "finished"
    rows = _simulated(path)
    assert _reports(rows) == _told(events)
    assert rows[-1]["life"] == "finished"
    _same_text(path, PLACE)


def test_a_fix_journal_simulates_to_the_events_flume_events_printed(
    host: Path, harness: Harness
) -> None:
    """A fix carried to its landing and tidy: the same events, simulated from its journal."""
    repo = repository(host / "repo")
    request = launcher.Request(repository=repo, kind="fix", name="plain", brief="Mend it.")
    path = launcher.launch(request, Settings(), harness.clock).journal
    carry_to_landing(harness, path)
    events = _events("fix--plain")
    assert [each["event"] for each in events][-2:] == ["finished", "tidied"]
    assert _reports(_simulated(path)) == _told(events)
    _same_text(path, "fix--plain")


def test_a_journal_that_cannot_be_read_is_named_and_exit_2(tmp_path: Path) -> None:
    """A missing journal, or one holding no launch: exit 2, named, nothing traced."""
    missing = tmp_path / "nowhere" / "journal.jsonl"
    empty = tmp_path / "journal.jsonl"
    empty.write_text("")
    for path, says in ((missing, "cannot be read as a journal"), (empty, "holds no launch")):
        ran = flume("simulate", "--journal", str(path))
        assert ran.returncode == 2
        assert ran.stdout == ""
        assert f"{path}: {says}" in ran.stderr
    ran = flume("simulate")
    assert ran.returncode == 2
    assert "names no scenario and no journal" in ran.stderr
