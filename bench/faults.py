"""Issues 15 and 25's trials: faults injected at random moments into whole fix and workflow runs.

Issue 15's ten faults go into fix runs; issue 25's five into workflow runs with lanes
(``lanes``) and with a lead and its children (``crew``).

Each trial is a fix run on a host of its own (a private HOME, state folder and tmux socket, the
real ``flume`` CLI in its own processes, the real ``flume daemon``, real git and tmux) with
flume's test agent: its code stage writes a file and commits (a command that logs every commit
it makes, where it made it), its submit stage runs ``flume submit``. One of the ten faults is
injected at a random moment: once the place's journal holds a random number of lines (drawn
from the seed; the fault's window, e.g. while the agent works), a random fraction of a second
later. A fault that lasts "a while" is undone after a random delay, whatever flume says; a fault
a person must mend is mended only once flume names it (a stale lock that status names; the plain
folder left where a worktree was, when flume asks for it to be removed by hand).

The run is then driven to its end as an operator following ``flume status`` would, once any
passing fault is over: every two seconds it reads ``flume status`` and ``flume daemon status``
and takes the first way out named for a place that has not ended (or named by the output of
the way out it took last, or by what status says of the supervisor under its table): a clause
of commands run in order, ``flume retry|drop|tidy|proceed|resume|stop|daemon start|daemon
stop``, ``git -C R update-ref refs/heads/B SHA`` (a deleted branch
restored) or ``git -C R worktree prune``, as in "flume drop X, then flume tidy"; a clause naming
any other git command is left alone. Each way out is taken at most three times. A trial is:

- **survived**: every place of the trial ended (tidied, after landing or a drop) with no action
  beyond what the fault itself needs undone;
- **named**: status named a way out, the harness took it, and every place ended (a way out may
  also be ``flume resume X`` or ``flume retry X --step LANE``);
- **stuck**: neither, by the deadline (``--deadline``, 90 s from the fault); a launch refusing
  the .bare layout is named when it exits 2 with a message naming it, else stuck;
- **not-injected**: the fault could not be made here (fault 6 without mount), or the fix's own
  launch was refused: no verdict.

Counted besides: **commits lost** (a commit the agent logged that is reachable neither from
``main``, nor from a branch that status, tidy or drop named, nor from a running place's
branch), **tracebacks** (``Traceback (most recent call last)`` in the output of any flume
command the harness ran, in an agent's transcript: what ``flume submit`` printed to the
agent, or in a supervisor's log), and **wrong** outcomes a fault's own promise forbids (an
agent started after the fault working on the base, two agents for one stage attempt, a commit
dropped from ``main`` brought back by a landing, a paused supervisor reported as not running, a
flume command still running after a minute).

The faults (issue 15, items 1-10):

1. ``worktree-gone``: ``rm -rf`` of the place's worktree while its agent works.
2. ``drop-while-paused``: the supervisor SIGSTOPped; a second place launched and dropped; SIGCONT;
   ``flume tidy``.
3. ``two-state-folders``: a second host (another ``XDG_STATE_HOME``, HOME and tmux socket)
   launches a place of its own in the same repository, so a second supervisor follows it.
4. ``bare-layout``: the repository is ``proj/.bare`` with ``proj/.git`` holding
   ``gitdir: ./.bare`` and ``main`` checked out beside it; the fix is launched from ``proj``
   (the fault is there from the start: no moment is drawn).
5. ``journal-garbled``: one whole line of the journal overwritten in place by a line of an
   unknown type (``Bogus``) of the same length, mended (the original bytes written back) a
   while later.
6. ``journal-unwritable``: the repository's journal folder (``.git/flume``) lives on a small
   tmpfs mounted before the launch; the fault remounts it read-only (EROFS) or fills it
   (ENOSPC), alternately, for a while, then undoes it. Needs root (mount), in a private mount
   namespace (``unshare``) so nothing outlives the harness; without it the trial is reported
   as not injected.
7. ``lock-or-branch``: alternately, a stale ``.git/index.lock`` made in the main repository
   before landing (removed only once status names it), and the place's branch deleted with
   ``git update-ref -d`` while its agent works, before it commits.
8. ``base-rewritten``: the top commit of ``main`` (a person's) dropped with ``git reset --hard
   HEAD~1`` in the main checkout after the launch; it must not come back with the landing.
9. ``supervisor-paused``: the supervisor SIGSTOPped for a while, during which ``flume daemon
   status``, ``flume status`` and ``flume tell`` are run; then SIGCONT.
10. ``stop-stamp-future``: ``flume daemon stop``, its stop file rewritten an hour in the
    future (as a clock stepped back leaves it), then a second place launched.

The workflow kinds (``--kinds``, default ``fix`` alone): ``lanes`` runs examples/kinds/
slices.toml (a plan, two commit-gated lanes side by side merged in order, a review); ``crew``
runs examples/kinds/crew.toml (a plan, a lead that spawns three coders, one of whom asks and is
answered (the lead answers q1 of each of the three children, as it cannot tell which asked: a
lead retried after tmux was killed spawns again, and slice b may go to any of them; a lead tried
again reads its children so far in its prompt, spawns what it spawned, which starts nothing, and
answers a question still open), a review,
then finalize: a push to a bare ``origin`` on local disk and a PR program of
the trial's). Each lane's (child's) agent commits ``fixed-<place>.txt`` by the logging command;
slice-b's works two seconds longer than slice-a's, so that a finished lane waits for its merge.
A workflow run has ended once it finished (its lanes no longer at work), or once it is tidied.
Its faults:

- ``merge-lock``: a stale ``index.lock`` in the run's worktree, made while its lanes work, so
  that their merge meets it; removed only once flume names it.
- ``lane-branch-gone``: a finished lane's branch deleted (``git update-ref -d``) while it waits
  for its run's merge.
- ``worktrees-gone``: a working lane's worktree and its run's removed (``rm -rf``).
- ``tmux-killed``: the tmux server killed while the run (the crew's lead) waits on its lanes.
- ``supervisor-killed``: the supervisor SIGKILLed at a random line of the run's journals, and
  no command after it but the operator's look at ``flume status``.

Judged as the fix faults are, and besides: a workflow never lands, so the base moving is
**wrong**; a run that finished must hold in its head's tree each launched lane's file
(WF-FINISHED-HOLDS-ITS-WORK), else **wrong**. For every kind a ``Traceback`` in a host's
``supervisor.log`` counts among the **tracebacks**, and a branch counts as kept only when a
command's output names it exactly (``fix/t`` is not named by ``fix/tt``), or its place is not
tidied.

    .venv/bin/python bench/faults.py [--kinds fix,lanes,crew] [--trials 30] [--seed 1]
        [--fault NAME] [--deadline SECONDS] [--json]

Prints one line a trial (what the operator took, what went wrong, where a stuck run stands, what
the supervisors' logs hold) and a table by fault; exits 1 if any trial was stuck or not
injected, lost a commit, printed a traceback or went wrong, or if the trials did not all run.
Trials run one after another; on a 2-core machine a 30-trial run where every fault is survived
or named should take about 8 minutes (reckoned from the trials survived today); each stuck one
adds its deadline. Every process, tmux server, mount and folder a trial made is ended or removed
when it ends, Ctrl-C and SIGTERM included.
"""

# ruff: noqa: S607 (git, tmux, mount and unshare are found on PATH, as a person's shell finds them)

from __future__ import annotations

import argparse
import contextlib
import fcntl
import itertools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flume.core.observations import AgentStarted, Observation
from flume.core.place import Life, Place
from flume.core.settings import Settings
from flume.core.step import replay
from flume.shell.store import journal, places
from flume.testing import scenario

TRACEBACK = "Traceback (most recent call last)"
FAULTS = (
    "worktree-gone",
    "drop-while-paused",
    "two-state-folders",
    "bare-layout",
    "journal-garbled",
    "journal-unwritable",
    "lock-or-branch",
    "base-rewritten",
    "supervisor-paused",
    "stop-stamp-future",
)
#: The faults of workflow runs (issue 25 §3), injected into runs of ``lanes`` and ``crew``.
WORKFLOW_FAULTS = (
    "merge-lock",
    "lane-branch-gone",
    "worktrees-gone",
    "tmux-killed",
    "supervisor-killed",
)
#: The kinds a trial runs, and the faults injected into each.
KIND_FAULTS = {"fix": FAULTS, "lanes": WORKFLOW_FAULTS, "crew": WORKFLOW_FAULTS}
#: How long a run of each kind may take once its fault is in, unless ``--deadline`` says.
DEADLINES = {"fix": 90.0, "lanes": 150.0, "crew": 180.0}
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "kinds"
#: A workflow run's place, and its lanes' (or children's), as ``--name t`` names them.
WORKFLOW_PLACES = {
    "lanes": ("slices--t", ("slices--t+slice-a", "slices--t+slice-b")),
    "crew": ("crew--t", tuple(f"crew--t+coder-{n}" for n in (1, 2, 3))),
}
#: The pull request command of the crew kind's finalize: records its run, prints a URL.
PR_PROGRAM = """\
import sys
with open(sys.argv[1], "a", encoding="utf-8") as out:
    out.write(" ".join(sys.argv[2:]) + "\\n")
print("https://example.test/acme/app/pull/7")
"""
CONFIG = "[timing]\nquiet = 0.3\nconfirm = 2\nready = 20\n"
#: The commit a person made on main before the launch; fault 8 drops it.
PERSONS = "A person's commit"
#: How long any one flume command may take before it counts as hung.
COMMAND_SECONDS = 60.0
#: How many times one way out is taken at most, and how long apart.
TAKE_AT_MOST, TAKE_APART = 3, 3.0
#: How often the operator reads `flume status` (and `flume daemon status`).
LOOK_APART = 2.0
#: The flume commands a status line may name as a way out that the operator takes.
FLUME_STEP = re.compile(
    r"\bflume (retry|drop|tidy|proceed|stop|resume|daemon start|daemon stop)\b"
    r"(?: ((?:fix|change|slices|crew)--[\w+-]+(?:\.[\w+-]+)*))?"
    r"(?: (--step [\w-]+))?"
)
#: The git commands a way out may name that the operator takes: a deleted branch restored, the
#: records of deleted worktrees pruned.
GIT_STEP = re.compile(
    r"\bgit -C (\S+) (update-ref) (refs/heads/\S+) ([0-9a-f]{7,40})\b"
    r"|\bgit -C (\S+) (worktree) (prune)\b"
)
#: Any other git command named: a way out holding one is not taken.
OTHER_GIT = re.compile(r"\bgit (?:-C \S+ )?[a-z]")
#: The name the harness's re-run in a private mount namespace carries.
_IN_NAMESPACE = "FLUME_FAULTS_NAMESPACE"


class Interrupted(Exception):  # noqa: N818 (a signal, not an error)
    """SIGTERM or SIGINT arrived: clean up and leave."""


# --- hosts and commands --------------------------------------------------------------------


@attrs.define
class Host:
    """One host: its folder, and the environment its flume commands run with."""

    folder: Path
    env: dict[str, str]

    @classmethod
    def make(cls, folder: Path) -> Host:
        """A host whose HOME, XDG folders and tmux socket are in ``folder``."""
        (folder / "home").mkdir(parents=True, exist_ok=True)
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in {"TMUX", "TMUX_PANE", "CLAUDE_CONFIG_DIR", "CODEX_HOME", _IN_NAMESPACE}
        }
        env.update(scenario.GIT_IDENTITY)
        env.update(
            HOME=str(folder / "home"),
            XDG_STATE_HOME=str(folder / "state"),
            XDG_CONFIG_HOME=str(folder / "config"),
            XDG_DATA_HOME=str(folder / "data"),
            XDG_CACHE_HOME=str(folder / "cache"),
            FLUME_TMUX_SOCKET=str(folder / "tmux.sock"),
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        return cls(folder=folder, env=env)

    def supervisor(self) -> int | None:
        """The pid the supervisor's lock names, if that process lives."""
        lock = self.folder / "state" / "flume" / "supervisor.lock"
        try:
            text = lock.read_text(encoding="ascii").strip()
        except OSError:
            return None
        return int(text) if text.isdigit() and Path(f"/proc/{text}").exists() else None


@attrs.define
class Ran:
    """A flume command the harness ran."""

    argv: tuple[str, ...]
    code: int | None  #: None: it was still running at its deadline, and was killed
    out: str
    seconds: float


@attrs.define
class Work:
    """A place of the trial: its name, the host that launched it."""

    name: str
    host: Host
    launched: bool = True  #: False: its launch was refused (it never existed)
    #: A workflow run's lane or child: launched by its run, ended once it is not at work.
    lane: bool = False


@attrs.define
class Trial:
    """Everything one trial made and saw."""

    number: int
    fault: str
    occurrence: int  #: how many trials of this fault came before
    rng: random.Random
    folder: Path
    allowed: float  #: how long the run may take, once the fault is in
    deadline: float = 0.0
    hosts: list[Host] = attrs.Factory(list)
    works: list[Work] = attrs.Factory(list)
    repo: Path = Path()
    commits_log: Path = Path()
    script: Path = Path()
    mounts: list[Path] = attrs.Factory(list)
    moment: str = "-"
    undo: list[tuple[float, str, Callable[[], None]]] = attrs.Factory(list)
    remedy: Callable[[str], str | None] | None = None
    taken: list[str] = attrs.Factory(list)
    outputs: list[Ran] = attrs.Factory(list)
    wrong: list[str] = attrs.Factory(list)
    notes: list[str] = attrs.Factory(list)
    not_injected: str | None = None
    named_by_launch: bool = False  #: the launch refused the fault's layout, naming it
    fault_at: float = 0.0  #: when the fault was injected (seconds since the epoch)
    refused_unnamed: bool = False  #: the launch refused it, for a reason that does not name it
    kind: str = "fix"  #: fix, or a workflow's: lanes, crew
    base: str = ""  #: main's head once the repository was made (a workflow never lands)

    @property
    def host(self) -> Host:
        """The trial's own host (the first)."""
        return self.hosts[0]

    def flume(self, *args: str, host: Host | None = None, cwd: Path | None = None) -> Ran:
        """Run ``flume ARGS`` as its own process on ``host``; what it printed."""
        argv = (sys.executable, "-m", "flume", *args)
        started = time.monotonic()
        try:
            done = subprocess.run(  # noqa: S603 (our own interpreter and module)
                argv,
                cwd=cwd or self.repo,
                env=(host or self.host).env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=COMMAND_SECONDS,
                check=False,
            )
            ran = Ran(args, done.returncode, done.stdout + done.stderr, time.monotonic() - started)
        except subprocess.TimeoutExpired as timed_out:
            text = _text(timed_out.stdout) + _text(timed_out.stderr)
            ran = Ran(args, None, text, time.monotonic() - started)
            self.wrong.append(f"`flume {' '.join(args)}` still ran after {COMMAND_SECONDS:.0f}s")
        self.outputs.append(ran)
        return ran

    def git(self, *args: str, cwd: Path | None = None) -> str:
        """Run git (the harness's own, not flume's); its output; '' when it failed."""
        done = subprocess.run(  # noqa: S603 (fixed git arguments)
            ("git", *args),
            cwd=cwd or self.repo,
            env=self.host.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        return done.stdout if done.returncode == 0 else ""

    def journal(self, work: Work | None = None) -> Path:
        """The journal of ``work`` (default: the trial's first place), or where tidy set it aside.

        ``flume tidy`` moves a tidied place's journal to ``.tidied/<place>.<random>/<place>/``.
        """
        name = (work or self.works[0]).name
        folder = places.journals_dir(self.repo)
        path = folder / name / places.JOURNAL
        if path.exists():
            return path
        aside = sorted(
            folder.glob(f".tidied/{name}.*/{name}/{places.JOURNAL}"),
            key=lambda each: each.stat().st_mtime,
        )
        return aside[-1] if aside else path


def _text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else value


# --- what a journal says -------------------------------------------------------------------


def _observations(path: Path) -> list[Observation] | None:
    """The journal's observations; None when it cannot be read (garbled, gone, unwritable)."""
    try:
        return list(journal.read(path).observations)
    except Exception:  # noqa: BLE001 (a fault may leave any journal unreadable for a while)
        return None


def _place(path: Path) -> Place | None:
    seen = _observations(path)
    if not seen:
        return None
    try:
        return replay(Settings(), seen)
    except Exception:  # noqa: BLE001
        return None


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _ended(trial: Trial, work: Work) -> bool:
    """The place is tidied (after landing or a drop), or its launch was refused.

    A workflow's run has ended once it finished (its branch waits for a person to land it); a
    lane or child once it is no longer at work (finished, dropped, tidied), or, never launched
    by its run, once the run has ended.
    """
    if not work.launched:
        return True
    place = _place(trial.journal(work))
    if work.lane:
        if place is None:
            return _ended(trial, trial.works[0])
        return place.life not in {Life.MAKING, Life.ACTIVE}
    if trial.kind != "fix" and work is trial.works[0]:
        return place is not None and place.life in {Life.FINISHED, Life.TIDIED}
    return place is not None and place.life is Life.TIDIED


def _wait(predicate: Callable[[], object], seconds: float) -> bool:
    """Wait until ``predicate()`` holds, looking every 50 ms; whether it did."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if predicate():
                return True
        time.sleep(0.05)
    return False


# --- setting a trial up --------------------------------------------------------------------


def _commit_command(trial: Trial) -> str:
    """The shell command an agent commits by, logging where it ran and what it committed.

    It logs where it ran (the top folder and branch git resolves there, and when its agent
    began) and each commit it made, with a message of its own, so that a commit is found again
    after the lander rebased it, and an agent working on the base is seen. The file it writes
    is named after its place's folder, ``fixed-<place>.txt``, so that a run's tree shows whose
    change it holds.
    """
    log = trial.commits_log
    return (
        "n=$(date +%s%N); top=$(git rev-parse --show-toplevel 2>/dev/null); "
        "branch=$(git symbolic-ref -q --short HEAD 2>/dev/null); "
        'age=$(ps -o etimes= -p "$PPID" 2>/dev/null | tr -d " "); '
        "began=$(($(date +%s) - ${age:-0})); "
        f'printf "ran\\t%s\\t%s\\t%s\\t%s\\n" "$top" "$branch" "$PWD" "$began" >> {log}; '
        'f="fixed-$(basename "$PWD").txt"; echo "$n" >> "$f" && git add -A '
        f'&& git commit -qm "agent $n" && printf "commit\\tagent %s\\n" "$n" >> {log}'
    )


def _agent_script(trial: Trial) -> str:
    """The test agent's script for the trial's kind (:func:`_commit_command` commits)."""
    commit = json.dumps(_commit_command(trial))
    if trial.kind == "lanes":
        return f"""
[[turn]]
match = ":plan:"
steps = [{{write = {{path = "PLAN.md", text = "a; b\\n"}}}}]

[[turn]]
match = ":slice-a:"
steps = [{{say = "Building."}}, {{work = 1.0}}, {{run = ["sh", "-c", {commit}]}}, {{work = 1.0}}]

[[turn]]
match = ":slice-b:"
steps = [{{say = "Building."}}, {{work = 3.0}}, {{run = ["sh", "-c", {commit}]}}, {{work = 1.0}}]

[[turn]]
match = ":review-loop@"
steps = [{{write = {{path = "$board/review/verdict.json", text = '{{"result": "done"}}'}}}}]
"""
    if trial.kind == "crew":
        return f"""
[[turn]]
match = ":plan:"
steps = [{{write = {{path = "PLAN.md", text = "a\\nb\\nc\\n"}}}}]

[[turn]]
match = "Your children so far"
steps = [
    {{run = ["flume", "spawn", "--goal", "slice a"]}},
    {{run = ["flume", "spawn", "--goal", "slice b"]}},
    {{run = ["flume", "spawn", "--goal", "slice c"]}},
    {{run = ["flume", "answer", "crew--t+coder-1", "q1", "Hello"]}},
    {{run = ["flume", "answer", "crew--t+coder-2", "q1", "Hello"]}},
    {{run = ["flume", "answer", "crew--t+coder-3", "q1", "Hello"]}},
]

[[turn]]
match = ":lead:"
steps = [
    {{run = ["flume", "spawn", "--goal", "slice a"]}},
    {{run = ["flume", "spawn", "--goal", "slice b"]}},
    {{run = ["flume", "spawn", "--goal", "slice c"]}},
]

[[turn]]
match = "Build: slice b."
steps = [{{run = ["flume", "ask", "Hello or Hi?"]}}]

[[turn]]
match = "Build: slice"
steps = [{{say = "Building."}}, {{work = 1.0}}, {{run = ["sh", "-c", {commit}]}}, {{work = 1.0}}]

[[turn]]
match = "The answer to your question"
steps = [{{work = 1.0}}, {{run = ["sh", "-c", {commit}]}}]

[[turn]]
match = "asks q1: Hello or Hi?"
steps = [
    {{run = ["flume", "answer", "crew--t+coder-1", "q1", "Hello"]}},
    {{run = ["flume", "answer", "crew--t+coder-2", "q1", "Hello"]}},
    {{run = ["flume", "answer", "crew--t+coder-3", "q1", "Hello"]}},
]

[[turn]]
match = "All children of build are terminal"
steps = [{{write = {{path = "$board/lead/verdict.json", text = '{{"result": "done"}}'}}}}]

[[turn]]
match = ":review-loop@"
steps = [{{write = {{path = "$board/review/verdict.json", text = '{{"result": "done"}}'}}}}]
"""
    return f"""
[[turn]]
match = ":code:"
steps = [
  {{say = "Mending it."}},
  {{work = 1.0}},
  {{write = {{path = "notes.txt", text = "working\\n"}}}},
  {{run = ["sh", "-c", {commit}]}},
  {{work = 1.0}},
]

[[turn]]
match = ":submit:"
steps = [{{run = ["flume", "submit"]}}]
"""


def _repository(trial: Trial) -> None:
    """The trial's repository: a first commit, then a person's; the .bare layout for fault 4."""
    files = {".flume.toml": CONFIG, "README.md": "hullo\n", ".gitignore": "notes.txt\n"}
    source = scenario.make_repository(trial.folder / "repo", files)
    (source / "person.txt").write_text("a person's work\n", encoding="utf-8")
    trial.git("add", "-A", cwd=source)
    trial.git("commit", "-qm", PERSONS, cwd=source)
    trial.repo = source
    if trial.fault == "bare-layout":
        project = trial.folder / "proj"
        project.mkdir()
        trial.git("clone", "-q", "--bare", str(source), str(project / ".bare"), cwd=trial.folder)
        (project / ".git").write_text("gitdir: ./.bare\n", encoding="utf-8")
        trial.git("worktree", "add", "-q", "main", "main", cwd=project)
        shutil.rmtree(source)
        # Alternately launched from main's worktree beside .bare, and from the project folder.
        trial.repo = (project / "main" if trial.occurrence % 2 == 0 else project).resolve()
        trial.moment = f"launched in {trial.repo.relative_to(trial.folder.resolve())}"


def _launch(trial: Trial, name: str, host: Host | None = None) -> Work:
    """Launch a fix called ``name`` with the test agent; the place (refused, if it was)."""
    host = host or trial.host
    ran = trial.flume(
        "launch", "--repository", str(trial.repo), "--kind", "fix", "--name", name,
        "--brief", "Mend it.", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={trial.script}",
        host=host,
    )  # fmt: skip
    work = Work(name=f"fix--{name}", host=host)
    trial.works.append(work)
    # A launch that exits non-zero may still have journaled the place (one that could not wake
    # the supervisor says so): the place exists when its journal does.
    work.launched = ran.code == 0 or trial.journal(work).exists()
    if ran.code != 0:
        said = " ".join(ran.out.split())
        what = "journaled" if work.launched else "refused"
        trial.notes.append(f"launch of {work.name} exited {ran.code} ({what}): {said[:240]}")
    return work


def _launch_workflow(trial: Trial) -> Work:
    """Launch the trial's workflow run (slices.toml, or crew.toml finalizing to a bare origin).

    The crew's finalize pushes to an ``origin`` on local disk and runs a PR program of the
    trial's that records its run and prints a URL. Its lanes (children) are the trial's works
    after the run's, launched by the run.
    """
    run, lanes = WORKFLOW_PLACES[trial.kind]
    kind = EXAMPLES / "slices.toml"
    if trial.kind == "crew":
        origin, program = trial.folder / "origin.git", trial.folder / "pr.py"
        trial.git("init", "-q", "--bare", str(origin), cwd=trial.folder)
        trial.git("remote", "add", "origin", str(origin))
        program.write_text(PR_PROGRAM, encoding="utf-8")
        argv = [
            sys.executable, str(program), str(trial.folder / "pr-runs.txt"), "--base", "{base}",
            "--head", "{branch}", "--title", "{title}", "--body-file", "{body}",
        ]  # fmt: skip
        text = (EXAMPLES / "crew.toml").read_text(encoding="utf-8")
        start = text.index("finalize = ")
        end = text.index("\n", start)
        kind = trial.folder / "crew.toml"
        kind.write_text(
            f'{text[:start]}finalize = {{ push = "origin", pr = {json.dumps(argv)} }}{text[end:]}',
            encoding="utf-8",
        )
    ran = trial.flume(
        "launch", "--repository", str(trial.repo), "--kind-file", str(kind), "--name", "t",
        "--brief", "Say hello", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={trial.script}",
    )  # fmt: skip
    work = Work(name=run, host=trial.host)
    trial.works.append(work)
    work.launched = ran.code == 0 or trial.journal(work).exists()
    if ran.code != 0:
        trial.notes.append(f"launch of {run} exited {ran.code}: {' '.join(ran.out.split())[:240]}")
    trial.works.extend(Work(name=lane, host=trial.host, lane=True) for lane in lanes)
    return work


def _moment(trial: Trial, low: int, high: int) -> None:
    """Wait for a random moment: the journal holding a random number of lines, and a bit."""
    target = trial.rng.randint(low, high)
    path = trial.journal()
    _wait(lambda: _lines(path) >= target or _ended(trial, trial.works[0]), 60)
    time.sleep(trial.rng.uniform(0, 0.25))  # a point between two lines, maybe mid-action
    trial.fault_at = time.time()
    trial.moment = f"line {target}"
    place = _place(path)
    if place is not None and place.life is not Life.ACTIVE:
        trial.notes.append(f"the fault came once the place was {place.life.value}")


def _later(trial: Trial, low: float, high: float, what: str, undo: Callable[[], None]) -> None:
    """Undo the fault after a random while, whatever flume says meanwhile."""
    trial.undo.append((time.monotonic() + trial.rng.uniform(low, high), what, undo))


def _signal(pid: int | None, number: signal.Signals) -> None:
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, number)


def _commands_meanwhile(trial: Trial) -> None:
    """What a person runs while the fault lasts: status, daemon status, a tell."""
    trial.flume("status")
    trial.flume("daemon", "status")
    trial.flume("tell", trial.works[0].name, "A note while something is wrong.")


# --- the ten faults ------------------------------------------------------------------------


def worktree_gone(trial: Trial) -> None:
    """1: the place's worktree removed by hand while its agent works.

    The agent's next write makes a plain folder there; where flume asks a person to remove
    that by hand (naming the folder), the operator does.
    """
    _moment(trial, 3, 12)
    folder = trial.repo / "places" / trial.works[0].name
    shutil.rmtree(folder, ignore_errors=True)
    _rm_by_hand(trial, [folder])


def drop_while_paused(trial: Trial) -> None:
    """2: the supervisor paused; a place launched then dropped; the supervisor goes on."""
    _moment(trial, 1, 22)
    pid = trial.host.supervisor()
    _signal(pid, signal.SIGSTOP)
    try:
        work = _launch(trial, "y")
        if work.launched:
            trial.flume("drop", work.name)
    finally:
        _signal(pid, signal.SIGCONT)
    trial.flume("tidy")  # the drop's own end: tidy removes what was dropped


def two_state_folders(trial: Trial) -> None:
    """3: a second host, its own state folder, launches in the same repository."""
    _moment(trial, 1, 20)
    other = Host.make(trial.folder / "h2")
    trial.hosts.append(other)
    _launch(trial, "b", host=other)


def bare_layout(trial: Trial) -> None:
    """4: the repository is in the .bare layout from the start (see :func:`_repository`)."""


def journal_garbled(trial: Trial) -> None:
    """5: a journal line garbled, then mended in place, a while later.

    Alternately: a line of an unknown type (``Bogus``) appended under the journal's lock, as a
    foreign writer would, and later cut away again under the lock; or a line already there
    overwritten in place by one of the same length, and later written back.
    """
    _moment(trial, 3, 20)
    path = trial.journal()
    bogus = b'{"type":"Bogus"}'
    if trial.occurrence % 2 == 0:
        with _journal_lock(path) as descriptor:
            offset = os.fstat(descriptor).st_size
            os.pwrite(descriptor, bogus + b"\n", offset)
        trial.moment += ", Bogus appended"

        def mend() -> None:
            with _journal_lock(path) as descriptor:
                data = path.read_bytes()
                if data[offset : offset + len(bogus) + 1] == bogus + b"\n":
                    rest = data[offset + len(bogus) + 1 :]
                    os.pwrite(descriptor, rest, offset)
                    os.ftruncate(descriptor, offset + len(rest))

    else:
        data = path.read_bytes()
        starts = [0] + [index + 1 for index, byte in enumerate(data) if byte == ord("\n")]
        whole = list(itertools.pairwise(starts))
        line = trial.rng.randrange(len(whole))
        start, end = whole[line][0], whole[line][1] - 1  # without its newline
        original = data[start:end]
        garbled = bogus[:-1] + b" " * (len(original) - len(bogus)) + b"}"
        with _journal_lock(path) as descriptor:
            os.pwrite(descriptor, garbled, start)
        trial.moment += f", line {line + 1} overwritten"

        def mend() -> None:
            with _journal_lock(path) as descriptor:
                os.pwrite(descriptor, original, start)

    _commands_meanwhile(trial)
    _later(trial, 1.0, 4.0, "the journal mended", mend)


@contextlib.contextmanager
def _journal_lock(path: Path) -> Iterator[int]:
    """The journal open for writing under its writers' lock (flock), as flume's writers hold it.

    Not opened to append: Linux's pwrite appends to such a file whatever the offset.
    """
    descriptor = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield descriptor
    finally:
        os.close(descriptor)


def journal_unwritable(trial: Trial) -> None:
    """6: the journal folder's file system read-only, or full, for a while."""
    folder = places.journals_dir(trial.repo)
    if folder not in trial.mounts:
        trial.not_injected = "the journal folder is not on a file system of the harness's own"
        return
    _moment(trial, 2, 20)
    if trial.occurrence % 2 == 0:
        _remount(folder, "ro")()
        trial.moment += ", read-only"
        restore = _remount(folder, "rw")
    else:
        filler = folder / ".filler"
        with contextlib.suppress(OSError), filler.open("wb") as out:
            chunk = b"\0" * 65536
            while True:
                out.write(chunk)
                out.flush()
        trial.moment += ", full"

        def restore() -> None:
            filler.unlink(missing_ok=True)

    _commands_meanwhile(trial)
    _later(trial, 2.0, 5.0, "the journal folder writable again", restore)


def _remount(folder: Path, mode: str) -> Callable[[], None]:
    """Something that remounts ``folder``'s file system ``mode`` (ro or rw)."""

    def remount() -> None:
        subprocess.run(  # noqa: S603 (fixed arguments)
            ("mount", "-o", f"remount,{mode}", str(folder)), check=True, timeout=10
        )

    return remount


def lock_or_branch(trial: Trial) -> None:
    """7: a stale index.lock in the main repository, or the place's branch deleted by hand."""
    if trial.occurrence % 2 == 0:
        _moment(trial, 3, 20)
        _stale_lock(trial, Path(trial.git("rev-parse", "--absolute-git-dir").strip()))
        trial.moment += ", index.lock"
    else:
        _moment(trial, 3, 6)
        trial.git("update-ref", "-d", "refs/heads/fix/t")
        trial.moment += ", branch deleted"


def _stale_lock(trial: Trial, git_dir: Path) -> None:
    """A stale ``index.lock`` made in ``git_dir``, removed only once flume names it."""
    lock = git_dir / "index.lock"
    lock.write_bytes(b"")

    def remedy(said: str) -> str | None:
        if "index.lock" in said and lock.exists():
            lock.unlink()
            return f"rm {lock}"
        return None

    trial.remedy = remedy


def base_rewritten(trial: Trial) -> None:
    """8: the person's commit dropped from main after the launch."""
    _moment(trial, 1, 20)
    if trial.git("log", "-1", "--format=%s", "main").strip() == PERSONS:
        trial.git("reset", "-q", "--hard", "HEAD~1")
    else:
        trial.notes.append("main had moved on: nothing dropped")


def supervisor_paused(trial: Trial) -> None:
    """9: the supervisor paused for a while as a person runs commands."""
    _moment(trial, 1, 22)
    pid = trial.host.supervisor()
    _signal(pid, signal.SIGSTOP)
    try:
        said = trial.flume("daemon", "status")
        if "not running" in said.out:
            trial.wrong.append("daemon status said the paused supervisor was not running")
        trial.flume("status")
        trial.flume("tell", trial.works[0].name, "A note while the supervisor is paused.")
    finally:
        _later(trial, 0.0, 3.0, "SIGCONT", lambda: _signal(pid, signal.SIGCONT))


def stop_stamp_future(trial: Trial) -> None:
    """10: a daemon stop whose stamp a clock stepped back leaves in the future, then a launch."""
    _moment(trial, 1, 20)
    trial.flume("daemon", "stop")
    stopped = trial.host.folder / "state" / "flume" / "supervisor.stopped"
    stopped.parent.mkdir(parents=True, exist_ok=True)
    stopped.write_text(f"{time.time() + 3600!r}\n", encoding="utf-8")
    _launch(trial, "u")


# --- the faults of workflow runs (issue 25 section 3) -------------------------------------


def _lanes_of(trial: Trial) -> list[Work]:
    """The run's lanes (or children), launched or not."""
    return [work for work in trial.works if work.lane]


def _life(trial: Trial, work: Work) -> Life | None:
    place = _place(trial.journal(work))
    return None if place is None else place.life


def _workflow_moment(trial: Trial, low: int, high: int, *, lanes_only: bool = True) -> None:
    """Wait for a random moment of a workflow run, and a bit.

    The moment: its lanes' journals (or all of the run's journals) hold a random number of
    lines together.
    """
    target = trial.rng.randint(low, high)
    works = _lanes_of(trial) if lanes_only else trial.works

    def lines() -> int:
        return sum(_lines(trial.journal(work)) for work in works)

    _wait(lambda: lines() >= target or _ended(trial, trial.works[0]), 120)
    time.sleep(trial.rng.uniform(0, 0.25))  # a point between two lines, maybe mid-action
    trial.fault_at = time.time()
    trial.moment = f"{'lane ' if lanes_only else ''}line {target}"
    life = _life(trial, trial.works[0])
    if life is not Life.ACTIVE:
        trial.notes.append(f"the fault came once the run was {life.value if life else 'gone'}")


def _rm_by_hand(trial: Trial, folders: list[Path]) -> None:
    """Where flume asks a person to remove one of ``folders`` by hand, the operator does."""

    def remedy(said: str) -> str | None:
        for folder in folders:
            asked = any("by hand" in line and str(folder) in line for line in said.splitlines())
            if asked and folder.exists():
                shutil.rmtree(folder, ignore_errors=True)
                return f"rm -rf {folder}"
        return None

    trial.remedy = remedy


def merge_lock(trial: Trial) -> None:
    """W1: a stale index.lock in the run's worktree, made while its lanes work.

    The lanes' merge meets it; the operator removes it once flume names it.
    """
    _workflow_moment(trial, 1, 12)
    worktree = trial.repo / "places" / trial.works[0].name
    git_dir = trial.git("rev-parse", "--absolute-git-dir", cwd=worktree).strip()
    if not git_dir:
        trial.not_injected = f"no worktree of the run at {worktree}"
        return
    _stale_lock(trial, Path(git_dir))
    trial.moment += ", index.lock in the run's worktree"


def lane_branch_gone(trial: Trial) -> None:
    """W2: a finished lane's branch deleted by hand, as it waits for its run's merge."""
    lanes = _lanes_of(trial)
    _wait(
        lambda: (
            any(_life(trial, lane) is Life.FINISHED for lane in lanes)
            or _ended(trial, trial.works[0])
        ),
        120,
    )
    time.sleep(trial.rng.uniform(0, 0.25))
    trial.fault_at = time.time()
    finished = [lane for lane in lanes if _life(trial, lane) is Life.FINISHED]
    if not finished:
        trial.not_injected = "no lane was finished (and not yet tidied) before the run ended"
        return
    lane = trial.rng.choice(finished)
    branch = lane.name.replace("--", "/", 1)
    trial.git("update-ref", "-d", f"refs/heads/{branch}")
    trial.moment = f"{lane.name.split('+')[-1]} finished, its branch deleted"
    merged = trial.git("ls-tree", "--name-only", trial.works[0].name.replace("--", "/", 1))
    if f"fixed-{lane.name}.txt" in merged.split():
        trial.notes.append(f"{lane.name} was merged before its branch was deleted")


def worktrees_gone(trial: Trial) -> None:
    """W3: a working lane's worktree and its run's removed by hand (``rm -rf``)."""
    _workflow_moment(trial, 3, 12)
    working = [lane for lane in _lanes_of(trial) if _life(trial, lane) is Life.ACTIVE]
    lane = trial.rng.choice(working) if working else _lanes_of(trial)[0]
    folders = [trial.repo / "places" / trial.works[0].name, trial.repo / "places" / lane.name]
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    trial.moment += f", the run's and {lane.name.split('+')[-1]}'s worktrees removed"
    _rm_by_hand(trial, folders)


def tmux_killed(trial: Trial) -> None:
    """W4: tmux's server killed while the run (the crew's lead) waits on its lanes."""
    _workflow_moment(trial, 2, 16)
    subprocess.run(  # noqa: S603 (fixed arguments)
        ("tmux", "-S", str(trial.host.folder / "tmux.sock"), "kill-server"),
        capture_output=True,
        timeout=10,
        check=False,
    )
    trial.moment += ", tmux killed"


def supervisor_killed(trial: Trial) -> None:
    """W5: the supervisor SIGKILLed, and no command after it but the operator's look."""
    _workflow_moment(trial, 1, 60 if trial.kind == "lanes" else 150, lanes_only=False)
    pid = trial.host.supervisor()
    if pid is None:
        trial.notes.append("no supervisor was running at the moment")
    _signal(pid, signal.SIGKILL)
    trial.moment += ", SIGKILL"


INJECT: dict[str, Callable[[Trial], None]] = {
    "merge-lock": merge_lock,
    "lane-branch-gone": lane_branch_gone,
    "worktrees-gone": worktrees_gone,
    "tmux-killed": tmux_killed,
    "supervisor-killed": supervisor_killed,
    "worktree-gone": worktree_gone,
    "drop-while-paused": drop_while_paused,
    "two-state-folders": two_state_folders,
    "bare-layout": bare_layout,
    "journal-garbled": journal_garbled,
    "journal-unwritable": journal_unwritable,
    "lock-or-branch": lock_or_branch,
    "base-rewritten": base_rewritten,
    "supervisor-paused": supervisor_paused,
    "stop-stamp-future": stop_stamp_future,
}


# --- the operator --------------------------------------------------------------------------


def _undo_due(trial: Trial, *, everything: bool = False) -> None:
    now = time.monotonic()
    for entry in list(trial.undo):
        due, what, undo = entry
        if everything or due <= now:
            trial.undo.remove(entry)
            try:
                undo()
            except (OSError, subprocess.SubprocessError) as error:
                trial.notes.append(f"undoing the fault ({what}) failed: {error}")


def _way_outs(text: str, pending: set[str], *, anywhere: bool = False) -> list[tuple[str, ...]]:
    """The ways out ``text`` names for a place that has not ended, first named first.

    A way out is a clause (lines split at ";") naming commands the operator can run, in order
    ("flume drop X, then flume tidy"; "restore it with git -C R update-ref refs/heads/B SHA,
    then flume retry X"); one naming another git command is left alone. Each command is a
    tuple of words: ("flume", "drop", "fix--x"), ("git", "-C", R, "update-ref", B, SHA). A line
    of status counts when it names such a place; with ``anywhere`` (the output of the way out
    just taken, which may name the next step: "then run flume tidy"), every line does.
    """
    found: list[tuple[str, ...]] = []
    for line in text.splitlines():
        named = [place for place in sorted(pending) if place in line]
        if not (named or anywhere):
            continue
        for clause in line.split(";"):
            steps = _steps(clause, pending, named)
            if steps and not OTHER_GIT.search(GIT_STEP.sub("", clause)):
                found.append(tuple(" ".join(step) for step in steps))
    return list(dict.fromkeys(found))


def _steps(clause: str, pending: set[str], named: list[str]) -> list[tuple[str, ...]]:
    """The commands ``clause`` names, in order; [] when one names a place that has ended."""
    steps = [
        (match.start(), ("git", "-C", *(word for word in match.groups() if word)))
        for match in GIT_STEP.finditer(clause)
    ]
    for match in FLUME_STEP.finditer(clause):
        verb, place = match.group(1), match.group(2)
        if verb in {"tidy", "daemon start", "daemon stop"}:
            steps.append((match.start(), ("flume", *verb.split())))
        elif place in pending or (place is None and named):
            option = (match.group(3) or "").split()
            steps.append((match.start(), ("flume", verb, place or named[0], *option)))
        else:
            return []
    return [step for _, step in sorted(steps)]


def _supervisor_said(text: str) -> str:
    """What ``text`` says of the supervisor, a line each, its wrapped lines joined again.

    ``flume status`` says under its table, naming no place, that the supervisor is not running
    and the command that starts it, wrapped at the table's width (its next lines indented).
    """
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("supervisor:"):
            blocks.append([line])
        elif blocks and line[:1].isspace() and line.strip():
            blocks[-1].append(line.strip())
        elif blocks and blocks[-1]:
            blocks.append([])
    return "\n".join(" ".join(block) for block in blocks if block)


@attrs.define
class _Operator:
    """A person following `flume status`: what they took, how often, and what it said."""

    trial: Trial
    counts: dict[tuple[str, ...], int] = attrs.Factory(dict)
    last: dict[tuple[str, ...], float] = attrs.Factory(dict)
    said_last: str = ""

    def look(self, host: Host, names: set[str]) -> None:
        """Read status on ``host``; mend what it names; take the first way out not worn out."""
        trial = self.trial
        said = trial.flume("status", host=host).out + trial.flume("daemon", "status", host=host).out
        if trial.remedy is not None:
            mended = trial.remedy(f"{said}\n{self.said_last}")
            if mended is not None:
                trial.taken.append(mended)
        if trial.undo:
            return  # a fault that lasts a while is waited out before any way out is taken
        now = time.monotonic()
        ways = (
            _way_outs(said, names)
            + _way_outs(_supervisor_said(said), names, anywhere=True)
            + _way_outs(self.said_last, names, anywhere=True)
        )
        for way in ways:
            if (
                self.counts.get(way, 0) < TAKE_AT_MOST
                and now - self.last.get(way, -99) >= TAKE_APART
            ):
                self.counts[way] = self.counts.get(way, 0) + 1
                self.last[way] = now
                trial.taken.append(", then ".join(way))
                self.said_last = "".join(_take(trial, step, host) for step in way)
                return  # one way out a look: the next look shows where it led


def operate(trial: Trial) -> bool:
    """Follow `flume status` until every place ended, or the deadline; whether they ended."""
    operator = _Operator(trial)
    next_look = 0.0
    while True:
        _undo_due(trial)
        pending = [work for work in trial.works if not _ended(trial, work)]
        if not pending:
            return True
        now = time.monotonic()
        if now > trial.deadline:
            return False
        if now < next_look:
            time.sleep(0.1)
            continue
        next_look = now + LOOK_APART
        for host in {id(work.host): work.host for work in pending}.values():
            operator.look(host, {work.name for work in pending if work.host is host})


def _take(trial: Trial, step: str, host: Host) -> str:
    """Run one step of a way out; what it printed."""
    words = tuple(step.split(" "))
    if words[0] == "git":
        return trial.git(*words[1:], cwd=trial.folder)
    return trial.flume(*words[1:], host=host).out


# --- after the run -------------------------------------------------------------------------


def _lost_commits(trial: Trial) -> list[str]:
    """The agent's commits reachable neither from main nor from a kept branch flume names."""
    logged = trial.commits_log.read_text() if trial.commits_log.exists() else ""
    made = [line.split("\t")[1] for line in logged.splitlines() if line.startswith("commit\t")]
    if not made:
        return []
    # A branch counts when a command other than the launch names it (status, tidy, drop: the
    # launch names every place's branch), or when it is the branch of a place still running.
    said = "\n".join(ran.out for ran in trial.outputs if ran.argv[:1] != ("launch",))
    running = {
        work.name.replace("--", "/", 1)
        for work in trial.works
        if work.launched and _life(trial, work) not in {Life.TIDIED, None}
    }
    heads = trial.git("for-each-ref", "--format=%(refname:short)", "refs/heads").split()
    kept = [head for head in heads if head != "main" and (_named(head, said) or head in running)]
    reachable = set(trial.git("log", "--format=%s", "main", *kept).splitlines())
    return [message for message in made if message not in reachable]


def _named(branch: str, text: str) -> bool:
    """``text`` names ``branch`` exactly, not as a part of a longer name.

    Not ``fix/t`` in ``fix/tt`` nor ``crew/t`` in ``crew/t+coder-1``; a full stop may follow it.
    """
    edge = r"[\w/+-]"
    pattern = rf"(?<!{edge})(?<!\.){re.escape(branch)}(?!{edge})(?!\.[\w/+-])"
    return re.search(pattern, text) is not None


def _workflow_wrong(trial: Trial) -> None:
    """A workflow run's promises: the base unmoved, and a finished run holds its lanes' work.

    WF-FINISHED-HOLDS-ITS-WORK: a run that finished holds, in its head's tree, the file each of
    its lanes (children) that was launched and not dropped committed (``fixed-<lane>.txt``).
    """
    if trial.git("rev-parse", "main").strip() != trial.base:
        trial.wrong.append("the base moved, and a workflow run never lands")
    run = _place(trial.journal(trial.works[0]))
    if run is None or run.life is not Life.FINISHED:
        return
    tree = set(trial.git("ls-tree", "-r", "--name-only", str(run.head)).split())
    for lane in _lanes_of(trial):
        life = _life(trial, lane)
        if life is None or life is Life.DROPPED:
            trial.notes.append(f"{lane.name} {'dropped' if life else 'never launched'}")
            continue
        if f"fixed-{lane.name}.txt" not in tree:
            trial.wrong.append(
                f"the run finished without {lane.name}'s change in its head "
                f"{str(run.head)[:10]} (WF-FINISHED-HOLDS-ITS-WORK)"
            )


def _wrong_after(trial: Trial) -> None:
    """The promises a run can break besides losing commits."""
    logged = trial.commits_log.read_text() if trial.commits_log.exists() else ""
    names = {work.name for work in trial.works}
    for line in logged.splitlines():
        kind, *fields = line.split("\t")
        if kind != "ran" or len(fields) != 4:  # the log's four fields
            continue
        top, branch, where, began = fields
        if Path(top).name in names and branch not in {"", "main"}:
            continue
        said = (
            f"an agent {{}} worked in {where}, which git resolves to {top or 'no repository'} "
            f"on {branch or 'no branch'}"
        )
        # The agent at work when the fault came may write on where its worktree was; one
        # started after it (a second late, for the agent's start time in whole seconds) must not.
        if began.isdigit() and trial.fault_at and int(began) > trial.fault_at + 1:
            trial.wrong.append(said.format("started after the fault"))
        else:
            trial.notes.append(said.format("at work when the fault came"))
    for work in trial.works:
        seen = _observations(trial.journal(work)) if work.launched else None
        starts: dict[tuple[str, int], set[str]] = {}
        for each in seen or []:
            if isinstance(each, AgentStarted):
                starts.setdefault((each.stage, each.attempt), set()).add(each.session)
        trial.wrong.extend(
            f"{work.name} {stage}#{attempt}: {len(sessions)} agents"
            for (stage, attempt), sessions in starts.items()
            if len(sessions) > 1
        )
    if trial.fault == "base-rewritten" and PERSONS in trial.git("log", "--format=%s", "main"):
        trial.wrong.append("the commit dropped from main came back with the landing")
    if trial.kind != "fix":
        _workflow_wrong(trial)


def _tracebacks(trial: Trial) -> list[str]:
    """Where a traceback reached a user: a command's output, or an agent's transcript."""
    found = [f"`flume {' '.join(ran.argv)[:60]}`" for ran in trial.outputs if TRACEBACK in ran.out]
    for host in trial.hosts:
        with contextlib.suppress(OSError):
            log = (host.folder / "state" / "flume" / "supervisor.log").read_text(errors="replace")
            found.extend([f"{host.folder.name}'s supervisor.log"] * log.count(TRACEBACK))
        agents = host.folder / "state" / "flume" / "test-agent"
        for path in agents.rglob("*.jsonl") if agents.is_dir() else []:
            with contextlib.suppress(OSError):
                if TRACEBACK in path.read_text(errors="replace"):
                    found.append(f"the transcript {path.name}")
    return found


def _logged(trial: Trial) -> None:
    """Note what the supervisors' logs hold: tracebacks (each one's exception) and errno.

    The tracebacks count as such (:func:`_tracebacks`); the note says what each raised.
    """
    for host in trial.hosts:
        try:
            text = (host.folder / "state" / "flume" / "supervisor.log").read_text(errors="replace")
        except OSError:
            continue
        tracebacks = text.count(TRACEBACK)
        raised = re.findall(rf"{re.escape(TRACEBACK)}:\n(?:[ \t].*\n)*(.+)", text)
        errors = sorted(set(re.findall(r"\[Errno \d+\] [^:'\n]+", text)))
        if tracebacks or errors:
            trial.notes.append(
                f"{host.folder.name}'s supervisor log: {tracebacks} tracebacks"
                + (f" ({'; '.join(dict.fromkeys(r[:160] for r in raised))})" if raised else "")
                + (f", {'; '.join(errors)}" if errors else "")
            )


def _status_said(trial: Trial) -> list[str]:
    """What the last `flume status` said of the places that did not end, a line each."""
    pending = [work.name for work in trial.works if not _ended(trial, work)]
    last = next((ran.out for ran in reversed(trial.outputs) if ran.argv == ("status",)), "")
    lines = [line.strip() for line in last.splitlines() if any(p in line for p in pending)]
    return [f"status: {line[:200]}" for line in lines if ":" in line][:3]


def _where(trial: Trial) -> str:
    """Where each place that has not ended stands."""
    stands = []
    for work in trial.works:
        if _ended(trial, work):
            continue
        place = _place(trial.journal(work))
        if place is None:
            missing = work.lane and not trial.journal(work).exists()
            stands.append(f"{work.name}: {'not launched' if missing else 'journal unreadable'}")
            continue
        stage = place.stage
        stands.append(
            f"{work.name} {place.life.value} {stage.name}#{stage.attempt} "
            f"{type(stage.phase).__name__.lower()}"
        )
    return "; ".join(stands)


# --- cleaning up ---------------------------------------------------------------------------


def _processes_of(folder: Path) -> list[int]:
    """Every process whose environment names ``folder`` (its hosts' supervisors, tmux, agents)."""
    needle = str(folder).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
    return found


def cleanup(trial: Trial, *, keep: bool = False) -> None:
    """End every process the trial made, unmount its file systems, remove its folder (or not)."""
    with contextlib.suppress(Exception):
        _undo_due(trial, everything=True)
    for host in trial.hosts:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(  # noqa: S603
                ("tmux", "-S", str(host.folder / "tmux.sock"), "kill-server"),
                capture_output=True,
                timeout=5,
                check=False,
            )
    pids = _processes_of(trial.folder)
    for pid in pids:
        _signal(pid, signal.SIGCONT)
        _signal(pid, signal.SIGKILL)
    _wait(lambda: not any(Path(f"/proc/{pid}").exists() for pid in _processes_of(trial.folder)), 5)
    for mount in reversed(trial.mounts):
        subprocess.run(("umount", "-l", str(mount)), capture_output=True, timeout=10, check=False)  # noqa: S603
    if not keep:
        shutil.rmtree(trial.folder, ignore_errors=True)


# --- a trial -------------------------------------------------------------------------------


@attrs.frozen
class Outcome:
    """What one trial came to."""

    number: int
    kind: str
    fault: str
    moment: str
    verdict: str  #: survived, named, stuck, or not-injected
    seconds: float
    lost: tuple[str, ...]
    tracebacks: tuple[str, ...]
    wrong: tuple[str, ...]
    taken: tuple[str, ...]
    notes: tuple[str, ...]


def _mount_journals(trial: Trial) -> None:
    """Put the repository's journal folder on a tmpfs of its own (fault 6), if allowed."""
    folder = places.journals_dir(trial.repo)
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(  # noqa: S603
        ("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)),
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    if done.returncode == 0:
        trial.mounts.append(folder)
    else:
        trial.notes.append(f"mount: {done.stderr.strip()}")


def _judge_refusal(trial: Trial) -> None:
    """A launch may refuse the .bare layout (fault 4), if it says so: exit 2, naming it.

    Refused for another reason, the layout is neither supported nor named: the trial is stuck.
    """
    refusal = trial.outputs[-1]
    trial.moment += ", refused"
    if refusal.code == 2 and "bare" in refusal.out.lower():
        trial.named_by_launch = True
    else:
        trial.refused_unnamed = True


def run_trial(trial: Trial) -> Outcome:
    """Set the trial up, launch, inject its fault, drive it to its end, and judge it."""
    started = time.monotonic()
    try:
        trial.hosts.append(Host.make(trial.folder / "h1"))
        trial.commits_log = trial.folder / "commits.log"
        trial.script = trial.folder / "agent.toml"
        trial.script.write_text(_agent_script(trial), encoding="utf-8")
        _repository(trial)
        if trial.fault == "journal-unwritable":
            _mount_journals(trial)
        trial.base = trial.git("rev-parse", "main").strip()
        first = _launch(trial, "t") if trial.kind == "fix" else _launch_workflow(trial)
        if first.launched:
            INJECT[trial.fault](trial)
        elif trial.fault == "bare-layout":
            _judge_refusal(trial)
        else:
            trial.not_injected = f"the {trial.kind}'s launch was refused"
        trial.deadline = time.monotonic() + trial.allowed
        ended = trial.not_injected is None and operate(trial)
    finally:
        _undo_due(trial, everything=True)
    if trial.not_injected is not None:
        verdict = "not-injected"
        trial.notes.append(trial.not_injected)
    elif trial.refused_unnamed:
        verdict = "stuck"
        trial.notes.append("the launch refused the layout without naming it")
    elif not ended:
        verdict = "stuck"
        trial.notes.append(f"stands: {_where(trial)}")
        trial.notes.extend(_status_said(trial))
    else:
        verdict = "named" if trial.taken or trial.named_by_launch else "survived"
    _wrong_after(trial)
    _logged(trial)
    return Outcome(
        number=trial.number,
        kind=trial.kind,
        fault=trial.fault,
        moment=trial.moment,
        verdict=verdict,
        seconds=time.monotonic() - started,
        lost=tuple(_lost_commits(trial)),
        tracebacks=tuple(_tracebacks(trial)),
        wrong=tuple(dict.fromkeys(trial.wrong)),
        taken=tuple(trial.taken),
        notes=tuple(trial.notes),
    )


# --- the whole run -------------------------------------------------------------------------


def _raise_interrupted(number: int, _frame: FrameType | None) -> None:
    raise Interrupted(signal.Signals(number).name)


@contextlib.contextmanager
def _shielded() -> Iterator[None]:
    """Let no Ctrl-C or SIGTERM cut a cleanup short."""
    saved = {n: signal.signal(n, signal.SIG_IGN) for n in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)


def _in_private_namespace() -> None:
    """Run again in a mount namespace of the harness's own, so no mount outlives it (root)."""
    if os.environ.get(_IN_NAMESPACE) or os.geteuid() != 0 or shutil.which("unshare") is None:
        return
    argv = ("unshare", "--mount", "--propagation", "private")
    if subprocess.run((*argv, "true"), capture_output=True, timeout=10, check=False).returncode:  # noqa: S603
        return
    os.environ[_IN_NAMESPACE] = "1"
    os.execvp("unshare", [*argv, sys.executable, *sys.argv])  # noqa: S606 (fixed argv)


def _line(outcome: Outcome) -> str:
    said = [outcome.verdict]
    said += [f"took {'; '.join(outcome.taken)}"] if outcome.taken else []
    said += [f"LOST {', '.join(outcome.lost)}"] if outcome.lost else []
    said += [f"TRACEBACK in {', '.join(outcome.tracebacks)}"] if outcome.tracebacks else []
    said += [f"WRONG: {'; '.join(outcome.wrong)}"] if outcome.wrong else []
    said += list(outcome.notes)
    return (
        f"trial {outcome.number:>2} {outcome.kind:<5} {outcome.fault:<19} at {outcome.moment:<28} "
        f"{outcome.seconds:5.1f}s  " + " | ".join(said)
    )


COLUMNS = ("survived", "named", "stuck", "not-injected", "lost", "tracebacks", "wrong")
#: A run with any of these fails: the issue's promise is 0 of each.
FAILING = ("stuck", "not-injected", "lost", "tracebacks", "wrong")


def _counts(outcomes: list[Outcome]) -> dict[str, int]:
    """How many trials came to each verdict, and how many commits, tracebacks, wrongs."""
    counts = {"trials": len(outcomes)}
    for verdict in ("survived", "named", "stuck", "not-injected"):
        counts[verdict] = sum(o.verdict == verdict for o in outcomes)
    counts["lost"] = sum(len(o.lost) for o in outcomes)
    counts["tracebacks"] = sum(len(o.tracebacks) for o in outcomes)
    counts["wrong"] = sum(len(o.wrong) for o in outcomes)
    return counts


def _table(outcomes: list[Outcome]) -> str:
    heads = ("fault", "trials", *COLUMNS)
    rows = [
        (f"{kind} {faults.index(fault) + 1} {fault}", *map(str, _counts(mine).values()))
        for kind, faults in KIND_FAULTS.items()
        for fault in faults
        if (mine := [o for o in outcomes if o.kind == kind and o.fault == fault])
    ]
    rows.append(("total", *map(str, _counts(outcomes).values())))
    widths = [max(len(heads[i]), *(len(r[i]) for r in rows)) for i in range(len(heads))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def _arguments() -> tuple[argparse.Namespace, dict[str, tuple[str, ...]]]:
    """The command line, and the faults it asks for, by kind."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--kinds",
        default="fix",
        help=f"the kinds of run, comma-separated, of {', '.join(KIND_FAULTS)} (default: fix)",
    )
    parser.add_argument("--fault", help="only this fault: its name, or a fix fault's number (1-10)")
    parser.add_argument(
        "--deadline",
        type=float,
        help="seconds a run may take after its fault (default: fix 90, lanes 150, crew 180)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON (trial lines to stderr)")
    parser.add_argument(
        "--keep", action="store_true", help="keep each trial's folder (its processes still end)"
    )
    arguments = parser.parse_args()
    if arguments.trials < 1 or (arguments.deadline is not None and arguments.deadline <= 0):
        parser.error("--trials and --deadline must be positive")
    kinds = [kind.strip() for kind in arguments.kinds.split(",") if kind.strip()]
    unknown = [kind for kind in kinds if kind not in KIND_FAULTS]
    if unknown or not kinds:
        parser.error(
            f"--kinds {arguments.kinds}: use one or more of {', '.join(KIND_FAULTS)}, "
            "comma-separated (e.g. --kinds fix,lanes,crew)"
        )
    chosen = arguments.fault
    if chosen is not None and chosen.isdigit() and 1 <= int(chosen) <= len(FAULTS):
        chosen = FAULTS[int(chosen) - 1]
    asked = {
        kind: tuple(f for f in KIND_FAULTS[kind] if chosen is None or f == chosen)
        for kind in dict.fromkeys(kinds)
    }
    asked = {kind: faults for kind, faults in asked.items() if faults}
    if not asked:
        every = sorted({f for kind in kinds for f in KIND_FAULTS[kind]})
        parser.error(
            f"--fault {arguments.fault}: no such fault of {', '.join(kinds)}; use one of "
            f"{', '.join(every)}, or 1-10 for a fix fault"
        )
    return arguments, asked


def _run_all(
    arguments: argparse.Namespace, faults: dict[str, tuple[str, ...]]
) -> tuple[list[Outcome], bool]:
    """Run the trials one after another, each cleaned up; the outcomes, and whether all ran.

    Round robin over the kinds, and within a kind over a shuffled order of its faults: N trials
    of three kinds run each kind N/3 times, each of a kind's faults N/3/len(faults) times.
    """
    rng = random.Random(arguments.seed)  # noqa: S311 (moments, not secrets)
    kinds = list(faults)
    orders = {kind: list(faults[kind]) for kind in kinds}
    for kind in kinds:
        rng.shuffle(orders[kind])
    report = sys.stderr if arguments.json else sys.stdout
    outcomes: list[Outcome] = []
    for number in range(arguments.trials):
        kind = kinds[number % len(kinds)]
        order, turn = orders[kind], number // len(kinds)
        trial = Trial(
            number=number + 1,
            fault=order[turn % len(order)],
            occurrence=turn // len(order),
            rng=random.Random(rng.random()),  # noqa: S311
            folder=Path(tempfile.mkdtemp(prefix="flfault-", dir="/tmp")),
            allowed=arguments.deadline or DEADLINES[kind],
            kind=kind,
        )
        try:
            outcomes.append(run_trial(trial))
            print(_line(outcomes[-1]), file=report, flush=True)
        except Interrupted as why:
            print(f"trial {number + 1}: interrupted ({why})", file=report, flush=True)
            return outcomes, False
        except Exception as error:  # noqa: BLE001 (the harness's own failure, said, not hidden)
            print(f"trial {number + 1}: the harness failed: {error!r}", file=report, flush=True)
            return outcomes, False
        finally:
            with _shielded():
                cleanup(trial, keep=arguments.keep)
                if arguments.keep:
                    print(f"trial {number + 1}: kept {trial.folder}", file=report, flush=True)
    return outcomes, True


def main() -> int:
    """Run the trials; print each, then the table; 1 if any failed or they did not all run."""
    arguments, faults = _arguments()
    _in_private_namespace()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, _raise_interrupted)
    outcomes, complete = _run_all(arguments, faults)
    counts = _counts(outcomes)
    if arguments.json:
        trials = [attrs.asdict(o) for o in outcomes]
        print(json.dumps({"trials": trials, "totals": counts, "complete": complete}, indent=2))
    else:
        print(_table(outcomes))
        if not complete:
            print(f"stopped after {len(outcomes)} of {arguments.trials} trials")
    return 1 if any(counts[key] for key in FAILING) or not complete else 0


if __name__ == "__main__":
    sys.exit(main())
