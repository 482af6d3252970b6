"""Kinds from launch to their end, with real agents in tmux, through the real supervisor.

A kind the launch carries (``--kind-file``) runs its three stages, each waiting on the caller's
word after the first (the crew pattern); bad kind files are named with their file and line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flume.core.observations import ChecksFailed, ProceedAsked
from flume.core.place import AwaitingWord, Life
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from tests.integration.agents_kit import (
    TIMING,
    agent_repository,
    launch_test_agent,
    observations,
    place_of,
    script,
    sessions_started,
    wait_for,
)
from tests.integration.places_kit import flume, flume_process, run_git

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

#: Short waits, and a check the first submission fails: a file named ok must exist.
TIMING_CHECKS = TIMING + '\n[land]\nchecks = [["sh", "-c", "test -f ok"]]\n'

CREW_KIND = """\
[kind]
name = "crew"
prefix = "crew"

[[kind.stages]]
name = "draft"
prompt = "Draft $brief on $branch. Commit it. $words"
deliverable = "commit"

[[kind.stages]]
name = "review"
prompt = "Review the draft on $branch; write review.md. $words"
deliverable = "report:review.md"
waits_on_caller = true

[[kind.stages]]
name = "publish"
prompt = "Publish: write published.md saying where it went. $words"
deliverable = "report:published.md"
waits_on_caller = true
"""

#: One turn per stage, each found by its stage's marker: a fresh agent per stage reads it anew.
CREW_SCRIPT = """
[[turn]]
match = ":draft:1]"
steps = [{write = {path = "draft.md", text = "a draft\\n"}}, {commit = "Draft it"}]

[[turn]]
match = ":review:1]"
steps = [{write = {path = "review.md", text = "looks right\\n"}}]

[[turn]]
match = ":publish:1]"
steps = [{write = {path = "published.md", text = "on the site\\n"}}]
"""


def test_a_carried_kind_runs_its_stages_each_after_the_callers_word(
    tmp_path: Path, panes: Tmux
) -> None:
    """R7, crew: every stage after the first waits on the caller's word; proceed releases each."""
    del panes
    repo = agent_repository(tmp_path)
    kind_file = tmp_path / "crew.toml"
    kind_file.write_text(CREW_KIND, encoding="utf-8")
    agent_script = script(tmp_path, CREW_SCRIPT)
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", "one",
        "--brief", "the release notes", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={agent_script}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    journal_path = places.journals_dir(repo) / "crew--one" / places.JOURNAL
    assert place_of(journal_path).branch == "crew/one"
    for stage in ("review", "publish"):

        def waits(stage: str = stage) -> bool:
            place = place_of(journal_path)
            return place.stage.name == stage and isinstance(place.stage.phase, AwaitingWord)

        wait_for(waits, 60, f"stage {stage} to wait on the caller's word")
        shown = flume_process("status", "--repository", str(repo))
        assert "flume proceed crew--one" in shown.stdout
        assert not sessions_started(journal_path, stage)
        proceeded = flume_process("proceed", "crew--one", "--repository", str(repo))
        assert proceeded.returncode == 0, proceeded.stderr
    wait_for(lambda: place_of(journal_path).life is Life.FINISHED, 60, "the kind to finish")
    place = place_of(journal_path)
    assert list(place.completed) == ["draft", "review", "publish"]
    assert sum(isinstance(seen, ProceedAsked) for seen in observations(journal_path)) == 2
    assert (Path(place.path) / "published.md").read_text() == "on the site\n"
    # The reports were never committed: tidy keeps the place and says why (R10) ...
    kept = flume_process("tidy", "--repository", str(repo))
    assert kept.returncode == 0, kept.stderr
    assert Path(place.path).exists()
    assert "untracked" in kept.stdout
    # ... until the caller says they may go.
    tidied = flume_process("tidy", "--force", "--repository", str(repo))
    assert tidied.returncode == 0, tidied.stderr
    wait_for(lambda: not Path(place.path).exists(), 30, "tidy --force to remove the place")
    # The branch holds a commit its base lacks: it stays, and tidy says so.
    assert "crew/one" in run_git(repo, "branch", "--list", "crew/one")
    assert "crew/one" in tidied.stdout


def test_a_bad_kind_file_is_named_with_its_line_and_makes_nothing(tmp_path: Path) -> None:
    """A malformed or unsound kind file: exit 2, the file and line named, nothing created."""
    repo = agent_repository(tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_text(CREW_KIND.replace('"report:review.md"', '"review-please"'), encoding="utf-8")
    ran = flume("launch", "--repository", str(repo), "--kind-file", str(bad), "--name", "x",
                "--brief", "b")  # fmt: skip
    assert ran.returncode == 2
    assert f"{bad}:" in ran.stderr
    assert "review-please" in ran.stderr
    broken = tmp_path / "broken.toml"
    broken.write_text("[kind]\nname = \n", encoding="utf-8")
    ran = flume("launch", "--repository", str(repo), "--kind-file", str(broken), "--name", "x",
                "--brief", "b")  # fmt: skip
    assert ran.returncode == 2
    assert f"{broken}:2" in ran.stderr
    other = flume("launch", "--repository", str(repo), "--kind", "fix", "--kind-file",
                  str(tmp_path / "crew.toml"), "--name", "x", "--brief", "b")  # fmt: skip
    assert other.returncode == 2
    assert not (places.journals_dir(repo)).exists() or not list(
        places.journals_dir(repo).glob("*/journal.jsonl")
    )


FIX_THEN_SUBMIT = """
[[turn]]
match = ":code:1]"
steps = [{write = {path = "greet.txt", text = "hello\\n"}}, {commit = "Say hello"}]

[[turn]]
match = ":submit:1]"
steps = [{run = ["flume", "submit"]}]

[[turn]]
match = "checks failed"
steps = [{write = {path = "ok", text = "checked\\n"}}, {commit = "Mend what the checks said"},
         {run = ["flume", "submit"]}]
"""


def test_a_fix_runs_to_its_landing_and_is_tidied(tmp_path: Path, panes: Tmux) -> None:
    """fix: code commits, submit lands on main through the embedded lander, tidy removes all."""
    del panes
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "greet", script(tmp_path, FIX_THEN_SUBMIT))
    wait_for(lambda: place_of(journal_path).life is Life.TIDIED, 90, "the fix landed and tidied")
    place = place_of(journal_path)
    assert (repo / "greet.txt").read_text() == "hello\n"  # main's checkout followed the landing
    assert "Say hello" in run_git(repo, "log", "--format=%s", "main")
    assert not Path(place.path).exists()
    assert run_git(repo, "branch", "--list", "fix/greet") == ""


def test_failing_checks_go_back_to_the_agent_and_the_mended_work_lands(
    tmp_path: Path, panes: Tmux
) -> None:
    """A submit whose checks fail is told the output; the agent mends, submits, and it lands."""
    del panes
    config = TIMING_CHECKS
    repo = agent_repository(tmp_path, config)
    journal_path = launch_test_agent(repo, "checked", script(tmp_path, FIX_THEN_SUBMIT))
    wait_for(lambda: place_of(journal_path).life is Life.TIDIED, 120, "the mended fix to land")
    seen = observations(journal_path)
    failed = [each for each in seen if isinstance(each, ChecksFailed)]
    assert failed
    assert "test -f ok" in failed[0].reason
    assert "Mend what the checks said" in run_git(repo, "log", "--format=%s", "main")
    assert (repo / "ok").read_text() == "checked\n"


def test_a_question_ends_on_its_conclusion(tmp_path: Path, panes: Tmux) -> None:
    """question: one session on sounding/<name>; conclusion.md written ends it, finished."""
    del panes
    repo = agent_repository(tmp_path)
    answer = '[[turn]]\nsteps = [{write = {path = "conclusion.md", text = "Yes: it scales.\\n"}}]\n'
    journal_path = launch_test_agent(
        repo, "scale", script(tmp_path, answer), brief="Does it scale?", kind="question"
    )
    wait_for(lambda: place_of(journal_path).life is Life.FINISHED, 60, "the question answered")
    place = place_of(journal_path)
    assert place.branch == "sounding/scale"
    assert list(place.completed) == ["session"]
    assert (Path(place.path) / "conclusion.md").read_text() == "Yes: it scales.\n"
    # The conclusion is the caller's to read, then tidy may let it go (it was never committed).
    tidied = flume_process("tidy", "--force", "--repository", str(repo))
    assert tidied.returncode == 0, tidied.stderr
    wait_for(lambda: not Path(place.path).exists(), 30, "tidy to remove the question's place")
