"""The manual's tutorials, run as a reader would follow them: a tutorial that rots fails here.

Each page under docs/tutorials/ is read by tests/integration/tutorials_kit.py: its files are
written and its commands run, in order, on a host of the test's own (flume's state, its tmux
server and the agents' HOME in a temporary folder), with this checkout's ``flume`` first on
PATH; each command must exit as the page says and print the lines the page shows. The agent is
flume's test agent, following the script the page has the reader write.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from flume.testing import scenario
from tests.integration.tutorials_kit import Command, File, missing, pattern, steps, write

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

TUTORIALS = Path(__file__).resolve().parents[2] / "docs" / "tutorials"
PAGES = ["first-fix", "first-workflow", "lanes", "lead"]
#: The longest any one command of a tutorial may take.
COMMAND_SECONDS = 180


def test_every_tutorial_page_is_run() -> None:
    """The four tutorials are the pages of the folder, and each has files and commands."""
    assert sorted(page.stem for page in TUTORIALS.glob("*.md")) == sorted(PAGES)
    for page in PAGES:
        found = steps((TUTORIALS / f"{page}.md").read_text(encoding="utf-8"))
        assert any(isinstance(step, File) for step in found), page
        assert sum(isinstance(step, Command) for step in found) >= 5, page


def _run(command: Command, folder: Path, environment: dict[str, str]) -> str:
    """Run one command of the page in ``folder``; what it printed (checked against the page)."""
    argv = command.argv()
    found = shutil.which(argv[0], path=environment["PATH"])
    assert found is not None, f"{argv[0]} is not installed"
    ran = subprocess.run(  # noqa: S603 (the page's own command, no shell)
        [found, *argv[1:]],
        cwd=folder,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=COMMAND_SECONDS,
        check=False,
    )
    where = f"$ {command.line}\n{ran.stdout}"
    assert ran.returncode == command.status, (
        f"exit {ran.returncode}, not {command.status}:\n{where}"
    )
    left = missing(command.shown, ran.stdout.splitlines())
    assert not left, f"not printed: {left}\n{where}"
    return ran.stdout


@pytest.mark.parametrize("page", PAGES)
def test_a_tutorial_does_what_its_page_says(page: str) -> None:
    """Every file written and command run as the page says: each exits and prints as shown."""
    found = steps((TUTORIALS / f"{page}.md").read_text(encoding="utf-8"))
    # A short folder: the host's tmux socket lives in it.
    top = Path(tempfile.mkdtemp(prefix="tut-", dir="/tmp"))
    try:
        with scenario.private_host(top / "host"):
            environment = os.environ.copy()
            bin_folder = str(Path(sys.executable).parent)
            environment["PATH"] = f"{bin_folder}{os.pathsep}{environment.get('PATH', '')}"
            # Into a pipe, a table is drawn whole, every column, as the pages show it.
            for unset in ("COLUMNS", "LINES", "NO_COLOR"):
                environment.pop(unset, None)
            folder = top / "work"
            folder.mkdir()
            for step in found:
                if isinstance(step, File):
                    write(folder, step)
                elif step.argv()[0] == "cd":
                    folder = (folder / step.argv()[1]).resolve()
                else:
                    _run(step, folder, environment)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_the_kit_reads_files_commands_and_their_output() -> None:
    """A caption names a file; ``$`` lines are commands, the lines after them their output."""
    page = (
        "Text.\n\n```{code-block} toml\n:caption: a/b.toml\n\nx = 1\n```\n\n"
        "```console\n$ flume status  # exit 2\nplace  kind\n...\n$ cd a\n```\n\n"
        "```sh\nnot run\n```\n"
    )
    assert steps(page) == [
        File(path="a/b.toml", text="x = 1\n"),
        Command(line="flume status  # exit 2", shown=("place  kind", "..."), status=2),
        Command(line="cd a", shown=()),
    ]


def test_a_shown_line_stands_for_times_commits_and_elisions() -> None:
    """``...``, a date and time and a commit each match what varies from run to run."""
    shown = pattern("2026-12-06 07:22:52 fix--typo ... landed on main at 4ef9cd2")
    assert shown.fullmatch("2031-01-02 03:04:05 fix--typo submit#1 landed on main at 0123abc")
    assert not shown.fullmatch("2031-01-02 03:04:05 fix--typo submit#1 landed on main at 0123ab")
    assert missing(("a", "c"), ["a", "b", "c"]) == []
    assert missing(("c", "a"), ["a", "b", "c"]) == ["a"]
