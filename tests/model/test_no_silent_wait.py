"""Nothing silent, nothing lost: every state of a run has a way out, over generated workflows.

The seed's promise: "every wait in the engine has a deadline, and every pause names its cause
... there is no state where the run is stuck and the UI shrugs", and flume never loses work.
This machine holds it over **generated kinds** (trees of steps, loops, parallels and orchestrate
blocks, every gate, tiny budgets, finalize or not) against **adversarial agents and a world
whose effects are in flight** (``tests/model/fleet.py``): agents that never commit or never
write their verdict, write a stale or malformed one, say done at once, hang mid-turn, exit, ask
and are never answered, commit a moment after their turn's end or after a pause; leads that
never spawn or never answer; git refusing a merge for a lock or a branch gone; a lane's branch
or worktree deleted; the shell restarting at any line; a person's commands at any moment, the
wrong ones included. After every step, for every place not terminal, it checks the four
promises of DESIGN.md §6, and the re-prompt and the budget the seed names.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import attrs
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from pyrsistent import pmap

from flume.core.actions import Event, LaunchLane, MergeLanes, SendPrompt, SendTell, StartAgent
from flume.core.applies import went_on
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, PlaceName, SessionId, Sha
from flume.core.kinds import Artifact, Commit, Kind, ReportFile, Verdict
from flume.core.observations import (
    Activity,
    AgentExited,
    AgentReady,
    AgentStateSeen,
    AnswerGiven,
    ApproveAsked,
    AskSaid,
    Author,
    BudgetRaised,
    DropAsked,
    GateRead,
    NeedsSaid,
    Observation,
    ProceedAsked,
    ProgressSaid,
    ReportSeen,
    ResolveAsked,
    ResumeAsked,
    RetryAsked,
    SpawnSaid,
    StopAsked,
    Tick,
    Told,
    TranscriptEntry,
    TurnEnded,
    Usage,
)
from flume.core.place import (
    AwaitingInput,
    Delivering,
    LaneState,
    Life,
    PauseCause,
    Paused,
    Place,
    Short,
    TidyGathering,
    TidyWanted,
    Working,
    current_step,
    deferred,
    has_deliverable,
    open_question,
)
from flume.core.settings import Settings
from flume.core.status import PhaseWord, status
from flume.core.step import next_deadline, step
from flume.core.workflow.budget import spent_budget
from flume.core.workflow.gates import judged_here
from flume.core.workflow.lanes import children, lanes_ended, parallel_of
from flume.core.workflow.orchestrate import answerer, children_news
from tests.model.fleet import Agent, Fleet
from tests.strategies import runnable_workflows

S = Settings()


def _ticks_change(place: Place, at: float) -> bool:
    """A ``Tick`` at ``at`` calls for an action or changes the place beyond its clock."""
    decided = step(place.settings, place, Tick(at=Instant(at)))
    return bool(decided.actions) or attrs.evolve(decided.place, now=place.now) != place


#: The option of ``flume raise`` that raises each budget, as a person types it.
RAISE_OPTIONS = {
    "turns": "--turns",
    "tokens": "--tokens",
    "wall_minutes": "--wall",
    "retries": "--retries",
    "turns_per_attempt": "--turns-per-attempt",
}
#: Far enough ahead that every deadline the core holds has come (stall twice over included).
FAR = 10 * S.stall_seconds
#: A place's life once nothing more happens in it.
TERMINAL = frozenset({Life.FINISHED, Life.DROPPED, Life.TIDIED})
#: What an agent may do in a turn, honest or not.
ACTS = (
    "gate",
    "nothing",
    "commit",
    "verdict-done",
    "verdict-revise",
    "verdict-blocked",
    "verdict-malformed",
    "artifact",
    "report",
    "ask",
    "progress",
    "spawn",
    "answer",
)


#: One round of the world: what each live agent does, whether its turn ends, the tokens its
#: model reports, and how long the round takes. Mostly its step's gate, ended, as an honest agent.
Round = tuple[str, bool, int | None, float]
ROUNDS: st.SearchStrategy[Round] = st.tuples(
    st.sampled_from(("gate", "gate", "gate", *ACTS)),
    st.sampled_from([True, True, False]),
    st.none() | st.sampled_from([5, 10, 30]),
    st.sampled_from([S.quiet_seconds + 1, S.quiet_seconds + 1, 31.0, 601.0]),
)


def usage(tokens: int | None) -> Usage | None:
    """A turn's usage as its model reported it; None: none reported."""
    return None if tokens is None else Usage(output=tokens)


class NoSilentWaitMachine(RuleBasedStateMachine):
    """One generated workflow's run and every place it launches, against the Fleet world."""

    fleet: Fleet

    @initialize(kind=runnable_workflows(), rounds=st.lists(ROUNDS, max_size=12))
    def launch(self, kind: Kind, rounds: list[Round]) -> None:
        """Launch a drawn workflow, and let the world carry it through the rounds drawn."""
        self.fleet = Fleet(settings=S, kind=kind)
        self.fleet.launch()
        self.carry(rounds)

    # --- helpers ---------------------------------------------------------------------------------

    def names(self) -> list[PlaceName]:
        """Every place launched, in a stable order."""
        return sorted(self.fleet.homes)

    def pick(self, index: int, names: list[PlaceName]) -> PlaceName | None:
        """One of ``names`` by a drawn index; None when there is none."""
        return names[index % len(names)] if names else None

    def live(self) -> list[Agent]:
        """The live agents, in a stable order."""
        return sorted(
            (agent for agent in self.fleet.agents.values() if agent.live),
            key=lambda agent: agent.session,
        )

    def feed(self, name: PlaceName, seen: Observation) -> UsageError | None:
        """Step place ``name`` with ``seen``."""
        return self.fleet.feed(name, seen)

    def place(self, name: PlaceName) -> Place:
        """The place called ``name``."""
        place = self.fleet.homes[name].place
        assert place is not None
        return place

    # --- the shell and the clock -----------------------------------------------------------------

    @rule(index=st.integers(0, 50), count=st.integers(1, 4))
    def shell_performs(self, index: int, count: int) -> None:
        """The shell performs the next actions one place asked for; the others wait in flight."""
        name = self.pick(index, [each for each in self.names() if self.fleet.homes[each].queue])
        if name is None:
            return
        for _ in range(count):
            self.fleet.perform_next(name)

    @rule(seconds=st.sampled_from([1.0, 6.0, 31.0, 61.0, 601.0]))
    def supervisor_ticks(self, seconds: float) -> None:
        """Time passes; the supervisor looks at branches and worktrees, relays lanes, ticks."""
        self.fleet.now += seconds
        self.fleet.tick()

    @rule()
    def shell_restarts(self) -> None:
        """SIGKILL at any line: what was asked and not performed is lost; pending is asked again."""
        self.fleet.restart()

    @rule(rounds=st.lists(ROUNDS, min_size=1, max_size=6))
    def world_goes_on(self, rounds: list[Round]) -> None:
        """A while of the world: everything asked is done, each agent acts as the round says."""
        self.carry(rounds)

    def carry(self, rounds: list[Round]) -> None:
        """Rounds of the world: the shell does all it was asked, each agent acts, time passes.

        Each live agent takes a turn as the round draws it: its step's gate, or not; its turn
        ended, or it hangs.
        """
        for act, end, tokens, seconds in rounds:
            self.settle()
            for agent in self.live():
                self.read(agent)
                home = self.fleet.homes[agent.home]
                while home.queue and agent.live:
                    self.fleet.perform_next(agent.home)
                self.read(agent)
                if agent.live:
                    self.do(agent, act)
                if agent.live and end:
                    self.end_turn(agent, tokens)
            self.settle()
            self.fleet.now += seconds
            self.fleet.tick()

    def settle(self) -> None:
        """The shell performs every queued action, place by place, until none is left."""
        for _ in range(50):
            busy = [name for name in self.names() if self.fleet.homes[name].queue]
            if not busy:
                return
            for name in busy:
                self.fleet.perform_next(name)

    # --- agents --------------------------------------------------------------------------------

    @rule(index=st.integers(0, 50))
    def agent_reads(self, index: int) -> None:
        """An agent takes input, and its transcript holds what was pasted to it."""
        agents = self.live()
        if agents:
            self.read(agents[index % len(agents)])

    def read(self, agent: Agent) -> None:
        """The agent waits for input, then its transcript holds each text pasted to it."""
        at = self.fleet.instant()
        if agent.activity is Activity.UNKNOWN:
            agent.activity = Activity.WAITING
            self.feed(agent.home, AgentReady(at=at, session=agent.session))
        while agent.read < len(agent.pasted):
            text = agent.pasted[agent.read]
            agent.read += 1
            agent.activity = Activity.WORKING
            self.feed(
                agent.home,
                TranscriptEntry(at=at, session=agent.session, author=Author.PERSON, text=text),
            )

    @rule(
        index=st.integers(0, 50),
        act=st.sampled_from(ACTS),
        tokens=st.none() | st.integers(0, 30),
        end=st.booleans(),
    )
    def agent_takes_a_turn(self, index: int, act: str, tokens: int | None, end: bool) -> None:
        """An agent reads what it was sent, does ``act`` (its step's gate, or not), and may end."""
        agents = self.live()
        if not agents:
            return
        agent = agents[index % len(agents)]
        self.read(agent)
        self.do(agent, act)
        if end:
            self.end_turn(agent, tokens)

    def agent_turn(self, agent: Agent, act: str, tokens: int | None) -> None:
        """A whole turn: take input (what it is sent then is pasted), read, act, end."""
        self.read(agent)
        home = self.fleet.homes[agent.home]
        while home.queue and agent.live:
            self.fleet.perform_next(agent.home)
        self.read(agent)
        if agent.live:
            self.do(agent, act)
        if agent.live:
            self.end_turn(agent, tokens)

    def end_turn(self, agent: Agent, tokens: int | None) -> None:
        """The agent's turn ends: its hooks say it waits, its transcript closes the turn."""
        at = self.fleet.instant()
        agent.activity = Activity.WAITING
        self.feed(agent.home, AgentStateSeen(at=at, session=agent.session, activity=agent.activity))
        self.feed(agent.home, TurnEnded(at=at, session=agent.session, usage=usage(tokens)))

    def do(self, agent: Agent, act: str) -> None:  # noqa: C901, PLR0912 (one arm per act)
        """The agent does ``act`` in its place: ``gate`` is what its step's gate asks for."""
        home = self.fleet.homes[agent.home]
        place = home.place
        if place is None:
            return
        at = self.fleet.instant()
        if act == "gate":
            act = self.honest(agent, place)
        tree = self.fleet.repo.worktrees.get(place.path)
        board = (place.board, agent.stage)
        match act:
            case "commit":
                if tree is not None and place.branch in self.fleet.repo.refs:
                    self.fleet.repo.commit(place.branch)
            case "merge":
                # A merge step's agent (flume resolve --agent) merges the lanes, then commits.
                for lane in place.merging:
                    run = place.lanes.get(lane)
                    other = self.fleet.repo.refs.get(run.branch) if run is not None else None
                    if other is not None and place.branch in self.fleet.repo.refs:
                        if tree is not None:
                            tree.merging = None
                        if not self.fleet.repo.holds(self.fleet.repo.refs[place.branch], other):
                            self.fleet.repo.merge(place.branch, other)
                if place.branch in self.fleet.repo.refs:
                    self.fleet.repo.commit(place.branch)
            case "verdict-done" | "verdict-revise" | "verdict-blocked":
                result = act.removeprefix("verdict-")
                self.fleet.verdicts[board] = (result, f"it says {result}", "")
            case "verdict-malformed":
                self.fleet.verdicts[board] = ("", "", "not JSON: line 1")
            case "artifact":
                if tree is not None:
                    tree.files.add("out.md")
            case "report":
                self.feed(
                    agent.home,
                    ReportSeen(at=at, path="report.md", modified_at=Instant(self.fleet.now)),
                )
            case "ask":
                self.feed(agent.home, AskSaid(at=at, question="Which?", session=agent.session))
            case "progress":
                self.feed(agent.home, ProgressSaid(at=at, words="half way", session=agent.session))
            case "spawn":
                self.feed(agent.home, SpawnSaid(at=at, goal="build a part", session=agent.session))
            case "answer":
                self.answer_children(agent, place)
            case _:
                pass

    def honest(self, agent: Agent, place: Place) -> str:  # noqa: PLR0911 (one arm per gate)
        """What an honest agent does for its step's gate."""
        if place.stage.resolving:
            return "merge"
        if agent.stage != place.stage.name:
            return "nothing"
        gate = current_step(place).deliverable
        match gate:
            case Commit():
                return "commit"
            case Verdict():
                return "verdict-done"
            case Artifact():
                return "artifact"
            case ReportFile():
                return "report"
            case _:
                return "nothing"

    def answer_children(self, agent: Agent, run: Place) -> None:
        """A lead answers each open question of its children, from its own session."""
        for lane in children(run):
            home = self.fleet.homes.get(lane.place)
            if home is None or home.place is None:
                continue
            asked = open_question(home.place)
            if asked is None or asked.answer is not None:
                continue
            lead, _ = answerer(run, agent.session)
            self.feed(
                lane.place,
                AnswerGiven(
                    at=self.fleet.instant(), question=asked.id, text="the first", by_lead=lead
                ),
            )

    @rule(index=st.integers(0, 50))
    def agent_hangs(self, index: int) -> None:
        """An agent works mid-turn and says nothing more (its hooks said it works)."""
        agents = self.live()
        if agents:
            agent = agents[index % len(agents)]
            agent.activity = Activity.WORKING
            self.feed(
                agent.home,
                AgentStateSeen(
                    at=self.fleet.instant(), session=agent.session, activity=Activity.WORKING
                ),
            )

    @rule(index=st.integers(0, 50), status=st.none() | st.just(1))
    def agent_exits(self, index: int, status: int | None) -> None:
        """An agent's process dies (tmux killed, a crash)."""
        agents = self.live()
        if agents:
            agent = agents[index % len(agents)]
            agent.live = False
            agent.activity = Activity.STOPPED
            self.feed(
                agent.home,
                AgentExited(at=self.fleet.instant(), session=agent.session, status=status),
            )

    @rule(index=st.integers(0, 50))
    def agent_will_not_end(self, index: int) -> None:
        """AGENT-END-FAILED-NAMED: an agent's pane will not close; each end asked of it fails.

        Until it exits of itself (``agent_exits``), it goes on working where it is.
        """
        agents = self.live()
        if agents:
            agents[index % len(agents)].stubborn = True

    @rule(index=st.integers(0, 50))
    def agent_needs(self, index: int) -> None:
        """An agent stops short: it runs ``flume needs``."""
        agents = self.live()
        if agents:
            agent = agents[index % len(agents)]
            self.feed(
                agent.home, NeedsSaid(at=self.fleet.instant(), words="a key", session=agent.session)
            )

    # --- people ----------------------------------------------------------------------------------

    @rule(
        index=st.integers(0, 50),
        command=st.sampled_from(
            [
                "approve",
                "resume",
                "raise",
                "retry",
                "resolve-hand",
                "resolve-agent",
                "resolve-without",
                "answer",
                "drop",
                "proceed",
                "stop",
                "tell",
            ]
        ),
    )
    def person_commands(self, index: int, command: str) -> None:
        """A person gives a command to any place at any moment, the wrong ones included."""
        name = self.pick(index, self.names())
        if name is None:
            return
        self.feed(name, self.command(name, command))

    def command(self, name: PlaceName, command: str) -> Observation:
        """The observation a person's ``command`` journals, as the shell builds it."""
        at = self.fleet.instant()
        place = self.fleet.homes[name].place
        simple: dict[str, Observation] = {
            "approve": ApproveAsked(at=at),
            "resume": ResumeAsked(at=at),
            "raise": BudgetRaised(at=at, turns=3, tokens=40, retries=1, turns_per_attempt=2),
            "retry": RetryAsked(at=at, words="try again"),
            "resolve-agent": ResolveAsked(at=at, agent=True),
            "drop": DropAsked(at=at),
            "proceed": ProceedAsked(at=at),
            "stop": StopAsked(at=at),
            "tell": Told(at=at, text="mind the README"),
        }
        if command in simple:
            return simple[command]
        if command == "resolve-hand":
            return self.by_hand(place, at)
        if command == "resolve-without":
            ended = [
                run.lane
                for run in (place.lanes.values() if place is not None else ())
                if run.state is LaneState.ENDED
            ]
            return ResolveAsked(at=at, without=ended[0] if ended else "")
        return self.answer(place, at)

    def answer(self, place: Place | None, at: Instant) -> AnswerGiven:
        """``flume answer``: the place's open question, from the caller (no lead's living)."""
        asked = open_question(place) if place is not None else None
        if place is None or asked is None:
            return AnswerGiven(at=at, question="q1", text="yes")
        no_lead = False
        if place.launch.led and place.launch.parent in self.fleet.homes:
            run = self.fleet.homes[place.launch.parent].place
            no_lead = answerer(run, None)[1]
        return AnswerGiven(at=at, question=asked.id, text="yes", no_lead=no_lead)

    def by_hand(self, place: Place | None, at: Instant) -> ResolveAsked:
        """``flume resolve --by-hand``: what the shell found in the run's worktree goes with it."""
        if place is None:
            return ResolveAsked(at=at)
        under_way, missing = self.fleet.resolve_facts(place)
        return ResolveAsked(at=at, under_way=under_way, missing=pmap(missing))

    @rule(index=st.integers(0, 50))
    def stale_lock(self, index: int) -> None:
        """A git killed mid-command leaves ``index.lock`` in a run's worktree (or a lane's)."""
        runs = [name for name in self.names() if not self.place(name).launch.parent]
        name = self.pick(index, runs if index % 3 else self.names())
        if name is None:
            return
        tree = self.fleet.repo.worktrees.get(self.place(name).path)
        if tree is not None:
            tree.lock = True

    @rule(index=st.integers(0, 50))
    def person_does_as_advised(self, index: int) -> None:
        """A person does what a paused place's words and git advise, then its named command.

        The lock removed, a merge git left under way concluded with ``git commit`` (the issue's
        "doing what git and flume both advise"), a deleted branch restored as named; then the
        first way out the place's status names, as the shell builds it. A place stopped short
        (its worktree removed, say) names its way out in its words: ``flume retry``.
        """
        advised = [
            name
            for name in self.names()
            if status(self.place(name)).paused is not None
            or status(self.place(name)).phase is PhaseWord.SHORT
        ]
        name = self.pick(index, advised)
        if name is None:
            return
        self.person_removes_the_lock()
        self.person_commits_the_merge()
        shown = status(self.place(name))
        said = f"{shown.paused_words or ''} {shown.resolve or ''} {shown.needs or ''}"
        for branch, head in re.findall(r"update-ref refs/heads/(\S+) (\w+)", said):
            if branch not in self.fleet.repo.refs and head in self.fleet.repo.commits:
                self.fleet.repo.refs[BranchName(branch)] = Sha(head)
        ways = self.ways_out(name, shown.resolve or shown.needs or "")
        if ways:
            where, seen = ways[0]
            self.feed(where, seen)

    @rule()
    def person_removes_the_lock(self) -> None:
        """A person removes a stale lock, as git's words say."""
        for tree in self.fleet.repo.worktrees.values():
            tree.lock = False

    @rule()
    def person_commits_the_merge(self) -> None:
        """A person concludes a merge git left under way with ``git commit``, as git advises.

        The index is what git could write: under a lock it wrote nothing, and the merge commit's
        tree is its first parent's.
        """
        for tree in self.fleet.repo.worktrees.values():
            if tree.merging is not None and not tree.lock and tree.branch in self.fleet.repo.refs:
                head = self.fleet.repo.refs[tree.branch]
                self.fleet.repo.merge(
                    tree.branch, tree.merging, tree=self.fleet.repo.commits[head].files
                )
                tree.merging = None

    @rule(index=st.integers(0, 50), keep_theirs=st.booleans())
    def person_merges_by_hand(self, index: int, keep_theirs: bool) -> None:
        """A person merges a run's lanes by hand, keeping each lane's changes or (wrongly) not.

        Keeping them, a lane in the history whose changes a merge left out is restored too.
        """
        runs = [name for name in self.names() if self.place(name).merging]
        name = self.pick(index, runs)
        if name is None:
            return
        place = self.place(name)
        repo = self.fleet.repo
        tree = repo.worktrees.get(place.path)
        if tree is None or tree.lock or place.branch not in repo.refs:
            return
        tree.merging = None
        for lane in place.merging:
            run = place.lanes.get(lane)
            other = repo.refs.get(run.branch) if run is not None else None
            if other is None:
                continue
            head = repo.refs[place.branch]
            ours = repo.commits[head].files
            if not repo.holds(head, other):
                repo.merge(place.branch, other, tree=None if keep_theirs else ours)
            elif keep_theirs and self.fleet.lacking(head, place.entry, other):
                # A merge concluded without the lane's work: its changes restored, committed.
                restored = repo.new((head,), ours | repo.commits[other].files)
                repo.refs[place.branch] = restored
                repo.seen.add(restored)

    @rule(index=st.integers(0, 50), worktree=st.booleans(), run=st.booleans())
    def person_deletes_a_lane(self, index: int, worktree: bool, run: bool) -> None:
        """A person deletes a lane's branch (``git branch -D``) or its worktree folder.

        Or (``run``) the run's own, its lanes at work: a retry adds its worktree again, and a
        branch gone is restored as named.
        """
        lanes = [name for name in self.names() if bool(self.place(name).launch.parent) != run]
        name = self.pick(index, lanes)
        if name is None:
            return
        place = self.place(name)
        repo = self.fleet.repo
        if worktree:
            repo.worktrees.pop(place.path, None)
        elif place.branch in repo.refs:
            head = repo.refs.pop(place.branch)
            self.fleet.deleted_by_hand.append((place.branch, head, self.fleet.ticks))

    @rule(conflicts=st.booleans())
    def lanes_conflict(self, conflicts: bool) -> None:
        """Lanes' changes conflict with the run's, or stop conflicting (a person mended them)."""
        self.fleet.conflicting = (
            {place.branch for place in self.fleet.places() if place.launch.parent}
            if conflicts
            else set()
        )

    @rule(up=st.booleans(), pr_ok=st.booleans())
    def remote_answers(self, up: bool, pr_ok: bool) -> None:
        """Finalize's remote answers or not; the PR command succeeds or not."""
        self.fleet.remote_up = up
        self.fleet.pr_ok = pr_ok

    # --- the promises ----------------------------------------------------------------------------

    def active(self) -> list[tuple[PlaceName, Place]]:
        """Every place not terminal."""
        return [
            (name, place)
            for name in self.names()
            if (place := self.fleet.homes[name].place) is not None and place.life not in TERMINAL
        ]

    @invariant()
    def no_silent_wait(self) -> None:
        """WF-NO-SILENT-WAIT: each place not terminal waits on a deadline it holds, or on a person.

        Something it asked for is in flight (the shell will do it); or time alone moves it (a
        deadline the core holds: quiet, confirm, stall, tests, ready); or it waits on a person,
        named (paused with a command, stopped short, waiting on the caller's word); or it is a
        run waiting on a lane or child that is itself not silent, or whose end is due to be told.
        """
        for name, place in self.active():
            assert not self.silent(name, place), self.why(name, place)

    @invariant()
    def due_no_later_than_time_moves_it(self) -> None:
        """The next deadline's promise over generated workflows: a place ticked only when due.

        The deadline the core names is an instant a ``Tick`` changes the place, and no ``Tick``
        before it does: none just before it, nor a window's length after now (quiet, confirm,
        ready, stall, twice the stall); with none named, no ``Tick`` ever changes it.
        """
        for _name, place in self.active():
            due = next_deadline(place)
            windows = (S.quiet_seconds, S.confirm_seconds, S.ready_seconds, S.stall_seconds)
            tried = [place.now + w + 1 for w in (*windows, 2 * S.stall_seconds, FAR)]
            if due is None:
                assert not any(_ticks_change(place, at) for at in tried), place.stage
                continue
            assert _ticks_change(place, due), (due, place.stage)
            early = [at for at in (*tried, math.nextafter(due, -math.inf)) if place.now <= at < due]
            assert not any(_ticks_change(place, at) for at in early), (due, place.stage)

    def silent(self, name: PlaceName, place: Place) -> bool:
        """The place waits on nothing that will move it and names nothing to a person."""
        if self.fleet.homes[name].queue:
            return False
        shown = status(place)
        if shown.paused is not None or shown.phase in {PhaseWord.SHORT, PhaseWord.WAITS_WORD}:
            return False
        later = step(S, place, Tick(at=Instant(place.now + FAR)))
        if later.actions or attrs.evolve(later.place, now=place.now) != place:
            return False
        return not self.waits_on_lanes(place)

    def waits_on_lanes(self, run: Place) -> bool:
        """The run stands at a block whose lanes or children are still moving, or are to be told."""
        if parallel_of(run) is None and not children(run):
            return False
        lanes = {each.launch.place: each for each in self.fleet.places() if each.launch.parent}
        now = Instant(run.now)
        if lanes_ended(run, lanes, now) or children_news(run, lanes, now):
            return True
        for lane in run.lanes.values():
            if lane.state is not LaneState.RUNNING:
                continue
            home = self.fleet.homes.get(lane.place)
            if home is None:
                # Its launch was asked for: in flight (the run's queue), or lost.
                return False
            if home.place is not None and (home.place.life not in TERMINAL or home.queue):
                return True
            if self.fleet.live_agents(lane.place):
                return True
        return False

    def why(self, name: PlaceName, place: Place) -> str:
        """A silent wait, in words, for the failure's message."""
        agents = [
            (a.session, a.activity.value, a.live)
            for a in self.fleet.agents.values()
            if a.home == name
        ]
        return (
            f"{name} waits silently at {place.stage.key} (attempt {place.stage.attempt}): "
            f"{place.stage.phase}, agent {place.agent}, world agents {agents}, "
            f"lanes {dict(place.lanes)}"
        )

    @invariant()
    def every_pause_has_a_way_out(self) -> None:
        """WF-PAUSE-HAS-A-WAY-OUT: a pause names its cause and a command the core accepts.

        The command named (the observation it journals, on the place it names) is taken, and
        leads out of that pause; a pause whose only way out named is drop, or is refused, has none.
        """
        for name, place in self.active():
            shown = status(place)
            if shown.paused is None:
                continue
            assert shown.resolve, (name, shown.paused)
            ways = self.ways_out(name, shown.resolve)
            assert ways, f"{name} paused ({shown.paused}) names no way out: {shown.resolve}"
            assert any(self.leads_out(where, seen) for where, seen in ways), (
                f"{name} paused ({shown.paused}): {shown.paused_words}; no way out named "
                f"({shown.resolve}) is taken and leads out"
            )

    def ways_out(self, name: PlaceName, said: str) -> list[tuple[PlaceName, Observation]]:
        """The commands ``said`` names, but drop, as (the place each is for, its observation).

        Each is built as the shell builds the command's observation; a raise by far more than
        any budget, a resolve by hand with what the shell finds in the worktree now.
        """
        at = self.fleet.instant()
        more = 10**6
        found: list[tuple[PlaceName, Observation]] = []
        for verb, target, rest in re.findall(
            r"flume (\w+) ([\w.+@-]+)((?: --?[\w-]+(?: [^\s()]+)?)*)", said
        ):
            where = PlaceName(target) if target in self.fleet.homes else name
            there = self.fleet.homes[where].place
            step_named = re.search(r"--step ([\w.+@/-]+)", rest)
            without = re.search(r"--without ([\w.-]+)", rest)
            built: dict[str, Observation | None] = {
                "approve": ApproveAsked(at=at),
                "resume": ResumeAsked(at=at),
                # The budget the command names, alone (a kind's unset budget is refused).
                "raise": BudgetRaised(
                    at=at,
                    **{
                        field: more
                        for field, option in RAISE_OPTIONS.items()
                        if re.search(rf"{option} \+N", rest)
                    },
                ),
                "resolve": ResolveAsked(at=at, agent=True)
                if "--agent" in rest
                else ResolveAsked(at=at, without=without.group(1))
                if without
                else self.by_hand(there, at),
                "retry": RetryAsked(
                    at=at, words="go", step=step_named.group(1) if step_named else ""
                ),
                "answer": self.answer(there, at)
                if there is not None and open_question(there) is not None
                else None,
                # A child's pause shows on its run: the way out is the child's own.
                "status": Tick(at=at) if there is not None and where != name else None,
            }
            seen = built.get(verb)
            if seen is not None:
                found.append((where, seen))
        return found

    def leads_out(self, where: PlaceName, seen: Observation) -> bool:  # noqa: PLR0911 (each way)
        """``seen`` is taken by place ``where`` and moves it out of its pause."""
        target = self.fleet.homes[where].place
        if target is None:
            return False
        if isinstance(seen, Tick):
            # A child named by its run: it is itself paused or stopped short, named (its own
            # way out is checked on it); or it went on, and the news is due to its run.
            shown = status(target)
            if shown.paused is not None or shown.phase is PhaseWord.SHORT:
                return True
            if target.life in TERMINAL:
                # It ended (dropped, finished) since: its end is its run's news, relayed once
                # its agent is seen gone.
                return True
            run = self.fleet.homes[self.fleet.root].place
            lanes = {each.launch.place: each for each in self.fleet.places() if each.launch.parent}
            return run is not None and any(
                news.lane == target.launch.lane
                for news in children_news(run, lanes, Instant(self.fleet.now))
            )
        try:
            after = step(S, target, seen).place
        except UsageError:
            return False
        if isinstance(seen, AnswerGiven):
            return open_question(after) is None or open_question(after) != open_question(target)
        before = target.stage.phase
        phase = after.stage.phase
        return not (
            isinstance(phase, Paused)
            and isinstance(before, Paused)
            and phase.cause is before.cause
            and after.stage.attempt == target.stage.attempt
            and after.stage.key == target.stage.key
        )

    @invariant()
    def no_lost_commit(self) -> None:
        """WF-NO-LOST-COMMIT: every commit seen on a place's branch stays reachable from a branch.

        Unless a person deleted the branch by hand: one flume kept and named (tidy's word), or
        one whose deletion flume, once it looked, named with the exact ``git update-ref`` that
        restores it (a finished or dropped place's at once; one tidy is wanted at, by tidy's
        look, which names what it finds deleted).
        """
        repo = self.fleet.repo
        lost = repo.seen - repo.reachable()
        if not lost:
            return
        said = " ".join(report.text for _, report in self.fleet.reports())
        for place in self.fleet.places():
            shown = status(place)
            said += f" {shown.needs or ''} {shown.paused_words or ''} {shown.resolve or ''}"
        tidying = {
            place.branch
            for place in self.fleet.places()
            if place.life in {Life.FINISHED, Life.DROPPED}
            and isinstance(place.tidy, TidyWanted | TidyGathering)
        }
        for branch, head, tick in self.fleet.deleted_by_hand:
            if branch in repo.refs:
                continue
            gone = repo.ancestors(head)
            if branch in tidying:
                # Tidy's look, wanted and in flight, names a branch a person deleted.
                lost -= gone
                continue
            # Named at the head flume last saw: what the agent committed after it, never seen
            # by flume, went with the person's deletion.
            # The supervisor reports one loss of a place a look: a worktree and its branch, gone
            # together, take two.
            if (
                self.fleet.ticks - tick < 2
                or f"update-ref refs/heads/{branch} " in said
                or f"{branch}: {branch} holds" in said
            ):
                lost -= gone
        assert not lost, f"commits no branch holds: {sorted(lost)}"

    @invariant()
    def a_person_s_word_is_answered_truly(self) -> None:
        """The reply to a person's resume or raise says what its decision does, truly.

        Its run at a parallel: "the lanes ... start" only when no merge is asked (lanes ended
        whose merge a lock refused are merged again, never started), "merges ... again" only
        when one is.
        """
        for each in self.fleet.steps:
            if not isinstance(each.seen, ResumeAsked | BudgetRaised) or each.before is None:
                continue
            said = went_on(each.before, each.decision.place, "resumed")
            merging = any(isinstance(action, MergeLanes) for action in each.decision.actions)
            if said.endswith(" start") and "the lanes of parallel" in said:
                assert not merging, said
            if said.endswith(" again") and "merges the lanes of parallel" in said:
                assert merging, said

    @invariant()
    def finished_holds_its_work(self) -> None:
        """WF-FINISHED-HOLDS-ITS-WORK: a run holds each lane it was told merged, history and tree.

        Each merged lane's (and child's) head is an ancestor of the run's head, and the run's
        tree holds every file the lane added since the block's entry. Its merge is asked only
        once no lane of the block runs or waits: a run never goes past a block whose lanes work.
        """
        repo = self.fleet.repo
        for each in self.fleet.steps:
            if any(isinstance(action, MergeLanes) for action in each.decision.actions):
                # A block's merge is asked only once none of its lanes runs or waits.
                at_work = [
                    run.lane
                    for run in each.decision.place.lanes.values()
                    if run.state in {LaneState.WAITING, LaneState.RUNNING}
                ]
                assert not at_work, f"{each.home} merges with lanes at work: {at_work}"
        for merged in self.fleet.merged:
            run = self.place(merged.run)
            head = repo.refs.get(run.branch)
            if head is None:
                continue
            assert repo.holds(head, merged.head), (merged, head)
            missing = merged.files - repo.commits[head].files
            assert not missing, (
                f"{merged.run}'s head {head} lacks lane {merged.lane}'s {sorted(missing)}"
            )

    @invariant()
    def told_once_before_a_gate_pause(self) -> None:
        """WF-GATE-REPROMPT-ONCE: a gate that did not pass is told once, then the run pauses.

        A step paused ``gate-blocked`` for a gate that did not pass had its agent told why,
        once, that attempt (a verdict that says ``blocked`` pauses at once); none is told twice.
        """
        told: Counter[tuple[PlaceName, str]] = Counter()
        for each in self.fleet.steps:
            for action in each.decision.actions:
                if getattr(action, "event", None) is Event.GATE_FAILED:
                    told[each.home, action.text.split(" did not pass")[0]] += 1  # type: ignore[union-attr]
            before, after = each.before, each.decision.place
            phase = after.stage.phase
            if (
                before is None
                or not isinstance(phase, Paused)
                or phase.cause is not PauseCause.GATE_BLOCKED
                or isinstance(before.stage.phase, Paused)
            ):
                continue
            blocked = isinstance(each.seen, GateRead) and each.seen.result == "blocked"
            assert blocked or before.stage.reprompted, (each.home, before.stage.key, each.seen)
        assert all(count == 1 for count in told.values()), told

    @invariant()
    def nothing_starts_over_a_budget(self) -> None:
        """WF-BUDGET-PAUSES: over a budget no agent starts, nothing is sent, no lane is launched.

        Checked over every step of every place: where the place before it, or after it, had
        spent a budget, it decided no start, prompt, tell or lane, unless a raise lifted it.
        """
        for each in self.fleet.steps:
            if each.before is None or isinstance(each.seen, BudgetRaised):
                continue
            for action in each.decision.actions:
                if not isinstance(action, StartAgent | SendPrompt | SendTell | LaunchLane):
                    continue
                for place in (each.before, each.decision.place):
                    # A start or a lane is a new attempt: the attempt's turns are its own.
                    turns = 0 if isinstance(action, StartAgent | LaunchLane) else place.stage.turns
                    over = spent_budget(place.budgets, place.spent, turns, place.now)
                    assert over is None, (each.home, over, action, each.seen)

    @invariant()
    def a_deliverable_is_judged_at_the_turn_s_end(self) -> None:
        """WF-DELIVERABLE-AT-TURN-END: a workflow step's turn that ended is judged, never left.

        A turn of the stage's live agent that ends while it works toward a gate judged there
        (and no question of its, no join, no re-prompt under way holds the gate) leaves the
        stage judging, paused or ended: never working, as if the turn had not ended.
        """
        for each in self.fleet.steps:
            before = each.before
            if (
                not isinstance(each.seen, TurnEnded)
                or before is None
                or before.life is not Life.ACTIVE
                or before.agent is None
                or before.agent.ending
                or each.seen.session != before.agent.session
                or not isinstance(before.stage.phase, Working)
                or not judged_here(before)
                or deferred(before)
                or before.stage.retold is not None
            ):
                continue
            after = each.decision.place
            assert after.stage.key != before.stage.key or not isinstance(
                after.stage.phase, Working
            ), (each.home, before.stage.key)

    @invariant()
    def an_exited_agent_is_tried_again_while_retries_last(self) -> None:
        """WF-RETRY-EXITED: an attempt whose agent exited is tried again, then stops short.

        Its agent exited on its own (not ended) while it worked toward its gate (its turn's end
        not being judged): a fresh attempt of the same step while the step's retries last (the
        run's retries budget, else 2), then a stop short naming the exit; never silence.
        """
        for each in self.fleet.steps:
            before, seen = each.before, each.seen
            if (
                not isinstance(seen, AgentExited)
                or before is None
                or before.life is not Life.ACTIVE
                or before.agent is None
                or before.agent.ending
                or before.agent.session != seen.session
                or not isinstance(before.stage.phase, AwaitingInput | Delivering | Working)
                or before.worktree_gone
                or before.branch_gone
            ):
                continue
            after = each.decision.place.stage
            most = before.budgets.retries if before.budgets.retries is not None else 2
            if before.stage.retried < most:
                assert (after.key, after.attempt) == (before.stage.key, before.stage.attempt + 1)
                assert after.retried == before.stage.retried + 1
            else:
                assert isinstance(after.phase, Short), after.phase

    @invariant()
    def a_delivered_attempt_is_never_redone(self) -> None:
        """WF-DELIVERED-PASSES: an attempt's commit, once seen, passes its gate; never redone.

        Before or after a pause: no step gated on a commit pauses for a new attempt, or is
        queued again, while the commit its attempt made is seen on its branch. A parallel
        block's stage is no step's attempt: its pause's way on merges its lanes again (a
        person's merge commit on the run's branch is no deliverable of a step).
        """
        for name, place in self.active():
            phase = place.stage.phase
            if (
                not isinstance(phase, Paused)
                or not phase.again
                or place.stage.resolving
                or parallel_of(place) is not None
            ):
                continue
            if not isinstance(current_step(place).deliverable, Commit):
                continue
            as_working = attrs.evolve(place.stage, phase=Working(session=SessionId("-")))
            assert not has_deliverable(attrs.evolve(place, stage=as_working)), (
                f"{name} paused ({phase.cause.value}) for a new attempt of {place.stage.key}, "
                "whose commit is seen"
            )

    @invariant()
    def one_agent_a_place(self) -> None:
        """One live agent a place, in every place at once: never two in one worktree."""
        counts = Counter(agent.home for agent in self.fleet.agents.values() if agent.live)
        assert all(count == 1 for count in counts.values()), counts


TestNoSilentWait = pytest.mark.hypothesis(NoSilentWaitMachine.TestCase)
