"""L1: the supervisor SIGKILLed at random points through whole runs, with real agents.

Each trial (see fix_trials.py) launches a run by flume's test agent in tmux, kills the supervisor
once the journal holds a random number of lines, starts it again, and checks that the run
completes and every promise held: no prompt sent more than twice nor delivered twice, never two
agents for one attempt nor two live at once, the worktree made once. A fix must land and be
tidied, its commit on main; a workflow (examples/kinds/reviewed.toml) must finish with its review
loop left on done at pass 2, pass 1's revise in the review's history; a run with lanes
(examples/kinds/slices.toml) must finish so too, both lanes' commits merged into its branch in
order, each lane launched once and tidied, every promise held place by place (the run and each
lane); a run that finalizes must push its branch alone to origin and run its PR command once
(WF-FINALIZE-ONCE), a kill falling while that command runs too; the crew example
(examples/kinds/crew.toml: a lead, three children, a question) must finish so too, each child
launched once. 20 trials of a fix, 10 of a workflow, 5 of lanes, 5 of finalize and 3 of the crew
under CI (bench/kill_fix.py runs 100 of any), 5, 5, 3, 3 and 2 elsewhere.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.integration import fix_trials
from tests.integration.conftest import stop_supervisor

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

TRIALS = 20 if os.environ.get("CI") == "true" else 5
#: A workflow's trial runs five agents where a fix runs two: half as many keep CI's time.
WORKFLOW_TRIALS = 10 if os.environ.get("CI") == "true" else 5
#: A run with lanes runs six agents in three places, two at once: fewer again.
LANES_TRIALS = 5 if os.environ.get("CI") == "true" else 3
#: A run that finalizes runs one agent, then its push and its PR command: few keep CI's time.
FINALIZE_TRIALS = 5 if os.environ.get("CI") == "true" else 3


def _trial(monkeypatch: pytest.MonkeyPatch, seed: int, kind: fix_trials.Kind) -> None:
    """One trial of ``kind`` in a folder of its own; every promise must hold."""
    folder = Path(tempfile.mkdtemp(prefix="flf-", dir="/tmp"))
    for name in ("XDG_STATE_HOME", "FLUME_TMUX_SOCKET"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    try:
        trial = fix_trials.run(folder, random.Random(seed), kind)  # noqa: S311 (kill points)
        assert trial.finished, (trial.kill_at, trial.lost_first, trial.problems)
        assert trial.problems == (), (trial.kill_at, trial.lost_first, trial.problems)
    finally:
        stop_supervisor()
        fix_trials.cleanup(folder)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("seed", range(TRIALS))
def test_a_fix_completes_after_a_sigkill_at_a_random_point(
    host: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """L1: the run lands after the restart; no commit lost, no third send, one agent a stage."""
    del host
    _trial(monkeypatch, seed, fix_trials.FIX)


@pytest.mark.parametrize("seed", range(WORKFLOW_TRIALS))
def test_a_workflow_finishes_after_a_sigkill_at_a_random_point(
    host: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """L1 for a loop workflow: it finishes after the restart, its loop left on done at pass 2.

    No prompt sent over twice nor delivered twice, never two agents live at once, the worktree
    made once, each verdict read its own attempt's (pass 1's revise archived, pass 2's done).
    """
    del host
    _trial(monkeypatch, seed, fix_trials.WORKFLOW)


@pytest.mark.parametrize("seed", range(LANES_TRIALS))
def test_a_run_with_lanes_finishes_after_a_sigkill_at_a_random_point(
    host: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """L1 through a parallel block: the kill falls anywhere in the run's and its lanes' journals.

    The run finishes, both lanes' commits merged into its branch in declared order, its review
    loop left on done at pass 2; each lane launched (journaled) once, its worktree made once,
    and tidied after the merge; in each place (the run, each lane) no prompt sent over twice nor
    delivered twice, and never two agents live at once, though the two lanes' run side by side.
    """
    del host
    _trial(monkeypatch, seed, fix_trials.LANES)


@pytest.mark.parametrize("seed", range(FINALIZE_TRIALS))
def test_a_run_that_finalizes_pushes_and_opens_its_pr_once_after_a_sigkill(
    host: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """L1 and WF-FINALIZE-ONCE: the kill falls anywhere, the push and the PR command among it.

    The run finishes; origin holds its branch alone, at its head (the base never pushed); its
    PR command ran once (a kill while it ran leaves it running, and the next supervisor waits
    for it); flume status shows the URL it printed; no prompt sent over twice, one agent live.
    """
    del host
    _trial(monkeypatch, seed, fix_trials.FINALIZE)


#: The crew example runs seven agents in four places, four at once: three trials keep CI's time.
CREW_TRIALS = 3 if os.environ.get("CI") == "true" else 2


@pytest.mark.parametrize("seed", range(CREW_TRIALS))
def test_the_crew_example_finishes_once_after_a_sigkill(
    host: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """L1 through an orchestrate block: a lead, three children, a question, a PR.

    The run finishes; each child was launched once and merged in order; the question was
    answered once; origin holds the run's branch alone and the PR command ran once.
    """
    del host
    _trial(monkeypatch, seed, fix_trials.CREW_KIND)
