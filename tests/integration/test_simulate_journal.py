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
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pyrsistent import pvector

from flume.core.actions import Action, SendPrompt
from flume.core.ids import BlockName, Instant, KindName, StageName
from flume.core.kinds import Approval, Commit, Kind, Loop, Sequence, Step, Verdict
from flume.core.kinds import steps as kind_steps
from flume.core.observations import Launched, TurnEnded, Usage
from flume.core.place import Paused, Working
from flume.core.settings import Settings
from flume.core.step import trace
from flume.shell.declared import scenario
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


# --- a journal under a changed definition: simulate --journal J --kind-file NEW ---------------

#: A workflow the repository declares in a kind file of its own (``[[kinds]] file = ...``).
PLAN_BUILD = """\
[kind]
name = "wf"
body = ["plan", "build"]

[step.plan]
prompt = "Plan $brief; commit PLAN.md."
gate = "commit"

[step.build]
prompt = "Build what PLAN.md says; commit."
gate = "commit"
"""
EDITED = PLAN_BUILD.replace("Build what PLAN.md says;", "Build what PLAN.md says, with tests;")


def _versions(path: Path, kind_file: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return flume("simulate", "--journal", str(path), "--kind-file", str(kind_file), *more)


def trace_actions(path: Path, index: int) -> tuple[Action, ...]:
    """The actions decided at the journal's ``index``-th observation."""
    row = list(trace(Settings(), journal.read(path).observations))[index]
    assert row.decision is not None
    return row.decision.actions


def _sent_build_at(path: Path) -> int:
    """The index of the observation whose step sent build its prompt."""
    rows = list(trace(Settings(), journal.read(path).observations))
    return next(
        index
        for index, row in enumerate(rows)
        if row.decision is not None
        and any(isinstance(a, SendPrompt) and a.stage == "build" for a in row.decision.actions)
    )


def test_a_running_place_keeps_its_definition_and_simulate_names_what_an_edit_changes(
    host: Path, harness: Harness, tmp_path: Path
) -> None:
    """VERSION-FROZEN through the shell, and must-show 7 of issue 14.

    The repository's kind file is edited while its place runs plan: build is still prompted
    with the words the place was launched with. ``flume simulate --journal`` against the edited
    file names the step that sent build its prompt, the prompt's text the difference; against
    the file as it was at launch, "same".
    """
    repo = repository(
        host / "repo",
        files={".flume.toml": '[[kinds]]\nfile = "flume/wf.toml"\n', "flume/wf.toml": PLAN_BUILD},
    )
    request = launcher.Request(repository=repo, kind="wf", name="frozen", brief="the greeting")
    path = launcher.launch(request, Settings(), harness.clock).journal
    harness.settle()
    place = harness.place(path)
    assert (place.stage.name, type(place.stage.phase)) == ("plan", Working)
    kind_file = repo / "flume" / "wf.toml"
    kind_file.write_text(EDITED, encoding="utf-8")
    commit(Path(place.path), "PLAN.md", "a plan\n")
    _turn_ends(harness, path)
    harness.pass_time(Settings().quiet_seconds + 1)
    place = harness.place(path)
    assert (place.stage.name, type(place.stage.phase)) == ("build", Working)
    (launched, *_rest) = journal.read(path).observations
    assert isinstance(launched, Launched)
    assert place.kind == launched.kind
    (build,) = [
        step.prompt for step in kind_steps(place.kind.body) if step.name == StageName("build")
    ]
    assert build == "Build what PLAN.md says; commit."
    sent = _sent_build_at(path)
    (prompt,) = [
        action
        for action in trace_actions(path, sent)
        if isinstance(action, SendPrompt) and action.stage == "build"
    ]
    assert prompt.text.startswith("Build what PLAN.md says; commit.")

    ran = _versions(path, kind_file)
    assert ran.returncode == 0, ran.stderr
    count = len(journal.read(path).observations)
    assert f"differs at observation {sent + 1} of {count} (journal line {sent + 1})" in ran.stdout
    assert "the names differ" not in ran.stdout
    differ = ran.stdout.split("where they differ (the journal's | the file's):\n")[1]
    (line,) = differ.splitlines()
    assert line.strip().startswith("actions[")
    assert '"Build what PLAN.md says; commit.' in line
    assert '"Build what PLAN.md says, with tests; commit.' in line

    shown = _versions(path, kind_file, "--json")
    assert shown.returncode == 0, shown.stderr
    (document,) = [json.loads(each) for each in shown.stdout.splitlines()]
    assert (document["row"], document["same"], document["observations"]) == (
        "versions",
        False,
        count,
    )
    first = document["first"]
    assert (first["observation"], first["line"]) == (sent + 1, sent + 1)
    assert [each["path"].split(".")[-1] for each in first["differences"]] == ["text"]
    assert first["journal"]["actions"][0]["type"] == "SendPrompt"

    before = tmp_path / "as-launched.toml"
    before.write_text(PLAN_BUILD, encoding="utf-8")
    ran = _versions(path, before)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[-1] == f"same: {count} observations, every decision the same"
    shown = _versions(path, before, "--json")
    assert json.loads(shown.stdout)["same"] is True
    assert json.loads(shown.stdout)["first"] is None


def test_a_kind_of_stages_named_otherwise_is_compared_under_the_journal_s_name(
    host: Path, harness: Harness, tmp_path: Path
) -> None:
    """A fix's journal against a kind file of stages named mend: allowed, the names said to differ.

    Its prefix is fix's, so the launch is decided alike; its one stage, not fix's, starts first.
    """
    repo = repository(host / "repo")
    request = launcher.Request(repository=repo, kind="fix", name="plain", brief="Mend it.")
    path = launcher.launch(request, Settings(), harness.clock).journal
    carry_to_landing(harness, path)
    mend = tmp_path / "mend.toml"
    mend.write_text(
        '[kind]\nname = "mend"\nprefix = "fix"\n[[kind.stages]]\nname = "mend"\n'
        'prompt = "Mend $brief."\ndeliverable = "landing"\n',
        encoding="utf-8",
    )
    ran = _versions(path, mend)
    assert ran.returncode == 0, ran.stderr
    assert "compared with: " + str(mend) + " (kind mend)" in ran.stdout
    assert "the names differ: the journal's kind is fix, the file declares mend" in ran.stdout
    assert "differs at observation " in ran.stdout
    assert "differs at observation 1 " not in ran.stdout
    document = json.loads(_versions(path, mend, "--json").stdout)
    assert (document["journal_kind"], document["file_kind"]) == ("fix", "mend")


def test_a_bad_kind_file_or_journal_is_named_and_exit_2(host: Path, tmp_path: Path) -> None:
    """Exit 2, the fault named (a file's line where it has one), nothing printed.

    A kind file missing, not TOML, or a bad workflow; a tests gate the journal's launch froze no
    command for; a journal missing; no journal, or a scenario beside it.
    """
    del host
    journal_path = tmp_path / "journal.jsonl"
    sc = scenario.load(scenario.find("workflow-loop"))
    journal.create(journal_path, sc.observations[0])
    for seen in sc.observations[1:]:
        journal.append(journal_path, seen)
    good = tmp_path / "good.toml"
    text = (scenario.SHIPPED / "workflow-loop.toml").read_text(encoding="utf-8")
    good.write_text(
        text[text.index("[workflow.kind]") : text.index("# flume made")].replace("workflow.", ""),
        encoding="utf-8",
    )
    assert "same: " in _versions(journal_path, good).stdout
    bad = tmp_path / "bad.toml"
    bad.write_text('[kind]\nname = "reviewed"\nbody = = 3\n', encoding="utf-8")
    capped = tmp_path / "capped.toml"
    capped.write_text(good.read_text(encoding="utf-8").replace("max = 3", "max = 0"))
    cap_line = capped.read_text(encoding="utf-8").splitlines().index("max = 0") + 1
    tests_gated = tmp_path / "tests.toml"
    tests_gated.write_text(
        good.read_text(encoding="utf-8").replace('gate = "commit"', 'gate = "tests"'),
        encoding="utf-8",
    )
    cases = [
        (
            _versions(journal_path, tmp_path / "none.toml"),
            f"{tmp_path / 'none.toml'}: no such file",
        ),
        (_versions(journal_path, bad), f"{bad}:3: is not valid TOML"),
        (_versions(journal_path, capped), f"{capped}:{cap_line}: "),
        (_versions(tmp_path / "no.jsonl", good), "no.jsonl: cannot be read as a journal"),
        (_versions(journal_path, tests_gated), "gated on tests, and the journal's launch froze"),
        (flume("simulate", "--kind-file", str(good)), "no --journal is given"),
        (
            flume(
                "simulate", "fix-clean", "--journal", str(journal_path), "--kind-file", str(good)
            ),
            "not a scenario",
        ),
    ]
    for ran, says in cases:
        assert ran.returncode == 2, (says, ran.stdout, ran.stderr)
        assert ran.stdout == ""
        assert says in ran.stderr, (says, ran.stderr)
