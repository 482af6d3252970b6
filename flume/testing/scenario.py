"""Sample builders: a host of a test's own, sample repositories, and scripts for the test agent.

Theory of operation. A test of flume, or of a tool that drives flume, needs three things flume's
own tests and ``flume demo`` need too, so they live here once:

- a **host** of its own (:func:`private_host`): flume's state (its registry of repositories,
  its supervisor's lock, socket and log), its tmux server and the agents' HOME in one folder, so
  nothing of the user's is read or written; the supervisor and the tmux server are stopped
  when it ends;
- a real **git repository** (:func:`make_repository`) with a first commit on ``main`` holding
  the files given, ``.flume.toml`` among them (short timings, :data:`FAST_TIMING`, keep a test
  quick);
- a **script** for flume's test agent (:mod:`flume.testing.agent`; the format is its
  :func:`~flume.testing.agent.parse_script`): what the agent does for each stage's prompt.

:func:`fix_that_lands` puts the last two together: a repository whose greeting file has a typo
and a script for a fix whose code stage mends and commits it and whose submit stage runs
``flume submit``; launched (``flume.api.launch(**scenario.launch_arguments())``), it runs to its
landing on ``main`` and is tidied, in a few seconds. See docs/testing.md.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TypedDict

import attrs

from flume.shell import process
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from flume.shell.supervisor import client
from flume.shell.tools import git

#: Timings for tests: a stage ends half a second after its agent goes quiet, a lost prompt is
#: found missing in 4 s, an agent has 20 s to take input (docs/config.md, ``[timing]``).
FAST_TIMING = "[timing]\nquiet = 0.5\nconfirm = 4\nready = 20\n"

#: Who commits, where the environment names no one (a private HOME has no git identity).
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "flume test",
    "GIT_AUTHOR_EMAIL": "test@flume.invalid",
    "GIT_COMMITTER_NAME": "flume test",
    "GIT_COMMITTER_EMAIL": "test@flume.invalid",
}

#: The test agent's script for a fix: the code stage mends ``greet.txt`` and commits, the
#: submit stage hands the branch to the lander. Each turn answers its stage's prompt, found by
#: the stage's marker (``[flume:fix--<name>:code:1]``).
FIX_SCRIPT = """\
[[turn]]
match = ":code:1]"
steps = [
  {say = "The greeting has a typo; mending it."},
  {write = {path = "greet.txt", text = "hello\\n"}},
  {commit = "Say hello, not hullo"},
]

[[turn]]
match = ":submit:1]"
steps = [{say = "Submitting."}, {run = ["flume", "submit"]}]
"""

#: The longest socket path a unix socket takes, with room to spare (108 bytes on Linux).
_MAX_SOCKET = 100
#: How long a supervisor has to finish its running actions when it is stopped.
_STOP_SECONDS = 60.0


def make_repository(folder: Path, files: Mapping[str, str] | None = None) -> Path:
    """A real git repository at ``folder``, its first commit on ``main`` holding ``files``.

    ``files`` maps relative paths to their text (default: a README). The commit is made by the
    environment's git identity, or else by :data:`GIT_IDENTITY`'s. Returns the resolved path.
    """
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {"README.md": "hello\n"}).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    who = (
        *("-c", f"user.name={GIT_IDENTITY['GIT_AUTHOR_NAME']}"),
        *("-c", f"user.email={GIT_IDENTITY['GIT_AUTHOR_EMAIL']}"),
    )
    for args in (
        ("init", "-q", "-b", "main"),
        ("add", "-A"),
        (*who, "commit", "-q", "-m", "start"),
    ):
        ran = git.run(folder, *args)
        if not ran.ok:
            message = f"git {' '.join(args)} in {folder}: {ran.err.strip()}"
            raise RuntimeError(message)
    return folder.resolve()


def write_script(folder: Path, text: str, name: str = "script.toml") -> Path:
    """A test agent's script, written to ``folder/name``; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def agent_args(script: Path) -> tuple[str, ...]:
    """The test agent's arguments that make it follow ``script`` (``launch(agent_args=...)``)."""
    return ("--script", str(script))


class LaunchArguments(TypedDict):
    """The keyword arguments of :func:`flume.api.launch` a :class:`Sample` names."""

    repository: Path
    kind: str
    name: str
    brief: str
    agent: str
    agent_args: tuple[str, ...]


@attrs.frozen(kw_only=True)
class Sample:
    """A repository and a test agent's script for one piece of work, ready to launch."""

    repository: Path
    script: Path
    kind: str
    name: str
    brief: str

    def launch_arguments(self) -> LaunchArguments:
        """What to launch it with: ``flume.api.launch(**scenario.launch_arguments())``.

        The agent is the test agent, following the script. Add a ``mark``, ``waits`` or more
        beside them as the launch needs.
        """
        return LaunchArguments(
            repository=self.repository,
            kind=self.kind,
            name=self.name,
            brief=self.brief,
            agent="test",
            agent_args=agent_args(self.script),
        )

    def argv(self) -> list[str]:
        """The same launch as ``flume launch`` arguments, for tests that run the CLI."""
        return [
            "launch", "--repository", str(self.repository), "--kind", self.kind,
            "--name", self.name, "--brief", self.brief, "--agent", "test",
            *(f"--agent-arg={argument}" for argument in agent_args(self.script)),
        ]  # fmt: skip


def fix_that_lands(folder: Path, *, timing: str = FAST_TIMING, name: str = "greet") -> Sample:
    """A repository whose ``greet.txt`` says "hullo", and the script of a fix that lands.

    The repository is ``folder/repo`` with ``greet.txt``, a README and ``.flume.toml``
    (``timing``); the script is ``folder/fix.toml`` (:data:`FIX_SCRIPT`).
    """
    repository = make_repository(
        folder / "repo",
        {"greet.txt": "hullo\n", "README.md": "# greet\n", ".flume.toml": timing},
    )
    return Sample(
        repository=repository,
        script=write_script(folder, FIX_SCRIPT, "fix.toml"),
        kind="fix",
        name=name,
        brief='greet.txt says "hullo"; make it say "hello".',
    )


# --- a host of its own ---------------------------------------------------------------------


def enter_host(folder: Path) -> None:
    """Point this process, and the supervisor, tmux server and agents it starts, at ``folder``.

    Sets ``HOME``, ``XDG_STATE_HOME`` and ``FLUME_TMUX_SOCKET`` (``folder/tmux.sock``, so the
    folder's path must be short: a unix socket's path is limited to about 100 bytes), drops
    ``CLAUDE_CONFIG_DIR`` and ``CODEX_HOME``, and names a git identity where none is set.
    """
    socket = folder / "tmux.sock"
    if len(str(socket)) > _MAX_SOCKET:
        message = f"{folder} is too long a path for a tmux socket in it: use a shorter one"
        raise ValueError(message)
    (folder / "home").mkdir(parents=True, exist_ok=True)
    os.environ["HOME"] = str(folder / "home")
    os.environ["XDG_STATE_HOME"] = str(folder / "state")
    os.environ["FLUME_TMUX_SOCKET"] = str(socket)
    for key in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        os.environ.pop(key, None)
    for key, value in GIT_IDENTITY.items():
        os.environ.setdefault(key, value)


def leave_host(folder: Path) -> None:
    """Stop the host's supervisor (once its running actions finish) and its tmux server.

    A supervisor asked for but not yet listening is told too: the stop is written down first,
    so one that starts later leaves at once, and one already holding the supervisor's lock is
    sent SIGTERM, its own signal to stop. An agent still running can ask for a supervisor anew
    (``flume submit`` wakes one) after the stop: so once the tmux server is gone, and its agents
    with it, any supervisor started meanwhile is stopped the same way.
    """
    deadline = time.monotonic() + _STOP_SECONDS
    while True:
        pid = _stop_supervisor(deadline)
        Tmux(folder / "tmux.sock").kill_server()
        if pid is None or time.monotonic() > deadline:
            return


def _stop_supervisor(deadline: float) -> int | None:
    """Stop the host's supervisor, if one runs or is starting; its pid, once it has ended."""
    client.record_stop()
    reply = client.stop(timeout=5.0)
    pid = reply.pid if reply is not None else _lock_holder()
    if pid is not None and reply is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    while pid is not None and process.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pid


def _lock_holder() -> int | None:
    """The live supervisor named in the host's lock file, if any (not yet answering)."""
    try:
        text = (places.state_dir() / "supervisor.lock").read_text(encoding="ascii").strip()
        command = Path(f"/proc/{text}/cmdline").read_bytes().split(b"\0") if text.isdigit() else []
    except OSError:
        return None
    is_supervisor = b"daemon" in command and b"run" in command
    return int(text) if is_supervisor and process.alive(int(text)) else None


_HOST_VARIABLES = (
    "HOME",
    "XDG_STATE_HOME",
    "FLUME_TMUX_SOCKET",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    *GIT_IDENTITY,
)


@contextlib.contextmanager
def private_host(folder: Path | None = None) -> Iterator[Path]:
    """A host of the block's own, in ``folder`` (default: a new temporary folder, removed after).

    Inside the block, flume (the API, the CLI run from it, the supervisor it starts) keeps its
    state, tmux server and agents' HOME in the folder (:func:`enter_host`). At the end, the
    supervisor and tmux server are stopped and the environment is as it was.
    """
    saved = {key: os.environ.get(key) for key in _HOST_VARIABLES}
    made = folder is None
    where = Path(tempfile.mkdtemp(prefix="flume-host-")) if folder is None else folder
    entered = False
    try:
        enter_host(where)
        entered = True
        yield where
    finally:
        try:
            if entered:  # never stop the supervisor of a host the block did not enter
                leave_host(where)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            if made:
                shutil.rmtree(where, ignore_errors=True)
