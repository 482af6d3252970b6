"""``flume simulate`` on every shipped scenario, and on malformed ones, through the CLI."""

from __future__ import annotations

import fnmatch
import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flume.cli.app import app
from flume.shell.declared import scenario

SCENARIOS = scenario.SHIPPED
ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def simulate(*args: str) -> tuple[int, str, str]:
    """Run ``flume simulate`` and return its exit status, stdout and stderr."""
    result = runner.invoke(app, ["simulate", *args])
    return result.exit_code, result.stdout, result.stderr


def json_rows(path: Path) -> list[dict[str, object]]:
    """The JSON trace of a scenario, one dict a line."""
    code, out, _err = simulate(str(path), "--json")
    assert code == 0
    return [json.loads(line) for line in out.splitlines()]


def actions_of(rows: list[dict[str, object]], kind: str) -> list[dict[str, object]]:
    """Every action of ``kind`` in a JSON trace."""
    return [
        action
        for row in rows
        for action in row.get("actions", [])  # type: ignore[attr-defined]
        if action["type"] == kind
    ]


def test_the_scenarios_the_issues_name_ship() -> None:
    """The scenarios the issues name all ship (the workflows' in test_simulate_workflows)."""
    names = {path.stem for path in SCENARIOS.glob("*.toml")}
    assert names == {
        "fix-clean",
        "prompt-lost-once",
        "prompt-lost-twice",
        "stop-short-retry",
        "tell-held",
        "tell-refused-asking",
        "change-tasks",
        "change-dropped",
        "crew-waits",
        "workflow-approval",
        "workflow-budget",
        "workflow-gate",
        "workflow-kill-resume",
        "workflow-loop",
        "workflow-loop-max",
        "workflow-join",
        "workflow-merge-conflict",
        "workflow-stall",
    }


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.toml")), ids=lambda path: path.stem)
def test_every_scenario_simulates(path: Path) -> None:
    """Each shipped scenario runs, in text and in JSON, and ends on a summary."""
    code, out, err = simulate(str(path))
    assert code == 0, err
    assert out.splitlines()[-1].startswith("end: ")
    rows = json_rows(path)
    assert rows[-1]["row"] == "summary"
    assert all(row["format"] == 1 for row in rows)


def test_clean_fix_lands_and_tidies() -> None:
    """The clean fix lands, removes its place and deletes its branch."""
    rows = json_rows(SCENARIOS / "fix-clean.toml")
    assert rows[-1]["life"] == "tidied"
    assert actions_of(rows, "RemoveWorktree")
    assert actions_of(rows, "DeleteBranch")


def test_lost_once_is_found_on_the_second_send() -> None:
    """The first send is lost, the second found: the stage goes on."""
    rows = json_rows(SCENARIOS / "prompt-lost-once.toml")
    assert rows[-1]["sends"]["code#1"] == 2  # type: ignore[index]
    assert not rows[-1]["never_began"]


def test_lost_twice_never_began_after_exactly_two_sends() -> None:
    """Both sends missing: never began, after exactly two sends, and never a third."""
    rows = json_rows(SCENARIOS / "prompt-lost-twice.toml")
    sends = actions_of(rows, "SendPrompt")
    assert [send["send"] for send in sends] == [1, 2]
    reports = [a["event"] for a in actions_of(rows, "Report")]
    assert reports.count("never-began") == 1
    assert rows[-1]["never_began"] is True
    last = rows[-2]["status"]
    assert last["short_cause"] == "never-began"  # type: ignore[index]


def test_dropped_change_keeps_its_branch() -> None:
    """A dropped change loses its place and keeps its branch, with the reason."""
    rows = json_rows(SCENARIOS / "change-dropped.toml")
    assert actions_of(rows, "RemoveWorktree")
    assert not actions_of(rows, "DeleteBranch")
    kept = actions_of(rows, "KeepBranch")
    assert {action["branch"] for action in kept} == {"change/rate-limit"}
    assert all("lacks" in action["reason"] for action in kept)  # type: ignore[operator]
    reports = [a["text"] for a in actions_of(rows, "Report") if a["event"] == "kept"]
    assert len(reports) == 1
    assert rows[-1]["life"] == "tidied"


def test_change_ticks_its_tasks_one_by_one() -> None:
    """Status shows the change's tasks ticking, 0/3 to 3/3."""
    rows = json_rows(SCENARIOS / "change-tasks.toml")
    seen = [
        tuple(row["status"]["tasks"])
        for row in rows
        if row.get("status") and row["status"]["tasks"]
    ]  # type: ignore[index]
    ticks = list(dict.fromkeys(seen))
    assert ticks == [(0, 3), (1, 3), (2, 3), (3, 3)]


def test_crew_stages_wait_for_the_word() -> None:
    """Every stage after the first waits on the caller's word until proceed releases it."""
    rows = json_rows(SCENARIOS / "crew-waits.toml")
    waits = [a for a in actions_of(rows, "Report") if a["event"] == "stage-waits"]
    proceeded = [a for a in actions_of(rows, "Report") if a["event"] == "proceeded"]
    assert len(waits) == 2
    assert len(proceeded) == 2
    assert rows[-1]["refused"] == 1


def test_tell_refused_while_asking() -> None:
    """A tell while the agent asks a person is refused, and nothing is sent."""
    _code, out, _err = simulate(str(SCENARIOS / "tell-refused-asking.toml"))
    assert "refused: tell:" in out
    assert "asking a person" in out


LAUNCH = '[launch]\nrepository="/r"\nkind="fix"\nname="x"\nbase="main"\nbrief="b"\n\n'
BAD = {
    "syntax": ("[launch\n", ":1:", "not valid TOML"),
    "no_launch": ('description = "x"\n', "there is no [launch] table", "add [launch]"),
    "unknown_type": (
        LAUNCH + '[[seen]]\nat = 1\ntype = "Nope"\n',
        ":8:",
        "not an observation",
    ),
    "missing_field": (
        LAUNCH + '[[seen]]\nat = 1\ntype = "Told"\n',
        ":8:",
        "required field missing",
    ),
    "no_at": (
        LAUNCH + '[[seen]]\ntype = "Tick"\n',
        ":8:",
        "has no 'at'",
    ),
    "out_of_order": (
        LAUNCH + '[[seen]]\nat = 5\ntype = "Tick"\n\n[[seen]]\nat = 2\ntype = "Tick"\n',
        ":12:",
        "time order",
    ),
    "unknown_kind": (
        '[launch]\nrepository="/r"\nkind="nope"\nname="x"\nbase="main"\nbrief="b"\n',
        ":1:",
        "no kind 'nope' is built in or declared",
    ),
    "bad_name": (
        '[launch]\nrepository="/r"\nkind="fix"\nname="a/b"\nbase="main"\nbrief="b"\n',
        ":1:",
        "'/'",
    ),
    "bad_kind": (
        (
            '[launch]\nrepository="/r"\nkind="crew"\nname="x"\nbase="main"\nbrief="b"\n\n'
            '[kind]\nname = "crew"\n[[kind.stages]]\nname = "a"\nprompt = "x"\n'
            'deliverable = "magic"\n'
        ),
        "stage 1",
        'deliverable = "magic" is not a gate',
    ),
    "unknown_key": ("wat = 1\n", "unknown top-level keys wat", "a scenario has"),
    "mark_not_text": (LAUNCH.replace("\n\n", "\nmark = 5\n"), ":1:", "mark must be text"),
    "setup_not_a_list": (LAUNCH.replace("\n\n", '\nsetup = "make"\n'), ":1:", "setup must be"),
    "waits_not_a_list": (LAUNCH.replace("\n\n", '\nwaits = "code"\n'), ":1:", "waits must be"),
    "launch_at_nan": (LAUNCH.replace("\n\n", "\nat = nan\n"), ":1:", "finite number"),
    "seen_at_inf": (LAUNCH + '[[seen]]\nat = inf\ntype = "Tick"\n', ":8:", "finite number"),
    "negative_setting": ("[settings]\nquiet_seconds = -1\n" + LAUNCH, ":1:", "quiet_seconds is -1"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_scenarios_name_file_and_line(case: str, tmp_path: Path) -> None:
    """A malformed scenario: exit 2, its file, the line at fault and how to mend it."""
    text, where, says = BAD[case]
    path = tmp_path / f"{case}.toml"
    path.write_text(text, encoding="utf-8")
    code, out, err = simulate(str(path))
    assert code == 2
    assert out == ""
    assert str(path) in err
    assert where in err
    assert says in err


def test_a_missing_scenario_is_named(tmp_path: Path) -> None:
    """A scenario file that is not there is named, exit 2."""
    code, _out, err = simulate(str(tmp_path / "nowhere.toml"))
    assert code == 2
    assert "nowhere.toml" in err


def test_several_scenarios_run_one_after_another() -> None:
    """Each scenario's trace whole, in the order given, each ending on its own summary."""
    first, second = SCENARIOS / "fix-clean.toml", SCENARIOS / "tell-held.toml"
    code, out, err = simulate(str(first), str(second))
    assert code == 0, err
    lines = out.splitlines()
    heads = [n for n, line in enumerate(lines) if line.startswith("scenario: ")]
    ends = [n for n, line in enumerate(lines) if line.startswith("end: ")]
    assert [lines[n] for n in heads] == [f"scenario: {first}", f"scenario: {second}"]
    assert heads[0] < ends[0] < heads[1] < ends[1] == len(lines) - 1
    assert out == "\n".join([simulate(str(first))[1].rstrip(), "", simulate(str(second))[1]])
    code, out, err = simulate("--json", str(first), str(second))
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    summaries = [n for n, row in enumerate(rows) if row["row"] == "summary"]
    assert [rows[n]["scenario"] for n in summaries] == [str(first), str(second)]
    assert summaries[1] == len(rows) - 1
    assert rows[: summaries[0] + 1] == json_rows(first)


def test_one_bad_scenario_among_several_prints_no_trace(tmp_path: Path) -> None:
    """A malformed or missing scenario anywhere in the list: every one named, nothing traced."""
    missing = tmp_path / "nowhere.toml"
    code, out, err = simulate(str(SCENARIOS / "fix-clean.toml"), str(missing), "no-such-one")
    assert code == 2
    assert out == ""
    assert str(missing) in err
    assert "no-such-one: cannot be read" in err


def test_a_shipped_scenario_is_found_by_name_and_listed() -> None:
    """``simulate fix-clean`` runs the shipped file; ``--list`` names every shipped scenario."""
    code, out, err = simulate("fix-clean")
    assert code == 0, err
    assert out.startswith(f"scenario: {SCENARIOS / 'fix-clean.toml'}\n")
    code, out, err = simulate("--list")
    assert code == 0, err
    listed = {line.split()[0] for line in out.splitlines() if line and not line.startswith("(")}
    assert listed == {path.stem for path in SCENARIOS.glob("*.toml")}


def test_the_scenarios_ship_in_the_package() -> None:
    """The scenarios live in the flume package, named by its package data; examples/ links there.

    ``simulate --help`` and the manual point at them: a wheel without them was a broken promise.
    """
    assert SCENARIOS.parent == Path(scenario.__file__).resolve().parents[2]
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["flume"]
    for path in SCENARIOS.glob("*.toml"):
        inside = path.relative_to(SCENARIOS.parent).as_posix()
        assert any(fnmatch.fnmatch(inside, pattern) for pattern in package_data), inside
    assert (ROOT / "examples" / "scenarios").resolve() == SCENARIOS


def test_the_manual_shows_what_simulate_prints() -> None:
    """The manual's sample is lines of ``flume simulate fix-clean``, in order; ``...`` skips."""
    section = (ROOT / "docs" / "simulate.md").read_text(encoding="utf-8")
    assert "`flume simulate fix-clean` prints" in section
    sample = section[section.index("```text\n") + len("```text\n") :]
    sample = sample[: sample.index("```")]
    shown = [line for line in sample.splitlines() if line != "..."]
    code, out, err = simulate("fix-clean")
    assert code == 0, err
    printed = iter(out.splitlines())
    missing = [line for line in shown if not any(line == each for each in printed)]
    assert not missing, f"docs/simulate.md shows lines simulate does not print: {missing}"
    assert len(shown) == 4
