"""The supervisor on real repositories: in this process tick by tick, and as the daemon."""

from __future__ import annotations

import json
import time
from pathlib import Path

from flume.cli.render import tidy_text
from flume.core.ids import Instant
from flume.core.observations import DropAsked, SetupFinished, SubmitAsked, WorktreeMade
from flume.core.place import Delivering, Life, TidyNotWanted, Working
from flume.core.settings import PRINT_CONFIRM_SECONDS, Settings
from flume.core.step import next_deadline, replay
from flume.shell.commands import tidying
from flume.shell.panes import printed
from flume.shell.store import journal, places
from flume.shell.supervisor import client
from flume.shell.tools import git
from tests.integration.places_kit import (
    Harness,
    commit,
    flume,
    launch_place,
    repository,
    run_git,
)

BRIEF = "Mend the greeting."


def launched(repo: Path, name: str, *extra: str) -> Path:
    """Launch a fix through the CLI, which starts the host's supervisor; its journal."""
    ran = flume(
        "launch",
        "--repository",
        str(repo),
        "--kind",
        "fix",
        "--name",
        name,
        "--brief",
        BRIEF,
        "--json",
        *extra,
    )
    assert ran.returncode == 0, ran.stderr
    return Path(json.loads(ran.stdout)["journal"])


def drop(path: Path) -> None:
    """What ``flume drop`` journals, without waking the host's supervisor."""
    places.command(path, DropAsked(at=Instant(time.time())), Settings())


def wait_until(predicate: object, seconds: float = 60.0) -> None:
    """Wait until ``predicate()`` holds, or fail at the deadline."""
    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            message = f"waited {seconds}s for {predicate}"
            raise AssertionError(message)
        time.sleep(0.02)


def kinds_in(path: Path) -> list[str]:
    """The observation types of a journal, in order."""
    return [type(seen).__name__ for seen in journal.read(path).observations]


def carry_to_landing(harness: Harness, path: Path) -> None:
    """Drive a fix through its code and submit stages with the echo agents and a real commit."""
    harness.settle()
    place = harness.place(path)
    assert isinstance(place.stage.phase, Working)
    commit(Path(place.path), "greeting.txt", "hello\n")
    harness.settle()
    harness.pass_time(Settings().quiet_seconds + 1)
    place = harness.place(path)
    assert place.stage.name == "submit"
    assert isinstance(place.stage.phase, Working)
    assert place.agent is not None
    places.command(
        path, SubmitAsked(at=Instant(harness.clock.now), session=place.agent.session), Settings()
    )
    harness.settle()
    harness.pass_time(Settings().quiet_seconds + 1)
    harness.pass_time(1)


def test_a_fix_lands_and_is_tidied_by_itself(host: Path, harness: Harness) -> None:
    """A landed fix: its place removed and its branch deleted, with no tidy asked (R10)."""
    repo = repository(host / "repo")
    path = launch_place(repo, "greeting")
    harness.lander.how = "rebase"
    carry_to_landing(harness, path)
    place = harness.place(path)
    assert place.life is Life.TIDIED
    assert not (repo / "places" / "fix--greeting").exists()
    assert "fix/greeting" not in git.heads(repo)
    assert (repo / "greeting.txt").read_text() == "hello\n"
    assert [(stage, attempt) for _path, stage, attempt in harness.agents.started] == [
        ("code", 1),
        ("submit", 1),
    ]


def test_a_squash_landing_keeps_the_branch_and_says_why(host: Path, harness: Harness) -> None:
    """Squashed, the branch's own commits are not on main: tidy keeps it, naming the count."""
    repo = repository(host / "repo")
    path = launch_place(repo, "squashed")
    harness.lander.how = "squash"
    carry_to_landing(harness, path)
    assert harness.place(path).life is Life.TIDIED
    assert not (repo / "places" / "fix--squashed").exists()
    assert "fix/squashed" in git.heads(repo)
    (found,) = places.places_of(repo, Settings())
    said = "\n".join(tidy_text([tidying.tidied_before(found, Settings())], dry_run=False))
    assert "kept fix/squashed: fix/squashed holds 1 commit main lacks: kept" in said


def test_drop_removes_the_place_and_keeps_the_branch(host: Path, harness: Harness) -> None:
    """Dropped work: its clean place is removed by the supervisor, its branch kept (R10)."""
    repo = repository(host / "repo")
    path = launch_place(repo, "dropme")
    harness.settle()
    worktree = repo / "places" / "fix--dropme"
    commit(worktree, "half.txt")
    drop(path)
    harness.settle()
    assert harness.place(path).life is Life.TIDIED
    assert not worktree.exists()
    assert "fix/dropme" in git.heads(repo)
    again = flume("drop", "fix--dropme")
    assert again.returncode == 1
    assert "fix--dropme is tidied" in again.stderr


def test_tidy_keeps_a_dirty_place_until_forced_and_dry_run_changes_nothing(
    host: Path, harness: Harness
) -> None:
    """R10: uncommitted or untracked changes keep the place; --force removes it."""
    repo = repository(host / "repo")
    path = launch_place(repo, "dirty")
    harness.settle()
    worktree = repo / "places" / "fix--dirty"
    (worktree / "notes.txt").write_text("unsaved\n", encoding="utf-8")
    drop(path)
    harness.settle()
    assert harness.place(path).life is Life.DROPPED
    assert worktree.exists()
    dry = flume("tidy", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    (shown,) = json.loads(dry.stdout)["places"]
    assert shown["state"] == "kept"
    assert "untracked files" in shown["kept"][0]["reason"]
    forced = flume("tidy", "--dry-run", "--force")
    assert f"would remove worktree {worktree}" in forced.stdout
    assert worktree.exists()
    assert harness.place(path).life is Life.DROPPED
    # Forced, it goes; what it is then reported to have kept is only what the last look kept.
    (found,) = places.places_of(repo, Settings())
    tidying.ask(found, force=True, settings=Settings(), clock=time.time)
    harness.settle()
    assert harness.place(path).life is Life.TIDIED
    (found,) = places.places_of(repo, Settings())
    reported = tidying.tidied_before(found, Settings())
    assert reported.removed == (f"worktree {worktree}", "branch fix/dirty")
    assert reported.kept == ()


def test_a_worktree_put_in_a_places_stead_by_hand_is_never_touched(
    host: Path, harness: Harness
) -> None:
    """The place's worktree replaced by one made by hand: tidy keeps it and its branch."""
    repo = repository(host / "repo")
    path = launch_place(repo, "swapped")
    harness.settle()
    worktree = repo / "places" / "fix--swapped"
    run_git(repo, "worktree", "remove", str(worktree))
    run_git(repo, "worktree", "add", "-q", "-b", "mine", str(worktree))
    drop(path)
    harness.settle()
    assert worktree.exists()
    assert git.worktree_paths(repo)[worktree] == "mine"
    assert "fix/swapped" in git.heads(repo)
    assert harness.place(path).life is Life.DROPPED


def test_subprocesses_per_tick_are_per_repository_not_per_place(
    host: Path, harness: Harness
) -> None:
    """P3: a tick runs one git process per repository, whether it follows 1 place or 12."""
    repo = repository(host / "repo")
    launch_place(repo, "first")
    harness.settle()
    harness.supervisor.tick()
    one = harness.supervisor.stats.last_tick_subprocesses
    for number in range(11):
        launch_place(repo, f"more{number}")
    harness.settle()
    harness.supervisor.tick()
    assert len(harness.supervisor.followed) == 12
    assert harness.supervisor.stats.last_tick_subprocesses == one == 1


def test_the_daemon_follows_launches_and_stops(host: Path) -> None:
    """Launch starts the supervisor; it makes the place; daemon status and stop work."""
    repo = repository(host / "repo", files={".flume.toml": '[place]\nsetup = [["true"]]\n'})
    path = launched(repo, "daemon")
    wait_until(lambda: "SetupFinished" in kinds_in(path))
    seen = journal.read(path).observations
    assert sum(isinstance(s, WorktreeMade) for s in seen) == 1
    assert sum(isinstance(s, SetupFinished) for s in seen) == 1
    # The agent is the test suite's stand-in for claude, which exits at once; once its pane is
    # closed, a tick with no agent live runs one git process for the repository (P3).
    wait_until(lambda: "AgentExited" in kinds_in(path))
    wait_until(lambda: _daemon_status()["last_tick_subprocesses"] == 1)
    shown = _daemon_status()
    assert shown["running"] is True
    assert shown["places"] == 1
    assert shown["last_tick_herdr_requests"] == 0  # no place runs its agents in herdr
    # Changes are found by inotify here (Linux), and said; the poller is named where it is not.
    assert shown["watching"] == "inotify"
    assert "changes found by: inotify" in flume("daemon", "status").stdout
    stopped = flume("daemon", "stop")
    assert "stopped" in stopped.stdout
    assert client.ping(timeout=0.5) is None
    # Status reads the journals with the supervisor down.
    (shown_place,) = json.loads(flume("status", "--json").stdout)["places"]
    assert shown_place["place"] == "fix--daemon"
    assert "not running" in flume("daemon", "status").stdout


def _daemon_status() -> dict[str, object]:
    shown: dict[str, object] = json.loads(flume("daemon", "status", "--json").stdout)
    return shown


def _tidy_decided(path: Path) -> bool:
    """The supervisor's own tidy of a dropped place has decided: nothing is wanted of it now."""
    place = replay(Settings(), journal.read(path).observations)
    return place.life is Life.TIDIED or (
        "TidyFactsSeen" in kinds_in(path) and place.tidy == TidyNotWanted()
    )


def test_a_dry_run_says_what_tidy_then_reports_after_the_supervisor_tidied(host: Path) -> None:
    """Through the real supervisor: drop, let it tidy, then dry run and tidy report alike (R10).

    Three dropped fixes: one whose branch holds nothing main lacks (place and branch removed by
    the supervisor, the name free again), one with a commit main lacks (its branch kept and
    named), one with an untracked file (kept whole, not yet tidied). ``tidy --dry-run --json``
    then says exactly what the ``tidy --json`` that follows reports, places already tidied with
    what was removed and kept included.
    """
    repo = repository(host / "repo")
    paths = {
        name: launched(repo, name, "--agent", "test", "--panes", "print")
        for name in ("empty", "ahead", "dirty")
    }
    for path in paths.values():
        wait_until(lambda path=path: "WorktreeMade" in kinds_in(path))
    commit(repo / "places" / "fix--ahead", "half.txt")
    (repo / "places" / "fix--dirty" / "notes.txt").write_text("unsaved\n", encoding="utf-8")
    for name in paths:
        assert flume("drop", f"fix--{name}").returncode == 0
    for path in paths.values():
        wait_until(lambda path=path: _tidy_decided(path))
    assert "fix/empty" not in git.heads(repo)
    assert "fix/ahead" in git.heads(repo)

    said = flume("tidy", "--dry-run").stdout
    assert "fix--empty: tidied earlier (dry run)" in said
    assert f"  removed worktree {repo}/places/fix--empty" in said
    assert f"would remove worktree {repo}/places/fix--dirty" not in said  # kept: not forced
    dry = flume("tidy", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    ran = flume("tidy", "--json")
    assert ran.returncode == 0, ran.stderr
    planned, reported = json.loads(dry.stdout), json.loads(ran.stdout)
    assert planned["dry_run"] is True
    assert reported["dry_run"] is False
    assert planned["places"] == reported["places"]
    shown = {each["place"]: each for each in reported["places"]}
    assert set(shown) == {"fix--empty", "fix--ahead", "fix--dirty"}
    assert shown["fix--empty"]["state"] == "tidied"
    assert shown["fix--empty"]["earlier"] is True
    assert not shown["fix--dirty"].get("earlier", False)
    assert shown["fix--empty"]["removed"] == [
        f"worktree {repo}/places/fix--empty",
        "branch fix/empty",
    ]
    assert shown["fix--empty"].get("kept", []) == []
    assert shown["fix--ahead"]["removed"] == [f"worktree {repo}/places/fix--ahead"]
    assert shown["fix--ahead"]["kept"] == [
        {"what": "fix/ahead", "reason": "fix/ahead holds 1 commit main lacks: kept"}
    ]
    assert shown["fix--dirty"]["state"] == "kept"
    assert [kept["what"] for kept in shown["fix--dirty"]["kept"]] == [
        f"{repo}/places/fix--dirty",
        "fix/dirty",
    ]
    # The empty branch went with its place, so the name launches again; the branch holding a
    # commit still holds its name, and the refusal says the command that frees it.
    again = flume("launch", "--repository", str(repo), "--kind", "fix", "--name", "empty",
                  "--brief", BRIEF, "--agent", "test", "--panes", "print")  # fmt: skip
    assert again.returncode == 0, again.stderr
    refused = flume("launch", "--repository", str(repo), "--kind", "fix", "--name", "ahead",
                    "--brief", BRIEF, "--agent", "test", "--panes", "print")  # fmt: skip
    assert refused.returncode == 2
    assert "the branch fix/ahead already exists" in refused.stderr
    assert "holding 1 commit main lacks" in refused.stderr
    assert f"git -C {repo} branch -D fix/ahead" in refused.stderr


def test_a_name_tidied_can_be_launched_again_while_followed(host: Path, harness: Harness) -> None:
    """The new journal at the old path is a new file: the supervisor reads it from its start."""
    repo = repository(host / "repo")
    first = launch_place(repo, "again")
    carry_to_landing(harness, first)
    assert harness.place(first).life is Life.TIDIED
    old_size = first.stat().st_size
    second = launch_place(repo, "again", brief="A short one.")
    assert second == first
    assert second.stat().st_size < old_size
    harness.settle()
    place = harness.place(second)
    assert place.made
    assert place.launch.brief == "A short one."
    assert (repo / "places" / "fix--again").is_dir()
    archived = list((places.journals_dir(repo) / ".tidied").glob("*/fix--again/journal.jsonl"))
    assert len(archived) == 1


def test_worktrees_made_at_once_in_one_repository_all_succeed(host: Path, harness: Harness) -> None:
    """Places made together: git cannot add two worktrees at once, so flume adds one at a time.

    (Two concurrent ``git worktree add`` can fail reading each other's half-made files: a
    SIGKILL trial under CI caught it. Without flume's lock this test failed about one run in
    three here; the race needs the adds to overlap, so it cannot fail every time.)
    """
    # Enough files that each checkout takes a while, so the adds overlap.
    files = {f"src/m{number % 20}/f{number}.txt": f"{number}\n" * 20 for number in range(1500)}
    repo = repository(host / "repo", files=files)
    journals = [launch_place(repo, f"many{number}") for number in range(8)]
    harness.settle()
    for path in journals:
        seen = kinds_in(path)
        assert seen.count("WorktreeMade") == 1, seen
        assert "ActionFailed" not in seen[: seen.index("WorktreeMade") + 1]
    assert len([p for p in git.worktree_paths(repo) if p.parent.name == "places"]) == 8


def test_a_restart_writes_at_once_a_printed_prompt_a_kill_left_unwritten(host: Path) -> None:
    """DELIVERY-UNWRITTEN-NOW, through the real supervisor: the printed file is the pane's mark.

    A supervisor killed between deciding a printed agent's send and writing it leaves a journal
    that ends with the line that decided it, and a file with no prompt in it (made here from a
    launch carried past that point: the journal cut back to that line, the prompt taken out of
    the file). The restarted supervisor sees the send never made and writes it at once, as the
    same send, long before the printed agent's confirmation window (an hour) would retype it.
    """
    repo = repository(host / "repo")
    path = launched(repo, "printed", "--agent", "test", "--panes", "print")
    wait_until(lambda: "PromptTyped" in kinds_in(path))
    assert "stopped" in flume("daemon", "stop").stdout
    kept = replay(Settings(), journal.read(path).observations).settings
    assert kept.confirm_seconds == PRINT_CONFIRM_SECONDS  # what a retype would wait
    # The kill's leftovers: the journal up to the send's decision, the file with no prompt.
    lines = path.read_bytes().splitlines(keepends=True)
    kinds = kinds_in(path)
    assert len(lines) == len(kinds)
    path.write_bytes(b"".join(lines[: kinds.index("PromptTyped")]))
    place = replay(Settings(), journal.read(path).observations)
    assert isinstance(place.stage.phase, Delivering)
    assert not place.stage.phase.typed
    assert place.agent is not None
    file = printed.path_of("fix--printed")
    data = printed.read(file)
    assert data is not None
    assert isinstance(data["prompt"], str)
    prompt = data["prompt"]
    printed.write(
        file,
        session=str(data["session"]),
        cwd=str(data["cwd"]),
        argv=data["argv"],  # type: ignore[arg-type]
        env=data["env"],  # type: ignore[arg-type]
    )
    assert printed.prompt_written(file, place.agent.session) == 0
    assert flume("daemon", "start").returncode == 0
    wait_until(lambda: printed.prompt_written(file, place.agent.session) == 1, 30)
    written = printed.read(file)
    assert written is not None
    assert written["prompt"] == prompt
    wait_until(lambda: kinds_in(path)[-2:] == ["PromptUnwritten", "PromptTyped"], 30)
    assert kinds_in(path).count("PromptTyped") == 1


def test_the_supervisor_looks_often_only_while_an_agent_lives(host: Path, harness: Harness) -> None:
    """Working: an agent lives, so the loop looks every BUSY_TICK_SECONDS; landed: idle again."""
    from flume.shell.supervisor import daemon  # noqa: PLC0415 (its two intervals, named)

    assert daemon.BUSY_TICK_SECONDS < daemon.TICK_SECONDS
    repo = repository(host / "repo")
    harness.settle()
    assert not harness.supervisor.working()
    path = launch_place(repo, "busy")
    harness.settle()
    assert harness.place(path).agent is not None
    assert harness.supervisor.working()
    harness.lander.how = "rebase"
    carry_to_landing(harness, path)
    assert harness.place(path).life is Life.TIDIED
    assert not harness.supervisor.working()


def test_a_tick_with_nothing_due_checks_no_place(host: Path, harness: Harness) -> None:
    """NEXT-DEADLINE in the shell: idle places are not looked at until their deadline comes."""
    repo = repository(host / "repo")
    paths = [launch_place(repo, f"idle{number}") for number in range(3)]
    harness.settle()
    for _ in range(3):
        harness.supervisor.tick()
        assert harness.supervisor.stats.last_tick_deadlines_checked == 0
    # Working agents that wait: no instant of the clock's alone moves them.
    assert all(next_deadline(harness.place(path)) is None for path in paths)
    for number, path in enumerate(paths):
        commit(Path(harness.place(path).path), "greeting.txt", f"hello {number}\n")
    harness.settle()
    # A commit delivers each code stage: it is due to end once its agent is quiet (R7).
    due = [next_deadline(harness.place(path)) for path in paths]
    assert all(at is not None and at > harness.clock.now for at in due)
    # The daemon's loop ticks at the earliest of them, not at its slow tick after it.
    assert harness.supervisor.next_due() == min(at for at in due if at is not None)
    harness.supervisor.tick()
    assert harness.supervisor.stats.last_tick_deadlines_checked == 0
    harness.clock.now = max(at for at in due if at is not None)
    harness.supervisor.tick()
    assert harness.supervisor.stats.last_tick_deadlines_checked == len(paths)
    harness.settle()
    assert all(kinds_in(path).count("Tick") >= 1 for path in paths)
    assert all(harness.place(path).stage.name == "submit" for path in paths)
