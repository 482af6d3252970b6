"""Reading a workflow step's gate for the core to judge, and archiving a step's old verdict.

The shell reads; the core judges (:mod:`flume.core.workflow.gates`). A verdict is
``<board>/<step>/verdict.json``: what is found is its ``result`` and ``summary`` as written, or
why it cannot be read. An artifact is a file in the worktree. A tests gate runs each declared
command in the worktree, as argv with no shell, all within the gate's deadline; the first that
fails (or the deadline) is what is reported, with the end of its output.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from flume.core.actions import ArchiveVerdict, JudgeGate
from flume.core.ids import Instant
from flume.core.kinds import Artifact, PassingTests, Verdict
from flume.core.observations import GateRead
from flume.shell.agents import sandbox
from flume.shell.declared import command

#: Where a repository's places keep their blackboards: ``<repository>/places/.boards/<place>``,
#: beside the worktrees and ignored with them. Not under ``.git``: Claude Code asks a person
#: before any write there, in every mode but bypassPermissions, and Codex's sandbox keeps
#: ``.git`` read-only, so a board inside it would stop every verdict on a permission prompt.
BOARDS = ".boards"


#: The board's files: where each is, who writes it, and what it holds.
BOARD_FILES = (
    (
        "task.md",
        "flume, at launch",
        "the work as launched: the place, its kind, name and base, and the brief",
    ),
    (
        "<step>/verdict.json",
        "the step's agent (`$verdict`)",
        "its verdict, for a `verdict` gate (below)",
    ),
    (
        "<step>/handoff.md",
        "the step's agent (`$handoff`)",
        (
            "free-form notes for whatever runs next; finalize puts each step's in the pull "
            "request's body"
        ),
    ),
    (
        "<step>/history/<key>#<attempt>.json",
        "flume, before a step's next attempt",
        (
            "an earlier attempt's verdict, moved aside (a key's `/` written `--`): a verdict never "
            "passes a later attempt's gate"
        ),
    ),
    (
        "pr-body.md",
        "flume, at finalize",
        "the pull request's body: the task, the handoffs, the last verdict",
    ),
)


def board_of(place_path: str, place: str) -> Path:
    """The board of the place whose worktree is ``place_path``."""
    return Path(place_path).parent / BOARDS / place


#: The most characters of a test run's output kept.
_TAIL = 4000


def verdict_path(board: str, stage: str) -> Path:
    """Where step ``stage`` writes its verdict."""
    return Path(board) / stage / "verdict.json"


def archive_verdict(action: ArchiveVerdict) -> None:
    """Move the step's verdict, if any, to ``history/<archive_as>.json`` (never over another).

    The step's folder on the board is made if it is not there, so its agent can write its
    verdict (and handoff) without making it.
    """
    found = verdict_path(action.board, action.stage)
    found.parent.mkdir(parents=True, exist_ok=True)
    if not found.is_file():
        return
    history = found.parent / "history"
    history.mkdir(parents=True, exist_ok=True)
    target = history / f"{action.archive_as}.json"
    number = 2
    while target.exists():
        target = history / f"{action.archive_as}-{number}.json"
        number += 1
    found.replace(target)


def read_gate(action: JudgeGate, clock: Callable[[], Instant], *, fenced: bool = False) -> GateRead:
    """What the step's gate is judged on, read now (tests: run now), stamped when read.

    ``fenced``: the run has sandboxed steps, and its tests run in a fence of their own
    (:func:`~flume.shell.agents.sandbox.in_fence`): the repository's test command may be what
    a sandboxed agent wrote. Never raises: a reading that cannot be made is a reading that found
    a problem, which the core judges like any other (the agent is told why, once).
    """
    try:
        return _read(action, clock, fenced=fenced)
    except Exception as error:  # noqa: BLE001 (whatever went wrong is what the agent is told)
        problem = f"flume could not read it ({type(error).__name__}: {error})"
        return GateRead(
            at=clock(), key=action.key, attempt=action.attempt, found=True, problem=problem
        )


def _read(action: JudgeGate, clock: Callable[[], Instant], *, fenced: bool) -> GateRead:
    gate = action.gate
    if isinstance(gate, Verdict):
        return _read_verdict(action, clock())
    if isinstance(gate, Artifact):
        found = (Path(action.path) / gate.path).is_file()
        return GateRead(at=clock(), key=action.key, attempt=action.attempt, found=found)
    if isinstance(gate, PassingTests):
        return _run_tests(action, clock, fenced=fenced)
    return GateRead(
        at=clock(),
        key=action.key,
        attempt=action.attempt,
        found=False,
        problem=f"the gate {type(gate).__name__} is not read by the shell",
    )


def _read_verdict(action: JudgeGate, now: Instant) -> GateRead:
    path = verdict_path(action.board, action.stage)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return GateRead(at=now, key=action.key, attempt=action.attempt, found=False)
    except (OSError, UnicodeDecodeError) as error:
        problem = f"it cannot be read ({error})"
        return GateRead(at=now, key=action.key, attempt=action.attempt, found=True, problem=problem)
    try:
        verdict = json.loads(text)
    except json.JSONDecodeError as error:
        problem = f"it is not JSON ({error.msg}, line {error.lineno})"
        return GateRead(at=now, key=action.key, attempt=action.attempt, found=True, problem=problem)
    if not isinstance(verdict, dict) or not isinstance(verdict.get("result"), str):
        problem = 'it is not an object with a "result" string'
        return GateRead(at=now, key=action.key, attempt=action.attempt, found=True, problem=problem)
    summary = verdict.get("summary", "")
    return GateRead(
        at=now,
        key=action.key,
        attempt=action.attempt,
        found=True,
        result=verdict["result"],
        summary=summary if isinstance(summary, str) else json.dumps(summary),
    )


def run_command(
    place: Path, argv: tuple[str, ...], record: Path, seconds: float | None, *, fenced: bool
) -> tuple[int | None, str]:
    """A declared command run in the place (:func:`command.run_within`).

    In a fence, if ``fenced``: a fence that cannot be drawn is a failure, never a run outside.
    """
    if not fenced:
        return command.run_within(place, argv, record, seconds)
    try:
        made = sandbox.in_fence(argv, place)
    except OSError as error:
        return 126, f"flume cannot fence {' '.join(argv)}: {error}"
    if made is None:
        return 126, f"flume cannot fence {' '.join(argv)}: git cannot say where {place}'s git is"
    wrapped, env, folder = made
    try:
        return command.run_within(place, wrapped, record, seconds, env)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run_tests(action: JudgeGate, clock: Callable[[], Instant], *, fenced: bool) -> GateRead:
    """Each declared command in turn, all within the deadline; no command: nothing passes."""
    if not action.tests:
        return GateRead(
            at=clock(),
            key=action.key,
            attempt=action.attempt,
            found=False,
            problem="the repository declares no tests command ([tests] command in .flume.toml)",
        )
    place = Path(action.path)
    record = command.record_of("tests", place)
    ends = time.monotonic() + action.deadline
    output = ""
    for argv in action.tests:
        left = ends - time.monotonic()
        status, output = run_command(place, tuple(argv), record, max(left, 0.0), fenced=fenced)
        if status is None:
            return GateRead(
                at=clock(),
                key=action.key,
                attempt=action.attempt,
                found=False,
                summary=output[-_TAIL:],
                problem=f"{' '.join(argv)} ran past the {action.deadline:.0f} s deadline",
            )
        if status != 0:
            return GateRead(
                at=clock(),
                key=action.key,
                attempt=action.attempt,
                found=True,
                code=status,
                summary=output[-_TAIL:],
            )
    return GateRead(
        at=clock(),
        key=action.key,
        attempt=action.attempt,
        found=True,
        code=0,
        summary=output[-_TAIL:],
    )
