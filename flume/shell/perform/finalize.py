"""Finalize, the shell's part: the run's branch pushed, its pull request command run once.

Theory of operation. The core asks for one finalize act at a time
(:mod:`flume.core.workflow.finalize`).

``Push`` is observed before it acts: when ``git ls-remote`` finds the remote holding the run's
branch at the head the core named, it is reported pushed and nothing is pushed. Otherwise git
pushes exactly that head to the run's own branch on the remote (``<head>:refs/heads/<branch>``): no
``--force``, no other ref, never the base (WF-PUSH-ONLY-RUN-BRANCH); a remote that refuses (gone,
or its branch moved on) is a failure in git's own words, unless the remote is then seen holding the
head: a killed supervisor's push, still running when the next looked, got there first (a slow
remote outlives a restart), and the branch is pushed.

``OpenPR`` runs the kind's command at most once a try (WF-FINALIZE-ONCE), even across a supervisor
killed mid-command. Each try has files of its own in the place's journal folder (so another
repository's place of the same name, or this name launched again after tidy set the old journal
aside, never finds them): ``.started`` is written, with the argument list, before the command
starts, and the runner's process id and start time are added once the runner is started; the
command runs in a session of its own under that runner, which writes its output to ``.out`` and,
when it ends, its exit status to ``.status``. The runner starts the command only once ``.started``
names it: a supervisor killed between the two writes leaves a runner that never does (it gives up,
or finds another runner named), so the next, finding ``.started`` naming no runner, starts the try
afresh and names its own runner. A supervisor killed once the runner is named leaves the command
running; the next finds ``.started``, waits for ``.status`` and reports it: it never starts the
command again. A named runner gone with no ``.status`` (the machine went down) is a failure that
says the command may have run: a person looks, then ``flume resume`` makes a new try. Nothing a
caller writes reaches a shell: the command is the kind's declared argument list; ``{base}``,
``{branch}``, ``{title}`` and ``{body}`` are replaced inside arguments, ``{body}`` by a file
written from the board.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from flume.core.actions import ActionName, OpenPR, Push
from flume.core.ids import Instant
from flume.core.observations import ActionFailed, Observation, PROpened, Pushed
from flume.shell.tools import git

#: What a PR command's output keeps in the journal: its last 4 KiB.
MAX_OUTPUT = 4 * 1024
#: How long a PR command may run before it is ended and counted failed.
PR_SECONDS = 600.0
#: How long a runner waits to be named in its try's ``.started`` before it gives up, unrun.
CLAIM_SECONDS = 30.0
#: The runner: once its try's ``.started`` names it, the command, its output to the file it was
#: given, its status written at its end. Named by no ``.started`` (its supervisor was killed
#: before naming it, and the next named a runner of its own), it ends without running anything.
_RUNNER = """
import json, os, subprocess, sys, time
wait, started, status, argv = float(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
deadline = time.monotonic() + wait
named = None
while named is None and time.monotonic() < deadline:
    try:
        with open(started, encoding="utf-8") as claim:
            named = json.load(claim).get("pid")
    except (OSError, ValueError, AttributeError):
        pass
    if named is None:
        time.sleep(0.01)
if named != os.getpid():
    sys.exit(0)
try:
    code = subprocess.run(argv, stdin=subprocess.DEVNULL, check=False).returncode
except OSError as error:
    print(f"{argv[0]}: cannot run it ({error.strerror or error})", flush=True)
    code = 127
with open(status + ".part", "w", encoding="ascii") as written:
    written.write(str(code))
os.replace(status + ".part", status)
"""
_URL = re.compile(r"https?://[^\s<>\"']+")


def push(action: Push, at: Instant) -> list[Observation]:
    """Push the run's branch at ``action.head`` to its remote, unless the remote holds it."""
    where = Path(action.path)
    ref = f"refs/heads/{action.branch}"
    if action.head is None:
        return _failed(ActionName.PUSH, at, f"{action.branch} has no commit to push")
    pushed: list[Observation] = [
        Pushed(at=at, remote=action.remote, branch=action.branch, head=action.head)
    ]
    if _holds(where, action.remote, ref, action.head):
        return pushed
    ran = git.run(where, "push", "--porcelain", "--", action.remote, f"{action.head}:{ref}")
    if not ran.ok:
        if _holds(where, action.remote, ref, action.head):
            # Another push of this head won the race: a killed supervisor's, still running
            # when this one looked (a slow remote outlives a restart). Done, not failed.
            return pushed
        said = (ran.err.strip() or ran.out.strip()) or f"git push exited {ran.status}"
        return _failed(ActionName.PUSH, at, f"git push to {action.remote}: {said}")
    return pushed


def _holds(where: Path, remote: str, ref: str, head: str) -> bool:
    """The remote holds ``ref`` at ``head``, as ``git ls-remote`` sees it now."""
    listed = git.run(where, "ls-remote", "--", remote, ref)
    return listed.ok and listed.out.split("\t", 1)[0].strip() == head


def open_pr(action: OpenPR, folder: Path, at: Instant) -> list[Observation]:
    """Run the PR command once for this try; its URL, or the failure in its own words.

    ``folder``: the place's journal folder, where the try's files are kept.
    """
    files = folder / f"pr-{action.attempt}"
    started, status, out = (files.with_suffix(suffix) for suffix in (".started", ".status", ".out"))
    if _runner(started) is None:
        # No try started, or one whose supervisor was killed before naming its runner: that
        # runner never runs the command, so this try starts afresh and names its own.
        body = _write_body(action)
        names = {
            "base": action.base,
            "branch": action.branch,
            "title": action.title,
            "body": str(body),
        }
        argv = [
            re.sub(r"\{(base|branch|title|body)\}", lambda m: names[m.group(1)], argument)
            for argument in action.argv
        ]
        files.parent.mkdir(parents=True, exist_ok=True)
        # Written before the command starts, which its runner does only once named here.
        _write(started, json.dumps({"argv": argv}))
        pid = _start(argv, Path(action.path), started, status, out)
        if pid is None:
            return _failed(ActionName.OPEN_PR, at, f"{argv[0]}: cannot run it")
        _write(started, json.dumps({"argv": argv, "pid": pid, "since": _start_time(pid)}))
    code = _wait(started, status)
    said = _tail(out)
    if code is None:
        return _failed(
            ActionName.OPEN_PR,
            at,
            "the pull request command was started and ended without saying how it went "
            f"(or ran past {PR_SECONDS:.0f}s): it may have opened the pull request; look, then "
            f"resume. {said}".rstrip(),
        )
    if code != 0:
        return _failed(ActionName.OPEN_PR, at, f"exit {code}: {said}".rstrip())
    urls = _URL.findall(said)
    return [PROpened(at=at, url=urls[-1] if urls else "", output=said)]


def _runner(started: Path) -> int | None:
    """The runner the try's ``.started`` names; None: no try started, or its runner not named."""
    try:
        pid = json.loads(started.read_text(encoding="utf-8"))["pid"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pid if isinstance(pid, int) else None


def _start(argv: list[str], cwd: Path, started: Path, status: Path, out: Path) -> int | None:
    """The runner started in a session of its own (a supervisor's death does not end it).

    It waits to be named in ``started`` (the caller writes it next) before running anything.
    """
    runner = [sys.executable, "-c", _RUNNER, str(CLAIM_SECONDS), str(started), str(status)]
    with out.open("wb") as output:
        try:
            process = subprocess.Popen(  # noqa: S603 (the kind's own declaration, as argv)
                [*runner, *argv],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError:
            return None
    _reap_later(process)
    return process.pid


def _reap_later(process: subprocess.Popen[bytes]) -> None:
    """Keep the started runner's handle, so that it is reaped (not left a zombie) once waited."""
    _STARTED[process.pid] = process


_STARTED: dict[int, subprocess.Popen[bytes]] = {}


def _wait(started: Path, status: Path) -> int | None:
    """The try's exit status once its runner ends; None: it ended unsaid, or ran too long."""
    try:
        noted = json.loads(started.read_text(encoding="utf-8"))
        pid, since = int(noted["pid"]), noted.get("since")
    except (OSError, ValueError, KeyError, TypeError):
        pid, since = 0, None
    deadline = time.monotonic() + PR_SECONDS
    own = _STARTED.pop(pid, None)
    if own is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            own.wait(timeout=PR_SECONDS)
    while not status.exists() and _alive(pid, since) and time.monotonic() < deadline:
        time.sleep(0.05)  # another supervisor's runner: no handle to wait on, so look again
    if not status.exists():
        if _alive(pid, since):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, 9)
        return None
    try:
        return int(status.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started, in the kernel's ticks since boot (None where unknown)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # The command name, field 2, is in parentheses and may hold spaces: count after it.
    return stat.rpartition(")")[2].split()[19]


def _alive(pid: int, since: str | None) -> bool:
    """The runner ``pid`` still runs: the same process, not another given its id since."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return since is None or _start_time(pid) == since


def _write_body(action: OpenPR) -> Path:
    """The pull request's body from the board: the task, each step's handoff, the verdict."""
    board = Path(action.board) if action.board else Path(action.path)
    parts: list[str] = []
    with contextlib.suppress(OSError):
        parts.append((board / "task.md").read_text(encoding="utf-8").strip())
    for name in action.handoffs:
        with contextlib.suppress(OSError):
            handoff = (board / name / "handoff.md").read_text(encoding="utf-8").strip()
            if handoff:
                parts.append(f"## {name}\n\n{handoff}")
    if action.verdict is not None:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            verdict = json.loads(
                (board / action.verdict / "verdict.json").read_text(encoding="utf-8")
            )
            summary = str(verdict.get("summary", "")).strip()
            parts.append(
                f"## Verdict ({action.verdict}): {verdict.get('result', '')}\n\n{summary}".rstrip()
            )
    body = board / "pr-body.md"
    board.mkdir(parents=True, exist_ok=True)
    _write(body, "\n\n".join(part for part in parts if part) + "\n")
    return body


def _write(path: Path, text: str) -> None:
    part = path.with_name(path.name + ".part")
    part.write_text(text, encoding="utf-8")
    part.replace(path)


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-MAX_OUTPUT:].decode("utf-8", "replace").strip()


def _failed(action: ActionName, at: Instant, output: str) -> list[Observation]:
    return [ActionFailed(at=at, action=action, output=output)]
