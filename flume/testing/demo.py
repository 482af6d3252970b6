"""``flume demo``: a fix and a change carried from launch to landing and tidy, on a sample.

Everything happens in a temporary folder of its own: the sample repository, flume's state and
supervisor, its tmux server, and the HOME the agents write their transcripts under, so nothing of
the user's is read or written. The agents are flume's test agent (:mod:`flume.testing.agent`)
following scripts written here: real processes in real tmux panes, whose prompts flume delivers
and proves from their transcripts, whose commits and files are the stages' deliverables, and
whose ``flume submit`` hands the work to the embedded lander.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import attrs

from flume.core.launch import AgentName, AgentSettings
from flume.core.place import AwaitingWord, Life, Place, Short, TidyNotWanted
from flume.core.settings import Settings
from flume.shell.perform import launcher
from flume.shell.store import places
from flume.shell.store.events import EventStream
from flume.shell.supervisor import client
from flume.shell.tools import git
from flume.testing import scenario

#: The sample repository's files: a greeting with a typo, its test, and flume's config.
SAMPLE = {
    "greet.py": 'def greeting() -> str:\n    return "hullo"\n',
    "test_greet.py": "import greet\n\n\ndef test_greeting():\n    assert greet.greeting()\n",
    "README.md": "# greet\n\nSays hello.\n",
    # What the landing check writes (Python's bytecode cache) is no part of the work: a place
    # holding untracked files is kept by tidy, as it should be.
    ".gitignore": "__pycache__/\n",
    "openspec/specs/.gitkeep": "",
    "openspec/changes/archive/.gitkeep": "",
    ".flume.toml": (
        '[land]\nchecks = [["python3", "-c", "import greet; assert greet.greeting()"]]\n\n'
        "[timing]\nquiet = 1\nconfirm = 10\nready = 30\n"
    ),
}

#: The demo's places, as ``<kind>--<name>``.
PLACES = ("change--farewell", "fix--typo")

FIX_BRIEF = 'greeting() says "hullo"; it should say "hello".'
CHANGE_BRIEF = "Add a farewell: farewell() returns a goodbye line, with a spec and a test."


#: The test agent's scripts, one turn a stage (shipped beside this module).
SCRIPTS = Path(__file__).with_name("demo_scripts")


def make_sample(folder: Path) -> Path:
    """The sample repository, with its first commit on main."""
    return scenario.make_repository(folder / "greet", SAMPLE)


def private_world(folder: Path) -> None:
    """Point this process (and the supervisor and agents it starts) at the demo's own folder."""
    scenario.enter_host(folder)


def launch(repository: Path, kind: str, name: str, brief: str, script: Path) -> None:
    """Launch one place whose stages run the test agent with ``script``."""
    agent = AgentSettings(agent=AgentName.TEST)
    agent = attrs.evolve(agent, flags=agent.flags.extend(["--script", str(script)]))
    request = launcher.Request(
        repository=repository, kind=kind, name=name, brief=brief, agent=agent
    )
    launcher.launch(request, Settings(), time.time)


def settled(place: Place) -> bool:
    """Nothing more will happen to the place without a caller.

    Tidied; or a stage stopped short or waiting on the caller's word; or finished or dropped
    with no tidy wanted or under way (one ran and kept the place, or it never landed).
    """
    return (
        place.life is Life.TIDIED
        or isinstance(place.stage.phase, Short | AwaitingWord)
        or (place.life in {Life.FINISHED, Life.DROPPED} and isinstance(place.tidy, TidyNotWanted))
    )


def all_settled(follower: EventStream) -> bool:
    """Both of the demo's places are read, and each has settled."""
    found = [each.place for each in follower.places()]
    return len(found) == len(PLACES) and all(
        place is not None and settled(place) for place in found
    )


def start(folder: Path) -> Iterator[str]:
    """Make the sample, launch the fix and the change, start the supervisor; narrated."""
    private_world(folder)
    repository = make_sample(folder)
    yield f"a sample repository at {repository}, with a typo in greet.py"
    launch(repository, "fix", "typo", FIX_BRIEF, SCRIPTS / "fix.toml")
    yield f"launched fix--typo: {FIX_BRIEF}"
    launch(repository, "change", "farewell", CHANGE_BRIEF, SCRIPTS / "change.toml")
    yield f"launched change--farewell: {CHANGE_BRIEF}"
    client.ensure(wait=30)
    yield "the supervisor follows both; each stage runs a fresh test agent in flume's tmux server"


def repository_of(folder: Path) -> Path:
    """The sample repository of the demo in ``folder``."""
    return (folder / "greet").resolve()


@attrs.frozen(kw_only=True)
class Summary:
    """How the demo ended: what main holds, the places left, and whether it finished."""

    lines: tuple[str, ...]
    #: Both landed on main and both places were tidied.
    finished: bool


def summary(folder: Path) -> Summary:
    """What main holds and which places are left; finished when both landed and were tidied."""
    repository = repository_of(folder)
    log = git.run(repository, "log", "--oneline", "main")
    lines = ["main now holds:", *(f"  {line}" for line in log.out.strip().splitlines())]
    found = {
        each.journal.parent.name: each.place
        for each in places.places_of(repository, Settings())
        if each.place is not None
    }
    tidied = sorted(name for name, place in found.items() if place.life is Life.TIDIED)
    landed = sorted(name for name, place in found.items() if place.landed_at is not None)
    folder_of_places = repository / "places"
    left = sorted(p.name for p in folder_of_places.glob("*")) if folder_of_places.exists() else []
    lines.append(f"places left: {', '.join(left) if left else 'none (tidied)'}")
    finished = landed == sorted(PLACES) and tidied == sorted(PLACES) and not left
    if not finished:
        unfinished = [name for name in PLACES if name not in tidied]
        lines.append(
            "the demo did not finish: "
            + (", ".join(unfinished) or "a place")
            + " not landed and tidied; "
            "run flume demo --keep to keep its folder and look (flume status, flume events)"
        )
    return Summary(lines=tuple(lines), finished=finished)


def stop(folder: Path) -> None:
    """Stop the demo's supervisor and tmux server."""
    scenario.leave_host(folder)


def temporary() -> Path:
    """A folder of the demo's own (short: a tmux socket's path is limited)."""
    return Path(tempfile.mkdtemp(prefix="flume-demo-"))


def remove(folder: Path) -> None:
    """Remove the demo's folder."""
    shutil.rmtree(folder, ignore_errors=True)
