"""``flume watch``: the board, run in a pane of a tmux server of the test's own and read back.

A supervisor in this process (echo agents, a git lander) moves the places on; the board, a real
``flume watch`` process in a real terminal, must show each place's row and redraw it when the
place changes. It is read back with ``capture-pane``; ``-e`` keeps the colours, to see there are
none where the terminal or the user says so.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from flume.core.ids import Instant
from flume.core.observations import DropAsked
from flume.core.settings import Settings
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from tests.integration.agents_kit import wait_for
from tests.integration.places_kit import Harness, commit, flume, launch_place, repository

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

#: The colour rich gives a working stage (green), as tmux shows it with capture-pane -e.
GREEN = "\x1b[32m"


#: What the pane shows once the board has ended: its exit status, said by the shell that ran it
#: (tmux may show a pane dead before it has reaped its process and knows the status).
ENDED = "the board exited with status "


def start_board(panes: Tmux, folder: Path, repo: Path, **env: str) -> str:
    """Run ``flume watch`` for ``repo`` in a new pane; the pane's id."""
    board = [sys.executable, "-m", "flume", "watch", "--repository", str(repo),
             "--interval", "0.2"]  # fmt: skip
    # The board's own arguments go to sh as arguments, never into its script; sh outlives a
    # Ctrl-C (its trap is reset for the board, which gets the signal as a terminal sends it).
    argv = ["sh", "-c", f'trap true INT; "$@"; echo "{ENDED}$?"', "sh", *board]
    home = {key: os.environ[key] for key in ("HOME", "XDG_STATE_HOME")}
    ran = panes.start(group="board", window="watch", cwd=folder, argv=argv, env={**home, **env})
    assert ran.ok, ran.err
    return ran.out.strip()


def screen(panes: Tmux, pane: str, *, colours: bool = False) -> str:
    """What the pane shows now; with ``colours``, with its escape sequences."""
    ran = panes.run("capture-pane", "-p", "-J", *(["-e"] if colours else []), "-t", pane)
    assert ran.ok, ran.err
    return ran.out


def row(text: str, place: str) -> str:
    """The last line of the screen that shows ``place``'s row ("" if none)."""
    lines = [line for line in text.splitlines() if line.strip().startswith(f"{place} ")]
    return lines[-1] if lines else ""


def quits_on(panes: Tmux, pane: str, key: str) -> None:
    """Press ``key`` (q, or C-c for Ctrl-C): the board ends with status 0."""
    assert panes.run("send-keys", "-t", pane, key).ok
    wait_for(lambda: ENDED in screen(panes, pane), 15, f"the board to end on {key}")
    assert f"{ENDED}0" in screen(panes, pane)


@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
def test_the_board_shows_each_place_and_redraws_when_one_changes(
    tmp_path: Path, harness: Harness, panes: Tmux, no_color: bool
) -> None:
    """Rows for a fix and a question; the fix's row follows it to its submit stage; q quits."""
    repo = repository(tmp_path / "repo")
    launch_place(repo, "alpha")
    launch_place(repo, "beta", kind="question")
    harness.settle()
    pane = start_board(panes, tmp_path, repo, **({"NO_COLOR": "1"} if no_color else {}))

    def both_working() -> bool:
        shown = screen(panes, pane)
        return "code#1" in row(shown, "fix--alpha") and "session#1" in row(shown, "question--beta")

    wait_for(both_working, 30, "both places' rows")
    shown = screen(panes, pane)
    assert "flume watch: 2 places in " in shown
    alpha = row(shown, "fix--alpha").split()
    assert alpha[:7] == ["fix--alpha", "fix", "code#1", "working", "unknown", "no", "none"]
    assert row(shown, "question--beta").split()[:4] == [
        "question--beta",
        "question",
        "session#1",
        "working",
    ]
    assert (GREEN in screen(panes, pane, colours=True)) is not no_color
    # The fix commits: its code stage ends, and its submit stage starts.
    worktree = repo / "places" / "fix--alpha"
    commit(worktree, "greeting.txt", "hello\n")
    harness.settle()
    harness.pass_time(Settings().quiet_seconds + 1)
    wait_for(
        lambda: "submit#1 working" in " ".join(row(screen(panes, pane), "fix--alpha").split()),
        30,
        "the fix's row to show its submit stage",
    )
    assert "session#1" in row(screen(panes, pane), "question--beta")
    quits_on(panes, pane, "q")


def test_on_a_dumb_terminal_the_board_is_printed_anew_without_colour(
    tmp_path: Path, harness: Harness, panes: Tmux
) -> None:
    """TERM=dumb: no redrawing, no colour; a change prints the board again; Ctrl-C quits."""
    repo = repository(tmp_path / "repo")
    path = launch_place(repo, "alpha")
    harness.settle()
    pane = start_board(panes, tmp_path, repo, TERM="dumb")
    wait_for(lambda: "working" in row(screen(panes, pane), "fix--alpha"), 30, "the first board")
    places.command(path, DropAsked(at=Instant(time.time())), Settings())
    harness.settle()
    wait_for(lambda: "tidied" in row(screen(panes, pane), "fix--alpha"), 30, "the board again")
    shown = screen(panes, pane, colours=True)
    assert "\x1b[" not in shown
    boards = shown.count("flume watch: 1 place in ")
    assert boards >= 2
    rows = [line.split()[3] for line in shown.splitlines() if line.strip().startswith("fix--")]
    assert rows[0] == "working"
    assert rows[-1] == "tidied"
    quits_on(panes, pane, "C-c")


def test_once_prints_the_board_and_bad_options_exit_2(tmp_path: Path, harness: Harness) -> None:
    """--once prints every row once and exits; --mark filters; a bad repository or interval: 2."""
    repo = repository(tmp_path / "repo")
    launch_place(repo, "alpha")
    harness.settle()
    ran = flume("watch", "--once", "--repository", str(repo))
    assert ran.returncode == 0, ran.stderr
    assert "flume watch: 1 place in " in ran.stdout
    assert row(ran.stdout, "fix--alpha").split()[:4] == ["fix--alpha", "fix", "code#1", "working"]
    assert "\x1b[" not in ran.stdout
    marked = flume("watch", "--once", "--mark", "none-such")
    assert "flume watch: 0 places in every repository flume knows" in marked.stdout
    assert "no places" in marked.stdout
    bad = flume("watch", "--once", "--repository", str(tmp_path / "nowhere"))
    assert bad.returncode == 2
    assert "flume: repository: " in bad.stderr
    for interval in ("0", "-1", "inf", "nan"):
        slow = flume("watch", "--interval", interval)
        assert slow.returncode == 2, interval
        assert "flume: interval: " in slow.stderr
        assert "give a number of seconds over 0" in slow.stderr
