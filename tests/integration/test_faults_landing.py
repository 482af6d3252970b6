"""Faults of landing: the base repository's state blocks it, or the base was rewritten.

Each fault is met by the real supervisor (the ``flume daemon`` the CLI starts), the test agent in
real tmux panes and real git, on a host of the test's own (issue 15, items 7 and 8).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from flume.core import stage
from flume.core.actions import SendTell
from flume.core.ids import Instant
from flume.core.observations import ChecksFailed, Landed, LandingBlocked, Observation
from flume.core.place import Place
from flume.shell.panes.tmux import Tmux
from flume.shell.perform.lander import Lander
from flume.shell.store import places
from flume.testing import scenario
from tests.integration.agents_kit import decided, observations, place_of, wait_for
from tests.integration.places_kit import (
    Harness,
    commit,
    flume_process,
    launch_place,
    repository,
    run_git,
)

#: How long a fix has to reach the lander, or to land (a few seconds when the machine is idle).
LANDING_SECONDS = 120
PLACE = "fix--greet"

#: A step of the test agent's script that waits, up to a deadline, until a file exists.
WAIT_FOR = (
    "import pathlib, sys, time\n"
    "deadline = time.monotonic() + 90\n"
    "while not pathlib.Path(sys.argv[1]).exists():\n"
    "    if time.monotonic() > deadline:\n"
    "        sys.exit('never told to go on')\n"
    "    time.sleep(0.05)\n"
)

#: A landing check that, the first time it runs, leaves a lock on the main checkout's index,
#: as a person's git would that started just then (the lander took no lock of git's yet).
LOCKS_ONCE = (
    "import pathlib, sys\n"
    "lock, marker = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])\n"
    "if not marker.exists():\n"
    "    marker.touch()\n"
    "    lock.touch()\n"
)


def status_json(repository: Path) -> dict[str, object]:
    """The place as ``flume status --json`` shows it."""
    ran = flume_process("status", "--json", "--repository", str(repository))
    assert ran.returncode == 0, ran.stderr
    (shown,) = [p for p in json.loads(ran.stdout)["places"] if p["place"] == PLACE]
    return dict(shown)


def status_text(repository: Path) -> str:
    """``flume status`` for a person."""
    ran = flume_process("status", "--repository", str(repository))
    assert ran.returncode == 0, ran.stderr
    assert "Traceback" not in ran.stdout + ran.stderr
    return ran.stdout


def launch(sample: scenario.Sample) -> Path:
    """Launch the scenario's fix with the test agent; its journal."""
    ran = flume_process(*sample.argv())
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(sample.repository) / PLACE / places.JOURNAL


def wait_for_the_lander(repository: Path) -> dict[str, object]:
    """Wait until the lander answered the submission other than by landing; the place's status."""
    answered = {"blocked", "checks-failed"}
    wait_for(
        lambda: status_json(repository)["submission"] in answered,
        LANDING_SECONDS,
        "the lander's answer",
    )
    return status_json(repository)


def wait_tidied(repository: Path) -> None:
    """Wait until the place landed and was tidied."""
    wait_for(lambda: status_json(repository)["phase"] == "tidied", LANDING_SECONDS, "tidied")


def told_nothing(journal: Path) -> None:
    """The agent was never handed the base's fault: no failed checks, no tell."""
    assert not [seen for seen in observations(journal) if isinstance(seen, ChecksFailed)]
    assert decided(journal, SendTell) == []
    assert place_of(journal).tells_given == 0


def test_a_stale_index_lock_in_the_main_checkout_is_named_and_waited_out(
    tmp_path: Path, panes: Tmux
) -> None:
    """A lock git left on main's checkout: the landing waits, named for the person, not told.

    Before, status said only "main could not be moved forward to <sha>" and git's "remove the
    file manually" went to the agent as its failing checks.
    """
    del panes
    sample = scenario.fix_that_lands(tmp_path)
    repo = sample.repository
    lock = repo / ".git" / "index.lock"
    lock.touch()
    journal = launch(sample)
    shown = wait_for_the_lander(repo)
    assert shown["submission"] == "blocked"
    note = str(shown["submission_note"])
    assert f"main cannot be moved forward: git's lock {lock} is held" in note
    way_out = f"remove the lock {lock} if no git process runs there"
    assert way_out in note
    assert way_out in status_text(repo)
    told_nothing(journal)
    assert lock.exists()  # flume never removes a lock
    assert run_git(repo, "show", "main:greet.txt") == "hullo\n"
    lock.unlink()  # the way out, taken by the person
    wait_tidied(repo)
    assert (repo / "greet.txt").read_text(encoding="utf-8") == "hello\n"
    told_nothing(journal)


def test_a_lock_taken_while_the_checks_ran_is_shown_with_gits_words(
    tmp_path: Path, panes: Tmux
) -> None:
    """A lock that appears after the lander looked: git refuses the move, and says why."""
    del panes
    sample = scenario.fix_that_lands(tmp_path)
    repo = sample.repository
    lock = repo / ".git" / "index.lock"
    check = [sys.executable, "-c", LOCKS_ONCE, str(lock), str(tmp_path / "locked-once")]
    config = f"{scenario.FAST_TIMING}\n[land]\nchecks = [{json.dumps(check)}]\n"
    (repo / ".flume.toml").write_text(config, encoding="utf-8")
    run_git(repo, "commit", "-q", "-am", "Check by locking once")
    journal = launch(sample)
    shown = wait_for_the_lander(repo)
    assert shown["submission"] == "blocked"
    first = next(seen for seen in observations(journal) if isinstance(seen, LandingBlocked))
    assert f"Unable to create '{lock}': File exists" in first.output
    assert first.way_out.startswith(f"remove the lock {lock} if no git process runs there")
    assert f"remove the lock {lock} if no git process runs there" in status_text(repo)
    told_nothing(journal)
    lock.unlink()
    wait_tidied(repo)
    assert (repo / "greet.txt").read_text(encoding="utf-8") == "hello\n"


def test_a_dirty_checkout_of_main_waits_for_its_owner(tmp_path: Path, panes: Tmux) -> None:
    """Main checked out with a person's edit: named with git's words, landed once stashed."""
    del panes
    sample = scenario.fix_that_lands(tmp_path)
    repo = sample.repository
    (repo / "README.md").write_text("# greet, being edited\n", encoding="utf-8")
    journal = launch(sample)
    shown = wait_for_the_lander(repo)
    assert shown["submission"] == "blocked"
    note = str(shown["submission_note"])
    assert f"main is checked out with uncommitted changes in {repo}" in note
    assert "M README.md" in note  # git status's words
    text = status_text(repo)
    assert f"commit or stash the changes in {repo}" in text
    told_nothing(journal)
    run_git(repo, "stash", "-q")  # the way out, taken by the person
    wait_tidied(repo)
    run_git(repo, "stash", "pop", "-q")
    assert (repo / "README.md").read_text(encoding="utf-8") == "# greet, being edited\n"
    assert (repo / "greet.txt").read_text(encoding="utf-8") == "hello\n"
    told_nothing(journal)


def test_a_commit_dropped_from_main_after_the_launch_stays_dropped(
    tmp_path: Path, panes: Tmux
) -> None:
    """Main rewritten under a working place: only the place's own commits land.

    Before, the lander's rebase replayed the dropped commit with the branch's own.
    """
    del panes
    sample = scenario.fix_that_lands(tmp_path)
    repo = sample.repository
    (repo / "doomed.txt").write_text("a mistake\n", encoding="utf-8")
    run_git(repo, "add", "doomed.txt")
    run_git(repo, "commit", "-q", "-m", "A commit main will drop")
    go = tmp_path / "go"
    submit_waits = (
        "[[turn]]\n"
        'match = ":code:1]"\n'
        'steps = [{write = {path = "greet.txt", text = "hello\\n"}}, {commit = "Say hello"}]\n'
        "\n[[turn]]\n"
        'match = ":submit:1]"\n'
        f"steps = [{{run = {json.dumps([sys.executable, '-c', WAIT_FOR, str(go)])}}}, "
        '{run = ["flume", "submit"]}]\n'
    )
    sample.script.write_text(submit_waits, encoding="utf-8")
    journal = launch(sample)
    wait_for((repo / "places" / PLACE).is_dir, LANDING_SECONDS, "the place made")
    # The person drops the commit from main and goes on; the place's branch still holds it.
    run_git(repo, "reset", "-q", "--hard", "HEAD~1")
    (repo / "meanwhile.txt").write_text("more\n", encoding="utf-8")
    run_git(repo, "add", "meanwhile.txt")
    run_git(repo, "commit", "-q", "-m", "Meanwhile on main")
    go.touch()
    wait_tidied(repo)
    files = run_git(repo, "ls-tree", "--name-only", "main").split()
    assert "doomed.txt" not in files
    assert {"greet.txt", "meanwhile.txt"} <= set(files)
    subjects = run_git(repo, "log", "--format=%s", "main").splitlines()
    assert subjects == ["Say hello", "Meanwhile on main", "start"]
    told_nothing(journal)


# --- the embedded lander on its own: which commits are the place's ---------------------------


def land_as_the_core_asks(place: Place) -> list[Observation]:
    """Perform the ``Land`` the core asks for on ``flume submit``: the launch's revision with it."""
    return Lander().land(place, stage.land(place), Instant(time.time()))


def test_a_branch_the_agent_moved_onto_the_rewritten_base_lands_as_it_is(
    host: Path, harness: Harness
) -> None:
    """The agent rebased on the rewritten main itself: its branch lands, nothing brought back."""
    repo = repository(host / "repo")
    doomed = commit(repo, "doomed.txt", "a mistake\n")
    journal = launch_place(repo, "moved")
    harness.settle()
    place = harness.place(journal)
    assert place.start == doomed
    work = Path(place.path)
    commit(work, "greeting.txt", "hello\n")
    run_git(repo, "reset", "-q", "--hard", "HEAD~1")
    meanwhile = commit(repo, "meanwhile.txt", "more\n")
    run_git(work, "rebase", "-q", "--onto", "main", doomed)
    (seen,) = land_as_the_core_asks(place)
    assert isinstance(seen, Landed)
    assert run_git(repo, "rev-parse", "main~1").strip() == meanwhile
    assert "doomed.txt" not in run_git(repo, "ls-tree", "--name-only", "main").split()
    assert (repo / "greeting.txt").read_text(encoding="utf-8") == "hello\n"


def test_a_commit_of_the_place_the_base_already_holds_as_a_patch_is_skipped(
    host: Path, harness: Harness
) -> None:
    """A base that only moved on is rebased on as before: a patch it holds is not replayed."""
    repo = repository(host / "repo")
    journal = launch_place(repo, "picked")
    harness.settle()
    place = harness.place(journal)
    work = Path(place.path)
    picked = commit(work, "picked.txt", "both\n")
    commit(work, "greeting.txt", "hello\n")
    run_git(repo, "cherry-pick", picked)
    (seen,) = land_as_the_core_asks(place)
    assert isinstance(seen, Landed)
    subjects = run_git(repo, "log", "--format=%s", "main").splitlines()
    assert subjects == ["add greeting.txt", "add picked.txt", "start"]
