"""The OpenSpec observer on real repositories, with the real OpenSpec CLI (the pinned version).

A change place is launched for real and driven by a supervisor in this process (echo agents
stand in for the agent; the test writes the change). The CLI comes from ``scripts/install-agents``:
where it is not installed these tests skip with a loud reason; under scripts/test, which
installs it, they fail instead. The tests of what happens without a CLI need none.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from flume.core.ids import Instant, Sha
from flume.core.observations import ChangeSeen, Observation
from flume.core.place import Working, has_deliverable
from flume.core.settings import Settings
from flume.shell import process
from flume.shell.observe.branches import BranchHeads
from flume.shell.observe.changes import Changes, count_tasks
from flume.shell.store.follower import Followed
from flume.shell.tools import openspec
from flume.shell.tools.openspec import OPENSPEC_VERSION
from tests.integration.agents_kit import installed_or_skip
from tests.integration.places_kit import Harness, launch_place, repository, run_git

NAME = "add-greeting"

PROPOSAL = """\
## Why
The tool starts silently, so users cannot tell it is running.

## What Changes
- Print a greeting when the tool starts.

## Impact
- Affected specs: greeting
"""

DESIGN = """\
## Context
One line printed at start; nothing else changes.
"""

SPEC = """\
## ADDED Requirements

### Requirement: Greeting on start
The tool SHALL print a greeting line when it starts.

#### Scenario: Plain start
- **WHEN** the user runs the tool with no arguments
- **THEN** the first line printed is a greeting
"""

#: A requirement without a scenario: ``validate`` refuses it.
SPEC_WITHOUT_SCENARIO = """\
## ADDED Requirements

### Requirement: Greeting on start
The tool SHALL print a greeting line when it starts.
"""

TASKS = """\
# Tasks

## 1. Greeting

- [ ] 1.1 Add the greeting and verify it with a test
- [ ] 1.2 Document it and verify the docs build
"""


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The real OpenSpec CLI; a loud skip when not installed (a failure in scripts/test)."""
    found = installed_or_skip(openspec.binary(), f"OPENSPEC CLI {OPENSPEC_VERSION}")
    monkeypatch.setenv("FLUME_OPENSPEC", str(found))
    return found


@pytest.fixture
def changes(cli: Path, harness: Harness) -> Changes:
    """The change observer with the real CLI, watching beside the branch heads."""
    observer = Changes(cli)
    harness.supervisor.observers = (BranchHeads(), observer)
    return observer


def openspec_repository(folder: Path) -> Path:
    """A repository set up for OpenSpec, as ``openspec init`` leaves it (no agent files)."""
    return repository(
        folder,
        files={
            "README.md": "hello\n",
            "openspec/config.yaml": "schema: spec-driven\n",
            "openspec/specs/.gitkeep": "",
            "openspec/changes/archive/.gitkeep": "",
        },
    )


def write_change(  # noqa: PLR0913 (each part of a change, for the tests to vary)
    worktree: Path,
    *,
    name: str = NAME,
    spec: str | None = SPEC,
    design: bool = True,
    tasks: str = TASKS,
    metadata: str = "schema: spec-driven\ncreated: 2026-11-30\n",
) -> Path:
    """Write the change's files in a worktree, as an agent would; its folder."""
    folder = worktree / "openspec" / "changes" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".openspec.yaml").write_text(metadata, encoding="utf-8")
    (folder / "proposal.md").write_text(PROPOSAL, encoding="utf-8")
    if design:
        (folder / "design.md").write_text(DESIGN, encoding="utf-8")
    if spec is not None:
        (folder / "specs" / "greeting").mkdir(parents=True, exist_ok=True)
        (folder / "specs" / "greeting" / "spec.md").write_text(spec, encoding="utf-8")
    (folder / "tasks.md").write_text(tasks, encoding="utf-8")
    return folder


def commit_change(worktree: Path, message: str = "propose the greeting") -> Sha:
    """Commit everything under openspec/ in ``worktree``; the new head."""
    run_git(worktree, "add", "openspec")
    run_git(worktree, "commit", "-q", "-m", message)
    return Sha(run_git(worktree, "rev-parse", "HEAD").strip())


def construct(harness: Harness, host: Path, name: str = NAME) -> tuple[Path, Path]:
    """Launch a change and let its construct stage start; its journal and its place."""
    repo = openspec_repository(host / "repo")
    path = launch_place(repo, name, kind="change", brief="Greet the user when the tool starts.")
    harness.settle()
    place = harness.place(path)
    assert place.stage.name == "construct"
    assert isinstance(place.stage.phase, Working)
    return path, Path(place.path)


def facts(seen: Observation | None) -> dict[str, object]:
    """What a change observation says, without when."""
    assert isinstance(seen, ChangeSeen)
    found = attrs.asdict(seen)
    del found["at"]
    return found


def followed(harness: Harness, path: Path) -> Followed:
    """The place of a journal as the supervisor follows it."""
    stat = path.stat()
    return Followed(journal=path, place=harness.place(path), identity=(stat.st_dev, stat.st_ino))


def observed(observer: Changes, each: Followed, at: float) -> list[Observation]:
    """What one look of the observer reports for one place."""
    return [seen for _each, seen in observer.observe([each], Instant(at))]


def set_ticks(folder: Path, marks: str) -> None:
    """Rewrite the change's tasks.md with a task per mark (``x`` ticked, `` `` not)."""
    lines = [f"- [{mark}] 1.{n} Task {n}" for n, mark in enumerate(marks, 1)]
    (folder / "tasks.md").write_text("# Tasks\n\n## 1. Greeting\n\n" + "\n".join(lines) + "\n")


# --- the committed change ---------------------------------------------------------------------


def test_a_committed_valid_change_is_the_construct_stages_deliverable(
    host: Path, harness: Harness, changes: Changes
) -> None:
    """A change written and committed: written, planned and valid at its head; construct ends."""
    del changes
    path, place_dir = construct(harness, host)
    write_change(place_dir)
    head = commit_change(place_dir)
    harness.settle()
    place = harness.place(path)
    assert facts(place.change) == {
        "head": head,
        "written": True,
        "planning_complete": True,
        "valid": True,
        "ticked": 0,
        "total": 2,
    }
    assert has_deliverable(place)
    harness.pass_time(Settings().quiet_seconds + 1)
    assert harness.place(path).stage.name == "code"


def test_an_invalid_delta_is_refused_and_the_stage_goes_on(
    host: Path, harness: Harness, changes: Changes
) -> None:
    """A requirement without a scenario: valid False, so the construct stage does not end."""
    del changes
    path, place_dir = construct(harness, host)
    write_change(place_dir, spec=SPEC_WITHOUT_SCENARIO)
    head = commit_change(place_dir)
    harness.settle()
    place = harness.place(path)
    assert facts(place.change) == {
        "head": head,
        "written": True,
        "planning_complete": True,
        "valid": False,
        "ticked": 0,
        "total": 2,
    }
    assert not has_deliverable(place)
    harness.pass_time(Settings().quiet_seconds + 1)
    assert harness.place(path).stage.name == "construct"


def test_a_change_never_written_is_not_written(
    host: Path, harness: Harness, changes: Changes
) -> None:
    """No change folder at the head (nor in the working tree): written False, no CLI run."""
    del changes
    runs = process.count.runs["openspec"]
    path, _place_dir = construct(harness, host)
    place = harness.place(path)
    assert place.head is not None
    assert facts(place.change) == {
        "head": place.head,
        "written": False,
        "planning_complete": False,
        "valid": None,
        "ticked": 0,
        "total": 0,
    }
    assert place.tasks is None
    assert process.count.runs["openspec"] == runs
    assert not has_deliverable(place)


def test_a_change_without_design_is_written_but_its_planning_is_not_complete(
    host: Path, harness: Harness, changes: Changes
) -> None:
    """The default schema's status waits for design.md: without it the planning is incomplete."""
    del changes
    path, place_dir = construct(harness, host)
    write_change(place_dir, design=False)
    commit_change(place_dir)
    harness.settle()
    place = harness.place(path)
    assert place.change is not None
    assert place.change.written
    assert place.change.valid is True
    assert not place.change.planning_complete
    assert not has_deliverable(place)


def test_a_change_that_skips_specs_is_written_without_deltas(
    host: Path, harness: Harness, changes: Changes
) -> None:
    """``skip_specs: true`` in .openspec.yaml: no spec delta needed; the CLI agrees it is valid."""
    del changes
    path, place_dir = construct(harness, host)
    metadata = "schema: spec-driven\ncreated: 2026-11-30\nskip_specs: true\n"
    write_change(place_dir, spec=None, metadata=metadata)
    commit_change(place_dir)
    harness.settle()
    place = harness.place(path)
    assert place.change is not None
    assert (place.change.written, place.change.planning_complete, place.change.valid) == (
        True,
        True,
        True,
    )
    assert has_deliverable(place)


def test_uncommitted_edits_never_count(host: Path, harness: Harness, changes: Changes) -> None:
    """The committed change is judged at its commit: a mended working tree changes nothing."""
    del changes
    path, place_dir = construct(harness, host)
    folder = write_change(place_dir, spec=SPEC_WITHOUT_SCENARIO)
    commit_change(place_dir)
    harness.settle()
    (folder / "specs" / "greeting" / "spec.md").write_text(SPEC, encoding="utf-8")
    harness.pass_time(Settings().quiet_seconds + 1)
    place = harness.place(path)
    assert place.change is not None
    assert place.change.valid is False
    assert place.stage.name == "construct"
    head = commit_change(place_dir, "mend the delta")
    harness.settle()
    place = harness.place(path)
    assert facts(place.change)["head"] == head
    assert place.change is not None
    assert place.change.valid is True
    # The agent was quiet already: the stage ended as soon as the deliverable was seen.
    assert place.stage.name == "code"


# --- tasks, live and committed ----------------------------------------------------------------


def test_ticks_count_live_from_the_working_tree_and_as_deliverable_once_committed(
    host: Path, harness: Harness, changes: Changes
) -> None:
    """Ticks in the working tree move the live counts; only committed ticks end the code stage."""
    del changes
    path, place_dir = construct(harness, host)
    folder = write_change(place_dir)
    commit_change(place_dir)
    harness.pass_time(Settings().quiet_seconds + 1)
    assert harness.place(path).stage.name == "code"
    set_ticks(folder, "x ")
    harness.settle()
    place = harness.place(path)
    assert place.tasks == (1, 2)
    assert place.change is not None
    assert (place.change.ticked, place.change.total) == (0, 2)
    head = commit_change(place_dir, "first task")
    harness.settle()
    place = harness.place(path)
    assert facts(place.change)["head"] == head
    assert place.change is not None
    assert (place.change.ticked, place.change.total) == (1, 2)
    assert not has_deliverable(place)
    set_ticks(folder, "xx")
    harness.pass_time(Settings().quiet_seconds + 1)
    place = harness.place(path)
    assert place.tasks == (2, 2)
    assert place.stage.name == "code"
    commit_change(place_dir, "second task")
    harness.settle()
    # The agent was quiet already: the stage ended as soon as the deliverable was seen.
    assert harness.place(path).stage.name == "verify"


def test_live_counts_are_reported_only_when_they_move(host: Path, harness: Harness) -> None:
    """The working tree read each look: a report when written or the counts moved, else none."""
    path, place_dir = construct(harness, host)
    each = followed(harness, path)
    observer = Changes(None)
    now = harness.clock.now
    first = observed(observer, each, now)
    assert [
        facts(seen) for seen in first if isinstance(seen, ChangeSeen) and seen.head is None
    ] == [
        {
            "head": None,
            "written": False,
            "planning_complete": False,
            "valid": None,
            "ticked": 0,
            "total": 0,
        },
    ]
    assert observed(observer, each, now + 1) == []
    folder = write_change(place_dir)
    (live,) = observed(observer, each, now + 2)
    assert facts(live) == {
        "head": None,
        "written": True,
        "planning_complete": False,
        "valid": None,
        "ticked": 0,
        "total": 2,
    }
    assert observed(observer, each, now + 3) == []
    set_ticks(folder, " x")
    (live,) = observed(observer, each, now + 4)
    assert isinstance(live, ChangeSeen)
    assert (live.head, live.ticked, live.total) == (None, 1, 2)


# --- what the CLI costs -----------------------------------------------------------------------


def test_the_cli_runs_once_per_head_not_once_per_look(
    host: Path, harness: Harness, cli: Path
) -> None:
    """The CLI runs (status, validate) once for each new head; looks between heads run nothing."""
    path, place_dir = construct(harness, host)
    folder = write_change(place_dir)
    head = commit_change(place_dir)
    harness.settle()
    observer = Changes(cli)
    each = followed(harness, path)
    assert each.place is not None
    assert each.place.head == head
    runs = process.count.runs["openspec"]
    seen = observed(observer, each, harness.clock.now)
    assert [facts(one)["head"] for one in seen] == [None, head]
    assert process.count.runs["openspec"] - runs == 2
    for look in range(5):
        assert observed(observer, each, harness.clock.now + look) == []
    assert process.count.runs["openspec"] - runs == 2
    set_ticks(folder, "x ")
    head = commit_change(place_dir, "first task")
    harness.settle()
    each.place = harness.place(path)
    seen = observed(observer, each, harness.clock.now)
    assert [facts(one)["head"] for one in seen] == [None, head]
    assert process.count.runs["openspec"] - runs == 4
    assert observed(observer, each, harness.clock.now + 1) == []
    assert process.count.runs["openspec"] - runs == 4


def test_a_restarted_observer_does_not_rerun_the_cli_for_a_head_the_place_holds(
    host: Path, harness: Harness, changes: Changes, cli: Path
) -> None:
    """The place already holds the change at its head: a new observer reads only the live files."""
    del changes
    path, place_dir = construct(harness, host)
    write_change(place_dir)
    head = commit_change(place_dir)
    harness.settle()
    each = followed(harness, path)
    assert each.place is not None
    assert each.place.change is not None
    assert each.place.change.head == head
    runs = process.count.runs["openspec"]
    seen = observed(Changes(cli), each, harness.clock.now)
    assert [facts(one)["head"] for one in seen] == [None]
    assert process.count.runs["openspec"] == runs


# --- without the CLI --------------------------------------------------------------------------


def test_without_the_cli_validity_is_unknown_and_planning_is_judged_from_files(
    host: Path, harness: Harness
) -> None:
    """No CLI: valid None (validation skipped, and said so); planning from the files."""
    path, place_dir = construct(harness, host)
    folder = write_change(place_dir, spec=SPEC_WITHOUT_SCENARIO)
    head = commit_change(place_dir)
    harness.settle()
    observer = Changes(None)
    assert observer.validation.startswith("skipped")
    runs = process.count.runs["openspec"]
    (_live, committed) = observed(observer, followed(harness, path), harness.clock.now)
    assert facts(committed) == {
        "head": head,
        "written": True,
        "planning_complete": True,
        "valid": None,
        "ticked": 0,
        "total": 2,
    }
    assert process.count.runs["openspec"] == runs
    (folder / "design.md").unlink()
    head = commit_change(place_dir, "no design")
    harness.settle()
    (committed,) = observed(observer, followed(harness, path), harness.clock.now)
    assert isinstance(committed, ChangeSeen)
    assert (committed.head, committed.written, committed.planning_complete) == (head, True, False)


def test_a_fix_place_is_not_observed(host: Path, harness: Harness) -> None:
    """Only kinds that deliver a change are read: a fix's place reports nothing."""
    repo = openspec_repository(host / "repo")
    path = launch_place(repo, NAME)
    harness.settle()
    place_dir = Path(harness.place(path).path)
    write_change(place_dir)
    commit_change(place_dir)
    harness.settle()
    assert observed(Changes(None), followed(harness, path), harness.clock.now) == []


# --- counting tasks ---------------------------------------------------------------------------

#: Task lines OpenSpec 1.13.2 counts, and lines it does not (reference/openspec.md §3).
TRICKY_TASKS = """# Tasks

- [ ] plain
- [x] ticked
  - [X] nested, ticked
* [ x] star, padded tick
+ [X ] plus, padded tick
1. [ ] ordered
2) [x] ordered with a paren
-[x] no space after the bullet
- [] empty box
- [~] tilde
- [-] dash
- [  ] wide empty box
- [ ](https://example.com) an empty box before a link
- [WIP] a word: not a task
- [a](https://example.com) a link: not a task
- [1][ref] a reference link: not a task
1234567890. [x] ten digits: not a task
text - [x] not at the start of a line
```
- [ ] inside a fence
```
<!-- - [x] a comment's first line: not a task
- [x] inside a comment
-->
"""


def test_tasks_are_counted_as_the_cli_counts_them() -> None:
    """Tricky task lines: counted as OpenSpec's own parser counts them."""
    assert count_tasks(TRICKY_TASKS) == (7, 15)


def test_the_count_agrees_with_the_cli(tmp_path: Path, cli: Path) -> None:
    """``openspec list --json`` counts the same tricky tasks.md the same way."""
    write_change(tmp_path, tasks=TRICKY_TASKS)
    ran = openspec.OpenSpec(cli).run(tmp_path, "list", "--json")
    assert ran.status == 0, ran.err
    (listed,) = json.loads(ran.out)["changes"]
    assert (listed["completedTasks"], listed["totalTasks"]) == count_tasks(TRICKY_TASKS)
