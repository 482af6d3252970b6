"""Idle at scale: an agent at rest is read again only when something of its changed.

inotify's events say which files changed (:mod:`flume.shell.tools.notify`); where it cannot
watch (its watch limit reached, or none) the poller looks every tick; and every
``SAFETY_SECONDS`` each agent and worktree is looked at whatever the events said, so a change no
event reported is still found. Real files, a real tmux server on a private socket, real git.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from flume.core.delivery import prompt_marker
from flume.core.ids import Instant
from flume.core.observations import (
    AgentReady,
    Author,
    BranchHead,
    BranchVanished,
    Observation,
    TranscriptEntry,
    TranscriptFound,
    WorktreeLost,
)
from flume.core.place import Working, evolve
from flume.core.settings import Settings
from flume.core.step import step
from flume.shell import process
from flume.shell.agents import claude, scripted
from flume.shell.agents.runner import live_sessions
from flume.shell.observe.branches import BranchHeads
from flume.shell.observe.watch import Watch
from flume.shell.panes.tmux import SESSION_VARIABLE as SESSION
from flume.shell.panes.tmux import Tmux
from flume.shell.store.follower import Followed
from flume.shell.tools import git
from flume.shell.tools.notify import SAFETY_SECONDS, Notify
from tests.integration.places_kit import Harness, commit, launch_place, repository, run_git
from tests.integration.test_watch import _followed

pytestmark = pytest.mark.skipif(
    not Path("/proc/sys/fs/inotify").is_dir(), reason="inotify is Linux's: this system has none"
)


def _resting(folder: Path, number: int) -> tuple[Followed, Path]:
    """A place whose agent took its prompt (Working), and its transcript holding that prompt."""
    each = _followed(folder, number)
    place = each.place
    assert place is not None
    assert place.agent is not None
    session = place.agent.session
    transcript = claude.transcript_path(os.path.realpath(place.path), session, scripted.home())
    transcript.parent.mkdir(parents=True, exist_ok=True)
    marker = prompt_marker(place)
    line = {"type": "user", "message": {"role": "user", "content": f"do it {marker}"}}
    transcript.write_text(json.dumps(line) + "\n", encoding="utf-8")
    for seen in (
        AgentReady(at=Instant(4), session=session),
        TranscriptFound(at=Instant(5), session=session, path=str(transcript)),
        TranscriptEntry(
            at=Instant(6), session=session, author=Author.PERSON, text=f"do it {marker}"
        ),
    ):
        place = step(Settings(), place, seen).place
    assert isinstance(place.stage.phase, Working)
    each.place = place
    return each, transcript


def _write(transcript: Path, text: str) -> None:
    line = {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}
    with transcript.open("a", encoding="utf-8") as file:
        file.write(json.dumps(line) + "\n")


def _said(seen: list[tuple[Followed, Observation]], each: Followed) -> list[str]:
    """The agent's words the watch reported for ``each``."""
    return [
        obs.text
        for place, obs in seen
        if place is each and isinstance(obs, TranscriptEntry) and obs.author is Author.AGENT
    ]


def test_an_agent_at_rest_is_read_again_only_once_its_transcript_changes(
    tmp_path: Path, panes: Tmux
) -> None:
    """No event, no look (within the safety net's window); a line written: read the next tick."""
    each, transcript = _resting(tmp_path, 1)
    notify = Notify()
    watch = Watch(panes, notify=notify)
    # The first look reads what there is and watches its files; the next reads what came
    # between the two (none here); from then on, only an event has it looked at again.
    for tick in (10, 11):
        notify.read()
        list(watch.observe([each], Instant(tick)))
        assert watch.last_looked == 1
    notify.read()
    assert list(watch.observe([each], Instant(12))) == []
    assert watch.last_looked == 0
    _write(transcript, "done")
    notify.read()
    seen = list(watch.observe([each], Instant(13)))
    assert watch.last_looked == 1
    assert _said(seen, each) == ["done"]
    notify.read()
    assert list(watch.observe([each], Instant(14))) == []
    assert notify.mode == "inotify"


def test_a_line_written_while_inotify_s_watches_are_exhausted_is_still_observed(
    tmp_path: Path, panes: Tmux
) -> None:
    """The watch limit reached after one folder: the second agent's transcript is polled."""
    watched, first = _resting(tmp_path, 1)
    polled, second = _resting(tmp_path, 2)
    assert first.parent != second.parent
    notify = Notify(most=1)
    watch = Watch(panes, notify=notify)
    list(watch.observe([watched, polled], Instant(10)))
    for tick in range(11, 14):
        _write(second, f"line {tick}")
        notify.read()
        seen = list(watch.observe([watched, polled], Instant(tick)))
        assert _said(seen, polled) == [f"line {tick}"]
        assert _said(seen, watched) == []
    assert notify.watches == 1
    assert notify.mode == "inotify, and the poller (inotify's watch limit reached at 1 folders)"
    _write(first, "watched")
    notify.read()
    assert _said(list(watch.observe([watched, polled], Instant(14))), watched) == ["watched"]


def test_no_inotify_at_all_is_the_poller_every_tick(tmp_path: Path, panes: Tmux) -> None:
    """With inotify turned off, every agent is looked at every tick, as before, and it is said."""
    each, transcript = _resting(tmp_path, 1)
    notify = Notify(enabled=False)
    watch = Watch(panes, notify=notify)
    list(watch.observe([each], Instant(10)))
    _write(transcript, "polled")
    notify.read()
    assert _said(list(watch.observe([each], Instant(11))), each) == ["polled"]
    assert watch.last_looked == 1
    assert notify.mode == "poller (inotify turned off)"


def test_a_change_no_event_reported_is_found_by_the_safety_net(tmp_path: Path, panes: Tmux) -> None:
    """A line no event reported is found once the safety net's window has passed, never lost.

    It is written through a hard link in another folder: the watched folder has no event of it.
    """
    each, transcript = _resting(tmp_path, 1)
    notify = Notify()
    watch = Watch(panes, notify=notify)
    list(watch.observe([each], Instant(9)))
    list(watch.observe([each], Instant(10)))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.link(transcript, elsewhere / "link.jsonl")
    _write(elsewhere / "link.jsonl", "unseen")
    notify.read()
    assert list(watch.observe([each], Instant(11))) == []
    notify.read()
    seen = list(watch.observe([each], Instant(10 + SAFETY_SECONDS)))
    assert _said(seen, each) == ["unseen"]


def test_a_deleted_worktree_is_noticed_at_the_next_tick(host: Path, harness: Harness) -> None:
    """Its folder removed (or its ``.git``): a ``WorktreeLost`` the tick after, as before."""
    repo = repository(host / "repo")
    gone, emptied = launch_place(repo, "gone"), launch_place(repo, "emptied")
    harness.settle()
    followed = [harness.supervisor.followed[gone], harness.supervisor.followed[emptied]]
    notify = Notify()
    heads = BranchHeads(notify)
    now = harness.clock.now
    assert list(heads.observe(followed, Instant(now))) == []
    notify.read()
    assert list(heads.observe(followed, Instant(now + 1))) == []
    paths = [each.place.path for each in followed if each.place is not None]
    shutil.rmtree(paths[0])
    (Path(paths[1]) / ".git").unlink()
    notify.read()
    lost = {
        obs.path: obs.how
        for _each, obs in heads.observe(followed, Instant(now + 2))
        if isinstance(obs, WorktreeLost)
    }
    assert lost == {
        paths[0]: "its folder is gone",
        paths[1]: "its folder holds no worktree: git there is the main repository's",
    }
    assert notify.mode == "inotify"


def _heads_seen(heads: BranchHeads, followed: list[Followed], now: float) -> dict[str, str]:
    """The branch heads one look reported, by branch."""
    return {
        obs.branch: obs.sha
        for _each, obs in heads.observe(followed, Instant(now))
        if isinstance(obs, BranchHead)
    }


def test_branches_are_listed_again_only_once_a_ref_of_theirs_changes(
    host: Path, harness: Harness
) -> None:
    """No event in their refs' folders: no git process; a commit: listed and seen the next tick."""
    repo = repository(host / "repo")
    path = launch_place(repo, "moved")
    harness.settle()
    followed = [harness.supervisor.followed[path]]
    place = followed[0].place
    assert place is not None
    notify = Notify()
    heads = BranchHeads(notify)
    now = harness.clock.now
    assert _heads_seen(heads, followed, now) == {}
    notify.read()
    assert _heads_seen(heads, followed, now + 1) == {}  # its refs' folders watched from now on
    for tick in (2, 3):
        notify.read()
        ran = process.count.runs["git"]
        assert _heads_seen(heads, followed, now + tick) == {}
        assert process.count.runs["git"] == ran  # the heads last listed: nothing moved
    sha = commit(Path(place.path), "moved.txt")
    notify.read()
    ran = process.count.runs["git"]
    assert _heads_seen(heads, followed, now + 4) == {place.branch: sha}
    assert process.count.runs["git"] == ran + 1


def test_a_ref_moved_with_no_event_is_found_by_the_safety_net(host: Path, harness: Harness) -> None:
    """A branch moved through a hard link elsewhere (no event): listed again within the window."""
    repo = repository(host / "repo")
    path = launch_place(repo, "linked")
    harness.settle()
    worktree = Path(harness.place(path).path)
    commit(worktree, "first.txt")  # the branch's ref is a loose file now
    harness.settle()
    followed = [harness.supervisor.followed[path]]
    place = followed[0].place
    assert place is not None
    sha = run_git(worktree, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "unseen").strip()
    ref = git.common_dir(repo) / "refs" / "heads" / place.branch
    elsewhere = host / "elsewhere"
    elsewhere.mkdir()
    os.link(ref, elsewhere / "ref")  # before the folder is watched: linking is an event too
    notify = Notify()
    heads = BranchHeads(notify)
    now = harness.clock.now
    _heads_seen(heads, followed, now)
    notify.read()
    _heads_seen(heads, followed, now + 1)
    with (elsewhere / "ref").open("w", encoding="ascii") as file:
        file.write(sha + "\n")
    notify.read()
    assert _heads_seen(heads, followed, now + 2) == {}
    notify.read()
    assert _heads_seen(heads, followed, now + 1 + SAFETY_SECONDS) == {place.branch: sha}


def test_registry_entries_are_read_again_only_on_their_events(host: Path) -> None:
    """A registry folder watched: a file written or removed is seen at the next look."""
    folder = scripted.home() / "sessions"
    folder.mkdir(parents=True)
    notify = Notify()

    def entry(name: str, session: str) -> None:
        (folder / name).write_text(json.dumps({"sessionId": session, "pid": 1}), encoding="utf-8")

    entry("1.json", "first")
    assert set(live_sessions(notify=notify)) == {"first"}
    notify.read()
    assert set(live_sessions(notify=notify)) == {"first"}
    entry("2.json", "second")
    notify.read()
    assert set(live_sessions(notify=notify)) == {"first", "second"}
    (folder / "1.json").unlink()
    notify.read()
    assert set(live_sessions(notify=notify)) == {"second"}
    assert notify.watching(str(folder))
    del host


class _Looking:
    """An observer that looked at ``last_looked`` agents whole at its last look."""

    def __init__(self) -> None:
        self.last_looked = 0

    def observe(
        self, followed: Sequence[Followed], now: Instant
    ) -> Iterator[tuple[Followed, Observation]]:
        """Nothing seen."""
        del followed, now
        return iter(())


def test_the_loop_hurries_only_while_an_agent_is_looked_at(host: Path, harness: Harness) -> None:
    """Events told: agents at rest wait for them (no hurried tick); one looked at hurries it."""
    repo = repository(host / "repo")
    launch_place(repo, "resting")
    harness.settle()
    supervisor = harness.supervisor
    assert supervisor.working()
    assert supervisor.hurried()  # no events to wait for: looked at often, as before
    looking = _Looking()
    supervisor.notify, supervisor.observers = Notify(), (looking,)
    assert not supervisor.hurried()
    looking.last_looked = 1
    assert supervisor.hurried()
    supervisor.notify = Notify(most=0)  # the poller looks somewhere: often again
    looking.last_looked = 0
    supervisor.notify.watch(str(host))
    assert supervisor.hurried()


def test_a_pane_s_session_is_listed_from_its_mark_or_else_its_command(
    tmp_path: Path, panes: Tmux
) -> None:
    """A pane flume started is marked with its session; one not marked still names it."""
    session = "4b1f900a-378e-5962-8693-5afe6a9d4d6a"
    started = panes.start(
        group="g", window="marked", cwd=tmp_path, argv=["sleep", "60"], env={SESSION: session}
    )
    assert started.ok
    marked = started.out.strip()
    unmarked = panes.run(
        "new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "=g:", "env", f"{SESSION}=other-0001",
        "sleep", "60",
    ).out.strip()  # fmt: skip
    shown = panes.run("list-panes", "-a", "-F", "#{pane_id} #{@flume_session}").out
    assert f"{marked} {SESSION}={session}" in shown.splitlines()
    listed = panes.panes()
    assert listed is not None
    assert listed[marked].session == session
    assert listed[unmarked].session == "other-0001"
    assert panes.panes() == listed  # listed again as it was: the same panes


def test_a_place_added_again_is_looked_at_for_its_branch_not_its_worktree(
    host: Path, harness: Harness
) -> None:
    """PLACE-REBUILT: while its worktree is added again, its branch deleted too is named at once.

    The worktree is absent until the retry's make is carried out; what the tick reports then is
    the branch gone (``BranchVanished``, whose stop-short names the restore), never the folder.
    """
    repo = repository(host / "repo")
    journal = launch_place(repo, "again")
    harness.settle()
    each = harness.supervisor.followed[journal]
    assert each.place is not None
    heads = BranchHeads(None)
    shutil.rmtree(each.place.path)
    run_git(repo, "update-ref", "-d", f"refs/heads/{each.place.branch}")
    lost = [obs for _each, obs in heads.observe([each], Instant(harness.clock.now))]
    assert [type(obs) for obs in lost] == [WorktreeLost]
    each.place = evolve(each.place, rebuilding=True)
    seen = [obs for _each, obs in heads.observe([each], Instant(harness.clock.now + 1))]
    assert seen == [BranchVanished(at=Instant(harness.clock.now + 1), branch=each.place.branch)]
