"""Issue 14's four figures for orchestrate blocks, each measured side by side in one run.

1. **A child's question reaches its waiting lead** (target P6's: at most 1 s). The real
   supervisor in tmux, flume's test agent as the lead and as its child, a small repository.
   Each round a run's lead spawns one child and ends its turn (it waits); the child runs
   ``flume ask``. Timed from the later of the child's ``AskSaid`` (its journal) and the lead
   seen waiting (its agent's activity as the run's journal replays) to the ``TranscriptEntry``
   in the run's journal holding the news tell that names the question (what the rules decide
   ``tell-delivered`` on). Side by side, in the same run once the lead waits again: a plain
   ``flume tell`` to it, from its ``Told`` to the tell's transcript line (P6's own figure).
2. **N pieces of child news cost one send** (WF-CHILD-NEWS-BATCHED; target: 1 send for every
   N). Pure core: :func:`flume.core.step.step` over the model's ``FakeWorld``
   (tests/model/world.py). While the lead works, N ``ChildNews`` (N = 1, 5, 20) are fed; then
   the lead waits. The ``SendTell`` of news decided are counted: sends/N is printed.
3. **Status of a parent with two child runs of 4 lanes each** (target P2's: at most 3x one fix
   place). Journals written through the core, as the supervisor writes them: a run at an
   orchestrate block whose lead composed two child runs, each a parallel of 4 lanes (1 + 2 + 8
   places, each live agent's journal holding 30 transcript lines and ticks, as bench/status.py's
   fix does), against a repository holding one fix place (bench/status.py's). ``flume status
   --json --repository R`` in its own process, taking turns; medians compared.
4. **A child run's own launch work** (target P1's: at most 1.5x a bare ``git worktree add``).
   The real supervisor, a repository shaped like bench/lanes.py's (3,000 files, 61 commits), a
   lead (the test agent in tmux) running ``flume compose`` of a one-step fragment. Timed from
   the run's journal line of the compose (``ComposeSaid``) to the child run's ``WorktreeMade``,
   against one ``git worktree add -b`` of the same commit (and, apart, with flume's parallel
   checkout, ``-c checkout.workers=0``), taking turns in a rotating order on the same
   repository. After each flume turn the runs are dropped (the child first) and tidied, their
   worktrees gone; after each bare one the worktree is removed; then the machine is left 1 s
   to settle before the next turn.

A first round of 1 and of 4, untimed, starts the supervisor and warms the caches, as on a
user's machine. Bytecode is cached. A private HOME, XDG folders and tmux socket
(:func:`common.private_host`): nothing touches the user's own.

Run: ``python bench/orchestrate.py [--rounds N] [--status-rounds N] [--files N]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import best, median, private_host, realistic_repository, small_repository
from launch import command_environment, flume_argv
from status import journal_of

from flume.core.actions import (
    Action,
    Event,
    LaunchLane,
    MakeWorktree,
    Report,
    RunSetup,
    SendPrompt,
    SendTell,
    StartAgent,
)
from flume.core.ids import BranchName, Instant, SessionId, Sha, WorkName
from flume.core.launch import Launch
from flume.core.observations import (
    Activity,
    AgentReady,
    AgentStarted,
    AgentStateSeen,
    AskSaid,
    Author,
    ChildNews,
    ComposeSaid,
    Launched,
    Observation,
    PromptTyped,
    SetupFinished,
    Tick,
    Told,
    TranscriptEntry,
    WorktreeMade,
)
from flume.core.place import Life, Place
from flume.core.settings import Settings
from flume.core.step import step
from flume.shell.declared.kinds import load_kind_file
from flume.shell.panes.tmux import Tmux, socket_path
from flume.shell.store import journal, places
from flume.testing import scenario
from tests.model.test_orchestrate import crew, spawn, world_of

#: P6: a tell in the waiting agent's transcript within this many seconds.
ASK_TARGET = 1.0
#: WF-CHILD-NEWS-BATCHED: news that comes while the lead works costs this many sends.
SENDS_TARGET = 1
#: P2: status of many places at most this many times one place's.
STATUS_TARGET = 3.0
#: P1: a place's own launch work at most this many times a bare ``git worktree add``.
LAUNCH_TARGET = 1.5
NEWS_COUNTS = (1, 5, 20)
LANES = 4
GIT = shutil.which("git") or "git"
#: How often the journals are looked at while the supervisor works.
POLL_SECONDS = 0.05
#: How long the machine is left to settle after a round's runs are dropped, before the next turn:
#: the dropped agents' processes end and the removed worktrees' writes are flushed meanwhile.
SETTLE_SECONDS = 1.0

# --- the kinds and the agents' script --------------------------------------------------------

#: A lead that spawns one coder, which asks; the lead may compose too (figure 4's lead).
CREW = """\
[kind]
name = "crew"
body = ["build"]
budgets = { turns = 200, tokens = 100000000 }

[orchestrate.build]
lead = "lead"
children = { template = "coder", max = 2 }
compose = { runs = 2, depth = 2 }

[step.lead]
prompt = "LEAD $brief. Spawn a coder, or compose a run; when all are done, write $verdict."
gate = "verdict"
may = ["spawn", "compose", "notify"]

[step.coder]
prompt = "Build: $goal. If unclear, flume ask. Commit."
gate = "commit"
may = ["progress", "ask"]
"""

#: Figure 4's fragment: one step.
DOCS = """\
[kind]
name = "docs"
body = ["write"]

[step.write]
prompt = "Write DOCS.md; commit."
gate = "commit"
"""


def lanes_fragment(lanes: int) -> str:
    """Figure 3's fragment: a parallel of ``lanes`` commit-gated lanes, then a check."""
    names = [f"l{number}" for number in range(1, lanes + 1)]
    steps = "".join(
        f'[step.{name}]\nprompt = "Build slice {name}; commit."\ngate = "commit"\n\n'
        for name in names
    )
    return (
        '[kind]\nname = "slices"\nbody = ["slices", "check"]\n\n'
        f"[parallel.slices]\nbranches = {json.dumps(names)}\ncap = {lanes}\n\n"
        f'{steps}[step.check]\nprompt = "Check the slices; commit."\ngate = "commit"\n'
    )


def agent_script(docs: Path) -> str:
    """The test agent's script: the lead spawns (``ASK``) or composes (``COMPOSE``); the coder asks.

    Every other prompt (news, tells) is answered "ok", ending the turn.
    """
    compose = json.dumps(["flume", "compose", str(docs), "--turns", "5", "--tokens", "1000"])
    return f"""
[[turn]]
match = "LEAD ASK"
steps = [{{run = ["flume", "spawn", "--goal", "ask which greeting"]}}]

[[turn]]
match = "LEAD COMPOSE"
steps = [{{run = {compose}}}]

[[turn]]
match = "Build: ask which greeting"
steps = [{{run = ["flume", "ask", "Hello or Hi in the greeting?"]}}]
"""


# --- reading journals ------------------------------------------------------------------------


def _journal(repo: Path, place: str) -> Path:
    return places.journals_dir(repo) / place / places.JOURNAL


def _observations(path: Path) -> list[Observation]:
    try:
        return list(journal.read(path).observations)
    except FileNotFoundError:
        return []


def _wait(predicate: Callable[[], object], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            message = f"timed out waiting for {what}"
            raise TimeoutError(message)
        time.sleep(POLL_SECONDS)


def waiting_spans(path: Path) -> list[tuple[float, float]]:
    """When the run's agent was seen waiting, as its journal replays: (from, to) instants.

    The last span of a still-waiting agent ends at infinity.
    """
    spans: list[tuple[float, float]] = []
    place: Place | None = None
    since: float | None = None
    for seen in _observations(path):
        place = step(Settings(), place, seen).place
        agent = place.agent
        waits = agent is not None and agent.activity is Activity.WAITING
        if waits and since is None:
            since = float(seen.at)
        elif not waits and since is not None:
            spans.append((since, float(seen.at)))
            since = None
    if since is not None:
        spans.append((since, float("inf")))
    return spans


def seen_waiting_from(spans: Sequence[tuple[float, float]], instant: float) -> float | None:
    """The first instant from ``instant`` on at which the agent is seen waiting."""
    for start, end in spans:
        if end > instant:
            return max(start, instant)
    return None


def delivered_at(path: Path, holding: str) -> float | None:
    """The instant of the transcript line holding ``holding`` on which a tell was delivered.

    Found as the rules find it: the journal replayed, the ``TranscriptEntry`` whose step decides
    the ``tell-delivered`` report.
    """
    place: Place | None = None
    for seen in _observations(path):
        decision = step(Settings(), place, seen)
        place = decision.place
        if (
            isinstance(seen, TranscriptEntry)
            and holding in seen.text
            and any(
                isinstance(action, Report) and action.event is Event.TELL_DELIVERED
                for action in decision.actions
            )
        ):
            return float(seen.at)
    return None


def first_at(path: Path, kind: type[Observation], test: Callable[[Observation], bool]) -> float:
    """The instant of the journal's first ``kind`` that passes ``test``."""
    for seen in _observations(path):
        if isinstance(seen, kind) and test(seen):
            return float(seen.at)
    message = f"no {kind.__name__} in {path}"
    raise LookupError(message)


def _flume(*args: str, cwd: Path) -> str:
    ran = subprocess.run(  # noqa: S603 (our own script)
        [*flume_argv(), *args],
        capture_output=True,
        text=True,
        check=False,
        env=command_environment(),
        # Not this checkout's folder: the supervisor the first launch starts runs
        # ``python -m flume``, which would load the flume package found there.
        cwd=cwd,
    )
    if ran.returncode != 0:
        message = f"flume {' '.join(args)} failed ({ran.returncode}): {ran.stderr}"
        raise RuntimeError(message)
    return ran.stdout


def launch_run(repo: Path, kind_file: Path, name: str, brief: str, script: Path) -> Path:
    """Launch a crew run led by the test agent; its journal."""
    _flume(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", name,
        "--brief", brief, "--agent", "test", "--agent-arg=--script", f"--agent-arg={script}",
        cwd=repo.parent,
    )  # fmt: skip
    return _journal(repo, f"crew--{name}")


def tidied(path: Path) -> bool:
    """The place its journal describes is tidied: its agent ended, its worktree dealt with."""
    place: Place | None = None
    for seen in _observations(path):
        place = step(Settings(), place, seen).place
    return place is not None and place.life is Life.TIDIED


def drop(repo: Path, name: str, child: str) -> None:
    """Drop the run's child, then the run; wait until both are tidied and their worktrees gone.

    The child first, as bench/lanes.py drops lanes: a child tidied after its run has lost its
    base (the run's branch), and its worktree would be kept. Then the machine is left to
    settle (:data:`SETTLE_SECONDS`): what the next turn times starts from a quiet machine.
    """
    for place in (f"crew--{name}+{child}", f"crew--{name}"):
        path = _journal(repo, place)
        if path.exists():
            _flume("drop", place, "--repository", str(repo), cwd=repo.parent)
            _wait(lambda path=path: tidied(path), 120, f"{place} tidied")
        folder = repo / "places" / place
        _wait(lambda folder=folder: not folder.exists(), 120, f"{place}'s worktree to go")
    time.sleep(SETTLE_SECONDS)


# --- figure 1: a child's question, and a plain tell, to a waiting lead ---------------------


def ask_round(repo: Path, kind_file: Path, script: Path, name: str) -> tuple[float, float, float]:
    """One round: seconds to the question's news delivered, its news journaled, a plain tell."""
    run = launch_run(repo, kind_file, name, "ASK", script)
    child = _journal(repo, f"crew--{name}+coder-1")
    question = "Hello or Hi in the greeting?"
    _wait(lambda: delivered_at(run, question) is not None, 60, f"{name}'s question told")
    asked = first_at(child, AskSaid, lambda _seen: True)
    start = seen_waiting_from(waiting_spans(run), asked)
    assert start is not None, f"{name}'s lead was never seen waiting after the question"
    delivered = delivered_at(run, question) or 0.0
    journaled = first_at(run, ChildNews, lambda seen: question in getattr(seen, "text", ""))
    # The plain tell, once the lead took the news and waits again with nothing held for it.
    _wait(lambda: lead_idle(run), 60, f"{name}'s lead to wait again")
    marker = f"bench tell {name} {time.time_ns()}"
    _flume("tell", f"crew--{name}", marker, "--repository", str(repo), cwd=repo.parent)
    _wait(lambda: delivered_at(run, marker) is not None, 60, f"{name}'s tell delivered")
    told = first_at(run, Told, lambda seen: marker in getattr(seen, "text", ""))
    tell_start = seen_waiting_from(waiting_spans(run), told)
    assert tell_start is not None
    tell = (delivered_at(run, marker) or 0.0) - tell_start
    drop(repo, name, "coder-1")
    return delivered - start, journaled - asked, tell


def lead_idle(path: Path) -> bool:
    """The run's lead waits, nothing held for it nor being sent."""
    place: Place | None = None
    for seen in _observations(path):
        place = step(Settings(), place, seen).place
    return (
        place is not None
        and place.agent is not None
        and place.agent.activity is Activity.WAITING
        and not place.held
        and place.sending is None
    )


# --- figure 2: N pieces of news while the lead works, one send -----------------------------


def news_sends(count: int) -> tuple[int, int, int]:
    """Sends of news decided while the lead works, after it waits, and the lines they held."""
    world = world_of(crew(most=2))
    assert spawn(world) is None
    before = len(world.actions)
    for number in range(count):
        seen = ChildNews(at=world.instant(), lane="coder-1", id=f"progress:{number}", text="...")
        assert world.feed(seen) is None
    working = [a for a in world.actions[before:] if isinstance(a, SendTell)]
    middle = len(world.actions)
    assert world.end_turn() is None
    waited = [
        a
        for a in world.actions[middle:]
        if isinstance(a, SendTell) and a.text.startswith("News of your children")
    ]
    lines = sum(a.text.count("- coder-1:") for a in waited)
    return len(working), len(waited), lines


# --- figure 3: status of a parent with two child runs of 4 lanes ---------------------------


class Writer:
    """Journals written through the core as the supervisor writes them, its world stood in for.

    Each place's worktree is made, its agent (if it has one now) started, its prompt typed and
    in its transcript, then 30 transcript lines and ticks of its work; a lane's launch (a
    ``LaunchLane``) is journaled as the supervisor journals it
    (``flume.shell.perform.lanes.launch``).
    """

    def __init__(self, repo: Path, clock: float) -> None:
        self.repo = repo
        self.clock = clock
        self.sessions = 0
        self.prompts: dict[SessionId, str] = {}
        self.launched: list[LaunchLane] = []

    def now(self) -> Instant:
        """The next instant: one a second."""
        self.clock += 1
        return Instant(self.clock)

    def feed(self, path: Path, place: Place | None, seen: Observation) -> Place:
        """Journal ``seen`` and what the shell observes of what it decides; the place then."""
        queue = [seen]
        while queue:
            current = queue.pop(0)
            decision = step(Settings(), place, current)
            if place is None:
                journal.create(path, current)
            else:
                journal.append(path, current)
            place = decision.place
            for action in decision.actions:
                queue.extend(self.perform(action))
        assert place is not None
        return place

    def place(self, launch: LaunchLane | None = None, first: Launched | None = None) -> Place:
        """A place launched (``first``, or a lane's ``launch``) and at work; the place."""
        if first is None:
            assert launch is not None
            first = Launched(
                at=self.now(),
                launch=launch.launch,
                kind=launch.kind,
                setup=launch.setup,
                copy=launch.copy,
                start=launch.start,
                settings=launch.settings,
                board=launch.board,
                tests=launch.tests,
            )
        path = _journal(self.repo, first.launch.place)
        place = self.feed(path, None, first)
        if place.agent is None:
            return place
        session = place.agent.session
        place = self.feed(path, place, AgentReady(at=self.now(), session=session))
        text = self.prompts[session]
        person = TranscriptEntry(at=self.now(), session=session, author=Author.PERSON, text=text)
        place = self.feed(path, place, person)
        for number in range(30):
            said = f"working on it {number}"
            entry = TranscriptEntry(at=self.now(), session=session, author=Author.AGENT, text=said)
            place = self.feed(path, place, entry)
            at = self.now()
            busy = AgentStateSeen(at=at, session=session, activity=Activity.WORKING)
            place = self.feed(path, place, Tick(at=at) if number % 2 else busy)
        return place

    def perform(self, action: Action) -> list[Observation]:
        """What the shell observes of ``action``; a lane's launch is kept for later."""
        at = self.now()
        match action:
            case MakeWorktree(path=path, branch=branch):
                return [WorktreeMade(at=at, path=path, branch=branch, head=Sha("a" * 40))]
            case RunSetup():
                return [SetupFinished(at=at, ok=True)]
            case StartAgent(stage=stage, attempt=attempt):
                self.sessions += 1
                session = SessionId(f"s{self.sessions}")
                pane = f"%{self.sessions}"
                started = AgentStarted(
                    at=at, stage=stage, attempt=attempt, session=session, pane=pane
                )
                return [started]
            case SendPrompt(session=session, marker=marker, send=send, text=text):
                self.prompts[session] = text
                return [PromptTyped(at=at, session=session, marker=marker, send=send)]
            case LaunchLane():
                self.launched.append(action)
                return []
            case _:
                return []


def composed_host(repo: Path, kind_file: Path, fragment: Path) -> int:
    """A run whose lead composed two runs of ``fragment``, each fanned out; its places' count."""
    kind = load_kind_file(kind_file)
    slices = load_kind_file(fragment)
    writer = Writer(repo, time.time() - 3600)
    launch = Launch(
        repository=str(repo),
        kind=kind.name,
        name=WorkName("team"),
        brief="COMPOSE the slices",
        base=BranchName("main"),
    )
    board = str(repo / "places" / ".boards" / launch.place)
    first = Launched(at=writer.now(), launch=launch, kind=kind, settings=Settings(), board=board)
    run = writer.place(first=first)
    assert run.agent is not None
    path = _journal(repo, run.launch.place)
    for _ in range(2):
        seen = ComposeSaid(
            at=writer.now(), kind=slices, turns=5, tokens=1000, session=run.agent.session
        )
        run = writer.feed(path, run, seen)
    count = 1
    while writer.launched:
        launched = writer.launched.pop(0)
        writer.place(launch=launched)
        count += 1
        if launched.parent == run.launch.place:
            news = ChildNews(
                at=writer.now(),
                lane=launched.lane,
                id="started",
                text=f"started ({launched.launch.place})",
            )
            run = writer.feed(path, run, news)
    places.remember(repo)
    return count


def fix_host(repo: Path) -> None:
    """A repository holding one running fix place (bench/status.py's)."""
    path = _journal(repo, "fix--p0")
    first, *rest = journal_of(repo, "p0")
    journal.create(path, first)
    for seen in rest:
        journal.append(path, seen)
    places.remember(repo)


def status_seconds(repo: Path) -> float:
    """``flume status --json --repository`` in its own process; seconds."""
    started = time.perf_counter()
    subprocess.run(  # noqa: S603 (our own script)
        [*flume_argv(), "status", "--json", "--repository", str(repo)],
        env=command_environment(),
        cwd=repo.parent,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


# --- figure 4: a child run's own launch work, against a bare git worktree add ------------


def made_at(path: Path) -> float | None:
    """The instant of the journal's ``WorktreeMade``; None before there is one."""
    for seen in _observations(path):
        if isinstance(seen, WorktreeMade):
            return float(seen.at)
    return None


def compose_round(repo: Path, kind_file: Path, script: Path, name: str) -> tuple[float, float]:
    """One round: seconds from the compose journaled to the child run journaled, and made."""
    run = launch_run(repo, kind_file, name, "COMPOSE", script)
    child = _journal(repo, f"crew--{name}+run-1")
    _wait(lambda: made_at(child) is not None, 120, f"{name}'s child run made")
    composed = first_at(run, ComposeSaid, lambda _seen: True)
    journaled = float(_observations(child)[0].at)
    made = made_at(child) or 0.0
    drop(repo, name, "run-1")
    return journaled - composed, made - composed


def bare_round(repo: Path, label: str, *, parallel: bool) -> float:
    """One ``git worktree add -b`` of main, as a process of its own; seconds. Then removed.

    The worktree and its branch are removed after, and the machine left to settle.
    """
    config = ("-c", "checkout.workers=0") if parallel else ()
    path = repo / "places" / f"bare--{label}"
    argv = [GIT, *config, "worktree", "add", "--quiet", "-b", f"bare/{label}", str(path), "main"]
    started = time.perf_counter()
    subprocess.run(argv, cwd=repo, check=True, capture_output=True)  # noqa: S603 (git, with our own arguments)
    elapsed = time.perf_counter() - started
    for each in (
        [GIT, "worktree", "remove", "--force", str(path)],
        [GIT, "branch", "-q", "-D", f"bare/{label}"],
    ):
        subprocess.run(each, cwd=repo, check=False, capture_output=True)  # noqa: S603 (git, with our own arguments)
    shutil.rmtree(path, ignore_errors=True)
    time.sleep(SETTLE_SECONDS)
    return elapsed


# --- the run -------------------------------------------------------------------------------


def _ms(samples: Sequence[float]) -> str:
    return " ".join(f"{each * 1000:.0f}" for each in samples)


def _figures(label: str, samples: Sequence[float]) -> str:
    return (
        f"{label}: median {median(list(samples)) * 1000:.0f} ms, best "
        f"{best(list(samples)) * 1000:.0f} ms, max {max(samples) * 1000:.0f} ms"
    )


def figure_news() -> None:
    """Figure 2, printed."""
    print("2. child news while the lead works, then it waits (core, FakeWorld):")
    met = True
    for count in NEWS_COUNTS:
        working, sent, lines = news_sends(count)
        met = met and working == 0 and sent == SENDS_TARGET and lines == count
        print(
            f"  N={count:>2}: sends while working {working}, sends once it waits {sent} "
            f"(holding {lines} of {count} pieces); sends/N {sent / count:.2f}"
        )
    print(f"  target {SENDS_TARGET} send for every N: {'met' if met else 'NOT met'}")


def figure_status(home: Path, rounds: int) -> None:
    """Figure 3, printed."""
    one = small_repository(home / "status-one")
    fix_host(one)
    many = small_repository(home / "status-many")
    kind_file = home / "crew.toml"
    fragment = home / "slices.toml"
    fragment.write_text(lanes_fragment(LANES), encoding="utf-8")
    count = composed_host(many, kind_file, fragment)
    ones: list[float] = []
    manys: list[float] = []
    status_seconds(one)  # bytecode and caches warm, not timed
    for number in range(rounds):
        pair = (one, many) if number % 2 else (many, one)
        for repo in pair:
            (ones if repo is one else manys).append(status_seconds(repo))
    shown = json.loads(
        subprocess.run(  # noqa: S603 (our own script)
            [*flume_argv(), "status", "--json", "--repository", str(many)],
            env=command_environment(),
            cwd=home,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    ratio = median(manys) / median(ones)
    print(
        f"3. flume status --json --repository, a run with 2 composed runs of {LANES} lanes "
        f"({count} places journaled, {len(shown['places'])} shown) against 1 fix place:"
    )
    print(f"  {_figures('1 fix place', ones)}")
    print(f"  {_figures(f'{count} places', manys)}")
    print(
        f"  ratio (median/median) {ratio:.2f}x; best/best {best(manys) / best(ones):.2f}x; "
        f"target at most {STATUS_TARGET}x: {'met' if ratio <= STATUS_TARGET else 'NOT met'}"
    )


def figure_ask(home: Path, kind_file: Path, script: Path, rounds: int) -> None:
    """Figure 1, printed."""
    repo = scenario.make_repository(
        home / "asks", {".flume.toml": scenario.FAST_TIMING, "README.md": "hullo\n"}
    )
    ask_round(repo, kind_file, script, "warm")  # starts the supervisor: not timed
    asked: list[float] = []
    journaled: list[float] = []
    told: list[float] = []
    for number in range(rounds):
        delivered, news, tell = ask_round(repo, kind_file, script, f"q{number}")
        asked.append(delivered)
        journaled.append(news)
        told.append(tell)
    print(
        "1. a child's question in its waiting lead's transcript (supervisor, tmux, test agent; "
        f"{rounds} rounds):"
    )
    print(f"  {_figures('question: asked and lead waiting -> lead transcript', asked)}")
    print(f"  {_figures('  of which asked -> its news journaled in the run', journaled)}")
    print(f"  {_figures('plain flume tell: told -> lead transcript (P6)', told)}")
    worst = max(asked)
    print(
        f"  question median/tell median {median(asked) / median(told):.2f}x; target at most "
        f"{ASK_TARGET:.0f} s: {'met' if worst <= ASK_TARGET else 'NOT met'} (max), "
        f"{'met' if median(asked) <= ASK_TARGET else 'NOT met'} (median)"
    )
    print(f"  raw, ms: question {_ms(asked)}; tell {_ms(told)}")


def figure_compose(home: Path, kind_file: Path, script: Path, rounds: int, files: int) -> None:
    """Figure 4, printed."""
    started = time.perf_counter()
    repo = realistic_repository(home / "project", files=files)
    built = time.perf_counter() - started
    compose_round(repo, kind_file, script, "warm")  # not timed
    turns = ["flume", "bare", "parallel"]
    timed: dict[str, list[float]] = {turn: [] for turn in turns}
    journaled: list[float] = []
    for number in range(rounds):
        shift = number % len(turns)
        for turn in turns[shift:] + turns[:shift]:
            if turn == "flume":
                launched, made = compose_round(repo, kind_file, script, f"c{number}")
                journaled.append(launched)
                timed[turn].append(made)
            else:
                label = f"{turn}{number}"
                timed[turn].append(bare_round(repo, label, parallel=turn == "parallel"))
    ratio = median(timed["flume"]) / median(timed["bare"])
    print(
        f"4. a composed child run's launch work, {files} files and 61 commits (built in "
        f"{built:.1f}s; {rounds} rounds):"
    )
    print(f"  {_figures('flume: ComposeSaid -> child run WorktreeMade', timed['flume'])}")
    print(f"  {_figures('  of which ComposeSaid -> child run journaled', journaled)}")
    print(f"  {_figures('git worktree add -b', timed['bare'])}")
    print(f"  {_figures('git -c checkout.workers=0 worktree add -b', timed['parallel'])}")
    print(
        f"  ratio (median/median) {ratio:.2f}x; best/best "
        f"{best(timed['flume']) / best(timed['bare']):.2f}x; against flume's own checkout "
        f"{median(timed['flume']) / median(timed['parallel']):.2f}x; target at most "
        f"{LAUNCH_TARGET}x: {'met' if ratio <= LAUNCH_TARGET else 'NOT met'}"
    )
    for turn in turns:
        print(f"  raw, ms, {turn}: {_ms(timed[turn])}")


def main() -> None:
    """Measure the four figures, in order, and print each with its target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds of figures 1 and 4")
    parser.add_argument("--status-rounds", type=int, default=15)
    parser.add_argument("--files", type=int, default=3000, help="figure 4's repository")
    arguments = parser.parse_args()
    home = private_host()
    kind_file = home / "crew.toml"
    kind_file.write_text(CREW, encoding="utf-8")
    docs = home / "docs.toml"
    docs.write_text(DOCS, encoding="utf-8")
    script = home / "agent.toml"
    script.write_text(agent_script(docs), encoding="utf-8")
    started = time.perf_counter()
    figure_news()
    figure_status(home, arguments.status_rounds)
    try:
        figure_ask(home, kind_file, script, arguments.rounds)
        figure_compose(home, kind_file, script, arguments.rounds, arguments.files)
    finally:
        subprocess.run(  # noqa: S603 (our own script)
            [*flume_argv(), "daemon", "stop"],
            check=False,
            capture_output=True,
            env=command_environment(),
            cwd=home,
        )
        Tmux(socket_path()).kill_server()
    # Kept when the bench fails, to be looked at: its journals say why.
    shutil.rmtree(home, ignore_errors=True)
    print(f"(the whole run: {time.perf_counter() - started:.0f}s)")


if __name__ == "__main__":
    main()
