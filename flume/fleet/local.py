"""A fleet on one machine: a dev server, a bare remote, and hosts as folders and processes.

What ``flume fleet demo``, flume's fleet tests and bench/fleet.py share. Each host is a folder
of its own (short, for its tmux socket): its HOME, its flume state (``XDG_STATE_HOME``), its
config (``XDG_CONFIG_HOME/flume/config.toml``, whose ``[fleet]`` names the server), its tmux
server's socket and its clone of the remote; it runs ``flume fleet worker`` as a process, whose
launches start the host's own supervisor and tmux server. Nothing is shared between hosts but
the Temporal server and the bare remote, as on real hosts. Every process started here is
stopped by its id.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flume.fleet import server as dev
from flume.testing import scenario

#: A fix whose code stage writes a file of its place's own name and commits it (so many fixes
#: land side by side without conflicts), and whose submit stage submits.
FIX = """\
[[turn]]
match = ":code:1]"
steps = [
  {run = ["sh", "-c", "echo \\"$(date +%s%N)\\" >> \\"$(basename \\"$PWD\\").txt\\""]},
  {commit = "Mend it"},
]

[[turn]]
match = ":submit:1]"
steps = [{run = ["flume", "submit"]}]
"""

#: A fix whose code stage, after its first commit, works on while its host's HOME holds
#: ``slow`` (so a host can be killed mid-stage), and then submits.
SLOW_FIX = """\
[[turn]]
match = ":code:1]"
steps = [
  {run = ["sh", "-c", "echo \\"$(date +%s%N)\\" >> \\"$(basename \\"$PWD\\").txt\\""]},
  {commit = "Part one"},
  {run = ["sh", "-c", "while [ -e \\"$HOME/slow\\" ]; do sleep 0.2; done"]},
]

[[turn]]
match = ":submit:1]"
steps = [{run = ["flume", "submit"]}]
"""

#: A fleet's sample repository's files: a README and fast timings (flume's tests' own).
FILES = {
    "README.md": "# fleet\n",
    ".flume.toml": "[timing]\nquiet = 0.5\nconfirm = 4\nready = 20\n",
}


#: The variables that make a host of a process (the rest of the environment is the caller's).
HOST_VARIABLES = ("HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "FLUME_TMUX_SOCKET")


def _git(cwd: Path, *args: str) -> str:
    argv = ["git", *args]
    ran = subprocess.run(  # noqa: S603 (an argument list of our own)
        argv, cwd=cwd, capture_output=True, text=True, check=False
    )
    if ran.returncode != 0:
        message = f"git {' '.join(args)} in {cwd}: {ran.stderr.strip()}"
        raise RuntimeError(message)
    return ran.stdout


@dataclasses.dataclass
class LocalHost:
    """One host of a local fleet: its folder, clone and worker process."""

    name: str
    folder: Path
    clone: Path
    worker: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        """This process's environment, made this host's."""
        env = {key: value for key, value in os.environ.items() if key not in HOST_VARIABLES}
        env.pop("CLAUDE_CONFIG_DIR", None)
        env.pop("CODEX_HOME", None)
        env.update(
            HOME=str(self.folder / "home"),
            XDG_STATE_HOME=str(self.folder / "state"),
            XDG_CONFIG_HOME=str(self.folder / "config"),
            FLUME_TMUX_SOCKET=str(self.folder / "tmux.sock"),
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        )
        for key, value in scenario.GIT_IDENTITY.items():
            env.setdefault(key, value)
        return env

    def flume(
        self, *args: str, stdin: str | None = None, timeout: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        """Run ``flume args`` as a person on this host would, in its clone."""
        return subprocess.run(  # noqa: S603 (an argument list of our own)
            [sys.executable, "-m", "flume", *args],
            cwd=self.clone,
            env=self.env(),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start(self, *extra: str) -> None:
        """Start the host's worker (``flume fleet worker``), its output in ``worker.log``."""
        with (self.folder / "worker.log").open("ab") as log:
            self.worker = subprocess.Popen(  # noqa: S603 (an argument list of our own)
                [sys.executable, "-m", "flume", "fleet", "worker", *extra],
                cwd=self.clone,
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )

    def serving(self) -> bool:
        """The worker said it serves the fleet (its first line)."""
        log = self.folder / "worker.log"
        return log.exists() and f"host {self.name} serves" in log.read_text(errors="replace")

    def supervisor_pid(self) -> int | None:
        """The host's supervisor, by its lock file, if one runs."""
        lock = self.folder / "state" / "flume" / "supervisor.lock"
        with contextlib.suppress(OSError, ValueError):
            pid = int(lock.read_text(encoding="ascii").strip())
            if Path(f"/proc/{pid}").exists():
                return pid
        return None

    def tmux_pid(self) -> int | None:
        """The host's tmux server, if one runs."""
        ran = subprocess.run(  # noqa: S603 (an argument list of our own)
            ["tmux", "-S", str(self.folder / "tmux.sock"), "display", "-p", "#{pid}"],  # noqa: S607
            capture_output=True,
            text=True,
            check=False,
        )
        return int(ran.stdout.strip()) if ran.returncode == 0 and ran.stdout.strip() else None

    def kill(self) -> list[int]:
        """SIGKILL the host: its worker, its supervisor and its tmux server (and its agents)."""
        pids = [
            pid
            for pid in (
                self.worker.pid if self.worker is not None else None,
                self.supervisor_pid(),
                self.tmux_pid(),
            )
            if pid is not None
        ]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.worker is not None:
            self.worker.wait(timeout=30)
            self.worker = None
        return pids

    def stop(self) -> None:
        """Stop the worker (SIGTERM), then the supervisor and the tmux server."""
        if self.worker is not None:
            with contextlib.suppress(ProcessLookupError):
                self.worker.send_signal(signal.SIGTERM)
            try:
                self.worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.worker.kill()
                self.worker.wait(timeout=30)
            self.worker = None
        self.flume("daemon", "stop", timeout=90)
        subprocess.run(  # noqa: S603 (an argument list of our own)
            ["tmux", "-S", str(self.folder / "tmux.sock"), "kill-server"],  # noqa: S607
            capture_output=True,
            check=False,
        )
        pid = self.supervisor_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@dataclasses.dataclass
class LocalFleet:
    """A dev server, a bare remote and hosts, in one folder."""

    folder: Path
    server: dev.DevServer
    remote: Path
    hosts: list[LocalHost]
    #: Whether the server is this fleet's own (stopped with it) or a caller's.
    owns_server: bool = True

    @classmethod
    def make(  # noqa: PLR0913 (each is one thing a fleet is made with)
        cls,
        folder: Path,
        files: Mapping[str, str],
        *,
        hosts: int = 3,
        slots: int = 2,
        heartbeat: float = 10.0,
        queue: str = "flume",
        server: dev.DevServer | None = None,
        ui: bool = False,
        relaunch: bool = False,
    ) -> LocalFleet:
        """Start (or use) a dev server, make the remote from ``files`` and the hosts' clones."""
        folder.mkdir(parents=True, exist_ok=True)
        owns = server is None
        running = server or dev.start(folder / "temporal", ui=ui)
        origin = scenario.make_repository(folder / "origin", files)
        remote = folder / "remote.git"
        _git(folder, "clone", "-q", "--bare", str(origin), str(remote))
        made: list[LocalHost] = []
        for number in range(1, hosts + 1):
            name = f"h{number}"
            home = folder / name
            (home / "home").mkdir(parents=True, exist_ok=True)
            (home / "config" / "flume").mkdir(parents=True, exist_ok=True)
            settings = {
                "address": running.address,
                "host": name,
                "slots": slots,
                "heartbeat": heartbeat,
                "queue": queue,
                "relaunch": relaunch,
            }
            lines = [
                "[fleet]",
                *(f"{key} = {json.dumps(value)}" for key, value in settings.items()),
            ]
            (home / "config" / "flume" / "config.toml").write_text("\n".join(lines) + "\n")
            _git(folder, "clone", "-q", str(remote), str(home / "clone"))
            made.append(LocalHost(name=name, folder=home, clone=(home / "clone").resolve()))
        return cls(folder=folder, server=running, remote=remote, hosts=made, owns_server=owns)

    def start(self, hosts: Sequence[LocalHost] | None = None, timeout: float = 60.0) -> None:
        """Start the hosts' workers and wait until each serves."""
        chosen = list(hosts if hosts is not None else self.hosts)
        for host in chosen:
            host.start()
        deadline = time.monotonic() + timeout
        while not all(host.serving() for host in chosen):
            dead = [host.name for host in chosen if host.worker and host.worker.poll() is not None]
            if dead or time.monotonic() > deadline:
                logs = {
                    h.name: (h.folder / "worker.log").read_text(errors="replace") for h in chosen
                }
                message = f"workers did not start (dead: {dead}): {logs}"
                raise RuntimeError(message)
            time.sleep(0.05)

    def standings(self, host: LocalHost | None = None) -> list[dict[str, Any]]:
        """``flume status --fleet --json``'s places, asked as ``host`` (default: the first)."""
        ran = (host or self.hosts[0]).flume("status", "--fleet", "--json")
        if ran.returncode != 0:
            message = f"flume status --fleet failed: {ran.stderr}"
            raise RuntimeError(message)
        places: list[dict[str, Any]] = json.loads(ran.stdout)["places"]
        return places

    def journaled_on(self, place: str) -> list[str]:
        """The hosts whose clone journaled the place (a launch there), tidied since or not."""
        return [
            host.name
            for host in self.hosts
            if (host.clone / ".git" / "flume" / place).is_dir()
            or any((host.clone / ".git" / "flume" / ".tidied").glob(f"{place}.*"))
        ]

    def runs(self) -> list[str]:
        """The id of every workflow run the fleet's server holds (a name run twice, twice)."""
        import asyncio  # noqa: PLC0415 (Temporal's client, for a look at the server only)

        from temporalio.client import Client  # noqa: PLC0415

        async def listed() -> list[str]:
            client = await Client.connect(self.server.address)
            return [each.id async for each in client.list_workflows()]

        return asyncio.run(listed())

    def base_log(self, base: str = "main") -> list[str]:
        """The remote's base, newest first, one ``<sha> <subject>`` a commit."""
        return _git(self.remote, "log", "--format=%h %s", base).splitlines()

    def stop(self, *, keep_server: bool = False) -> None:
        """Stop every host, then the server (unless it is kept, or the caller's)."""
        for host in self.hosts:
            host.stop()
        if self.owns_server and not keep_server:
            self.server.stop()

    def remove(self) -> None:
        """Remove the fleet's folder."""
        shutil.rmtree(self.folder, ignore_errors=True)
