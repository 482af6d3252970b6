"""The landers on real repositories: the embedded one, a queue's submit command, and Landings."""

from __future__ import annotations

import concurrent.futures
import json
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from flume.core.actions import Land
from flume.core.ids import Instant, Sha
from flume.core.observations import (
    ChecksFailed,
    Landed,
    LandingBlocked,
    Observation,
    SubmitAsked,
)
from flume.core.place import Life, Place, Submission, Working, evolve
from flume.core.settings import Settings
from flume.shell import process
from flume.shell.observe.branches import BranchHeads
from flume.shell.observe.landings import Landings
from flume.shell.perform.lander import Lander
from flume.shell.perform.performer import Performer
from flume.shell.store import places
from flume.shell.store.follower import Followed
from flume.shell.supervisor.loop import Supervisor
from flume.shell.tools import git
from flume.shell.tools.openspec import is_change_archived
from tests.integration.places_kit import (
    Clock,
    EchoAgents,
    GitLander,
    Harness,
    commit,
    launch_place,
    repository,
    run_git,
)

#: A check that waits, up to a deadline, until two landings are checking at once.
BARRIER = """\
import os, pathlib, sys, time
folder = pathlib.Path(sys.argv[1])
with (folder / "runs").open("a") as runs:
    runs.write(os.getcwd() + "\\n")
(folder / ("here-" + pathlib.Path.cwd().name)).touch()
deadline = time.monotonic() + 60
while len(list(folder.glob("here-*"))) < 2:
    if time.monotonic() > deadline:
        sys.exit("the other landing never came")
    time.sleep(0.01)
"""
#: A merge queue's submit command: it writes the branch and base down and lands nothing.
ENQUEUE = "import sys; open(sys.argv[1], 'a').write(' '.join(sys.argv[2:]) + '\\n')"


def land_config(*, checks: Sequence[Sequence[str]] = (), submit: Sequence[str] = ()) -> str:
    """A ``.flume.toml`` declaring the checks or the submit command (JSON strings are TOML's)."""
    lines = ["[land]"]
    if checks:
        lines.append(f"checks = {json.dumps([list(argv) for argv in checks])}")
    if submit:
        lines.append(f"submit = {json.dumps(list(submit))}")
    return "\n".join(lines) + "\n"


def made(harness: Harness, repo: Path, name: str, kind: str = "fix") -> Place:
    """Launch a place and let the supervisor make it; the place."""
    path = launch_place(repo, name, kind)
    harness.settle()
    place = harness.place(path)
    assert place.made
    return place


def land(place: Place, lander: Lander | None = None) -> list[Observation]:
    """Perform the ``Land`` the core asks for on ``flume submit``."""
    action = Land(path=place.path, branch=place.branch, base=place.launch.base)
    return (lander or Lander()).land(place, action, Instant(time.time()))


def rev(repo: Path, name: str) -> str:
    """The commit ``name`` names."""
    return run_git(repo, "rev-parse", name).strip()


def is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    """Every commit of ``ancestor`` is reachable from ``descendant``."""
    return git.run(repo, "merge-base", "--is-ancestor", ancestor, descendant).ok


def commit_files(worktree: Path, files: dict[str, str], message: str = "files") -> Sha:
    """Write files (folders made as needed) and commit them; the new head."""
    for name, text in files.items():
        (worktree / name).parent.mkdir(parents=True, exist_ok=True)
        (worktree / name).write_text(text, encoding="utf-8")
    run_git(worktree, "add", "-A")
    run_git(worktree, "commit", "-q", "-m", message)
    return Sha(rev(worktree, "HEAD"))


def submitted(path: Path, place: Place) -> Followed:
    """The place as the supervisor follows it once ``flume submit`` handed it to the lander."""
    return Followed(journal=path, place=evolve(place, submission=Submission.SUBMITTED), fresh=False)


# --- the embedded lander -----------------------------------------------------------------------


def test_a_clean_landing_rebases_and_fast_forwards_the_base_and_its_checkout(
    host: Path, harness: Harness
) -> None:
    """The branch is rebased on the base's new work and lands; main's files follow it."""
    repo = repository(host / "repo")
    place = made(harness, repo, "greeting")
    work = Path(place.path)
    commit(work, "greeting.txt", "hello\n")
    commit(work, "second.txt", "two\n")
    commit(repo, "other.txt", "meanwhile\n")
    (seen,) = land(place)
    assert isinstance(seen, Landed)
    assert seen.base_sha == rev(repo, "main")
    assert not seen.change_archived
    assert is_ancestor(repo, "fix/greeting", "main")
    assert rev(repo, "fix/greeting") == rev(repo, "main")
    assert (repo / "greeting.txt").read_text() == "hello\n"
    assert (repo / "second.txt").read_text() == "two\n"
    assert (repo / "other.txt").read_text() == "meanwhile\n"
    assert run_git(repo, "status", "--porcelain", "--untracked-files=no") == ""


def test_a_base_checked_out_nowhere_is_moved_by_its_ref_alone(host: Path, harness: Harness) -> None:
    """With main checked out in no worktree, the compare-and-swap moves the ref and no files."""
    repo = repository(host / "repo")
    place = made(harness, repo, "detached")
    commit(Path(place.path), "greeting.txt")
    run_git(repo, "switch", "-q", "--detach")
    (seen,) = land(place)
    assert isinstance(seen, Landed)
    assert rev(repo, "main") == rev(repo, "fix/detached") == seen.base_sha
    assert not (repo / "greeting.txt").exists()


def test_failing_checks_go_back_with_their_output_and_the_mended_branch_lands(
    host: Path, harness: Harness
) -> None:
    """A failing check refuses the landing with its output; once the fix is committed it lands."""
    check = ["sh", "-c", "test -f ok || { echo there is no ok file; exit 3; }"]
    repo = repository(host / "repo", files={".flume.toml": land_config(checks=[check])})
    place = made(harness, repo, "checked")
    work = Path(place.path)
    commit(work, "greeting.txt")
    before = rev(repo, "main")
    (seen,) = land(place)
    assert isinstance(seen, ChecksFailed)
    assert seen.reason.endswith("failed (exit 3)")
    assert seen.reason.startswith("sh -c ")
    assert "there is no ok file" in seen.output
    assert rev(repo, "main") == before
    commit(work, "ok")
    (seen,) = land(place)
    assert isinstance(seen, Landed)
    assert (repo / "ok").exists()
    assert is_ancestor(repo, "fix/checked", "main")


def test_a_conflicting_rebase_is_aborted_and_the_place_left_as_it_was(
    host: Path, harness: Harness
) -> None:
    """A conflict with the base: refused with git's words, the branch and worktree unchanged."""
    repo = repository(host / "repo")
    place = made(harness, repo, "clash")
    work = Path(place.path)
    head = commit(work, "README.md", "the place's words\n")
    commit(repo, "README.md", "main's words\n")
    before = rev(repo, "main")
    (seen,) = land(place)
    assert isinstance(seen, ChecksFailed)
    assert seen.reason == "the branch does not rebase cleanly on main"
    assert "CONFLICT" in seen.output
    assert rev(repo, "fix/clash") == head
    assert rev(repo, "main") == before
    assert run_git(work, "symbolic-ref", "HEAD").strip() == "refs/heads/fix/clash"
    assert run_git(work, "status", "--porcelain") == ""
    assert (work / "README.md").read_text() == "the place's words\n"


def test_a_branch_holding_the_base_lands_as_it_is_its_merges_kept(
    host: Path, harness: Harness
) -> None:
    """A conflict mended in a merge (lanes merged by hand), the base unmoved: it lands, unflattened.

    A rebase would replay both sides of the merge one after the other and conflict again where
    nothing conflicts (seen trying the lanes tutorial: a run's finalize could never land).
    """
    repo = repository(host / "repo")
    place = made(harness, repo, "merged")
    work = Path(place.path)
    run_git(work, "switch", "-q", "-c", "side")
    commit(work, "README.md", "shouted!\n")
    run_git(work, "switch", "-q", "fix/merged")
    commit(work, "README.md", "spelt\n")
    clash = git.run(work, "merge", "--no-edit", "side")
    assert not clash.ok
    (work / "README.md").write_text("spelt and shouted!\n", encoding="utf-8")
    run_git(work, "add", "README.md")
    run_git(work, "commit", "-q", "--no-edit")
    head = rev(work, "HEAD")
    (seen,) = land(place)
    assert isinstance(seen, Landed), seen
    assert rev(repo, "main") == head == seen.base_sha
    assert (repo / "README.md").read_text() == "spelt and shouted!\n"


def test_uncommitted_changes_in_the_place_are_refused(host: Path, harness: Harness) -> None:
    """Work not committed would not land with the branch: it goes back to the agent."""
    repo = repository(host / "repo")
    place = made(harness, repo, "loose")
    commit(Path(place.path), "greeting.txt")
    (Path(place.path) / "forgotten.txt").write_text("not added\n")
    before = rev(repo, "main")
    (seen,) = land(place)
    assert isinstance(seen, ChecksFailed)
    assert seen.reason == "uncommitted changes in the place"
    assert "forgotten.txt" in seen.output
    assert rev(repo, "main") == before


def test_a_dirty_checkout_of_the_base_is_never_touched(host: Path, harness: Harness) -> None:
    """A main checked out with uncommitted changes: blocked, nothing moved, the edit kept."""
    repo = repository(host / "repo")
    place = made(harness, repo, "careful")
    commit(Path(place.path), "greeting.txt")
    (repo / "README.md").write_text("an edit in progress\n")
    before = rev(repo, "main")
    (seen,) = land(place)
    assert isinstance(seen, LandingBlocked)
    assert seen.reason == f"main is checked out with uncommitted changes in {repo}"
    assert "README.md" in seen.output
    assert seen.way_out.startswith(f"commit or stash the changes in {repo}")
    assert rev(repo, "main") == before
    assert (repo / "README.md").read_text() == "an edit in progress\n"
    assert not (repo / "greeting.txt").exists()


def test_two_places_landing_at_once_both_land_and_one_goes_round_again(
    host: Path, harness: Harness
) -> None:
    """Two landings checked at the same moment: the second to move main rebases, checks again."""
    barrier = host / "barrier"
    barrier.mkdir()
    script = host / "barrier.py"
    script.write_text(BARRIER)
    check = [sys.executable, str(script), str(barrier)]
    repo = repository(host / "repo", files={".flume.toml": land_config(checks=[check])})
    first, second = made(harness, repo, "first"), made(harness, repo, "second")
    commit(Path(first.path), "first.txt", "1\n")
    commit(Path(second.path), "second.txt", "2\n")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(land, [first, second]))
    assert all(isinstance(seen, Landed) for (seen,) in answers), answers
    for branch in ("fix/first", "fix/second"):
        assert is_ancestor(repo, branch, "main")
    assert (repo / "first.txt").read_text() == "1\n"
    assert (repo / "second.txt").read_text() == "2\n"
    runs = (barrier / "runs").read_text().splitlines()
    assert len(runs) == 3, runs
    assert run_git(repo, "rev-list", "--count", "main").strip() == "3"


def test_landing_the_same_place_twice_moves_nothing_the_second_time(
    host: Path, harness: Harness
) -> None:
    """A ``Land`` performed again after a crash finds the work on main and says it landed."""
    repo = repository(host / "repo")
    place = made(harness, repo, "twice")
    commit(Path(place.path), "greeting.txt")
    (first,) = land(place)
    assert isinstance(first, Landed)
    reflog = run_git(repo, "reflog", "show", "--format=%H", "refs/heads/main")
    (again,) = land(place)
    assert again == Landed(at=again.at, base_sha=first.base_sha)
    assert run_git(repo, "reflog", "show", "--format=%H", "refs/heads/main") == reflog


def test_a_landed_change_says_whether_its_change_is_archived(host: Path, harness: Harness) -> None:
    """A change archived under openspec/changes/archive/ lands archived; one left out does not."""
    repo = repository(host / "repo")
    archived = made(harness, repo, "tidy-up", kind="change")
    commit_files(
        Path(archived.path),
        {"openspec/changes/archive/2025-06-01-tidy-up/proposal.md": "why\n"},
    )
    (seen,) = land(archived)
    assert isinstance(seen, Landed)
    assert seen.change_archived
    left = made(harness, repo, "left-out", kind="change")
    commit_files(Path(left.path), {"openspec/changes/left-out/proposal.md": "why\n"})
    (seen,) = land(left)
    assert isinstance(seen, Landed)
    assert not seen.change_archived


def test_an_archive_counts_only_under_the_changes_own_name(host: Path) -> None:
    """``<date>-<name>`` or ``<name>`` is the change's archive; a longer name is another's."""
    repo = repository(
        host / "repo",
        files={
            "openspec/changes/archive/2025-06-01-tidy-up/proposal.md": "a\n",
            "openspec/changes/archive/plain/proposal.md": "b\n",
            "openspec/changes/archive/2025-06-01-both/proposal.md": "c\n",
            "openspec/changes/both/proposal.md": "d\n",
        },
    )
    head = Sha(rev(repo, "main"))
    assert is_change_archived(repo, head, "tidy-up")
    assert is_change_archived(repo, head, "plain")
    assert not is_change_archived(repo, head, "up")
    assert not is_change_archived(repo, head, "both")
    assert not is_change_archived(repo, head, "absent")


# --- a merge queue's submit command, and Landings ----------------------------------------------


def test_a_failing_submit_command_goes_back_to_the_agent(host: Path, harness: Harness) -> None:
    """The queue refused the branch: its words come back as failed checks."""
    submit = ["sh", "-c", "echo the queue is closed; exit 4", "{branch}"]
    repo = repository(host / "repo", files={".flume.toml": land_config(submit=submit)})
    place = made(harness, repo, "closed")
    commit(Path(place.path), "greeting.txt")
    (seen,) = land(place)
    assert isinstance(seen, ChecksFailed)
    assert seen.reason.endswith("failed (exit 4)")
    assert "fix/closed" in seen.reason
    assert "the queue is closed" in seen.output


def test_a_queue_landing_by_squash_is_observed_once_the_base_holds_the_work(
    host: Path, harness: Harness
) -> None:
    """The submit command only queues; Landings reports Landed once main holds a squash of it."""
    queue = host / "queue.txt"
    submit = [sys.executable, "-c", ENQUEUE, str(queue), "{branch}", "{base}"]
    repo = repository(host / "repo", files={".flume.toml": land_config(submit=submit)})
    place = made(harness, repo, "queued")
    idle = made(harness, repo, "idle")
    commit(Path(place.path), "one.txt", "1\n")
    commit(Path(place.path), "two.txt", "2\n")
    before = rev(repo, "main")
    assert land(place) == []
    assert queue.read_text() == "fix/queued main\n"
    assert rev(repo, "main") == before
    journal_path = places.journals_dir(repo) / "fix--queued" / places.JOURNAL
    followed = [submitted(journal_path, place), Followed(journal=journal_path, place=idle)]
    landings = Landings()
    assert list(landings.observe(followed, Instant(time.time()))) == []
    run_git(repo, "merge", "-q", "--squash", "fix/queued")
    run_git(repo, "commit", "-q", "-m", "queued, squashed")
    ((each, seen),) = list(landings.observe(followed, Instant(time.time())))
    assert each is followed[0]
    assert isinstance(seen, Landed)
    assert seen.base_sha == rev(repo, "main")
    assert not is_ancestor(repo, "fix/queued", "main")


def test_places_with_nothing_submitted_cost_landings_nothing(host: Path, harness: Harness) -> None:
    """Idle places run no git at all in Landings."""
    repo = repository(host / "repo")
    idle = made(harness, repo, "idle")
    followed = [Followed(journal=host / "journal", place=idle)] * 50
    runs = process.count.runs["git"]
    assert list(Landings().observe(followed, Instant(time.time()))) == []
    assert process.count.runs["git"] == runs


def test_a_queue_on_a_remote_is_fetched_no_oftener_than_asked(host: Path, harness: Harness) -> None:
    """The base's remote is fetched (at most every fetch_seconds) and its landing seen there."""
    origin = host / "origin.git"
    run_git(host, "init", "-q", "--bare", "-b", "main", str(origin))
    submit = ["git", "push", "--quiet", "origin", "{branch}"]
    repo = repository(host / "repo", files={".flume.toml": land_config(submit=submit)})
    run_git(repo, "remote", "add", "origin", str(origin))
    run_git(repo, "push", "-q", "-u", "origin", "main")
    place = made(harness, repo, "remote")
    head = commit(Path(place.path), "greeting.txt", "hello\n")
    assert land(place) == []
    assert rev(origin, "fix/remote") == head
    followed = [submitted(host / "journal", place)]
    landings = Landings(fetch_seconds=60.0)
    now = time.time()
    assert list(landings.observe(followed, Instant(now))) == []
    # The queue: another clone cherry-picks the branch onto main and pushes it.
    queue = host / "queue"
    run_git(host, "clone", "-q", str(origin), str(queue))
    run_git(queue, "cherry-pick", "origin/fix/remote")
    run_git(queue, "push", "-q", "origin", "main")
    landed_at = rev(origin, "main")
    assert list(landings.observe(followed, Instant(now + 1))) == []
    ((_, seen),) = list(landings.observe(followed, Instant(now + 61)))
    assert seen == Landed(at=Instant(now + 61), base_sha=Sha(landed_at))
    assert rev(repo, "refs/remotes/origin/main") == landed_at
    assert rev(repo, "main") != landed_at


# --- through the supervisor ------------------------------------------------------------------


@pytest.fixture
def landing(host: Path) -> Iterator[Harness]:
    """A supervisor in this process whose lander is the real one, and which observes landings."""
    del host
    clock = Clock()
    agents = EchoAgents(clock)
    performer = Performer(clock=clock, agents=agents, lander=Lander())
    supervisor = Supervisor(
        Settings(), performer=performer, clock=clock, observers=(BranchHeads(), Landings())
    )
    # The harness's own git lander stands idle: the supervisor performs with ``Lander``.
    made_harness = Harness(clock=clock, agents=agents, lander=GitLander(), supervisor=supervisor)
    try:
        yield made_harness
    finally:
        made_harness.close()


def submit_through(harness: Harness, path: Path) -> None:
    """Drive a fix through its code stage to ``flume submit``, with a real commit."""
    harness.settle()
    place = harness.place(path)
    commit(Path(place.path), "greeting.txt", "hello\n")
    harness.settle()
    harness.pass_time(Settings().quiet_seconds + 1)
    place = harness.place(path)
    assert place.stage.name == "submit"
    assert isinstance(place.stage.phase, Working)
    assert place.agent is not None
    at = Instant(harness.clock.now)
    places.command(path, SubmitAsked(at=at, session=place.agent.session), Settings())
    harness.settle()


def finish(harness: Harness) -> None:
    """Let the landed stage go quiet and tidy follow."""
    harness.pass_time(Settings().quiet_seconds + 1)
    harness.pass_time(1)


def test_the_supervisor_lands_a_fix_with_the_embedded_lander(host: Path, landing: Harness) -> None:
    """A submitted fix lands on main; the place is tidied and its branch deleted."""
    repo = repository(host / "repo")
    path = launch_place(repo, "greeting")
    submit_through(landing, path)
    assert landing.place(path).submission is Submission.LANDED
    finish(landing)
    assert landing.place(path).life is Life.TIDIED
    assert (repo / "greeting.txt").read_text() == "hello\n"
    assert "fix/greeting" not in git.heads(repo)


def test_the_supervisor_sees_a_queue_land_a_fix(host: Path, landing: Harness) -> None:
    """Submitted to a queue, the fix waits; once main holds it, Landings lands the place."""
    queue = host / "queue.txt"
    submit = [sys.executable, "-c", ENQUEUE, str(queue), "{branch}", "{base}"]
    repo = repository(host / "repo", files={".flume.toml": land_config(submit=submit)})
    path = launch_place(repo, "queued")
    submit_through(landing, path)
    assert queue.read_text() == "fix/queued main\n"
    landing.pass_time(1)
    assert landing.place(path).submission is Submission.SUBMITTED
    run_git(repo, "merge", "-q", "--squash", "fix/queued")
    run_git(repo, "commit", "-q", "-m", "queued, squashed")
    landing.pass_time(1)
    place = landing.place(path)
    assert place.submission is Submission.LANDED
    assert place.submission_note == f"main at {rev(repo, 'main')}"
    finish(landing)
    assert landing.place(path).life is Life.TIDIED
    assert "fix/queued" in git.heads(repo)


# --- through a fleet's remote --------------------------------------------------------------


def fleet_clone(host: Path, name: str = "repo") -> tuple[Path, Path]:
    """A bare remote holding a first commit, and a clone of it that lands through it."""
    origin = repository(host / "origin-work")
    remote = host / "remote.git"
    run_git(host, "clone", "-q", "--bare", str(origin), str(remote))
    clone = host / name
    run_git(host, "clone", "-q", str(remote), str(clone))
    run_git(clone, "config", git.FLEET_REMOTE, "origin")
    return remote, clone.resolve()


def test_a_fleet_clone_lands_through_its_remote_and_rounds_again_when_the_base_moved(
    host: Path, harness: Harness
) -> None:
    """The push is a compare-and-swap: refused when the remote's base moved, rebased, pushed."""
    remote, clone = fleet_clone(host)
    place = made(harness, clone, "greeting")
    commit(Path(place.path), "greeting.txt", "hello\n")
    # Another host lands first: the remote's main moves past what this clone has seen.
    other = host / "other"
    run_git(host, "clone", "-q", str(remote), str(other))
    commit(other, "other.txt", "meanwhile\n")
    run_git(other, "push", "-q", "origin", "main")
    moved = rev(remote, "main")
    (seen,) = land(place)
    assert isinstance(seen, Landed), seen
    assert seen.base_sha == rev(remote, "main")
    assert is_ancestor(remote, moved, "main")
    assert run_git(remote, "show", "main:greeting.txt") == "hello\n"
    # The local base followed, its checkout with it; nothing was forced.
    assert rev(clone, "main") == rev(remote, "main")
    assert (clone / "other.txt").read_text() == "meanwhile\n"
    # A landing performed again finds the remote holding the work.
    (again,) = land(place)
    assert isinstance(again, Landed)
    assert again.base_sha == seen.base_sha


def test_a_push_the_remote_refuses_is_tried_again_never_forced(
    host: Path, harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another landing winning each round (git refusing the push) goes round, then says so."""
    remote, clone = fleet_clone(host)
    place = made(harness, clone, "raced")
    commit(Path(place.path), "raced.txt")
    other = host / "other"
    run_git(host, "clone", "-q", str(remote), str(other))
    pushes: list[str] = []
    original = git.push

    def beaten(repository: Path, name: str, refspec: str, timeout: float = 60.0) -> process.Ran:
        """Another host pushes to main just before this push: the remote's main moved."""
        pushes.append(refspec)
        commit(other, f"other-{len(pushes)}.txt")
        run_git(other, "push", "-q", "origin", "main")
        return original(repository, name, refspec, timeout)

    monkeypatch.setattr(git, "push", beaten)
    action = Land(path=place.path, branch=place.branch, base="main")
    (seen,) = Lander(rounds=3).land(place, action, Instant(time.time()))
    assert isinstance(seen, ChecksFailed)
    assert "moved on during each of 3 tries" in seen.reason
    assert len(pushes) == 3
    assert all(not refspec.startswith("+") for refspec in pushes)
    assert not is_ancestor(remote, rev(clone, "fix/raced"), "main")
    assert run_git(remote, "log", "--format=%s", "main").splitlines()[0] == "add other-3.txt"
