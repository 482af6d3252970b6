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
from pathlib import Path

import pytest

from flume.core.delivery import prompt_marker
from flume.core.ids import Instant
from flume.core.observations import (
    AgentReady,
    Author,
    Observation,
    TranscriptEntry,
    TranscriptFound,
    WorktreeLost,
)
from flume.core.place import Working
from flume.core.settings import Settings
from flume.core.step import step
from flume.shell.agents import claude, scripted
from flume.shell.observe.branches import BranchHeads
from flume.shell.observe.watch import Watch
from flume.shell.panes.tmux import Tmux
from flume.shell.store.follower import Followed
from flume.shell.tools.notify import SAFETY_SECONDS, Notify
from tests.integration.places_kit import Harness, launch_place, repository
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
