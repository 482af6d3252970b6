"""Finalize end to end: the run's branch pushed to a bare origin, the PR command run once.

flume's test agent runs the one step (it commits); the kind then pushes the run's branch to a
bare repository on local disk (a real ``git push``) and runs a PR command that is a real program
of the test: it records its argument list and the body file it was given, and prints a URL. No
network. One test kills the supervisor while the PR command runs and shows it never runs twice;
two start the PR command's runner as a supervisor killed before naming it in ``.started`` would
leave it, and show it never runs the command; one races a push with a killed supervisor's push
still running, held in origin's pre-receive hook.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from pyrsistent import pvector

from flume.core.actions import Event, OpenPR, Push, Report
from flume.core.ids import BranchName, Instant, Sha
from flume.core.observations import Observation, PROpened, Pushed
from flume.core.place import Life, PauseCause, Paused
from flume.shell import process
from flume.shell.panes.tmux import Tmux
from flume.shell.perform import finalize
from flume.shell.store import places
from flume.shell.supervisor import client
from tests.integration.agents_kit import (
    agent_repository,
    decided,
    place_of,
    script,
    wait_for,
)
from tests.integration.places_kit import flume_process, run_git

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

#: The PR command: records its argv (and the body file's text) in a file, waits for a go file if
#: one is named, prints a URL. Run by flume with no shell.
PR_PROGRAM = """\
import json, os, sys, time
record, go = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
body = args[args.index("--body-file") + 1]
with open(record, "a", encoding="utf-8") as out:
    out.write(json.dumps({"argv": args, "body": open(body, encoding="utf-8").read()}) + "\\n")
deadline = time.monotonic() + 60
while go != "-" and not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.05)
print("Creating pull request for wf/ship into main")
print("https://example.test/acme/app/pull/7")
"""

SCRIPT = """
[[turn]]
match = ":code:1"
steps = [
    {write = {path = "GREETING.md", text = "hello\\n"}},
    {write = {path = "$board/code/handoff.md", text = "Said hello."}},
    {commit = "Say hello"},
]
"""


def _kind(pr_program: Path, record: Path, go: str, remote: str = "origin") -> str:
    argv = [
        sys.executable, str(pr_program), str(record), go, "--base", "{base}", "--head",
        "{branch}", "--title", "{title}", "--body-file", "{body}",
    ]  # fmt: skip
    return f"""\
[kind]
name = "wf"
body = ["code"]
finalize = {{ push = "{remote}", pr = {json.dumps(argv)} }}

[step.code]
prompt = "Build $brief; commit."
gate = "commit"
"""


def _setup(tmp_path: Path, go: str = "-") -> tuple[Path, Path, Path, Path]:
    """A repository with a bare origin, the kind file and the PR program; their paths."""
    repo = agent_repository(tmp_path)
    origin = tmp_path / "origin.git"
    run_git(tmp_path, "init", "-q", "--bare", str(origin))
    run_git(repo, "remote", "add", "origin", str(origin))
    program = tmp_path / "pr.py"
    program.write_text(PR_PROGRAM, encoding="utf-8")
    record = tmp_path / "pr-runs.jsonl"
    kind = tmp_path / "wf.toml"
    kind.write_text(_kind(program, record, go), encoding="utf-8")
    return repo, origin, kind, record


def _launch(tmp_path: Path, repo: Path, kind: Path, name: str = "ship") -> Path:
    agent_script = script(tmp_path, SCRIPT)
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind), "--name", name,
        "--brief", "Say hello\nin GREETING.md", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={agent_script}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / f"wf--{name}" / places.JOURNAL


def _runs(record: Path) -> list[dict[str, object]]:
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]


def test_the_run_branch_is_pushed_and_the_pr_command_runs_once(tmp_path: Path, panes: Tmux) -> None:
    """WF-FINALIZE-ONCE, WF-PUSH-ONLY-RUN-BRANCH: origin holds wf/ship alone; one PR, its URL."""
    del panes
    repo, origin, kind, record = _setup(tmp_path)
    path = _launch(tmp_path, repo, kind)
    wait_for(lambda: place_of(path).life is Life.FINISHED, 60, "the run to finish")
    place = place_of(path)
    heads = run_git(origin, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    assert heads == [f"refs/heads/wf/ship {place.head}"], "only the run's branch, at its head"
    (ran,) = _runs(record)
    argv = ran["argv"]
    assert isinstance(argv, list)
    assert argv[:6] == ["--base", "main", "--head", "wf/ship", "--title", "Say hello"]
    body = ran["body"]
    assert isinstance(body, str)
    assert "Say hello\nin GREETING.md" in body  # task.md carries the brief
    assert "## code\n\nSaid hello." in body
    shown = flume_process("status", "--json", "--repository", str(repo))
    (row,) = [r for r in json.loads(shown.stdout)["places"] if r["place"] == "wf--ship"]
    assert (row["pushed"], row["pr_url"]) == (place.head, "https://example.test/acme/app/pull/7")
    events = [r.event for r in decided(path, Report) if isinstance(r, Report)]
    assert events[-3:] == [Event.PUSHED, Event.PR_OPENED, Event.FINISHED]


def test_origin_gone_pauses_with_git_s_words_and_resume_pushes_once(
    tmp_path: Path, panes: Tmux
) -> None:
    """Origin gone at finalize: paused finalize-failed; restored, flume resume pushes once."""
    del panes
    repo, origin, kind, record = _setup(tmp_path)
    moved = tmp_path / "origin-away.git"
    path = _launch(tmp_path, repo, kind)
    origin.rename(moved)

    def paused() -> Paused | None:
        phase = place_of(path).stage.phase
        return phase if isinstance(phase, Paused) else None

    wait_for(paused, 60, "the run to pause")
    stalled = paused()
    assert stalled is not None
    assert stalled.cause is PauseCause.FINALIZE_FAILED
    assert "git push to origin" in stalled.words
    assert "does not appear to be a git repository" in stalled.words
    assert _runs(record) == []
    moved.rename(origin)
    resumed = flume_process("resume", "wf--ship", "--repository", str(repo))
    assert resumed.returncode == 0, resumed.stderr
    wait_for(lambda: place_of(path).life is Life.FINISHED, 60, "the run to finish")
    pushes = [a for a in decided(path, Push) if isinstance(a, Push)]
    assert len(pushes) == 2  # asked twice: the first failed
    assert len(_runs(record)) == 1
    assert run_git(origin, "rev-parse", "wf/ship").strip() == place_of(path).head


def test_a_supervisor_killed_while_the_pr_command_runs_never_runs_it_twice(
    tmp_path: Path, panes: Tmux
) -> None:
    """SIGKILL mid-PR: the command goes on; the next supervisor waits for it and reports it."""
    del panes
    go = tmp_path / "go"
    repo, _origin, kind, record = _setup(tmp_path, str(go))
    path = _launch(tmp_path, repo, kind)
    wait_for(lambda: _runs(record), 60, "the PR command to start")
    lock = places.state_dir() / "supervisor.lock"
    pid = int(lock.read_text().strip())
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not process.alive(pid), 10, "the supervisor to die")
    go.touch()
    assert client.ensure(wait=60) is not None
    wait_for(lambda: place_of(path).life is Life.FINISHED, 60, "the run to finish")
    assert len(_runs(record)) == 1
    opened = [a for a in decided(path, OpenPR) if isinstance(a, OpenPR)]
    assert [a.attempt for a in opened] == [1]
    assert place_of(path).pr_url == "https://example.test/acme/app/pull/7"


def test_a_push_to_a_remote_the_repository_lacks_is_refused_at_launch(tmp_path: Path) -> None:
    """Bad input: exit 2 naming the remote, nothing created."""
    repo, _origin, _kind_file, record = _setup(tmp_path)
    kind = tmp_path / "elsewhere.toml"
    kind.write_text(_kind(tmp_path / "pr.py", record, "-", remote="upstream"), encoding="utf-8")
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind), "--name", "ship",
        "--brief", "Say hello", "--agent", "test",
    )  # fmt: skip
    assert ran.returncode == 2
    assert "the remote 'upstream'" in ran.stderr
    assert not (repo / "places").exists()
    assert not places.journals_dir(repo).exists() or not any(places.journals_dir(repo).iterdir())


def _orphan(tmp_path: Path, record: Path) -> tuple[OpenPR, Path, int]:
    """A PR try, and its runner as a supervisor killed before naming it in ``.started`` left it.

    ``.started`` is written with the argument list alone and the runner started by the
    performer's own ``_start``, never named: the window between the two writes that a SIGKILL
    can fall in. The try, the folder of its files (the place's journal folder), the runner's pid.
    """
    program = tmp_path / "pr.py"
    program.write_text(PR_PROGRAM, encoding="utf-8")
    board = tmp_path / "board"
    board.mkdir()
    body = board / "pr-body.md"
    body.write_text("a body\n", encoding="utf-8")
    argv = [sys.executable, str(program), str(record), "-", "--body-file"]
    action = OpenPR(
        path=str(tmp_path),
        argv=pvector([*argv, "{body}"]),
        base=BranchName("main"),
        branch=BranchName("wf/ship"),
        title="Say hello",
        board=str(board),
    )
    folder = tmp_path / "journal"
    folder.mkdir()
    files = folder / f"pr-{action.attempt}"
    started, status, out = (files.with_suffix(s) for s in (".started", ".status", ".out"))
    started.write_text(json.dumps({"argv": [*argv, str(body)]}), encoding="utf-8")
    pid = finalize._start([*argv, str(body)], tmp_path, started, status, out)
    assert pid is not None
    return action, folder, pid


def _reaped(pid: int) -> int | None:
    """The runner's exit status, once it ends (it is this process's child)."""
    return finalize._STARTED.pop(pid).wait(timeout=30)


def test_a_runner_its_killed_supervisor_never_named_never_runs_the_pr_command(
    host: Path,
) -> None:
    """WF-FINALIZE-ONCE: SIGKILL between starting the runner and naming it in ``.started``.

    The next supervisor finds ``.started`` naming no runner, starts the try afresh and names its
    runner; the first runner, not named, ends without running the command: it ran once, and the
    run goes on (not a try that may have run, which would pause it).
    """
    record = host / "pr-runs.jsonl"
    action, folder, orphan = _orphan(host, record)
    (opened,) = finalize.open_pr(action, folder, Instant(0.0))
    assert isinstance(opened, PROpened), opened
    assert opened.url == "https://example.test/acme/app/pull/7"
    assert _reaped(orphan) == 0
    assert len(_runs(record)) == 1


def test_a_runner_never_named_gives_up_unrun(host: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner never named (no supervisor came back) gives up, having run nothing.

    No ``.status`` either: the next supervisor, finding ``.started`` naming no runner, starts the
    one try.
    """
    monkeypatch.setattr(finalize, "CLAIM_SECONDS", 0.2)
    record = host / "pr-runs.jsonl"
    action, folder, orphan = _orphan(host, record)
    assert _reaped(orphan) == 0
    assert _runs(record) == []
    assert not (folder / f"pr-{action.attempt}.status").exists()


#: origin's pre-receive hook: each push is counted in as it enters, then held until the test
#: writes its go file (go-1 for the first push to enter, go-2 for the second).
HOLD = """\
#!/bin/sh
n=$(ls "$GATE" | grep -c entered)
n=$((n + 1))
touch "$GATE/entered-$n"
while [ ! -e "$GATE/go-$n" ]; do sleep 0.02; done
"""


def test_a_push_that_loses_the_race_to_a_killed_supervisor_s_push_is_pushed(
    host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WF-FINALIZE-ONCE: a killed supervisor's push still running when the next one pushes.

    Both hold in origin's hook; the first lands the branch, so the second's ref update fails;
    the remote then holds the head, so it is reported pushed, not a failure that pauses the run.
    """
    repo, origin, _kind, _record = _setup(host)
    gate = host / "gate"
    gate.mkdir()
    hook = origin / "hooks" / "pre-receive"
    hook.write_text(HOLD, encoding="utf-8")
    hook.chmod(0o755)
    monkeypatch.setenv("GATE", str(gate))
    head = run_git(repo, "rev-parse", "main").strip()
    first = subprocess.Popen(  # noqa: S603 (git, the killed supervisor's push)
        ["git", "push", "--porcelain", "--", "origin", f"{head}:refs/heads/wf/ship"],  # noqa: S607
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for((gate / "entered-1").exists, 30, "the first push to reach origin's hook")
    action = Push(path=str(repo), remote="origin", branch=BranchName("wf/ship"), head=Sha(head))
    seen: list[Observation] = []
    second = threading.Thread(target=lambda: seen.extend(finalize.push(action, Instant(0.0))))
    second.start()
    wait_for((gate / "entered-2").exists, 30, "the second push to reach origin's hook")
    (gate / "go-1").touch()
    assert first.wait(timeout=30) == 0
    (gate / "go-2").touch()
    second.join(timeout=30)
    assert seen == [Pushed(at=Instant(0.0), remote="origin", branch=action.branch, head=Sha(head))]
    assert run_git(origin, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/wf/ship"]
