"""Test set-up: Hypothesis profiles, a private HOME, and no process left when the run ends.

No test touches the user's world: HOME and the XDG folders are the run's own.

Profiles: ``dev`` for quick local runs; ``ci`` runs at least 1,000 examples a state machine;
``mutation`` few and fixed examples for bench/mutation.py.
Pick one with ``HYPOTHESIS_PROFILE`` (scripts/test sets ``ci`` under CI).

Every process the run starts carries the run's tag in its environment (``FLUME_TEST_RUN``, set
before any test); at the end of the run, any process still carrying it (or whose environment,
command line or working directory points under the run's temporary folder) is reported, killed,
and fails the run (tests/processes.py). Under pytest-xdist (``-n``) the run is the controller's:
its workers inherit its tag and their folders lie under its own, and it checks once, when every
worker is done.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, is_hypothesis_test, settings

from tests import processes, shared

settings.register_profile("dev", max_examples=150, stateful_step_count=40, deadline=None)
settings.register_profile(
    "ci",
    max_examples=1000,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
    # The same examples on every CI run: a failure is reproducible, never a fluke of the draw.
    derandomize=True,
)
# Mutation testing (bench/mutation.py) runs the model tests once a mutant: few examples, the same
# ones every run and no saved failures, so that a mutant's verdict is the same on every run.
settings.register_profile(
    "mutation",
    max_examples=30,
    stateful_step_count=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

_IDENTITY = {
    "GIT_AUTHOR_NAME": "flume test",
    "GIT_AUTHOR_EMAIL": "test@flume.invalid",
    "GIT_COMMITTER_NAME": "flume test",
    "GIT_COMMITTER_EMAIL": "test@flume.invalid",
}
_PRIVATE = ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME")
#: The folder, in the private HOME, of stand-ins for the agents' programs (see _stand_ins).
STAND_INS = "agent-stand-ins"
_STAND_IN = """#!/bin/sh
echo "$(basename "$0"): a stand-in of flume's test suite for an agent not installed here" >&2
exit 127
"""


def is_stand_in(program: Path) -> bool:
    """``program`` is one of the test suite's stand-ins, not a real agent."""
    return program.parent.name == STAND_INS


def _stand_ins(home: Path) -> str:
    """A folder of stand-ins for ``claude`` and ``codex``, for the head of PATH.

    A launch checks that its agent's program is installed; most tests launch the default agent
    and never need it to work. First on PATH, no test runs a real agent a person installed: the
    tests that run the pinned one name it (``$FLUME_CLAUDE``, ``.node``), and skip a stand-in
    (agents_kit.installed_or_skip).
    """
    folder = home / STAND_INS
    folder.mkdir()
    for name in ("claude", "codex"):
        program = folder / name
        program.write_text(_STAND_IN, encoding="utf-8")
        program.chmod(0o755)
    return str(folder)


@pytest.fixture(autouse=True, scope="session")
def _private_home() -> Iterator[Path]:
    """Point HOME and the XDG directories at a fresh temporary directory for the whole run."""
    names = (*_PRIVATE, "CLAUDE_CONFIG_DIR", "CODEX_HOME", "PATH", *_IDENTITY)
    saved = {name: os.environ.get(name) for name in names}
    with tempfile.TemporaryDirectory(prefix="flume-test-home-") as home:
        os.environ["HOME"] = home
        path = os.environ.get("PATH", os.defpath)
        os.environ["PATH"] = os.pathsep.join([_stand_ins(Path(home)), path])
        for name in _PRIVATE[1:]:
            os.environ[name] = str(Path(home) / name.lower())
        os.environ.pop("CLAUDE_CONFIG_DIR", None)
        os.environ.pop("CODEX_HOME", None)
        # A private HOME has no git identity: commits in tests are made by this one.
        os.environ.update(_IDENTITY)
        try:
            yield Path(home)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every Hypothesis test ``hypothesis``, so the coverage gate can run the rest alone."""
    for item in items:
        function = getattr(item, "obj", None)
        if function is not None and is_hypothesis_test(function):
            item.add_marker(pytest.mark.hypothesis)


@pytest.fixture
def corpus() -> Path:
    """Real Claude Code transcripts; the test is skipped without them (tests/shared.py)."""
    return shared.corpus()


#: This run's tag, carried by every process it starts.
_RUN = uuid.uuid4().hex
#: How long processes still ending at the run's end have to go.
_GRACE_SECONDS = 10.0


def _worker(config: pytest.Config) -> bool:
    """This session is one of pytest-xdist's workers, run by a controller that checks for it."""
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    """Tag the run before anything starts: every process started from here on inherits it.

    A pytest-xdist worker keeps the tag it inherited: the controller set it before starting it.
    """
    if not _worker(config):
        os.environ[processes.TAG] = _RUN


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the run if any process it started outlived it (after the fixtures' own clean-up)."""
    if _worker(session.config):
        return
    marks = [f"{processes.TAG}={_RUN}"]
    # Where tmp_path folders are: a process started with an environment of its own shows it.
    # (pytest-xdist's workers have theirs under the controller's.)
    basetemp = getattr(getattr(session.config, "_tmp_path_factory", None), "_basetemp", None)
    if basetemp is not None:
        marks.append(f"{basetemp}/")
    left = processes.survivors(*marks, grace=_GRACE_SECONDS)
    if not left:
        return
    processes.end(left)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [
        f"{len(left)} process(es) started by the tests outlived the run (killed now):",
        *(f"  {each}" for each in left),
    ]
    for line in lines:
        if reporter is not None:
            reporter.write_line(line, red=True)
        else:
            print(line)  # noqa: T201 (no reporter to write with)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
