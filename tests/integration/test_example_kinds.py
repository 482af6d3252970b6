"""Every kind examples/kinds/ ships reads, checks and plans, as ``flume launch`` would take it.

A new example is found by its folder: each ``*.toml`` there is read as ``--kind-file`` reads it,
checked whole, and planned with ``flume launch --plan`` on a repository that declares a test
command (for a ``tests`` gate), making nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flume.core.kinds import Merge, check_kind, lane_names, parallels
from flume.shell.declared import kinds
from tests.integration.places_kit import flume, repository, run_git, world_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kinds"
FILES = sorted(EXAMPLES.glob("*.toml"))


def test_the_examples_are_found() -> None:
    """The folder holds the one-lane workflow and the two with lanes, at least."""
    assert {"reviewed.toml", "feature.toml", "slices.toml"} <= {path.name for path in FILES}


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.stem)
def test_an_example_kind_reads_checks_and_plans(path: Path, tmp_path: Path) -> None:
    """The file is a sound kind; --plan prints its worst case, as text and JSON; nothing made."""
    kind = kinds.load_kind_file(path)
    check_kind(kind)
    repo = repository(tmp_path / "repo", files={".flume.toml": '[tests]\ncommand = ["true"]\n'})
    # The remote a finalize pushes to: a plan checks it is there, as the launch does.
    run_git(repo, "remote", "add", "origin", str(tmp_path / "origin.git"))
    before = world_of(repo)
    argv = ("launch", "--plan", "--repository", str(repo), "--kind-file", str(path), "--name", "x")
    text = flume(*argv)
    assert text.returncode == 0, text.stderr
    assert f"kind {kind.name}: the worst case its caps allow; nothing started" in text.stdout
    planned = flume(*argv, "--json")
    assert planned.returncode == 0, planned.stderr
    assert json.loads(planned.stdout)["kind"] == kind.name
    assert world_of(repo) == before


def test_the_slices_example_is_the_issue_s_shape(tmp_path: Path) -> None:
    """slices.toml: plan, two commit-gated slices merged in order two at once, a review loop."""
    kind = kinds.load_kind_file(EXAMPLES / "slices.toml")
    (slices,) = parallels(kind.body).values()
    assert lane_names(slices) == ("slice-a", "slice-b")
    assert (slices.join.value, slices.merge, slices.cap) == ("all", Merge.MERGE, 2)
    repo = repository(tmp_path / "repo")
    argv = ("launch", "--plan", "--json", "--repository", str(repo), "--kind-file",
            str(EXAMPLES / "slices.toml"), "--name", "x")  # fmt: skip
    planned = flume(*argv)
    assert planned.returncode == 0, planned.stderr
    worst = json.loads(planned.stdout)
    assert (worst["agents_at_once"], worst["lanes"], worst["step_runs"]) == (2, 3, 9)
    assert [step["path"] for step in worst["steps"]] == [
        "plan",
        "slices/slice-a",
        "slices/slice-b",
        "review-loop/review",
        "review-loop/fix",
    ]
