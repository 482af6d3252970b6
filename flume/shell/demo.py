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
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

from flume.core.launch import AgentName, AgentSettings
from flume.core.place import Life, Place, Short
from flume.core.settings import Settings
from flume.core.status import PlaceStatus, status
from flume.shell import client, git, places
from flume.shell import launch as shell_launch
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
    request = shell_launch.Request(
        repository=repository, kind=kind, name=name, brief=brief, agent=agent
    )
    shell_launch.launch(request, Settings(), time.time)


def _done(place: Place) -> bool:
    """Nothing more will happen without a caller: tidied, or a stage stopped short."""
    return place.life is Life.TIDIED or isinstance(place.stage.phase, Short)


def follow(
    repository: Path, *, deadline: float, show: Callable[[PlaceStatus], None]
) -> tuple[PlaceStatus, ...]:
    """Show each place's status when it changes, until each is tidied, short, or time is up."""
    shown: dict[str, tuple[object, ...]] = {}
    last: tuple[PlaceStatus, ...] = ()
    while time.monotonic() < deadline:
        # One read of the journals a look: the places, then their status.
        found = [each.place for each in places.places_of(repository, Settings())]
        last = tuple(status(place) for place in found if place is not None)
        for view in last:
            key = (view.stage, view.attempt, view.phase, view.agent, view.deliverable_exists,
                   view.submission, view.tasks)  # fmt: skip
            if shown.get(view.place) != key:
                shown[view.place] = key
                show(view)
        if found and all(place is not None and _done(place) for place in found):
            return last
        time.sleep(0.2)
    return last


def run(folder: Path, show: Callable[[PlaceStatus], None], seconds: float) -> Iterator[str]:
    """The demo, narrated: each line says what happens; ``show`` draws the places' status."""
    private_world(folder)
    repository = make_sample(folder)
    yield f"a sample repository at {repository}, with a typo in greet.py"
    launch(repository, "fix", "typo", FIX_BRIEF, SCRIPTS / "fix.toml")
    yield f"launched fix--typo: {FIX_BRIEF}"
    launch(repository, "change", "farewell", CHANGE_BRIEF, SCRIPTS / "change.toml")
    yield f"launched change--farewell: {CHANGE_BRIEF}"
    client.ensure(wait=30)
    yield "the supervisor follows both; each stage runs a fresh test agent in flume's tmux server"
    final = follow(repository, deadline=time.monotonic() + seconds, show=show)
    log = git.run(repository, "log", "--oneline", "main")
    yield "main now holds:"
    yield from (f"  {line}" for line in log.out.strip().splitlines())
    folder_of_places = repository / "places"
    left = sorted(p.name for p in folder_of_places.glob("*")) if folder_of_places.exists() else []
    yield f"places left: {', '.join(left) if left else 'none (tidied)'}"
    if not all(view.phase == "tidied" for view in final):
        yield "not everything finished in time: see the status above"


def stop(folder: Path) -> None:
    """Stop the demo's supervisor and tmux server."""
    scenario.leave_host(folder)


def temporary() -> Path:
    """A folder of the demo's own (short: a tmux socket's path is limited)."""
    return Path(tempfile.mkdtemp(prefix="flume-demo-"))


def remove(folder: Path) -> None:
    """Remove the demo's folder."""
    shutil.rmtree(folder, ignore_errors=True)
