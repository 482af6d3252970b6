"""Delivery latency: from the paste of a prompt to its line in the agent's own transcript.

Side by side in one run, for the test agent and (when installed) the real Claude Code against a
scripted model: each round starts the agent in a pane of a private tmux server, waits until its
live-session registry says it takes input, pastes a prompt with a unique marker the way flume
does (:meth:`flume.shell.panes.tmux.Tmux.paste`), and times until a user line holding the marker is
in
the transcript. Then once more through the real supervisor: a launch's journal gives the instant
the prompt was sent for and the instant the watch journaled the transcript line.

    .venv/bin/python bench/delivery.py [--rounds 10] [--places N] [--only-supervisor]

``--places`` launches that many places at once through the supervisor (all alive, each
delivered to; P6 at 100 busy places: ``--places 100 --only-supervisor``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from flume.core.observations import AgentStateSeen, Told, TranscriptEntry
from flume.shell.agents.claude import project_slug
from flume.shell.panes.tmux import Tmux
from flume.shell.store import journal, places
from flume.testing.claude import claude_binary, claude_env, seed_home
from flume.testing.model import Reply, ScriptedModel

KEY = "sk-ant-flume-bench-000000000000000000000"


def _wait(predicate: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            message = "timed out"
            raise TimeoutError(message)
        time.sleep(0.002)


def _idle(home: Path, session: str) -> bool:
    for entry in (home / ".claude" / "sessions").glob("*.json"):
        try:
            data = json.loads(entry.read_text())
        except (OSError, ValueError):
            continue
        if data.get("sessionId") == session and data.get("status") == "idle":
            return True
    return False


def _has(path: Path, marker: str) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    return any(
        '"type":"user"' in line.replace(" ", "") and marker in line for line in text.splitlines()
    )


def one(folder: Path, argv_of: object, env: dict[str, str]) -> float:
    """One round: seconds from the paste to the transcript line."""
    tmux = Tmux(folder / "tmux.sock")
    work = folder / "work"
    work.mkdir(exist_ok=True)
    session = str(uuid.uuid4())
    argv = argv_of(session)  # type: ignore[operator]
    try:
        made = tmux.start(group="bench", window="w", cwd=work, argv=argv, env=env)
        pane = made.out.strip()
        home = Path(env["HOME"])
        _wait(lambda: _idle(home, session), 60)
        marker = f"flume:bench:{uuid.uuid4().hex}"
        slug = project_slug(os.path.realpath(work))
        path = home / ".claude" / "projects" / slug / f"{session}.jsonl"
        started = time.monotonic()
        tmux.paste(pane, f"Deliver this, please.\n\n[{marker}]")
        _wait(lambda: _has(path, marker), 60)
        return time.monotonic() - started
    finally:
        tmux.kill_server()


def _report(name: str, seconds: list[float]) -> None:
    ms = [s * 1000 for s in seconds]
    print(
        f"{name:<44} median {statistics.median(ms):7.1f} ms  best {min(ms):7.1f}  "
        f"worst {max(ms):7.1f}  ({len(ms)} prompts)"
    )


def through_supervisor(rounds: int) -> tuple[list[float], list[float]]:
    """Journaled instants, prompts and tells, each place's once all are alive.

    A prompt: the agent said it waits (the send) to the prompt's transcript line. A tell:
    ``flume tell`` journaled it to its transcript line.
    """
    found: list[float] = []
    told: list[float] = []
    with tempfile.TemporaryDirectory(prefix="flb-", dir="/tmp") as name:
        folder = Path(name)
        env = os.environ | {
            "XDG_STATE_HOME": str(folder / "state"),
            "FLUME_TMUX_SOCKET": str(folder / "tmux.sock"),
            "HOME": str(folder / "home"),
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@flume.invalid",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@flume.invalid",
        }
        repo = folder / "repo"
        repo.mkdir()
        (repo / ".flume.toml").write_text("[timing]\nquiet = 0.5\nconfirm = 10\n")
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "start"]):
            subprocess.run(["git", *args], cwd=repo, env=env, check=True)  # noqa: S603, S607
        flume = [sys.executable, "-m", "flume"]
        try:
            for number in range(rounds):
                subprocess.run(  # noqa: S603
                    [*flume, "launch", "--repository", str(repo), "--kind", "fix",
                     "--name", f"b{number}", "--brief", "Deliver.", "--agent", "test"],
                    env=env, check=True, capture_output=True,
                )  # fmt: skip
            os.environ.update(env)
            journals = places.journals_dir(repo)
            for number in range(rounds):
                path = journals / f"fix--b{number}" / places.JOURNAL
                marker = f"flume:fix--b{number}:code:1"
                _wait(lambda p=path, m=marker: _journaled(p, m) is not None, 60)
                found.append(_journaled(path, marker) or 0.0)
            for number in range(rounds):
                subprocess.run(  # noqa: S603
                    [*flume, "tell", f"fix--b{number}", f"Tell {number}.",
                     "--repository", str(repo)],
                    env=env, check=True, capture_output=True,
                )  # fmt: skip
            for number in range(rounds):
                path = journals / f"fix--b{number}" / places.JOURNAL
                text = f"Tell {number}."
                _wait(lambda p=path, t=text: _told(p, t) is not None, 60)
                told.append(_told(path, text) or 0.0)
        finally:
            subprocess.run([*flume, "daemon", "stop"], env=env, check=False, capture_output=True)  # noqa: S603
            Tmux(folder / "tmux.sock").kill_server()
    return found, told


def _told(path: Path, text: str) -> float | None:
    """From the tell's line to the transcript's line holding its words, in one journal."""
    asked = None
    for seen in journal.read(path).observations:
        if isinstance(seen, Told) and seen.text == text:
            asked = seen.at
        if isinstance(seen, TranscriptEntry) and text in seen.text and asked is not None:
            return seen.at - asked
    return None


def _journaled(path: Path, marker: str) -> float | None:
    sent = None
    for seen in journal.read(path).observations:
        if isinstance(seen, AgentStateSeen) and sent is None and seen.activity.value == "waiting":
            sent = seen.at
        if isinstance(seen, TranscriptEntry) and marker in seen.text and sent is not None:
            return seen.at - sent
    return None


def main() -> None:
    """Print the delivery latencies."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument(
        "--places",
        type=int,
        default=None,
        help="places launched at once through the supervisor (default: as many as rounds)",
    )
    parser.add_argument(
        "--only-supervisor",
        action="store_true",
        help="only the delivery through the supervisor (the agents' own pastes are skipped)",
    )
    arguments = parser.parse_args()
    rounds = arguments.rounds
    if arguments.only_supervisor:
        _supervised(arguments.places or rounds)
        return
    with tempfile.TemporaryDirectory(prefix="flb-", dir="/tmp") as name:
        folder = Path(name)
        env = {"HOME": str(folder / "home"), "PATH": os.environ["PATH"]}
        agent = [sys.executable, "-m", "flume.testing.agent", "--session-id"]
        test_agent = [one(folder, lambda s: [*agent, s], env) for _ in range(rounds)]
    _report("test agent: paste -> transcript", test_agent)
    binary = claude_binary()
    if binary is None:
        print("real Claude Code: not installed (scripts/install-agents); skipped")
    else:
        with (
            ScriptedModel([Reply(when="", text="Taken.")]) as model,
            tempfile.TemporaryDirectory(prefix="flb-", dir="/tmp") as name,
        ):
            folder = Path(name)
            home = folder / "home"
            seed_home(home, trusted=[folder / "work"], api_key=KEY)
            env = claude_env(home, model.url, KEY) | {"PATH": os.environ["PATH"]}
            claude = [
                one(folder, lambda s: [str(binary), "--session-id", s], env) for _ in range(rounds)
            ]
        _report("real Claude Code: paste -> transcript", claude)
    _supervised(arguments.places or rounds)


def _supervised(places_alive: int) -> None:
    """Print the prompts' and the tells' delivery through the supervisor."""
    prompts, tells = through_supervisor(places_alive)
    _report("test agent via the supervisor: send -> journal", prompts)
    _report("test agent via the supervisor: tell -> journal", tells)


if __name__ == "__main__":
    main()
