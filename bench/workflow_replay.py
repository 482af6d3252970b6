"""Issue 13: a workflow journal's replay against a fix journal's of the same length.

Targets: at least 50,000 observations a second, and at most 1.3x the fix journal's time.

The workflow is one run of a kind that plans (an ``artifact`` gate), fans out into three lanes
(a parallel whose branches each commit, joined all and merged), then loops a review (a
``verdict`` gate) and a fix (a commit) three passes at most, within budgets; the review says
``revise`` on passes 1 and 2 and ``done`` on pass 3, so the loop leaves before pass 3's fix.
Each lane is a place with a journal of its own: the workflow's journals are the run's and its
three lanes', together as long as the fix's, and replaying the workflow replays all four. It
is made by driving the real core observation by observation and answering each action it takes
as the shell would (the worktree made, each agent started and ready, each prompt typed and seen
in the transcript, each gate read, each agent ended), with every step's turn padded by an agent
at work in the proportions a real journal has (bench/replay.py's ``busy``: mostly transcript
lines, pane output, agent states and ticks), and the turn's end (its agent waiting, its
``TurnEnded`` with usage). The fix journal is bench/replay.py's, of the same length.

Side by side, the four works taking turns in every round:

- the fold: ``replay`` over the observations already in memory, workflow and fix;
- the restart: the journal's JSON lines decoded with the shell's converter, then the fold.

Run: ``python bench/workflow_replay.py [--observations N] [--rounds R]``. Prints every round's
figures, then the best and the median of each, and the workflow's time over the fix's.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import attrs
from pyrsistent import pvector
from replay import busy
from replay import journal as fix_journal

from flume.core.actions import (
    Action,
    ArchiveVerdict,
    EndAgent,
    JudgeGate,
    LaunchLane,
    MakeWorktree,
    MergeLanes,
    RunSetup,
    SendPrompt,
    StartAgent,
)
from flume.core.ids import (
    BlockName,
    BranchName,
    Instant,
    KindName,
    SessionId,
    Sha,
    StageName,
    WorkName,
)
from flume.core.kinds import (
    Artifact,
    Budgets,
    Commit,
    Kind,
    Loop,
    Parallel,
    Sequence,
    Step,
    Verdict,
)
from flume.core.launch import Launch
from flume.core.observations import (
    Activity,
    AgentExited,
    AgentReady,
    AgentStarted,
    AgentStateSeen,
    Author,
    BranchHead,
    GateRead,
    LaneEnded,
    LanesMerged,
    Launched,
    Observation,
    PromptTyped,
    SetupFinished,
    Tick,
    TranscriptEntry,
    TurnEnded,
    Usage,
    WorktreeMade,
)
from flume.core.place import Life, Place
from flume.core.settings import Settings
from flume.core.step import replay, step
from flume.shell.store.codec import decode, encode

TARGET = 50_000
RATIO = 1.3
#: The review's verdict on each pass: the loop leaves on done, pass 3's fix never runs.
VERDICTS = {1: "revise", 2: "revise", 3: "done"}
#: The turns the workflow takes: plan, a turn in each of the three lanes, then review and fix
#: twice, then review.
STEPS = 9
LANES = ("slice-a", "slice-b", "slice-c")


def reviewed() -> Kind:
    """Plan, then a review loop of three passes at most, within budgets like the issue's."""
    review = Step(
        name=StageName("review"),
        prompt="Review the diff against $base, pass $pass of $max. Write $verdict.",
        deliverable=Verdict(),
    )
    fix = Step(
        name=StageName("fix"),
        prompt="Mend the findings in $board/review/verdict.json; commit.",
        deliverable=Commit(),
    )
    plan = Step(
        name=StageName("plan"),
        prompt="Plan $brief in PLAN.md.",
        deliverable=Artifact(path="PLAN.md"),
    )
    slices = Parallel(
        name=BlockName("slices"),
        branches=pvector(
            Step(
                name=StageName(lane),
                prompt=f"Build {lane} of PLAN.md; commit.",
                deliverable=Commit(),
            )
            for lane in LANES
        ),
        cap=3,
    )
    loop = Loop(
        name=BlockName("review-loop"),
        body=Sequence(blocks=pvector([review, fix])),
        until=StageName("review"),
        max=3,
    )
    # wall_minutes: the run's filler spans about 14 active hours at bench/replay.py's pace.
    budgets = Budgets(
        turns=100, wall_minutes=1440, turns_per_attempt=10, retries=2, tokens=2_000_000
    )
    return Kind(
        name=KindName("reviewed"),
        prefix="reviewed",
        body=Sequence(blocks=pvector([plan, slices, loop])),
        budgets=budgets,
    )


@attrs.define
class Driver:
    """The core stepped one observation at a time, its actions answered as the shell would."""

    settings: Settings
    place: Place | None = None
    seen: list[Observation] = attrs.field(factory=list)
    now: float = 0.0
    sessions: int = 0
    session: SessionId | None = None
    verdict: str | None = None
    artifact: bool = False
    commits: int = 0
    #: The lanes the run launched, each to be carried by a driver of its own.
    lanes: list[LaunchLane] = attrs.field(factory=list)

    def at(self) -> Instant:
        """The clock, moved on by half a second: one observation's instant."""
        self.now += 0.5
        return Instant(self.now)

    def feed(self, observation: Observation) -> None:
        """Step the core with ``observation`` and with what answers its actions, in turn."""
        queue = [observation]
        while queue:
            current = queue.pop(0)
            decision = step(self.settings, self.place, current)
            self.place = decision.place
            self.seen.append(current)
            for action in decision.actions:
                queue.extend(self.answer(action))

    def answer(self, action: Action) -> list[Observation]:  # noqa: C901, PLR0911 (one arm per action)
        """What the shell observes after performing ``action``."""
        match action:
            case MakeWorktree(path=path, branch=branch):
                return [WorktreeMade(at=self.at(), path=path, branch=branch, head=Sha("a0"))]
            case RunSetup():
                return [SetupFinished(at=self.at(), ok=True, output="")]
            case StartAgent(stage=stage, attempt=attempt):
                self.sessions += 1
                self.session = SessionId(f"5e55-{self.sessions:04d}")
                started = AgentStarted(
                    at=self.at(),
                    stage=stage,
                    attempt=attempt,
                    session=self.session,
                    pane=f"%{self.sessions}",
                )
                return [started, AgentReady(at=self.at(), session=self.session)]
            case SendPrompt(session=session, marker=marker, send=send, text=text):
                return [
                    PromptTyped(at=self.at(), session=session, marker=marker, send=send),
                    TranscriptEntry(at=self.at(), session=session, author=Author.PERSON, text=text),
                ]
            case ArchiveVerdict():
                self.verdict = None
                return []
            case JudgeGate(key=key, attempt=attempt, gate=Verdict()):
                found = self.verdict is not None
                result = self.verdict or ""
                return [
                    GateRead(
                        at=self.at(), key=key, attempt=attempt, found=found, result=result,
                        summary=f"the review says {result}",
                    )
                ]  # fmt: skip
            case JudgeGate(key=key, attempt=attempt):
                return [GateRead(at=self.at(), key=key, attempt=attempt, found=self.artifact)]
            case EndAgent(session=session):
                return [AgentExited(at=self.at(), session=session)]
            case LaunchLane():
                self.lanes.append(action)
                return []
            case MergeLanes():
                return [LanesMerged(at=self.at(), head=Sha("m1"))]
            case _:
                return []

    def turn(self, busy_for: int) -> None:
        """The live agent works ``busy_for`` observations, does its step, and ends its turn."""
        assert self.place is not None
        assert self.session is not None
        session = self.session
        for cycle in range(1, busy_for + 1):
            self.feed(busy(cycle, self.at(), session))
        stage = self.place.stage
        match stage.name:
            case "plan":
                self.artifact = True
            case "review":
                assert stage.position is not None
                self.verdict = VERDICTS[stage.position.passes[-1].number]
            case _:
                self.commits += 1
                sha = Sha(f"b{self.commits}")
                self.feed(BranchHead(at=self.at(), branch=self.place.branch, sha=sha))
        self.feed(AgentStateSeen(at=self.at(), session=session, activity=Activity.WAITING))
        usage = Usage(input=1200, output=800, cache_read=40_000, cache_creation=3000)
        self.feed(TurnEnded(at=self.at(), session=session, usage=usage))
        if stage.name == "fix":
            self.now += self.settings.quiet_seconds
            self.feed(Tick(at=self.at()))


def run(settings: Settings, busy_for: list[int]) -> list[Driver]:
    """The workflow's run and its lanes, their ``STEPS`` turns padded by ``busy_for`` each.

    The run plans, fans out; each lane's place is launched as the shell would journal it, runs
    its turn and finishes, and the run is told (``LaneEnded``); the lanes merged, it reviews.
    """
    driver = Driver(settings=settings)
    launch = Launch(
        repository="/src/app",
        kind=KindName("reviewed"),
        name=WorkName("bench"),
        brief="Make the thing fast.",
        base=BranchName("main"),
    )
    board = f"/src/app/places/.boards/{launch.place}"
    driver.feed(Launched(at=driver.at(), launch=launch, kind=reviewed(), board=board))
    turns = iter(busy_for)
    driver.turn(next(turns))
    lanes: list[Driver] = []
    for asked in list(driver.lanes):
        lane = Driver(settings=settings, now=driver.now)
        lane.feed(
            Launched(
                at=lane.at(), launch=asked.launch, kind=asked.kind, start=asked.start,
                settings=asked.settings, board=asked.board,
            )
        )  # fmt: skip
        lane.turn(next(turns))
        assert lane.place is not None
        assert lane.place.life is Life.FINISHED, f"lane {asked.lane}: {lane.place.life}"
        driver.now = lane.now
        ended = LaneEnded(at=driver.at(), lane=asked.lane, finished=True, head=lane.place.head)
        driver.feed(ended)
        lanes.append(lane)
    for each in turns:
        driver.turn(each)
    return [driver, *lanes]


def journals(settings: Settings, size: int) -> list[list[Observation]]:
    """The run's journal and its lanes', ``size`` observations in all, their turns padded alike."""
    bare = sum(len(each.seen) for each in run(settings, [0] * STEPS))
    padding = size - bare
    each = [padding // STEPS] * STEPS
    each[-1] += padding - sum(each)
    drivers = run(settings, each)
    place = drivers[0].place
    assert place is not None
    total = sum(len(driver.seen) for driver in drivers)
    assert total == size, f"{total} observations, not {size}"
    assert place.life is Life.FINISHED, f"the run should finish, not {place.life}"
    assert place.stage.key == "review-loop@3/review", "the loop should leave on pass 3's done"
    assert "slices" in place.completed, "the lanes should have been merged"
    return [driver.seen for driver in drivers]


def replay_all(settings: Settings, each: list[list[Observation]]) -> list[Place]:
    """Every journal replayed, the run's and its lanes' (a restart reads all four)."""
    return [replay(settings, seen) for seen in each]


@attrs.frozen
class Work:
    """One timed work and every round's seconds."""

    label: str
    size: int
    work: Callable[[], object]
    rounds: list[float] = attrs.field(factory=list)


def main() -> None:
    """Time both journals' fold and restart, round by round, and print them side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    settings = Settings()
    split = journals(settings, args.observations)
    workflow = [observation for each in split for observation in each]
    fix = fix_journal(args.observations)
    split_lines = [[encode(observation) for observation in each] for each in split]
    workflow_lines = [line for each in split_lines for line in each]
    fix_lines = [encode(observation) for observation in fix]
    ended = replay_all(settings, split)
    decoded = [[decode(line) for line in each] for each in split_lines]
    assert replay_all(settings, decoded) == ended
    kinds: dict[str, int] = {}
    for observation in workflow:
        name = type(observation).__name__
        kinds[name] = kinds.get(name, 0) + 1
    print(
        f"workflow journals (the run's and {len(split) - 1} lanes'): "
        f"{' + '.join(str(len(each)) for each in split)} = {len(workflow)} observations, "
        f"{sum(map(len, workflow_lines)) / 1e6:.1f} MB of JSON lines; "
        f"fix journal: {len(fix)} observations, {sum(map(len, fix_lines)) / 1e6:.1f} MB"
    )
    print("workflow's observations: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    works = [
        Work("workflow fold", len(workflow), lambda: replay_all(settings, split)),
        Work("fix fold", len(fix), lambda: replay(settings, fix)),
        Work(
            "workflow restart",
            len(workflow),
            lambda: replay_all(settings, [[decode(line) for line in each] for each in split_lines]),
        ),
        Work(
            "fix restart", len(fix), lambda: replay(settings, [decode(line) for line in fix_lines])
        ),
    ]
    for number in range(args.rounds):
        for work in works if number % 2 == 0 else works[::-1]:
            start = time.perf_counter()
            work.work()
            work.rounds.append(time.perf_counter() - start)
        fold = works[0].rounds[-1] / works[1].rounds[-1]
        restart = works[2].rounds[-1] / works[3].rounds[-1]
        print(
            f"round {number + 1}: "
            + "  ".join(f"{w.label} {w.size / w.rounds[-1]:8,.0f} obs/s" for w in works)
            + f"  workflow/fix: fold {fold:.2f}x restart {restart:.2f}x"
        )
    for work in works:
        best, middle = min(work.rounds), statistics.median(work.rounds)
        print(
            f"{work.label:17s} best {best * 1000:8.1f} ms {work.size / best:10,.0f} obs/s  "
            f"median {middle * 1000:8.1f} ms {work.size / middle:10,.0f} obs/s  "
            f"{work.size / best / TARGET:5.2f}x the target of {TARGET:,} obs/s"
        )
    for label, mine, theirs in (("fold", works[0], works[1]), ("restart", works[2], works[3])):
        ratios = [a / b for a, b in zip(mine.rounds, theirs.rounds, strict=True)]
        best = min(mine.rounds) / min(theirs.rounds)
        print(
            f"workflow/fix {label:8s} best {best:.2f}x  median of rounds "
            f"{statistics.median(ratios):.2f}x  (target <= {RATIO}x)"
        )


if __name__ == "__main__":
    main()
