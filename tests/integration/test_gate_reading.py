"""The shell's reading of a workflow gate, on real files and real processes (perform/gates.py).

The shell reads, the core judges: these check what is read of a verdict file as written, of an
artifact, of a tests run within its deadline, and that a step's old verdict is archived aside.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

from pyrsistent import pvector

from flume.core.actions import ArchiveVerdict, JudgeGate
from flume.core.ids import Instant, StageName
from flume.core.kinds import Approval, Artifact, Gate, PassingTests, Verdict
from flume.shell.perform.gates import archive_verdict, read_gate

NOW = Instant(5.0)


def clock() -> Instant:
    """The performer's clock, stopped."""
    return NOW


def _asked(
    place: Path, board: Path, gate: Gate, *tests: list[str], deadline: float = 60
) -> JudgeGate:
    return JudgeGate(
        path=str(place),
        board=str(board),
        stage=StageName("review"),
        key="review-loop@2/review",
        attempt=1,
        gate=gate,
        tests=pvector(pvector(argv) for argv in tests),
        deadline=deadline,
    )


def test_a_verdict_is_read_as_written_or_said_unreadable(tmp_path: Path) -> None:
    """Found with its result and summary; missing; not JSON; no result string: each said."""
    board = tmp_path / "board"
    asked = _asked(tmp_path, board, Verdict())
    missing = read_gate(asked, clock)
    assert (missing.found, missing.key, missing.attempt) == (False, "review-loop@2/review", 1)
    verdict = board / "review" / "verdict.json"
    verdict.parent.mkdir(parents=True)
    verdict.write_text('{"result": "revise", "summary": "name the function", "extra": 1}')
    read = read_gate(asked, clock)
    assert (read.found, read.result, read.summary, read.problem) == (
        True,
        "revise",
        "name the function",
        "",
    )
    verdict.write_text("{not json")
    assert read_gate(asked, clock).problem.startswith("it is not JSON")
    verdict.write_text('{"summary": "no result"}')
    assert read_gate(asked, clock).problem == 'it is not an object with a "result" string'
    verdict.write_text('{"result": "done", "summary": {"points": [1, 2]}}')
    assert read_gate(asked, clock).summary == '{"points": [1, 2]}'


def test_an_artifact_is_a_file_in_the_worktree(tmp_path: Path) -> None:
    """The artifact's path is read from the place's worktree; a folder of that name is not it."""
    asked = _asked(tmp_path, tmp_path / "board", Artifact(path="docs/PLAN.md"))
    assert not read_gate(asked, clock).found
    (tmp_path / "docs" / "PLAN.md").mkdir(parents=True)
    assert not read_gate(asked, clock).found
    (tmp_path / "docs" / "PLAN.md").rmdir()
    (tmp_path / "docs" / "PLAN.md").write_text("the plan")
    assert read_gate(asked, clock).found


def test_tests_run_as_argv_in_the_worktree_within_their_deadline(tmp_path: Path) -> None:
    """Each command runs in the place, no shell; the first failing one is said.

    A hung one is killed at the deadline and said not finished, with what it printed.
    """
    python = sys.executable
    passing = [python, "-c", "import pathlib; assert pathlib.Path('here').exists()"]
    (tmp_path / "here").write_text("")
    ran = read_gate(_asked(tmp_path, tmp_path, PassingTests(), passing), clock)
    assert (ran.found, ran.code) == (True, 0)
    failing = [python, "-c", "print('2 failed'); raise SystemExit(3)"]
    ran = read_gate(_asked(tmp_path, tmp_path, PassingTests(), passing, failing), clock)
    assert (ran.found, ran.code, ran.summary.strip()) == (True, 3, "2 failed")
    shell_words = [python, "-c", "import sys; print(sys.argv[1])", "$(touch pwned); echo"]
    ran = read_gate(_asked(tmp_path, tmp_path, PassingTests(), shell_words), clock)
    assert ran.summary.strip() == "$(touch pwned); echo"
    assert not (tmp_path / "pwned").exists()
    hung = [python, "-c", "import time; print('started', flush=True); time.sleep(60)"]
    ran = read_gate(_asked(tmp_path, tmp_path, PassingTests(), hung, deadline=1), clock)
    assert not ran.found
    assert ran.problem.endswith("ran past the 1 s deadline")
    assert "started" in ran.summary


def test_a_gate_the_shell_does_not_read_is_said_so(tmp_path: Path) -> None:
    """An approval is a person's word: asked to read one, the shell finds nothing, and says so."""
    ran = read_gate(_asked(tmp_path, tmp_path, Approval()), clock)
    assert not ran.found
    assert ran.problem == "the gate Approval is not read by the shell"


def test_an_old_verdict_is_archived_never_over_another(tmp_path: Path) -> None:
    """Moved to history/<as>.json; a second of the same name gets -2; none: the folder is made."""
    board = tmp_path / "board"
    asked = ArchiveVerdict(
        board=str(board), stage=StageName("review"), archive_as="review-loop@1--review#1"
    )
    archive_verdict(asked)
    assert (board / "review").is_dir()
    assert not (board / "review" / "history").exists()
    for said in ("first", "second"):
        (board / "review" / "verdict.json").write_text(said)
        archive_verdict(asked)
    history = board / "review" / "history"
    assert (history / "review-loop@1--review#1.json").read_text() == "first"
    assert (history / "review-loop@1--review#1-2.json").read_text() == "second"
    assert not (board / "review" / "verdict.json").exists()


def test_a_run_that_leaves_its_group_holding_the_output_is_still_ended_on_time(
    tmp_path: Path,
) -> None:
    """A child in a session of its own keeps the output open: the deadline holds all the same."""
    import time  # noqa: PLC0415 (the one timed bound here: the deadline itself)

    pid = tmp_path / "escaped.pid"
    escapes = [
        "sh",
        "-c",
        f"setsid sh -c 'echo $$ > {pid}; exec sleep 30' & echo escaped; sleep 100",
    ]
    started = time.monotonic()
    try:
        ran = read_gate(_asked(tmp_path, tmp_path, PassingTests(), escapes, deadline=1), clock)
        assert time.monotonic() - started < 20
        assert not ran.found
        assert "escaped" in ran.summary
    finally:
        if pid.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid.read_text().strip()), signal.SIGKILL)


def test_a_script_that_cannot_be_run_is_a_failed_run_said_so(tmp_path: Path) -> None:
    """No interpreter line: the kernel refuses it; the tests gate reads a failure, named."""
    script = tmp_path / "check"
    script.write_text("echo no shebang\n")
    script.chmod(0o755)
    ran = read_gate(_asked(tmp_path, tmp_path, PassingTests(), [str(script)]), clock)
    assert (ran.found, ran.code) == (True, 126)
    assert "cannot run it" in ran.summary


def test_no_tests_command_never_passes_and_a_reading_never_raises(tmp_path: Path) -> None:
    """An empty tests list passes nothing; a verdict too deep to parse is said, never raised."""
    ran = read_gate(_asked(tmp_path, tmp_path, PassingTests()), clock)
    assert not ran.found
    assert "declares no tests command" in ran.problem
    verdict = tmp_path / "board" / "review" / "verdict.json"
    verdict.parent.mkdir(parents=True)
    verdict.write_text("[" * 100_000 + "]" * 100_000)
    deep = read_gate(_asked(tmp_path, tmp_path / "board", Verdict()), clock)
    assert deep.found
    assert deep.problem
