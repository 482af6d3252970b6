"""L1: the supervisor SIGKILLed at random points through whole runs of a kind, 100 trials.

Each trial (tests/integration/fix_trials.py) launches a run by flume's test agent in tmux, kills
the supervisor once the journal holds a random number of lines, starts it again, and checks that
the run completes and every promise held: no prompt sent more than twice nor delivered twice,
never two agents for one attempt nor two live at once, the worktree made once.

``--kind fix``: code commits, submit lands through the embedded lander, tidy removes the place;
its commit must be on main. ``--kind workflow``: examples/kinds/reviewed.toml, a plan behind an
artifact gate, a review loop revised on pass 1 and done on pass 2 (pass 2's fix never runs),
a sign-off the trial approves; pass 1's verdict must be in the review's history. ``--kind
lanes``: examples/kinds/slices.toml, a plan, two commit-gated lanes side by side (each a place
with a journal of its own; the kill point counts every journal's lines together), merged in
order, then the same review loop; both lanes' commits must be in the run's branch, each lane
launched and its worktree made once, and tidied after the merge. Every promise is counted place
by place: two lanes' agents live at once, never two in one place. ``--kind finalize``: one
commit-gated step, then the kind's finalize (WF-FINALIZE-ONCE): the run's branch pushed to a bare
origin on local disk and a PR command that is a real program, recording each run and taking
0.4 s, so that some kills land while it runs; it must have run once, origin must hold the run's
branch alone at the run's head, and ``flume status`` must show the URL it printed. ``--kind
crew``: examples/kinds/crew.toml, a lead spawning three coders (one asks, the lead answers), a
review, a push and the PR command; kill points are drawn only before the run finishes, and a
quarter of the trials aim the kill at the PR command in flight instead of at a line.

Every kind but fix also checks the merged tree and where each commit was made: the run's final
head holds each lane's, child's and fix's file with its text (WF-FINISHED-HOLDS-ITS-WORK), the
base (main) has not moved (these kinds never land), and the repository's post-commit hook logged
every commit at the top of a place's worktree, on that place's branch (flume's merges included).

    .venv/bin/python bench/kill_fix.py [--kind fix|workflow|lanes|finalize|crew] [--trials 100]
        [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import private_host

from tests.integration import fix_trials

KINDS = {
    "fix": fix_trials.FIX,
    "workflow": fix_trials.WORKFLOW,
    "lanes": fix_trials.LANES,
    "finalize": fix_trials.FINALIZE,
    "crew": fix_trials.CREW_KIND,
}


def main() -> None:
    """Run the trials; print each one's outcome and the totals."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=sorted(KINDS), default="fix")
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    arguments = parser.parse_args()
    kind = KINDS[arguments.kind]
    rng = random.Random(arguments.seed)  # noqa: S311 (kill points, not secrets)
    private_host()
    trials = []
    for number in range(arguments.trials):
        folder = Path(tempfile.mkdtemp(prefix="flf-", dir="/tmp"))
        try:
            trial = fix_trials.run(folder, rng, kind)
        finally:
            fix_trials.cleanup(folder)
            shutil.rmtree(folder, ignore_errors=True)
        trials.append(trial)
        said = "; ".join(trial.problems) or "completed, every promise kept"
        loss = "lost first input" if trial.lost_first else "no loss"
        window = "; a send decided, untyped, typed after the restart" if trial.retyped else ""
        if kind.commands is not None:
            window += f"; the run {trial.stood} at the kill point"
        if trial.killed_mid_command:
            window += "; killed while the PR command ran"
        if trial.aimed:
            window += " (aimed at it)"
        if not trial.killed:
            window += "; the supervisor was not running at the kill point: no kill"
        point = "the PR command" if trial.aimed else f"line {trial.kill_at:>3}"
        print(
            f"trial {number + 1:>3}: kill at {point} ({loss}): {said}{window}",
            flush=True,
        )
    kept = sum(not trial.problems for trial in trials)
    commands = ""
    if kind.commands is not None:
        commands = (
            f"PR command runs per trial max {max(t.command_runs for t in trials)} "
            f"(min {min(t.command_runs for t in trials)}); "
            f"{sum(t.killed_mid_command for t in trials)} killed while the PR command ran "
            f"({sum(t.aimed for t in trials)} aimed at it), "
            f"{sum(t.stood.startswith('finalizing') for t in trials)} at a line while finalizing; "
        )
    print(
        f"{len(trials)} {arguments.kind} trials: {kept} completed with every promise kept; "
        f"finished {sum(t.finished for t in trials)}/{len(trials)}; "
        f"killed {sum(t.killed for t in trials)}, "
        f"{sum(t.killed and t.stood == 'finished' for t in trials)} of them after it finished; "
        f"max sends received per marker {max(t.most_sends for t in trials)}; "
        f"max agents live at once in one place {max(t.most_agents for t in trials)} "
        f"({max(t.most_panes for t in trials)} in all); "
        f"worktrees made per place {sorted({n for t in trials for n in t.worktrees})}; "
        f"{commands}"
        f"median {statistics.median(t.seconds for t in trials):.1f}s a trial; "
        f"{sum(t.retyped > 0 for t in trials)} killed between deciding a send and typing it"
    )


if __name__ == "__main__":
    main()
