"""Issue 13: from a gate passing to the next step's prompt typed. Target: <= 500 ms median.

The real supervisor, a real repository, tmux on a private socket and flume's test agent: each
round launches a loop kind (``review`` gated on its verdict, ``fix`` on a commit, at most three
passes) whose review writes ``revise`` on its board on pass 1 and 2 and ``done`` on pass 3, then
ends its turn; the fix commits. The run ends after pass 3's review, having changed step five
times: review to fix (a verdict gate) and fix to review (a commit gate), twice each.

Each turn works a random 1 to 2 s first, so that its end falls anywhere between two of the
supervisor's looks (it looks every second, and at once when an action's batch is done).

Every step change is read from the place's journal, by its observations' instants:

- **turn ended**: the turn's closing line as the agent wrote it (the transcript line's own
  ``timestamp``), and as flume journaled it (``TurnEnded.at``);
- **gate read**: ``GateRead.at`` (the verdict gate; a commit gate is met when the commit is seen,
  and the stage ends when its agent has been quiet ``[timing] quiet`` seconds after: the quiet
  wait is flume's rule, reported apart);
- **agent start**: ``AgentStarted.at`` to the agent's readiness (``AgentReady``, or its first
  ``AgentStateSeen`` waiting: the test agent's registry saying idle), the next agent's own
  start-up, which the target excludes;
- **prompt typed**: ``PromptTyped.at``.

flume's time = (prompt typed - turn ended) - (agent ready - agent started). Printed per change
and as medians, for each kind of change, from the transcript line and from ``TurnEnded``.

Run: ``python bench/gate_latency.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flume.core.observations import (
    Activity,
    AgentReady,
    AgentStarted,
    AgentStateSeen,
    BranchHead,
    GateRead,
    Launched,
    Observation,
    PromptTyped,
    TurnEnded,
)
from flume.core.place import Life, Paused
from flume.core.settings import Settings
from flume.core.step import replay
from flume.shell.panes.tmux import Tmux
from flume.shell.store import journal, places

TARGET = 0.500
QUIET = 0.5

KIND = """\
[kind]
name = "loopy"
body = ["review-loop"]

[loop.review-loop]
body = ["review", "fix"]
until = "review"
max = 3
[step.review]
prompt = "Review pass $pass of $max. Write $verdict."
gate = "verdict"
[step.fix]
prompt = "Mend what $board/review/verdict.json says; commit."
gate = "commit"
"""

#: The same five changes of step where no verdict can be written yet: artifact and commit gates.
ARTIFACT_KIND = """\
[kind]
name = "loopy"
body = ["plan", "build", "review", "fix", "check"]

[step.plan]
prompt = "Plan $brief in PLAN.md."
gate = "artifact:PLAN.md"
[step.build]
prompt = "Build it; commit."
gate = "commit"
[step.review]
prompt = "Review it in REVIEW.md."
gate = "artifact:REVIEW.md"
[step.fix]
prompt = "Mend what REVIEW.md says; commit."
gate = "commit"
[step.check]
prompt = "Check it in CHECK.md."
gate = "artifact:CHECK.md"
"""


def script(rng: random.Random) -> str:
    """The test agent's turns: each review pass writes its verdict, each fix commits.

    Each turn first works a random 1 to 2 seconds, so that its end falls anywhere between two
    of the supervisor's looks, as a real agent's does (a turn ended at once would end inside the
    look that follows the prompt's paste).
    """
    turns = [
        f'[[turn]]\nmatch = "review-loop@{number}/review"\n'
        f"steps = [{{work = {rng.uniform(1, 2):.3f}}}, "
        f'{{write = {{path = "$board/review/verdict.json", text = '
        f"{json.dumps(json.dumps({'result': result, 'summary': 'bench'}))}}}}}]\n"
        for number, result in ((1, "revise"), (2, "revise"), (3, "done"))
    ]
    turns.extend(
        f'[[turn]]\nmatch = "review-loop@{number}/fix"\n'
        f"steps = [{{work = {rng.uniform(1, 2):.3f}}}, "
        f'{{write = {{path = "fix{number}.txt", text = "mended\\n"}}}}, '
        f'{{commit = "Mend pass {number}"}}]\n'
        for number in (1, 2)
    )
    return "ready_after = 0.5\n" + "\n".join(turns)


def artifact_script(rng: random.Random) -> str:
    """The test agent's turns for ``ARTIFACT_KIND``: each step writes its file or commits.

    Each turn first works a random 1 to 2 seconds, as in :func:`script`.
    """
    turns = [
        f'[[turn]]\nmatch = ":{step}:"\n'
        f"steps = [{{work = {rng.uniform(1, 2):.3f}}}, "
        f'{{write = {{path = "{made}", text = "{step}\\n"}}}}]\n'
        for step, made in (("plan", "PLAN.md"), ("review", "REVIEW.md"), ("check", "CHECK.md"))
    ]
    turns.extend(
        f'[[turn]]\nmatch = ":{step}:"\n'
        f"steps = [{{work = {rng.uniform(1, 2):.3f}}}, "
        f'{{write = {{path = "{step}.txt", text = "{step}\\n"}}}}, '
        f'{{commit = "{step}"}}]\n'
        for step in ("build", "fix")
    )
    return "ready_after = 0.5\n" + "\n".join(turns)


def _wait(predicate: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            message = f"timed out waiting for {what}"
            raise TimeoutError(message)
        time.sleep(0.2)


def _closing_lines(transcripts: Path) -> dict[str, list[float]]:
    """Each session's instants of its turns' closing lines (``turn_duration``), as written."""
    found: dict[str, list[float]] = {}
    for path in transcripts.rglob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            data = json.loads(line)
            if data.get("type") == "system" and data.get("subtype") == "turn_duration":
                stamp = dt.datetime.fromisoformat(data["timestamp"])
                found.setdefault(path.stem, []).append(stamp.timestamp())
    return {session: sorted(stamps) for session, stamps in found.items()}


def gate_of(read: GateRead | None) -> str:
    """The gate a change passed: a verdict or an artifact read at the turn's end, or a commit."""
    if read is None:
        return "commit"
    return "verdict" if read.result else "artifact"


def changes(  # noqa: C901 (one arm per observation it reads)
    seen: list[Observation], closing: dict[str, list[float]]
) -> list[dict[str, float | str]]:
    """Each step change in the journal: its kind and its instants' differences, in seconds."""
    found: list[dict[str, float | str]] = []
    ended: TurnEnded | None = None
    gate: GateRead | None = None
    commit: BranchHead | None = None
    started: AgentStarted | None = None
    ready: AgentReady | AgentStateSeen | None = None
    stage = ""
    turns: dict[str, int] = {}
    for each in seen:
        match each:
            case TurnEnded():
                ended, gate = each, None
                turns[str(each.session)] = turns.get(str(each.session), 0) + 1
            case GateRead():
                gate = each
            case BranchHead():
                commit = each
            case AgentStarted():
                if ended is not None:
                    started, ready = each, None
                else:
                    stage = str(each.stage)
            case AgentReady() | AgentStateSeen() if (
                started is not None
                and ready is None
                and each.session == started.session
                and (isinstance(each, AgentReady) or each.activity is Activity.WAITING)
            ):
                ready = each
            case PromptTyped() if ended is not None and started is not None and ready is not None:
                start_up = ready.at - started.at
                # The session's n-th closing line ends its n-th turn (one line a turn). Its
                # stamp may be after TurnEnded.at: a look's instant is taken before it reads.
                wrote = closing[str(ended.session)][turns[str(ended.session)] - 1]
                change: dict[str, float | str] = {
                    "change": f"{stage} -> {started.stage}",
                    "gate": gate_of(gate),
                    "from turn line": (each.at - wrote) - start_up,
                    "from TurnEnded": (each.at - ended.at) - start_up,
                    "line to TurnEnded": ended.at - wrote,
                    "agent start": start_up,
                }
                if gate is not None:
                    change["from GateRead"] = (each.at - gate.at) - start_up
                if commit is not None:
                    # The commit is journaled when a look sees the branch move: before the turn
                    # ends (negative) or after it.
                    change["TurnEnded to commit seen"] = commit.at - ended.at
                found.append(change)
                stage = str(started.stage)
                ended = gate = commit = started = ready = None
    return found


def one(folder: Path, number: int, gate: str, rng: random.Random) -> list[dict[str, float | str]]:
    """One launch carried to its end; its step changes."""
    repo = folder / "repo"
    env = os.environ
    kind_file = folder / "loopy.toml"
    kind_file.write_text(KIND if gate == "verdict" else ARTIFACT_KIND)
    name = f"b{number}"
    place = f"loopy--{name}"
    script_path = folder / f"script{number}.toml"
    script_path.write_text(script(rng) if gate == "verdict" else artifact_script(rng))
    flume = [sys.executable, "-m", "flume"]
    ran = subprocess.run(  # noqa: S603
        [*flume, "launch", "--repository", str(repo), "--kind-file", str(kind_file),
         "--name", name, "--brief", "Mend it.", "--agent", "test",
         "--agent-arg=--script", f"--agent-arg={script_path}"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if ran.returncode != 0:
        message = f"launch failed: {ran.stderr}"
        raise RuntimeError(message)
    path = places.journals_dir(repo) / place / places.JOURNAL
    if gate == "verdict":
        _wait(lambda: path.exists() and journal.read(path).observations, 30, "the launch")
        launched = journal.read(path).observations[0]
        assert isinstance(launched, Launched)
        if not launched.board:
            message = "this flume gives its launch no board to write a verdict on: --gates artifact"
            raise RuntimeError(message)

    def ended() -> bool:
        if not path.exists():
            return False
        place_now = replay(Settings(), list(journal.read(path).observations))
        if isinstance(place_now.stage.phase, Paused):
            message = f"{place} paused: {place_now.stage.phase}"
            raise RuntimeError(message)  # noqa: TRY004 (not a type error: the run stopped)
        return place_now.life is not Life.ACTIVE and place_now.life is not Life.MAKING

    try:
        _wait(ended, 120, f"{place} to finish")
    except TimeoutError:
        for each in list(journal.read(path).observations)[-15:]:
            print(repr(each)[:300], file=sys.stderr)
        raise
    seen = list(journal.read(path).observations)
    final = replay(Settings(), seen)
    if final.life is not Life.FINISHED:
        message = f"{place} ended {final.life}: {final.stage}"
        raise RuntimeError(message)
    closing = _closing_lines(Path(env["XDG_STATE_HOME"]) / "flume" / "test-agent")
    return changes(seen, closing)


def main() -> None:
    """Run the rounds and print every step change, then the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--gates",
        choices=("verdict", "artifact"),
        default="verdict",
        help="verdict: the review loop; artifact: five steps on artifact and commit gates",
    )
    parser.add_argument("--seed", type=int, default=13)
    arguments = parser.parse_args()
    rounds = arguments.rounds
    rng = random.Random(arguments.seed)  # noqa: S311 (turn lengths, not secrets)
    found: list[dict[str, float | str]] = []
    with tempfile.TemporaryDirectory(prefix="flg-", dir="/tmp") as name:
        folder = Path(name)
        os.environ.update(
            {
                "XDG_STATE_HOME": str(folder / "state"),
                "FLUME_TMUX_SOCKET": str(folder / "tmux.sock"),
                "HOME": str(folder / "home"),
                "GIT_AUTHOR_NAME": "bench",
                "GIT_AUTHOR_EMAIL": "bench@flume.invalid",
                "GIT_COMMITTER_NAME": "bench",
                "GIT_COMMITTER_EMAIL": "bench@flume.invalid",
            }
        )
        repo = folder / "repo"
        repo.mkdir()
        (repo / ".flume.toml").write_text(f"[timing]\nquiet = {QUIET}\nconfirm = 10\n")
        (repo / "README.md").write_text("hello\n")
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "start"]):
            subprocess.run(["git", *args], cwd=repo, check=True)  # noqa: S603, S607
        try:
            for number in range(rounds):
                for change in one(folder, number, arguments.gates, rng):
                    found.append(change)
                    shown = "  ".join(
                        f"{k} {v * 1000:7.1f} ms" if isinstance(v, float) else f"{k} {v}"
                        for k, v in change.items()
                    )
                    print(f"round {number + 1}: {shown}")
        finally:
            subprocess.run(
                [sys.executable, "-m", "flume", "daemon", "stop"], check=False, capture_output=True
            )
            Tmux(folder / "tmux.sock").kill_server()
    for gate in ("verdict", "artifact", "commit"):
        of = [change for change in found if change["gate"] == gate]
        if not of:
            continue
        print(f"{gate} gate, {len(of)} step changes (agent start excluded), medians:")
        for figure in of[0]:
            if figure in ("change", "gate"):
                continue
            values = [float(c[figure]) * 1000 for c in of if figure in c]
            print(
                f"  {figure:26s} median {statistics.median(values):8.1f} ms  "
                f"best {min(values):8.1f}  worst {max(values):8.1f}"
            )
    every = [float(c["from turn line"]) for c in found if c["gate"] == arguments.gates]
    if every:
        middle = statistics.median(every)
        print(
            f"{arguments.gates} gate: turn's closing line -> next prompt typed, agent start "
            "excluded: "
            f"median {middle * 1000:.1f} ms; target <= {TARGET * 1000:.0f} ms: "
            f"{'met' if middle <= TARGET else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
