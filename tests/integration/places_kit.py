"""What the place tests share: real repositories, the CLI, and a supervisor in this process.

The supervisor is driven tick by tick with a clock of the test's own, and ports that stand in
for agents and landers (the agents of the next piece of work plug into the same port).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import attrs
from typer.testing import CliRunner

from flume.cli.app import app
from flume.core.actions import EndAgent, Land, SendPrompt, SendTell, StartAgent
from flume.core.ids import Instant, SessionId, Sha
from flume.core.observations import (
    Activity,
    AgentExited,
    AgentStarted,
    AgentStateSeen,
    Author,
    Landed,
    Observation,
    TranscriptEntry,
)
from flume.core.place import Place
from flume.core.settings import Settings
from flume.core.step import replay
from flume.shell.perform import launcher
from flume.shell.perform.performer import Performer
from flume.shell.store import journal, places
from flume.shell.supervisor.loop import Supervisor
from flume.shell.tools import git
from flume.testing import scenario

#: Who commits in tests: HOME is private, so git has no identity of its own.
GIT_IDENTITY = scenario.GIT_IDENTITY


def run_git(cwd: Path, *args: str) -> str:
    """Run git and insist it worked; its output."""
    ran = git.run(cwd, *args)
    assert ran.ok, f"git {' '.join(args)}: {ran.err}"
    return ran.out


def repository(folder: Path, *, files: dict[str, str] | None = None) -> Path:
    """A real git repository with a first commit on main (holding ``files``)."""
    return scenario.make_repository(folder, files)


def commit(worktree: Path, name: str, text: str = "x\n") -> Sha:
    """Write a file and commit it in ``worktree``; the new head."""
    (worktree / name).write_text(text, encoding="utf-8")
    run_git(worktree, "add", name)
    run_git(worktree, "commit", "-q", "-m", f"add {name}")
    return Sha(run_git(worktree, "rev-parse", "HEAD").strip())


def flume(
    *args: str, stdin: str | None = None, stdin_bytes: bytes | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a flume command in this process, as typer runs it (the quick way, for most tests)."""
    given: str | bytes = stdin_bytes if stdin_bytes is not None else (stdin or "")
    result = CliRunner().invoke(app, list(args), input=given)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(
        args=["flume", *args],
        returncode=result.exit_code,
        stdout=result.stdout,
        stderr=result.stderr,
    )


def launch_argv(repo: Path, name: str, brief: str = "Mend it.") -> list[str]:
    """The command line of a fix's launch, run as its own process."""
    return [
        sys.executable, "-m", "flume", "launch", "--repository", str(repo), "--kind", "fix",
        "--name", name, "--brief", brief,
    ]  # fmt: skip


def flume_process(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the flume command as a user would, in its own process."""
    return subprocess.run(  # noqa: S603 (our own interpreter and module)
        [sys.executable, "-m", "flume", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=os.environ.copy(),
    )


def launch_place(repo: Path, name: str, kind: str = "fix", brief: str = "Mend it.") -> Path:
    """Launch in this process without waking a supervisor (the test drives its own); the journal.

    The CLI's launch wakes (or starts) the host's supervisor, which must not race a test's own.
    """
    request = launcher.Request(repository=repo, kind=kind, name=name, brief=brief)
    return launcher.launch(request, Settings(), time.time).journal


def world_of(repository: Path) -> dict[str, object]:
    """Everything a launch could create: branches, worktrees, journals, registry, exclude."""
    common = Path(
        run_git(repository, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()
    )
    journals = common / "flume"
    return {
        "branches": sorted(git.heads(repository)),
        "worktrees": sorted(str(path) for path in git.worktree_paths(repository)),
        "journals": sorted(str(p) for p in journals.rglob("*")) if journals.exists() else [],
        "registry": places.registry_path().read_text() if places.registry_path().exists() else "",
        "places": sorted(str(p) for p in (repository / "places").rglob("*"))
        if (repository / "places").exists()
        else [],
    }


@attrs.define
class Clock:
    """The test's clock: time moves only when the test says."""

    #: It starts at the real time, so that it follows the launches the CLI stamped.
    now: float = attrs.field(factory=time.time)

    def __call__(self) -> float:
        """The time now."""
        return self.now


@attrs.define
class EchoAgents:
    """An agent port whose agents take every prompt at once.

    The transcript holds the prompt as soon as it is sent. It stands in for the agents of the
    next piece of work, at the port they use.
    """

    clock: Clock
    started: list[tuple[str, str, int]] = attrs.field(factory=list)
    live: dict[SessionId, Path] = attrs.field(factory=dict)

    def start(self, place: Place, action: StartAgent, at: Instant) -> list[Observation]:
        """Start an agent, or find the one started for this stage attempt."""
        session = SessionId(f"{Path(place.path).name}:{action.stage}:{action.attempt}")
        if session not in self.live:
            self.started.append((place.path, action.stage, action.attempt))
            self.live[session] = Path(place.path)
        return [
            AgentStarted(
                at=at, stage=action.stage, attempt=action.attempt, session=session, pane="%0"
            ),
            AgentStateSeen(at=at, session=session, activity=Activity.WAITING),
        ]

    def end(self, place: Place, action: EndAgent, at: Instant) -> list[Observation]:
        """End the agent."""
        del place
        self.live.pop(action.session, None)
        return [AgentExited(at=at, session=action.session)]

    def send(self, place: Place, action: SendPrompt | SendTell, at: Instant) -> list[Observation]:
        """The agent takes the text: the transcript holds it as the user's message."""
        del place
        if action.session not in self.live:
            return []
        return [
            TranscriptEntry(
                at=at,
                session=action.session,
                author=Author.PERSON,
                text=action.text,
            ),
            # Its turn ends at once: what the stage asks for, the test does in its place.
            AgentStateSeen(at=at, session=action.session, activity=Activity.WAITING),
        ]


@attrs.define
class GitLander:
    """A lander port that lands for real on the base, in one of the ways repositories do."""

    #: ``rebase`` (rebase the branch, fast-forward the base), ``merge`` (a merge commit) or
    #: ``squash`` (one new commit on the base with the branch's changes).
    how: str = "rebase"

    def land(self, place: Place, action: Land, at: Instant) -> list[Observation]:
        """Land the branch on the base in the main worktree, which has base checked out."""
        main = Path(place.launch.repository)
        head = self.land_branch(main, Path(action.path), action.branch, action.base)
        return [Landed(at=at, base_sha=head)]

    def land_branch(self, main: Path, work: Path, branch: str, base: str) -> Sha:
        """Put ``branch`` on ``base`` (checked out in ``main``); a rebase needs a clean ``work``."""
        clean = work.is_dir() and run_git(work, "status", "--porcelain") == ""
        if self.how == "rebase" and clean:
            run_git(work, "rebase", "-q", base)
            run_git(main, "merge", "-q", "--ff-only", branch)
        elif self.how in {"rebase", "merge"}:
            run_git(main, "merge", "-q", "--no-ff", "-m", f"land {branch}", branch)
        else:
            run_git(main, "merge", "-q", "--squash", branch)
            run_git(main, "commit", "-q", "--allow-empty", "-m", f"land {branch} squashed")
        return Sha(run_git(main, "rev-parse", "HEAD").strip())


@attrs.define
class Harness:
    """A supervisor in this process, over real repositories, with the test's clock."""

    clock: Clock
    agents: EchoAgents
    lander: GitLander
    supervisor: Supervisor

    @classmethod
    def make(cls, lander: GitLander | None = None) -> Harness:
        """A supervisor with echo agents and a git lander."""
        clock = Clock()
        agents = EchoAgents(clock)
        landing = lander or GitLander()
        performer = Performer(clock=clock, agents=agents, lander=landing)
        supervisor = Supervisor(Settings(), performer=performer, clock=clock)
        return cls(clock=clock, agents=agents, lander=landing, supervisor=supervisor)

    def settle(self, rounds: int = 200) -> None:
        """Tick until nothing is being done or waits to be done, and the journals are read."""
        for _ in range(rounds):
            self.supervisor.tick()
            self.supervisor.wait_for_actions()
            self.supervisor.tick()
            if self.supervisor.idle() and not self._unread():
                return
        message = "the supervisor did not settle"
        raise AssertionError(message)

    def _unread(self) -> bool:
        return any(
            each.journal.exists() and each.journal.stat().st_size > each.offset
            for each in self.supervisor.followed.values()
        )

    def place(self, journal_path: Path) -> Place:
        """The place a journal describes now."""
        return replay(Settings(), journal.read(journal_path).observations)

    def pass_time(self, seconds: float) -> None:
        """Move the clock on and let the supervisor see it."""
        self.clock.now += seconds
        self.settle()

    def close(self) -> None:
        """Stop the supervisor's workers."""
        self.supervisor.close()
