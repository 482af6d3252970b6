"""SIGKILL trials of the supervisor through whole runs of a kind (L1), shared by tests and benches.

One trial: a fresh host and repository; a run of a kind launched with flume's test agent (half
the trials with an agent that loses its first input); the supervisor killed with SIGKILL once the
journal holds a random number of lines (over the run's whole length), then started again. The
run must complete after the restart, and every promise of L1 hold: no prompt sent more than
twice, none delivered twice, never two agents for one attempt nor two live at once, the worktree
made once. Sends are counted twice over: as the rules decided them, and as the agents received
them (every input the test agent's terminal submitted, lost ones too). Live agents are counted
twice over too: replaying the journal (no agent started while another is live), and sampling
the tmux server's live panes through the trial.

Two kinds are carried: ``FIX`` (code commits, submit lands through the embedded lander, tidy
removes the place) and ``WORKFLOW`` (examples/kinds/reviewed.toml: a plan behind an artifact
gate, a review loop whose review says revise on pass 1 and done on pass 2, and a sign-off the
trial approves with ``flume approve`` when it pauses for it).
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import attrs

from flume.core.actions import Event, Report, SendPrompt
from flume.core.observations import AgentStarted, ApproveAsked, Observation, WorktreeMade
from flume.core.place import Life, PauseCause, Paused, Place
from flume.core.settings import Settings
from flume.core.step import step
from flume.shell import process
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from flume.shell.supervisor import client
from flume.shell.tools import git
from tests.integration.agents_kit import (
    agent_repository,
    decided,
    launch_test_agent,
    observations,
    place_of,
    script,
    wait_for,
)
from tests.integration.places_kit import GIT_IDENTITY, flume_process

CONFIG = "[timing]\nquiet = 0.3\nconfirm = 2\nready = 20\n"
FIX_SCRIPT = """
[[turn]]
match = ":code:1]"
steps = [{write = {path = "fixed.txt", text = "fixed\\n"}}, {commit = "Mend it"}]

[[turn]]
match = ":submit:1]"
steps = [{run = ["flume", "submit"]}]
"""

#: The one-lane example workflow, run as shipped.
REVIEWED = Path(__file__).resolve().parents[2] / "examples" / "kinds" / "reviewed.toml"
#: Pass 1's review says revise and its fix commits; pass 2's review says done, so pass 2's fix
#: (which would commit fix-2.md) never runs.
WORKFLOW_SCRIPT = """
[[turn]]
match = ":plan:1]"
steps = [{write = {path = "PLAN.md", text = "a plan\\n"}}]

[[turn]]
match = ":review-loop@1/review:1]"
steps = [{write = {path = "$board/review/verdict.json", text = '{"result": "revise"}'}}]

[[turn]]
match = ":review-loop@1/fix:1]"
steps = [{write = {path = "fix-1.md", text = "mended\\n"}}, {commit = "Mend the findings"}]

[[turn]]
match = ":review-loop@2/review:1]"
steps = [{write = {path = "$board/review/verdict.json", text = '{"result": "done"}'}}]

[[turn]]
match = ":review-loop@2/fix:1]"
steps = [{write = {path = "fix-2.md", text = "never\\n"}}, {commit = "A fix after done"}]

[[turn]]
match = ":sign-off:1]"
steps = [{say = "Planned, reviewed twice, mended once."}]
"""
WORKFLOW_MARKERS = (
    "plan:1",
    "review-loop@1/review:1",
    "review-loop@1/fix:1",
    "review-loop@2/review:1",
    "sign-off:1",
)


@attrs.frozen(kw_only=True)
class Kind:
    """What a trial launches, how far its run goes, and what it must show at the end."""

    name: str
    #: Launch the run in ``repo`` with the test agent on ``script_path``: the journal.
    launch: Callable[[Path, Path, Path], Path]
    script: str
    #: The journal lines of a whole run, about: the kill comes after 1 to this many.
    lines: int
    #: What the trial waits for after the restart, and its words.
    done: Callable[[Place], bool]
    waiting: str
    #: Called while waiting, with the repository and journal: a person's word the run needs.
    answer: Callable[[Path, Path], None] = lambda _repo, _path: None
    #: Every promise of the kind's end the run broke: (repo, journal) -> problems.
    ends: Callable[[Path, Path], list[str]] = lambda _repo, _path: []


@attrs.frozen(kw_only=True)
class Trial:
    """What one trial saw."""

    kill_at: int
    lost_first: bool
    seconds: float
    problems: tuple[str, ...]
    #: Sends a kill left decided and untyped, typed after the restart (DELIVERY-RETYPE-UNTYPED).
    retyped: int = 0
    #: The most sends of one marker's prompt the agents received.
    most_sends: int = 0
    #: The most live agents at once: in the journal's replay, and in the tmux panes sampled.
    most_agents: int = 0
    #: The worktrees made for the place (WorktreeMade lines).
    worktrees: int = 0
    finished: bool = False


def _fix_launch(folder: Path, repo: Path, script_path: Path) -> Path:
    del folder
    return launch_test_agent(repo, "k", script_path, brief="Mend it.")


def _fix_ends(repo: Path, path: Path) -> list[str]:
    del path
    on_main = git.run(repo, "log", "--format=%s", "main").out.splitlines()
    return [] if "Mend it" in on_main else [f"the fix's commit is not on main: {on_main}"]


def _workflow_launch(folder: Path, repo: Path, script_path: Path) -> Path:
    del folder
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(REVIEWED), "--name", "k",
        "--brief", "the greeting", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={script_path}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / "reviewed--k" / places.JOURNAL


def _approve_when_asked(repo: Path, path: Path) -> None:
    """A person's ``flume approve`` once the sign-off waits for it (and only once)."""
    phase = place_of(path).stage.phase
    asked = any(isinstance(seen, ApproveAsked) for seen in observations(path))
    if isinstance(phase, Paused) and phase.cause is PauseCause.APPROVAL and not asked:
        ran = flume_process("approve", "reviewed--k", "--repository", str(repo))
        assert ran.returncode == 0, ran.stderr


def _workflow_ends(repo: Path, path: Path) -> list[str]:
    """The loop left on done at pass 2, each verdict read its attempt's; pass 2's fix never ran."""
    problems: list[str] = []
    place = place_of(path)
    reports = [r for r in decided(path, Report) if isinstance(r, Report)]
    passed = [r.text for r in reports if r.event is Event.GATE_PASSED]
    expected = [
        "the gate of plan passed",
        "the gate of review-loop@1/review passed (verdict: revise)",
        "the gate of review-loop@2/review passed (verdict: done)",
    ]
    if [text for text in passed if "sign-off" not in text] != expected:
        problems.append(f"gates passed: {passed}")
    if any(r.event in {Event.LOOP_MAX, Event.GATE_FAILED} for r in reports):
        problems.append("a gate failed or the loop ran out of passes")
    asked = sum(isinstance(seen, ApproveAsked) for seen in observations(path))
    if asked != 1:
        problems.append(f"{asked} approvals journaled")
    prompts = [a for a in decided(path, SendPrompt) if isinstance(a, SendPrompt)]
    sent = {str(a.marker).split(":", 2)[2] for a in prompts}
    if sent != set(WORKFLOW_MARKERS):
        problems.append(f"prompts sent: {sorted(sent)}")
    board = Path(place.board)
    history = board / "review" / "history"
    archived = sorted(history.iterdir()) if history.is_dir() else []
    verdicts = [json.loads(p.read_text(encoding="utf-8")).get("result") for p in archived]
    if verdicts != ["revise"]:
        problems.append(f"the review's history holds {verdicts}, not pass 1's revise alone")
    latest = board / "review" / "verdict.json"
    if not latest.is_file() or json.loads(latest.read_text(encoding="utf-8"))["result"] != "done":
        problems.append("the review's verdict is not pass 2's done")
    log = git.run(repo, "log", "--format=%s", place.branch).out.splitlines()
    if "Mend the findings" not in log or "A fix after done" in log:
        problems.append(f"the branch's commits: {log}")
    listed = git.run(repo, "worktree", "list", "--porcelain").out
    worktrees = [line for line in listed.splitlines() if line.startswith("worktree ")]
    if len(worktrees) != 2:
        problems.append(f"git worktree list holds {len(worktrees)} worktrees, not main and one")
    return problems


FIX = Kind(
    name="fix",
    launch=_fix_launch,
    script=FIX_SCRIPT,
    lines=24,
    done=lambda place: place.life is Life.TIDIED,
    waiting="the fix to land and be tidied",
    ends=_fix_ends,
)
WORKFLOW = Kind(
    name="workflow",
    launch=_workflow_launch,
    script=WORKFLOW_SCRIPT,
    lines=78,
    done=lambda place: place.life is Life.FINISHED,
    waiting="the workflow to finish",
    answer=_approve_when_asked,
    ends=_workflow_ends,
)


class _PaneCount:
    """The most live panes the trial's tmux server held at once, sampled in a thread."""

    def __init__(self, socket: Path) -> None:
        self._tmux = Tmux(socket)
        self._stop = threading.Event()
        self.most = 0
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            panes = self._tmux.panes() or {}
            self.most = max(self.most, sum(not pane.dead for pane in panes.values()))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.most


def _daemon_pid() -> int | None:
    lock = places.state_dir() / "supervisor.lock"
    text = lock.read_text().strip() if lock.exists() else ""
    return int(text) if text.isdigit() else None


def run(folder: Path, rng: random.Random, kind: Kind = FIX) -> Trial:
    """One trial in ``folder`` (a fresh host); the caller stops the supervisor afterwards."""
    started = time.monotonic()
    os.environ["XDG_STATE_HOME"] = str(folder / "state")
    os.environ["FLUME_TMUX_SOCKET"] = str(folder / "tmux.sock")
    os.environ.update(GIT_IDENTITY)
    lost_first = rng.random() < 0.5
    repo = agent_repository(folder, CONFIG)
    inputs = folder / "inputs.jsonl"
    head = f"inputs = {json.dumps(str(inputs))}\n" + ("lose = 1\n" if lost_first else "")
    panes = _PaneCount(folder / "tmux.sock")
    path = kind.launch(folder, repo, script(folder, head + kind.script))
    kill_at = rng.randint(1, kind.lines)
    problems: list[str] = []

    def reached() -> bool:
        kind.answer(repo, path)
        return len(observations(path)) >= kill_at or kind.done(place_of(path))

    try:
        wait_for(reached, 60, f"{kill_at} journal lines")
        time.sleep(rng.uniform(0, 0.2))  # a point between lines, maybe mid-action
        pid = _daemon_pid()
        if pid is not None and process.alive(pid):
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: not process.alive(pid), 10, "the supervisor to die")
        if client.ensure(wait=30) is None:
            problems.append("no supervisor answered after the restart")

        def done() -> bool:
            kind.answer(repo, path)
            return kind.done(place_of(path))

        wait_for(done, 120, kind.waiting)
    except AssertionError as error:
        problems.append(str(error))
        problems.append(_where(path))
    finally:
        most_panes = panes.stop()
    seen = observations(path)
    most_sends, sending = _sends(path, inputs)
    most_agents, agents = _agents(seen)
    problems.extend(sending + agents)
    if most_panes > 1:
        problems.append(f"{most_panes} agents' panes live at once")
    worktrees = sum(isinstance(each, WorktreeMade) for each in seen)
    if worktrees != 1:
        problems.append(f"the worktree was made {worktrees} times")
    finished = kind.done(place_of(path))
    problems.extend(kind.ends(repo, path))
    retyped = [
        r
        for r in decided(path, Report)
        if isinstance(r, Report) and r.event is Event.PROMPT_RETYPED
    ]
    return Trial(
        kill_at=kill_at,
        lost_first=lost_first,
        seconds=time.monotonic() - started,
        problems=tuple(problems),
        retyped=len(retyped),
        most_sends=most_sends,
        most_agents=max(most_agents, most_panes),
        worktrees=worktrees,
        finished=finished,
    )


def _where(path: Path) -> str:
    """Where a run that did not complete stands: its life, stage, phase and sends."""
    place = place_of(path)
    stage = place.stage
    return (
        f"it stands {place.life.value}, stage {stage.key}#{stage.attempt}, "
        f"{stage.sends} sends, {stage.phase!r}"
    )


def _sends(path: Path, inputs: Path) -> tuple[int, list[str]]:
    """The most sends of one prompt the agents received; every send promise broken."""
    problems: list[str] = []
    sends: dict[str, set[int]] = {}
    for action in decided(path, SendPrompt):
        assert isinstance(action, SendPrompt)
        sends.setdefault(action.marker, set()).add(action.send)
    problems.extend(
        f"{marker}: {len(numbers)} sends of the prompt decided"
        for marker, numbers in sends.items()
        if len(numbers) > 2
    )
    logged = inputs.read_text() if inputs.exists() else ""
    received = [json.loads(line) for line in logged.splitlines()]
    most = 0
    for marker in sends:
        count = sum(1 for text in received if f"[{marker}]" in text)
        most = max(most, count)
        if count > 2:
            problems.append(f"{marker}: the agents received the prompt {count} times")
    return most, problems


def _agents(seen: list[Observation]) -> tuple[int, list[str]]:
    """The most agents live at once in the journal's replay; every agent promise broken.

    R4: an agent starts only when no other is live in the place; one session an attempt; an
    attempt's prompt found delivered once.
    """
    problems: list[str] = []
    sessions: dict[tuple[str, int], set[str]] = {}
    delivered: dict[tuple[str, int], int] = {}
    place: Place | None = None
    most = 0
    for each in seen:
        before = place
        decision = step(Settings(), place, each)
        place = decision.place
        if isinstance(each, AgentStarted) and before is not None:
            key = (before.stage.key, each.attempt)
            sessions.setdefault(key, set()).add(each.session)
            live = 1 + (before.agent is not None and before.agent.session != each.session)
            most = max(most, live)
            if live > 1:
                problems.append(f"{key[0]}#{key[1]} started beside a live agent")
        for report in decision.actions:
            if isinstance(report, Report) and report.event is Event.PROMPT_DELIVERED:
                agent = before.agent if before is not None else None
                if agent is not None:
                    key = (agent.key or agent.stage, agent.attempt)
                    delivered[key] = delivered.get(key, 0) + 1
    problems.extend(
        f"{name}#{attempt}: {len(found)} agents"
        for (name, attempt), found in sessions.items()
        if len(found) > 1
    )
    problems.extend(
        f"{name}#{attempt}: its prompt found delivered {count} times"
        for (name, attempt), count in delivered.items()
        if count > 1
    )
    return most, problems


def cleanup(folder: Path) -> None:
    """Stop the trial's supervisor and tmux server."""
    client.stop(timeout=5.0)
    Tmux(folder / "tmux.sock").kill_server()
