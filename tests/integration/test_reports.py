"""The report observer on real places: one stat a look, a report each time the file is written."""

from __future__ import annotations

import os
from pathlib import Path

from flume.core.ids import Instant
from flume.core.observations import Observation, ReportSeen
from flume.core.place import Life, Working, has_deliverable
from flume.core.settings import Settings
from flume.shell.observe.branches import BranchHeads
from flume.shell.observe.reports import Reports
from flume.shell.store.follower import Followed
from tests.integration.places_kit import Harness, launch_place, repository

REPORT = "conclusion.md"


def question(harness: Harness, host: Path) -> tuple[Path, Path]:
    """Launch a question and let its session stage start; its journal and its place."""
    repo = repository(host / "repo")
    path = launch_place(repo, "why-slow", kind="question", brief="Why is start-up slow?")
    harness.settle()
    place = harness.place(path)
    assert place.stage.name == "session"
    assert isinstance(place.stage.phase, Working)
    return path, Path(place.path)


def followed(harness: Harness, path: Path) -> Followed:
    """The place of a journal as the supervisor follows it."""
    stat = path.stat()
    return Followed(journal=path, place=harness.place(path), identity=(stat.st_dev, stat.st_ino))


def observed(observer: Reports, each: Followed, at: float) -> list[Observation]:
    """What one look of the observer reports for one place."""
    return [seen for _each, seen in observer.observe([each], Instant(at))]


def write(place_dir: Path, modified: float, name: str = REPORT) -> None:
    """Write the report and give it a modification time of the test's choosing."""
    (place_dir / name).write_text("It reads every file twice.\n", encoding="utf-8")
    os.utime(place_dir / name, (modified, modified))


def test_a_report_is_seen_when_it_appears_and_each_time_it_changes(
    host: Path, harness: Harness
) -> None:
    """No file: nothing; written: reported; untouched: nothing; written again: reported again."""
    path, place_dir = question(harness, host)
    each = followed(harness, path)
    observer = Reports()
    now = harness.clock.now
    assert observed(observer, each, now) == []
    write(place_dir, now + 5)
    assert observed(observer, each, now + 1) == [
        ReportSeen(at=Instant(now + 1), path=REPORT, modified_at=Instant(now + 5)),
    ]
    assert observed(observer, each, now + 2) == []
    assert observed(observer, each, now + 3) == []
    write(place_dir, now + 9)
    assert observed(observer, each, now + 4) == [
        ReportSeen(at=Instant(now + 4), path=REPORT, modified_at=Instant(now + 9)),
    ]
    assert observed(observer, each, now + 5) == []


def test_a_report_written_in_the_stage_ends_it(host: Path, harness: Harness) -> None:
    """The supervisor journals the report; the core takes it as the deliverable; the place ends."""
    harness.supervisor.observers = (BranchHeads(), Reports())
    path, place_dir = question(harness, host)
    write(place_dir, harness.clock.now + 1)
    harness.settle()
    place = harness.place(path)
    assert place.reports == {REPORT: Instant(harness.clock.now + 1)}
    assert has_deliverable(place)
    harness.pass_time(Settings().quiet_seconds + 1)
    assert harness.place(path).life is Life.FINISHED


def test_a_report_older_than_the_stage_is_reported_but_is_no_deliverable(
    host: Path, harness: Harness
) -> None:
    """The observer says when the file was written; the core refuses one from before the stage."""
    harness.supervisor.observers = (BranchHeads(), Reports())
    path, place_dir = question(harness, host)
    started = harness.place(path).stage.started_at
    write(place_dir, started - 60)
    harness.settle()
    place = harness.place(path)
    assert place.reports == {REPORT: Instant(started - 60)}
    assert not has_deliverable(place)


def test_a_restarted_observer_reports_nothing_the_place_already_holds(
    host: Path, harness: Harness
) -> None:
    """After a restart the place's own record is the last report: an unchanged file is not news."""
    harness.supervisor.observers = (BranchHeads(), Reports())
    path, place_dir = question(harness, host)
    write(place_dir, harness.clock.now + 1)
    harness.settle()
    assert observed(Reports(), followed(harness, path), harness.clock.now) == []


def test_only_a_stage_that_delivers_a_report_is_watched(host: Path, harness: Harness) -> None:
    """A fix's code stage has no report: a file of that name there is not reported."""
    repo = repository(host / "repo")
    path = launch_place(repo, "typo")
    harness.settle()
    place_dir = Path(harness.place(path).path)
    write(place_dir, harness.clock.now + 1)
    assert observed(Reports(), followed(harness, path), harness.clock.now) == []


def test_a_folder_by_the_reports_name_is_no_report(host: Path, harness: Harness) -> None:
    """Only a regular file counts as the report."""
    path, place_dir = question(harness, host)
    (place_dir / REPORT).mkdir()
    assert observed(Reports(), followed(harness, path), harness.clock.now) == []
