"""``flume status`` read from the journals of real repositories, with the host's registry."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from flume import api
from flume.cli import board, render, statusview
from flume.cli.app import app
from flume.cli.board import Row
from flume.cli.statusview import SUPERVISOR_MEND
from flume.core.ids import BranchName, Instant, KindName, SessionId, Sha, StageName, WorkName
from flume.core.kinds import BUILTIN_KINDS
from flume.core.launch import Launch
from flume.core.observations import (
    AgentReady,
    AgentStarted,
    ChecksFailed,
    Launched,
    Observation,
    WorktreeMade,
)
from flume.core.settings import Settings
from flume.core.status import PlaceStatus
from flume.core.status import status as core_status
from flume.core.step import step
from flume.shell.store import places
from flume.shell.store.journal import append as append_line
from flume.shell.store.journal import create
from flume.shell.tools import git
from tests.model.test_rules import S, submitting

runner = CliRunner()


def append(path: Path, seen: Observation) -> None:
    """Append to a journal, starting it with its first line (as a launch does)."""
    if path.exists():
        append_line(path, seen)
    else:
        create(path, seen)


@pytest.fixture(autouse=True)
def _own_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test has a registry of its own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def repository(folder: Path) -> Path:
    """A real git repository with one commit on main."""
    folder.mkdir(parents=True)
    assert git.run(folder, "init", "-q", "-b", "main").ok
    commit = git.run(
        folder,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "start",
    )
    assert commit.ok, commit.err
    return folder.resolve()


def place(
    repo: Path, kind: str, name: str, *, mark: str | None = None, started: bool = True
) -> Path:
    """Journal a place of ``kind`` as the supervisor would, and register its repository."""
    found = BUILTIN_KINDS[KindName(kind)]
    launch = Launch(
        repository=str(repo),
        kind=found.name,
        name=WorkName(name),
        brief="Mend it.",
        base=BranchName("main"),
        mark=mark,
    )
    journal = places.journals_dir(repo) / f"{kind}--{name}" / places.JOURNAL
    seen = [Launched(at=Instant(0), launch=launch, kind=found, settings=Settings())]
    prefix = "sounding" if kind == "question" else kind
    seen.append(
        WorktreeMade(
            at=Instant(1),
            path=f"{repo}/places/{kind}--{name}",
            branch=BranchName(f"{prefix}/{name}"),
            head=Sha("a1"),
        ),
    )
    if started:
        first = BUILTIN_KINDS[KindName(kind)].body.blocks[0].name  # type: ignore[union-attr]
        seen += [
            AgentStarted(
                at=Instant(2), stage=StageName(first), attempt=1, session=SessionId("s1"), pane="%1"
            ),
            AgentReady(at=Instant(3), session=SessionId("s1")),
        ]
    for observation in seen:
        append(journal, observation)
    places.remember(repo)
    return journal


def status(*args: str) -> tuple[int, str, str]:
    """Run ``flume status``."""
    result = runner.invoke(app, ["status", *args])
    return result.exit_code, result.stdout, result.stderr


def test_no_places_yet() -> None:
    """With no repository known, status says there are no places."""
    code, out, _err = status()
    assert code == 0
    assert "no places" in out
    code, out, _err = status("--json")
    assert json.loads(out) == {
        "format": 2,
        "places": [],
        "unreadable": [],
        "supervisor": {"running": False, "follows_places": False, "mend": SUPERVISOR_MEND},
    }
    code, out, _err = status()
    assert "supervisor" not in out  # no place: nothing to follow


#: A place's fields in format 1 (docs/status.md), less ``host`` and ``fault`` (present only when
#: another host carries the place, or something keeps its supervisor from carrying it).
FORMAT_1_FIELDS = {
    *("place", "name", "kind", "repository", "path", "branch", "base", "mark", "life"),
    *("stage", "attempt", "sends", "phase", "agent", "deliverable", "deliverable_exists"),
    *("submission", "submission_note", "tasks", "validation", "short_cause", "needs"),
    *("waits_on_caller", "completed", "tells_held", "updated_at"),
}


def test_every_place_on_the_host(tmp_path: Path) -> None:
    """A bare status lists the places of every repository flume knows, read from journals."""
    one = repository(tmp_path / "one")
    two = repository(tmp_path / "two")
    place(one, "fix", "typo")
    place(two, "change", "rate-limit", started=False)
    place(two, "question", "why")
    code, out, _err = status("--json")
    assert code == 0
    document = json.loads(out)
    assert document["format"] == 2
    rows = {row["place"]: row for row in document["places"]}
    assert set(rows) == {"fix--typo", "change--rate-limit", "question--why"}
    fix = rows["fix--typo"]
    assert (fix["kind"], fix["stage"], fix["phase"]) == ("fix", "code", "delivering")
    assert fix["agent"] == "unknown"  # live in the journal, but no supervisor reads it
    assert fix["deliverable_exists"] is False
    assert fix["submission"] == "none"
    assert rows["change--rate-limit"]["agent"] == "stopped"
    assert rows["question--why"]["branch"] == "sounding/why"
    for row in rows.values():  # format 2 adds a workflow run's fields; these carry format 1's
        assert set(row) == FORMAT_1_FIELDS, set(row) ^ FORMAT_1_FIELDS
    code, out, _err = status()
    assert code == 0
    assert "fix--typo" in out
    assert "code#1" in out
    assert "question--why" in out


def test_status_says_the_supervisor_is_not_running_and_how_to_start_it(tmp_path: Path) -> None:
    """No supervisor runs (killed, say): status, its JSON and the board say no place is followed.

    The fault (issue 25, 2.6): after a SIGKILL, places sat ``delivering / agent unknown`` and
    nothing said the supervisor was down, nor what starts it.
    """
    one = repository(tmp_path / "one")
    place(one, "fix", "typo")
    code, out, _err = status("--json")
    assert code == 0
    assert json.loads(out)["supervisor"] == {
        "running": False,
        "follows_places": False,
        "mend": SUPERVISOR_MEND,
    }
    code, out, _err = status()
    assert code == 0
    said = " ".join(out[out.index("supervisor: not running") :].split())
    assert "no place is followed" in said
    assert "flume daemon start (flume daemon install has systemd keep it running" in said
    assert statusview.supervisor_lines([{"life": "active"}], running=True) == []
    assert statusview.supervisor_lines([{"life": "tidied"}], running=False) == []
    views = api.survey().places
    console = Console(width=80, record=True, file=io.StringIO())
    found = [Row(view=view, age=1.0, quiet=1.0) for view in views]
    console.print(board.board(found, heading="h", width=80, supervised=False))
    drawn = " ".join(console.export_text().split())
    assert "supervisor: not running: no place is followed" in drawn
    console.print(board.board(found, heading="h", width=80, supervised=True))
    assert console.export_text().count("supervisor:") == 0


def test_filters_by_mark_repository_and_place(tmp_path: Path) -> None:
    """--mark, --repository and a place's name each narrow the list."""
    one = repository(tmp_path / "one")
    two = repository(tmp_path / "two")
    place(one, "fix", "a", mark="crew:1")
    place(one, "fix", "b")
    place(two, "fix", "c", mark="crew:1")
    marked = json.loads(status("--json", "--mark", "crew:1")[1])["places"]
    assert sorted(row["place"] for row in marked) == ["fix--a", "fix--c"]
    only = json.loads(status("--json", "--repository", str(two))[1])["places"]
    assert [row["place"] for row in only] == ["fix--c"]
    inside = json.loads(status("--json", "--repository", str(one / "."))[1])["places"]
    assert len(inside) == 2
    named = json.loads(status("--json", "fix--b")[1])["places"]
    assert [row["place"] for row in named] == ["fix--b"]


@pytest.mark.parametrize("what", ["missing", "not_git"])
def test_a_bad_repository_is_refused(tmp_path: Path, what: str) -> None:
    """A path that is missing or not in a git repository: exit 2, naming it."""
    path = tmp_path / "nowhere"
    if what == "not_git":
        path.mkdir()
    code, out, err = status("--repository", str(path))
    assert code == 2
    assert out == ""
    assert str(path) in err


def test_an_unknown_place_is_refused(tmp_path: Path) -> None:
    """Asking for a place there is not: exit 2, saying how to list them."""
    place(repository(tmp_path / "one"), "fix", "a")
    code, _out, err = status("fix--b")
    assert code == 2
    assert "no place fix--b" in err
    assert "flume status" in err


def test_a_damaged_journal_is_named_and_the_rest_still_shown(tmp_path: Path) -> None:
    """One journal that cannot be read is listed as such; the other places still show."""
    repo = repository(tmp_path / "one")
    place(repo, "fix", "good")
    bad = place(repo, "fix", "bad")
    lines = bad.read_text(encoding="utf-8").splitlines()
    bad.write_text("\n".join(["garbage", *lines[1:]]) + "\n", encoding="utf-8")
    document = json.loads(status("--json")[1])
    assert [row["place"] for row in document["places"]] == ["fix--good"]
    (unreadable,) = document["unreadable"]
    assert unreadable["journal"].endswith("fix--bad/journal.jsonl")
    assert ":1:" in unreadable["problem"]


def test_the_registry_remembers_each_repository_once(tmp_path: Path) -> None:
    """Registering twice keeps one line; a repository that is gone is forgotten."""
    one = repository(tmp_path / "one")
    places.remember(one)
    places.remember(one / ".")
    assert places.remembered() == [one]
    assert places.registry_path().read_text(encoding="utf-8").count("\n") == 1
    gone = repository(tmp_path / "gone")
    places.remember(gone)
    git.run(tmp_path, "init", "-q", str(tmp_path / "other"))
    for child in sorted(gone.rglob("*"), reverse=True):
        child.unlink() if child.is_file() else child.rmdir()
    gone.rmdir()
    assert places.remembered() == [one]


def test_a_torn_last_line_is_left_out_with_a_warning(tmp_path: Path) -> None:
    """A journal whose last line a crash cut short: read without it, and the user is told."""
    repo = repository(tmp_path / "repo")
    journal = place(repo, "fix", "torn")
    with journal.open("ab") as file:
        file.write(b'{"at":9.0,"type":"Tick"')
    code, out, err = status("--json")
    assert code == 0
    (row,) = json.loads(out)["places"]
    assert row["place"] == "fix--torn"
    assert f"{journal} ends in a line a crash cut short" in err


def test_failed_checks_are_named_under_the_table() -> None:
    """Status shows a submission whose checks failed, with the lander's short reason."""
    failed = ChecksFailed(at=Instant(26), reason="pytest -q failed (exit 1)", output="1 failed")
    place = step(S, submitting(), failed).place
    lines = list(render.waiting_lines([core_status(place)]))
    assert "fix--typo submit: the submission's checks failed: pytest -q failed (exit 1)" in lines


def varied(tmp_path: Path) -> list[PlaceStatus]:
    """Places with long names and the longest states, in a repository with a long path."""
    repo = repository(tmp_path / "a" / "rather" / "long" / "path" / "to" / "the-repository")
    place(repo, "fix", "typo")
    place(repo, "change", "rate-limit-for-the-public-api", started=False)
    place(repo, "question", "why-is-it-slow")
    return list(api.survey().places)


#: The states each place of :func:`varied` is in, each of which a row must show whole.
STATES = {
    "fix--typo": ["code#1", "delivering", "unknown"],
    "change--rate-limit-for-the-public-api": ["construct#1", "starting", "stopped"],
    "question--why-is-it-slow": ["session#1", "delivering", "unknown"],
}


@pytest.mark.parametrize("width", [80, 100, 60])
def test_status_fits_the_terminal_and_keeps_states_whole(tmp_path: Path, width: int) -> None:
    """No line wider than the terminal; every state of every place shown whole, none cut.

    No word is broken across lines either: each place's name is whole on one line.
    """
    views = varied(tmp_path)
    lines = list(render.status_table(views, [], width=width))
    assert all(len(line) <= width for line in lines), "\n".join(lines)
    # Only a repository's heading too long for the terminal is cut, at its start, never a row.
    assert not any("…" in line for line in lines if not line.endswith(":")), lines
    words = " ".join(lines).split()
    for states in STATES.values():
        for state in states:
            assert state in words, f"{state} is not shown whole at {width} columns"
    for name in STATES:
        assert any(line.split()[:1] == [name] for line in lines), f"{name} is not whole"
    assert len(views) == 3


def test_status_into_a_pipe_is_one_whole_line_a_place(tmp_path: Path) -> None:
    """No terminal: each place is one line with every column, its repository whole."""
    views = varied(tmp_path)
    lines = list(render.status_table(views, []))
    for view in views:
        (line,) = [line for line in lines if line.startswith(f"{view.place} ")]
        assert line.split() == [
            view.place,
            view.kind,
            f"{view.stage}#{view.attempt}",
            view.phase.value,
            view.agent.value,
            "no",
            "none",
            view.repository,
        ]


@pytest.mark.parametrize("columns", ["24", "40", "61", "80"])
def test_a_command_to_copy_is_never_wrapped_in_piped_output(tmp_path: Path, columns: str) -> None:
    """``flume status`` piped with ``COLUMNS`` set: each command it names stays on one line.

    The fault (issue 25's fault trials): piped, ``flume daemon start`` was wrapped across two
    lines, and a person copying it got half a command.
    """
    one = repository(tmp_path / "one")
    place(one, "fix", "typo")
    ran = subprocess.run(
        [sys.executable, "-m", "flume", "status"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": columns},
    )
    assert ran.returncode == 0, ran.stderr
    lines = [line.strip() for line in ran.stdout.splitlines()]
    for command in ("flume daemon start", "flume daemon install"):
        assert any(command in line for line in lines), (command, ran.stdout)
    said = " ".join(ran.stdout.split())
    assert "no place is followed" in said


PROSE = st.lists(st.from_regex(r"[a-z]{1,9}", fullmatch=True), max_size=8).map(" ".join)
PLACE_NAME = st.from_regex(r"[a-z]{2,7}--[a-z]{2,7}(\+[a-z]{1,5}-[0-9])?", fullmatch=True)
ARGUMENT = st.one_of(
    PLACE_NAME,
    st.sampled_from(["--by-hand", "--agent", "--json", "q1", '"<your answer>"', "--step spell"]),
    st.from_regex(r"refs/heads/[a-z]{1,5}/[a-z]{1,5} [0-9a-f]{7}", fullmatch=True),
)
COMMAND = st.one_of(
    st.builds(
        lambda verb, args: " ".join(["flume", verb, *args]),
        st.sampled_from(["resume", "retry", "resolve", "answer", "drop", "daemon start"]),
        st.lists(ARGUMENT, max_size=3),
    ),
    st.builds(
        lambda path, args: " ".join(["git", "-C", path, "update-ref", *args]),
        st.from_regex(r"/[a-z]{1,8}(/[a-z]{1,8}){0,3}", fullmatch=True),
        st.lists(ARGUMENT, max_size=2),
    ),
)


@given(
    before=PROSE,
    command=COMMAND,
    close=st.sampled_from(["", ",", ";", ")", "."]),
    after=PROSE,
    width=st.integers(min_value=8, max_value=120),
)
def test_wrapping_keeps_each_command_whole_and_every_word(
    before: str, command: str, close: str, after: str, width: int
) -> None:
    """Wrapped at any width, a command a line names is on one line, and no word is lost."""
    line = f"x: {before} {command}{close} {after}".replace("  ", " ").rstrip()
    out = list(statusview.wrapped([line], width))
    assert " ".join(" ".join(out).split()) == " ".join(line.split())
    assert any(command in each.strip() for each in out), out
    for each in out:
        assert len(each) <= width or command in each or " " not in each.strip()


def test_the_cli_fits_columns_and_json_ignores_them(tmp_path: Path) -> None:
    """``COLUMNS=80 flume status`` fits 80 columns; ``--json`` is the same at any width."""
    varied(tmp_path)
    result = runner.invoke(app, ["status"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "construct#1" in result.stdout.split()
    narrow = runner.invoke(app, ["status", "--json"], env={"COLUMNS": "40"}).stdout
    unbounded = runner.invoke(app, ["status", "--json"], env={"COLUMNS": ""}).stdout
    assert narrow == unbounded
    assert render.status_json(list(api.survey().places), []) == unbounded.rstrip("\n")


def test_the_board_fits_the_terminal_and_keeps_states_whole(tmp_path: Path) -> None:
    """``flume watch`` at 80 columns: no state cut to ``wa…``, no line wider than 80."""
    views = varied(tmp_path)
    found = [Row(view=view, age=4000.0, quiet=75.0) for view in views]
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(board.board(found, heading="flume watch: 3 places", width=console.width))
    lines = console.export_text().splitlines()
    assert all(len(line) <= 80 for line in lines), "\n".join(lines)
    assert not any("…" in line for line in lines)
    words = " ".join(lines).split()
    for states in STATES.values():
        for state in states:
            assert state in words, f"{state} is not shown whole on the board"
    assert {"1h", "1m"} <= set(words)
