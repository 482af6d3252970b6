"""An orchestrate block's edges: each refusal, each child's news, the joins, restarts, the kind.

Example tests over the FakeWorld (the run) and the pure functions the supervisor calls with
the children's places (:func:`flume.core.workflow.orchestrate.children_news`).
"""

from __future__ import annotations

import attrs
import pytest
from pyrsistent import pset, pvector

from flume.core.actions import Event, LaunchLane, MergeLanes, NotifyLane, OrderLane, Report
from flume.core.choices import AgentName
from flume.core.delivery import render_prompt, workflow_fields
from flume.core.errors import Problem, UsageError
from flume.core.ids import BlockName, Instant, KindName, SessionId, Sha, StageName
from flume.core.kinds import (
    Budgets,
    Commit,
    Join,
    Kind,
    Merge,
    Orchestrate,
    Sequence,
    Step,
    Verdict,
    check_kind,
    child_kind,
    kind_flaws,
    steps,
    with_prompts,
)
from flume.core.observations import (
    Activity,
    AnswerGiven,
    AskSaid,
    ChildNews,
    ComposeSaid,
    LaneEnded,
    LanesMerged,
    Launched,
    Notified,
    NotifySaid,
    ResolveAsked,
    ResumeAsked,
    SpawnSaid,
)
from flume.core.place import (
    Agent,
    Attempt,
    JoinStage,
    Life,
    PauseCause,
    Paused,
    Place,
    Question,
    Short,
    ShortCause,
    Working,
    evolve,
    leading,
)
from flume.core.settings import Settings
from flume.core.status import status
from flume.core.step import pending, replay, step
from flume.core.workflow.caps import worst_case
from flume.core.workflow.lanes import children, lane_for
from flume.core.workflow.orchestrate import (
    MOST_WORDS,
    PAUSED,
    answerer,
    children_news,
    launch_child,
    news_of,
    spread_answerer,
    spread_child,
)
from flume.core.workflow.tree import position_of
from tests.model.test_orchestrate import crew, end_child, spawn, world_of
from tests.model.world import FakeWorld

S = Settings()

LEAD = Step(
    name=StageName("lead"),
    prompt="Lead; write $verdict.",
    deliverable=Verdict(),
    may=pset(["spawn", "notify"]),
)
CODER = Step(name=StageName("coder"), prompt="Build: $goal.", deliverable=Commit())
PLAN = Step(
    name=StageName("plan"), prompt="Plan.", deliverable=Commit(), may=pset(["progress", "ask"])
)


def kind_of(block: Orchestrate, *before: Step, budgets: Budgets | None = None) -> Kind:
    """A kind of ``before``'s steps, then ``block``."""
    return Kind(
        name=KindName("crew"),
        prefix="crew",
        body=Sequence(blocks=pvector([*before, block])),
        budgets=budgets or Budgets(),
    )


def lead_session(world: FakeWorld) -> SessionId:
    """The live lead's session."""
    agent = world.live_agent()
    assert agent is not None
    return agent.session


def refusal(world: FakeWorld, seen: object) -> str:
    """What the rules said refusing ``seen``, which they must refuse."""
    refused = world.feed(seen)
    assert refused is not None
    return str(refused)


def test_spawn_and_notify_are_a_running_lead_s_alone() -> None:
    """Not a lead, not running, an empty goal, after the join: each refused, exit 1."""
    block = Orchestrate(name=BlockName("build"), lead=LEAD, template=CODER, max=2)
    world = FakeWorld(settings=S, kind=kind_of(block, PLAN))
    assert world.launch() is None
    assert world.deliver()
    seen = SpawnSaid(at=world.instant(), goal="a", session=lead_session(world))
    assert "step plan of crew--x is no orchestrate block's lead" in refusal(world, seen)
    notify = NotifySaid(at=world.instant(), to="all", text="hi", session=lead_session(world))
    assert "is no orchestrate block's lead" in refusal(world, notify)

    waits = FakeWorld(settings=S, kind=kind_of(block), waits=frozenset({StageName("lead")}))
    assert waits.launch() is None
    assert "no lead of crew--x is running" in refusal(
        waits, SpawnSaid(at=waits.instant(), goal="a")
    )

    world = world_of(crew(most=1))
    assert "the goal is empty" in refusal(
        world, SpawnSaid(at=world.instant(), goal="  ", session=lead_session(world))
    )
    assert "the words are empty" in refusal(
        world, NotifySaid(at=world.instant(), to="all", text=" ", session=lead_session(world))
    )
    assert spawn(world) is None
    end_child(world, "coder-1", finished=False)
    said = NotifySaid(at=world.instant(), to="coder-1", text="hi", session=lead_session(world))
    assert "no child of build named coder-1 is running or waiting" in refusal(world, said)
    world.end_turn()
    for _ in range(3):
        if world.place is not None and world.place.join is JoinStage.TOLD:
            break
        world.deliver()
        world.end_turn()
    place = world.place
    assert place is not None
    assert place.join is JoinStage.TOLD
    assert world.merges == []  # the one child ended unfinished: nothing to merge
    late = SpawnSaid(at=world.instant(), goal="b", session=lead_session(world))
    assert "every child of build is terminal and joined" in refusal(world, late)


def test_a_spent_budget_refuses_a_spawn_and_holds_waiting_children() -> None:
    """WF-CHILDREN-CAP with a budget: a child's spend can spend the run's; none starts over it."""
    block = Orchestrate(name=BlockName("build"), lead=LEAD, template=CODER, max=3, cap=1)
    world = world_of(kind_of(block, budgets=Budgets(tokens=1000)))
    assert spawn(world, "a") is None
    assert spawn(world, "b") is None
    found = world.lanes["coder-1"]
    head = world.git.commit(found.branch, world.now)
    found.life = "finished"
    ended = LaneEnded(at=world.instant(), lane="coder-1", finished=True, head=head, tokens=5000)
    assert world.feed(ended) is None
    launched = [a.lane for a in world.actions if isinstance(a, LaunchLane)]
    assert launched == ["coder-1"]
    place = world.place
    assert place is not None
    assert isinstance(place.stage.phase, Paused)  # WF-BUDGET-PAUSES: the lead too
    # Spent while the lead still works (its turn's end not yet counted): a spawn is refused.
    lead = world_of(kind_of(block, budgets=Budgets(tokens=1000)))
    assert lead.place is not None
    spent = evolve(lead.place, spent=attrs.evolve(lead.place.spent, tokens=5000))
    agent = lead.live_agent()
    assert agent is not None
    with pytest.raises(UsageError, match="the run's budget tokens is spent"):
        step(S, spent, SpawnSaid(at=lead.instant(), goal="c", session=agent.session))


def test_a_notified_child_is_told_when_live_and_reads_the_words_when_not() -> None:
    """``Notified`` in a child: a tell to its live agent; before one, its prompt's last words."""
    world = FakeWorld(settings=S, kind=crew(), waits=frozenset({StageName("lead")}))
    assert world.launch() is None
    assert world.feed(Notified(at=world.instant(), text="Your lead says:\n\nuse tabs")) is None
    place = world.place
    assert place is not None
    assert list(place.notes) == ["Your lead says:\n\nuse tabs"]
    assert "use tabs" in render_prompt(place)
    live = world_of(crew())
    assert live.feed(Notified(at=live.instant(), text="use spaces")) is None
    assert live.place is not None
    assert [tell.text for tell in live.place.held] == ["use spaces"]
    finished = evolve(live.place, life=Life.FINISHED)
    after = step(S, finished, Notified(at=live.instant(), text="late"))
    assert after.place.held == finished.held
    assert after.place.notes == finished.notes


def test_news_with_no_lead_live_is_kept_and_repeats_or_strangers_are_passed_over() -> None:
    """News of an unknown child, or again, changes nothing; with no lead live it is not told."""
    world = world_of(crew())
    assert spawn(world) is None
    before = world.place
    assert world.feed(ChildNews(at=world.instant(), lane="coder-9", id="started", text="x")) is None
    assert world.place == evolve(before, now=world.place.now) if world.place else False
    news = ChildNews(at=world.instant(), lane="coder-1", id="started", text="started")
    assert world.feed(news) is None
    held = world.place.held if world.place else None
    assert world.feed(news) is None
    assert world.place is not None
    assert world.place.held == held
    gone = evolve(world.place, agent=None)
    later = ChildNews(at=world.instant(), lane="coder-1", id="progress:x", text="progress: x")
    after = step(S, gone, later).place
    assert after.held == gone.held
    assert after.lanes["coder-1"].note == "progress: x"
    stray = LaneEnded(at=world.instant(), lane="coder-9", finished=True)
    assert step(S, world.place, stray).place.lanes == world.place.lanes


def test_pick_merges_the_first_to_finish_and_a_lead_gone_is_told_in_its_next_prompt() -> None:
    """``merge = "pick"``; the join met while no lead lives: its next attempt's words say it."""
    block = Orchestrate(name=BlockName("build"), lead=LEAD, template=CODER, max=2, merge=Merge.PICK)
    world = world_of(kind_of(block))
    assert spawn(world, "a") is None
    assert spawn(world, "b") is None
    world.end_turn()
    end_child(world, "coder-2", finished=True)
    end_child(world, "coder-1", finished=True)
    for _ in range(3):
        world.deliver()
        world.end_turn()
    assert world.merges == [("coder-2",)]
    place = world.place
    assert place is not None
    # The lead's stage paused before its join was told: the join goes to its next prompt.
    merging = evolve(place, join=JoinStage.MERGING, agent=None, held=pvector(), sending=None)
    merged = step(S, merging, _merged(place)).place
    assert merged.join is JoinStage.TOLD
    assert merged.join_tell is None
    assert "All children of build are terminal" in merged.stage.words


def _merged(place: Place) -> LanesMerged:
    assert place.head is not None
    return LanesMerged(at=place.now, head=place.head)


def _merge_paused(world: FakeWorld, cause: PauseCause) -> Place:
    """The lead spawns one child, which finishes; its merge at the lead's turn's end pauses."""
    assert spawn(world) is None
    world.end_turn()
    end_child(world, "coder-1", finished=True)
    for _ in range(2):
        world.deliver()
        world.end_turn()
    place = world.place
    assert place is not None
    assert isinstance(place.stage.phase, Paused)
    assert place.stage.phase.cause is cause
    return place


def test_a_conflict_pauses_and_a_merge_by_hand_queues_the_lead_again_told() -> None:
    """A child's merge that conflicts pauses the run; resolved by hand, the lead is asked again."""
    world = world_of(crew(most=1))
    world.conflicting = {"coder-1"}
    place = _merge_paused(world, PauseCause.MERGE_CONFLICT)
    world.conflicting.clear()
    assert world.feed(ResolveAsked(at=world.instant())) is None
    place = world.place
    assert place is not None
    assert place.join is JoinStage.TOLD
    assert place.stage.attempt == 2
    assert "All children of build are terminal" in place.stage.words
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    assert "All children of build are terminal" in agent.sends[-1].text
    stale = _merged(place)
    assert step(S, place, stale).place.join is JoinStage.TOLD


def test_a_merge_git_refuses_pauses_and_resume_lets_the_lead_s_next_turn_merge_again() -> None:
    """WF-PAUSE-HAS-A-WAY-OUT: a lead's merge refused (a lock) pauses; resumed, it merges anew."""
    world = world_of(crew(most=1))
    world.refusing = {"coder-1"}
    place = _merge_paused(world, PauseCause.MERGE_FAILED)
    assert place.join is JoinStage.MERGING
    world.refusing.clear()
    assert world.feed(ResumeAsked(at=world.instant())) is None
    place = world.place
    assert place is not None
    assert place.join is JoinStage.OPEN
    for _ in range(2):
        world.deliver()
        world.end_turn()
    assert world.merges == [("coder-1",), ("coder-1",)]


def test_a_restart_launches_running_children_again_and_merges_again() -> None:
    """RESTART-PENDING: each running child's launch, and the merge under way, asked again."""
    world = world_of(crew(most=2))
    assert spawn(world, "a") is None
    assert spawn(world, "b") is None
    place = world.place
    assert place is not None
    again = [a for a in pending(place) if isinstance(a, LaunchLane)]
    assert [a.lane for a in again] == ["coder-1", "coder-2"]
    merging = evolve(place, join=JoinStage.MERGING, merging=pvector(["coder-1"]))
    assert [a for a in pending(merging) if isinstance(a, MergeLanes)]
    world.restart()
    assert world.lanes["coder-1"].launches == 2
    assert replay(S, world.journal) == world.place


def test_the_supervisor_s_news_of_children_from_their_places() -> None:
    """Started, a gate passed, a question, progress, a pause, short, going on: each once."""
    world = world_of(crew(most=2))
    assert spawn(world) is None
    run = world.place
    assert run is not None
    launch = next(a for a in world.actions if isinstance(a, LaunchLane))
    child = step(S, None, _launched(launch)).place
    child = evolve(child, start=run.entry)
    places = {child.launch.place: child}
    assert children_news(run, places, Instant(9.0)) == []
    attempt = _coder_attempt()
    question = Question(
        id="q1",
        text="Hi?",
        key="coder",
        attempt=1,
        session=SessionId("c1"),
        asked_at=Instant(2.0),
    )
    busy = evolve(
        child,
        attempts=pvector([attempt]),
        completed=pvector([StageName("coder")]),
        questions=pvector([question]),
        progress="half",
        stage=attrs.evolve(
            child.stage, phase=Paused(cause=PauseCause.BUDGET, words="budget turns spent")
        ),
    )
    said = children_news(run, {child.launch.place: busy}, Instant(9.0))
    assert [news.id for news in said] == [
        "started",
        "passed:coder",
        "q1",
        "progress:half",
        f"{PAUSED}coder#1:budget",
    ]
    assert 'flume answer crew--x+coder-1 q1 "<your answer>"' in said[2].text
    for news in said:
        assert world.feed(news) is None
    run = world.place
    assert run is not None
    assert status(run).paused == "child-paused"
    assert children_news(run, {child.launch.place: busy}, Instant(9.0)) == []
    short = evolve(
        busy, stage=attrs.evolve(busy.stage, phase=Short(cause=ShortCause.NEEDS, words="a key"))
    )
    (stopped,) = children_news(run, {child.launch.place: short}, Instant(9.0))
    assert stopped.text == "stopped short (needs): a key; flume retry crew--x+coder-1"
    going = evolve(busy, stage=attrs.evolve(busy.stage, phase=child.stage.phase))
    (resumed,) = children_news(run, {child.launch.place: going}, Instant(9.0))
    assert resumed.id.startswith("resumed:")
    assert world.feed(resumed) is None
    assert world.place is not None
    assert status(world.place).paused is None
    other = evolve(busy, start=None)
    assert children_news(run, {child.launch.place: other}, Instant(9.0)) == []


def test_a_child_asking_shows_on_its_run_with_since_when_until_answered() -> None:
    """WF-CHILD-ASKING-SURFACES, by example: the run's row says a child asks; answered, not.

    The news that it was answered is not told to the lead, who gave the answer.
    """
    world = world_of(crew(most=2))
    assert spawn(world) is None
    run = world.place
    assert run is not None
    launch = next(a for a in world.actions if isinstance(a, LaunchLane))
    child = evolve(step(S, None, _launched(launch)).place, start=run.entry)
    question = Question(
        id="q1",
        text="Which API?",
        key="coder",
        attempt=1,
        session=SessionId("c1"),
        asked_at=Instant(2.0),
    )
    asking = evolve(child, questions=pvector([question]))
    (asked,) = children_news(run, {child.launch.place: asking}, Instant(9.0))
    assert world.feed(asked) is None
    assert world.place is not None
    (shown,) = status(world.place).children_asking
    assert (shown.lane, shown.place, shown.since) == ("coder-1", child.launch.place, asked.at)
    assert shown.question.startswith("asks q1: Which API?")
    held = world.place.held
    answered = evolve(asking, questions=pvector([attrs.evolve(question, answer="The new.")]))
    (news,) = children_news(world.place, {child.launch.place: answered}, Instant(10.0))
    assert (news.id, news.text) == ("answered:q1", "q1 answered")
    assert world.feed(news) is None
    assert status(world.place).children_asking == pvector()
    assert world.place.held == held
    lost = evolve(answered, questions=pvector([attrs.evolve(question, answer="A", lost=1)]))
    (again,) = children_news(world.place, {child.launch.place: lost}, Instant(11.0))
    assert again.id == "answered:q1#2"


def test_a_spread_child_is_heard_of_and_told_only_through_the_fleet() -> None:
    """A spread block's child: launched and notified as a fleet place, its journal telling nothing.

    Its host reads its news as the supervisor would (``news_of``), and on its host, where its
    run is not, nobody answers its question (its lead's host judges who may).
    """
    world = world_of(crew(most=2, spread=True))
    assert spawn(world) is None
    run = world.place
    assert run is not None
    launch = next(a for a in world.actions if isinstance(a, LaunchLane))
    assert launch.launch.spread
    assert run.lanes["coder-1"].spread
    child = evolve(step(S, None, _launched(launch)).place, start=run.entry)
    attempt = _coder_attempt()
    started = evolve(child, attempts=pvector([attempt]))
    assert children_news(run, {child.launch.place: started}, Instant(9.0)) == []
    assert news_of(run.lanes["coder-1"], started) == [
        ("started", "started (crew--x+coder-1)"),
    ]
    agent = world.live_agent()
    assert agent is not None
    said = NotifySaid(at=world.instant(), to="coder-1", text="Use b.md.", session=agent.session)
    assert world.feed(said) is None
    (note,) = [a for a in world.actions if isinstance(a, NotifyLane)]
    assert note.spread
    assert answerer(None, None, elsewhere=True) == (False, False)
    assert answerer(run, lead_session(world), elsewhere=True) == (True, False)
    # On the run's host: the child found among the run's, and its answerer judged there.
    assert spread_child(run, "crew--x+coder-1") == run.lanes["coder-1"]
    assert spread_child(run, "crew--x+coder-9") is None
    assert spread_answerer(run, "crew--x+coder-1", lead_session(world)) == (True, False)
    assert spread_answerer(evolve(run, agent=None), "crew--x+coder-1", None) == (False, True)
    with pytest.raises(UsageError, match="goes to the lead of crew--x") as refused:
        spread_answerer(run, "crew--x+coder-1", None)
    assert refused.value.exit_status == 1


def _coder_attempt() -> Attempt:
    """A child's first attempt at its coder step, by the test agent, session ``c1``."""
    return Attempt(
        key="coder",
        stage=StageName("coder"),
        attempt=1,
        agent=AgentName.TEST,
        session=SessionId("c1"),
        started_at=Instant(1.0),
    )


def _launched(action: LaunchLane) -> Launched:
    return Launched(at=Instant(0.0), launch=action.launch, kind=action.kind, board="/b")


def test_a_led_child_s_question_goes_to_its_lead_and_only_the_lead_answers() -> None:
    """WF-ASK-ONE-ANSWERER with a lead: no pause of the child; a caller's answer is refused."""
    world = world_of(crew())
    assert spawn(world) is None
    launch = next(a for a in world.actions if isinstance(a, LaunchLane))
    child = FakeWorld(settings=S, kind=launch.kind)
    child.place = step(S, None, _launched(launch)).place
    child.journal.append(_launched(launch))
    assert child.place is not None
    assert child.place.launch.led
    assert "Build: " in render_prompt(evolve(child.place, life=Life.ACTIVE))
    session = SessionId("s-child")
    agent = Agent(
        session=session,
        stage=StageName("coder"),
        attempt=1,
        pane="%1",
        activity=Activity.WORKING,
        activity_since=Instant(0.0),
        last_output_at=Instant(0.0),
        said_at=Instant(0.0),
    )
    working = evolve(
        child.place,
        life=Life.ACTIVE,
        made=True,
        ready=True,
        agent=agent,
        stage=attrs.evolve(child.place.stage, phase=Working(session=session)),
    )
    working = evolve(working, kind=attrs.evolve(working.kind, body=_may_ask(working.kind)))
    asked = step(S, working, AskSaid(at=Instant(1.0), question="Hi?", session=session))
    (report,) = [a for a in asked.actions if isinstance(a, Report)][:1]
    assert "goes to the lead of crew--x" in report.text
    view = status(asked.place)
    assert view.paused is None
    assert view.asking == "q1: Hi?"
    with pytest.raises(UsageError, match="goes to the lead of crew--x") as refused:
        step(S, asked.place, AnswerGiven(at=Instant(2.0), question="q1", text="Hello"))
    assert "from its own session" in str(refused.value)
    # A spread child's own host sends whoever answers there to its run's (WF-SPREAD).
    spread = evolve(asked.place, launch=attrs.evolve(asked.place.launch, spread=True))
    with pytest.raises(UsageError, match="on the host that carries crew--x") as elsewhere:
        step(S, spread, AnswerGiven(at=Instant(2.0), question="q1", text="Hello"))
    assert elsewhere.value.exit_status == 1
    by_caller = AnswerGiven(at=Instant(2.0), question="q1", text="Hi", no_lead=True)
    assert step(S, asked.place, by_caller).place.questions[0].answer == "Hi"  # no lead lives
    answered = step(
        S, asked.place, AnswerGiven(at=Instant(2.0), question="q1", text="Hello", by_lead=True)
    )
    assert answered.place.questions[0].answer == "Hello"
    assert workflow_fields(answered.place)["question"] == "Hi? (answered: Hello)"
    assert workflow_fields(asked.place)["question"] == "Hi? (not answered)"


def _may_ask(kind: Kind) -> Step:
    (only,) = steps(kind.body)
    return attrs.evolve(only, may=pset(["ask", "progress"]))


def test_static_branches_start_at_entry_and_a_named_agent_runs_a_spawned_child() -> None:
    """Static children start with the lead; ``--agent`` names the spawned child's agent."""
    docs = Step(name=StageName("docs"), prompt="Write the docs.", deliverable=Commit())
    block = Orchestrate(
        name=BlockName("build"), lead=LEAD, template=CODER, max=1, branches=pvector([docs])
    )
    kind = kind_of(block)
    check_kind(kind)
    world = world_of(kind)
    assert [a.lane for a in world.actions if isinstance(a, LaunchLane)] == ["docs"]
    seen = SpawnSaid(
        at=world.instant(), goal="a", agent=AgentName.CODEX, session=lead_session(world)
    )
    assert world.feed(seen) is None
    spawned = [a for a in world.actions if isinstance(a, LaunchLane)][-1]
    assert spawned.lane == "coder-1"
    (coder,) = steps(spawned.kind.body)
    assert coder.agent is not None
    assert coder.agent.agent is AgentName.CODEX
    assert child_kind(kind, block, "docs", None).body == docs
    place = world.place
    assert place is not None
    assert launch_child(place, block, place.lanes["docs"]).launch.goal == ""
    views = list(status(place).tree)
    assert [(v.block, v.path) for v in views] == [
        ("orchestrate", "build"),
        ("step", "build/lead"),
        ("child", "build/docs"),
        ("child", "build/coder-1"),
    ]
    assert position_of(kind.body, StageName("coder")) is None
    planned = worst_case(kind)
    assert [each.path for each in planned.steps] == ["build/lead", "build/coder", "build/docs"]
    assert planned.agents_at_once == 3
    assert planned.lanes == 3


def test_an_orchestrate_s_prompts_may_be_replaced_and_a_done_block_shows_done() -> None:
    """A repository's prompt overrides reach the lead and the template; status after the block."""
    block = Orchestrate(name=BlockName("build"), lead=LEAD, template=CODER, max=1)
    after = Step(name=StageName("after"), prompt="After.", deliverable=Commit())
    kind = kind_of(block)
    kind = attrs.evolve(kind, body=Sequence(blocks=pvector([block, after])))
    replaced = with_prompts(
        kind, {StageName("lead"): "Lead anew; $verdict.", StageName("coder"): "Code $goal."}
    )
    lead, coder, _after = steps(replaced.body)
    assert (lead.prompt, coder.prompt) == ("Lead anew; $verdict.", "Code $goal.")
    bare = attrs.evolve(
        block,
        lead=attrs.evolve(LEAD, may=pset(["notify"])),
        template=None,
        branches=pvector([attrs.evolve(CODER, name=StageName("docs"))]),
        max=0,
    )
    assert attrs.evolve(with_prompts(kind_of(bare), {StageName("lead"): "L $verdict"})).body
    world = world_of(kind)
    world.write_verdict("done")
    world.end_turn()
    for _ in range(2):
        world.deliver()
        world.end_turn()
    place = world.place
    assert place is not None
    assert list(place.completed) == ["lead"]
    assert leading(place) is None
    states = {view.path: view.state for view in status(place).tree}
    assert states["build"] == "done"
    assert not children(place)
    assert not [a for a in world.actions if isinstance(a, OrderLane)]


BAD = [
    (
        attrs.evolve(Orchestrate(name=BlockName("build"), lead=LEAD), lead=CODER),
        "is not judged when its turn ends",
    ),
    (Orchestrate(name=BlockName("build"), lead=attrs.evolve(LEAD, may=pset())), "no children"),
    (
        Orchestrate(name=BlockName("build"), lead=LEAD, template=LEAD, max=1),
        "the lead is its own children's template",
    ),
    (Orchestrate(name=BlockName("build"), lead=LEAD, template=CODER, max=33), "outside 1-32"),
    (
        Orchestrate(
            name=BlockName("build"), lead=attrs.evolve(LEAD, may=pset()), template=CODER, max=1
        ),
        "may not spawn",
    ),
    (
        Orchestrate(name=BlockName("build"), lead=LEAD, branches=pvector([CODER])),
        "names no template",
    ),
    (Orchestrate(name=BlockName("build"), lead=LEAD, template=CODER, max=1, cap=0), "cap = 0"),
    (
        Orchestrate(name=BlockName("build"), lead=LEAD, template=CODER, max=1, join=Join.FIRST),
        "joins all its children",
    ),
    (
        Orchestrate(name=BlockName("build"), lead=LEAD, template=CODER, max=1, compose_runs=-1),
        "below 0",
    ),
    (
        Orchestrate(name=BlockName("build"), lead=LEAD, template=CODER, max=1, compose_depth=3),
        "runs nest 2 deep at most",
    ),
    (
        Orchestrate(name=BlockName("build"), lead=LEAD, template=CODER, max=1, compose_runs=1),
        "may not compose",
    ),
    (
        Orchestrate(
            name=BlockName("build"),
            lead=LEAD,
            template=CODER,
            max=1,
            branches=pvector(
                [
                    Orchestrate(
                        name=BlockName("inner"),
                        lead=attrs.evolve(LEAD, name=StageName("inner-lead"), may=pset()),
                        branches=pvector([attrs.evolve(CODER, name=StageName("docs"))]),
                    )
                ]
            ),
        ),
        "holds another orchestrate block",
    ),
]


@pytest.mark.parametrize(("block", "says"), BAD, ids=lambda each: str(each)[:20])
def test_a_bad_orchestrate_block_is_named(block: Orchestrate, says: str) -> None:
    """Bad input: each flaw named with the block and key it lies in."""
    flaws = kind_flaws(kind_of(block))
    assert any(says in flaw.problem.what for flaw in flaws), [f.problem.what for f in flaws]
    assert all(flaw.block in {"build", "lead", "coder", None} or flaw.block for flaw in flaws)


def test_lead_edges_outside_a_lead_are_refused_and_a_lead_may_name_them() -> None:
    """WF-EDGES in a kind: spawn on a step that is no lead is a flaw; on a lead it is not."""
    plain = attrs.evolve(PLAN, may=pset(["spawn"]))
    block = Orchestrate(name=BlockName("build"), lead=LEAD, template=CODER, max=1)
    flaws = kind_flaws(kind_of(block, plain))
    assert [flaw.problem.what for flaw in flaws] == [
        "may spawn: only an orchestrate block's lead may spawn"
    ]
    check_kind(kind_of(block))


def test_merge_none_merges_nothing_and_a_lead_without_a_template_plans_its_branches() -> None:
    """``merge = "none"``: the lead is told at once; the worst case of static children only."""
    block = Orchestrate(name=BlockName("build"), lead=LEAD, template=CODER, max=1, merge=Merge.NONE)
    world = world_of(kind_of(block))
    assert spawn(world) is None
    world.end_turn()
    end_child(world, "coder-1", finished=True)
    for _ in range(2):
        world.deliver()
        world.end_turn()
    assert world.place is not None
    assert world.place.join is JoinStage.TOLD
    assert world.merges == []
    docs = attrs.evolve(CODER, name=StageName("docs"))
    static = Orchestrate(
        name=BlockName("build"),
        lead=attrs.evolve(LEAD, may=pset(["notify"])),
        branches=pvector([docs]),
    )
    planned = worst_case(kind_of(static))
    assert [each.path for each in planned.steps] == ["build/lead", "build/docs"]


def compose(world: FakeWorld, kind: Kind, turns: int = 5, *, base: bool = False) -> str | None:
    """The lead runs ``flume compose``: the refusal's words, or None."""
    seen = ComposeSaid(
        at=world.instant(),
        kind=kind,
        turns=turns,
        tokens=100,
        base=base,
        session=lead_session(world),
    )
    refused = world.feed(seen)
    return None if refused is None else str(refused)


DOCS = Kind(
    name=KindName("docs"),
    prefix="docs",
    body=Sequence(blocks=pvector([attrs.evolve(CODER, name=StageName("write"))])),
    budgets=Budgets(turns=3),
)


def composing(*, runs: int = 1, depth: int = 2, budgets: Budgets | None = None) -> Kind:
    """A lead that may compose ``runs`` child runs, ``depth`` deep, and nothing else."""
    lead = attrs.evolve(LEAD, may=pset(["compose"]))
    block = Orchestrate(name=BlockName("build"), lead=lead, compose_runs=runs, compose_depth=depth)
    kind = kind_of(block, budgets=budgets or Budgets(turns=20, tokens=10_000))
    check_kind(kind)
    return kind


def test_a_composed_run_is_a_child_one_level_deeper_its_slice_reserved_and_released() -> None:
    """WF-BUDGET-RESERVE end to end in the core: reserved at once, released for real spend."""
    world = world_of(composing(runs=2))
    assert compose(world, DOCS, 10) is None
    place = world.place
    assert place is not None
    run = place.lanes["run-1"]
    assert (run.kind, run.reserved_turns, run.reserved_tokens) == (DOCS, 10, 100)
    assert place.spent.turns == 10
    (launched,) = [a for a in world.actions if isinstance(a, LaunchLane)]
    assert launched.launch.depth == 2
    assert launched.kind.name == "crew"
    assert launched.kind.budgets.turns == 3  # the fragment's own, below its slice
    assert launched.kind.budgets.tokens == 100
    assert launched.start == place.entry
    views = {view.path: view.block for view in status(place).tree}
    assert views["build/run-1"] == "run"
    found = world.lanes["run-1"]
    head = world.git.commit(found.branch, world.now)
    found.life = "finished"
    seen = LaneEnded(at=world.instant(), lane="run-1", finished=True, head=head, turns=2, tokens=7)
    assert world.feed(seen) is None
    assert world.place is not None
    assert (world.place.spent.turns, world.place.spent.tokens) == (2, 7)
    assert compose(world, DOCS, 3, base=True) is None
    assert world.place is not None
    based = [a for a in world.actions if isinstance(a, LaunchLane)][-1]
    assert based.start == world.place.start
    child = evolve(step(S, None, _launched(based)).place, start=world.place.start)
    (news,) = children_news(world.place, {child.launch.place: child}, Instant(9.0))[:1] or [None]
    assert news is None  # not started yet: no news, and its start is the run's base


def test_compose_is_refused_past_depth_runs_or_budget_and_for_a_deeper_fragment() -> None:
    """WF-DEPTH-CAP: each refusal exit 1, journaling nothing."""
    shallow = world_of(composing(depth=1))
    assert "would be at depth 2, and runs nest 1 deep at most" in (compose(shallow, DOCS) or "")
    world = world_of(composing())
    deeper = kind_of(
        Orchestrate(
            name=BlockName("inner"),
            lead=attrs.evolve(LEAD, may=pset(["compose"])),
            compose_runs=1,
        )
    )
    assert "would nest runs 3 deep" in (compose(world, deeper) or "")
    assert "a slice is at least 1 turn" in (compose(world, DOCS, 0) or "")
    assert "cannot reserve 20 turns: 0 of its 20" in (compose(world, DOCS, 20) or "")
    assert compose(world, DOCS, 5) is None
    assert "may compose 1 runs, and 1 are composed" in (compose(world, DOCS, 5) or "")
    place = world.place
    assert place is not None
    joined = evolve(place, join=JoinStage.TOLD)
    with pytest.raises(UsageError, match="every child of build is terminal and joined"):
        step(S, joined, ComposeSaid(at=Instant(9.0), kind=DOCS, turns=1, tokens=1,
                                    session=lead_session(world)))  # fmt: skip
    at_depth_two = evolve(place, launch=attrs.evolve(place.launch, depth=2))
    with pytest.raises(UsageError, match="would be at depth 3"):
        step(S, at_depth_two, ComposeSaid(at=Instant(9.0), kind=DOCS, turns=1, tokens=1,
                                          session=lead_session(world)))  # fmt: skip


def test_a_note_asked_again_after_a_restart_is_taken_once() -> None:
    """RESTART-PENDING: each running child's notes asked again; the child takes each id once."""
    world = world_of(crew(most=1))
    assert spawn(world) is None
    agent = world.live_agent()
    assert agent is not None
    said = NotifySaid(at=world.instant(), to="coder-1", text="tabs", session=agent.session)
    assert world.feed(said) is None
    place = world.place
    assert place is not None
    (note,) = [a for a in pending(place) if type(a).__name__ == "NotifyLane"]
    assert note.id == "crew--x#coder-1#1"  # type: ignore[union-attr]
    child = FakeWorld(settings=S, kind=crew(), waits=frozenset({StageName("lead")}))
    assert child.launch() is None
    seen = Notified(at=child.instant(), text="Your lead says:\n\ntabs", id=note.id)  # type: ignore[union-attr]
    assert child.feed(seen) is None
    assert child.feed(seen) is None
    assert child.place is not None
    assert list(child.place.notes) == ["Your lead says:\n\ntabs"]
    assert child.place.notified == pset([note.id])  # type: ignore[union-attr]


def test_a_step_named_for_a_child_is_the_child_s_and_the_lead_is_the_run_s() -> None:
    """STEP-NAMED at an orchestrate: ``coder-1`` or ``build/coder-1`` is that child's place."""
    world = world_of(crew())
    assert spawn(world) is None
    place = world.place
    assert place is not None
    assert lane_for(place, "coder-1") == ("crew--x+coder-1", "")
    assert lane_for(place, "build/coder-1") == ("crew--x+coder-1", "")
    assert lane_for(place, "lead") is None


def test_a_lead_s_later_attempt_reads_its_children_so_far() -> None:
    """A lead retried (or resumed) reads in its prompt each child's state and last news."""
    world = world_of(crew())
    assert spawn(world, "a") is None
    news = ChildNews(at=world.instant(), lane="coder-1", id="q1", text="asks q1: Hi?")
    assert world.feed(news) is None
    place = world.place
    assert place is not None
    assert "Your children so far" not in render_prompt(place)
    again = evolve(place, stage=attrs.evolve(place.stage, attempt=2))
    assert "- coder-1 (crew--x+coder-1): running; asks q1: Hi?\n" in render_prompt(again)


def test_a_lead_s_later_attempt_reads_a_question_still_open_after_later_news() -> None:
    """WF-LEAD-HEARS-OPEN-QUESTIONS: news after a child's question never hides it from a new lead.

    A crew's lead retried after tmux was killed read only each child's last news: a progress
    after the question, and the question was never answered (the faults trial's stuck run).
    """
    world = world_of(crew())
    assert spawn(world, "a") is None
    asks = ChildNews(at=world.instant(), lane="coder-1", id="q1", text="asks q1: Hi?")
    assert world.feed(asks) is None
    later = ChildNews(at=world.instant(), lane="coder-1", id="progress:x", text="progress: x")
    assert world.feed(later) is None
    place = world.place
    assert place is not None
    again = evolve(place, stage=attrs.evolve(place.stage, attempt=2))
    assert (
        "- coder-1 (crew--x+coder-1): running; progress: x; still open: asks q1: Hi?\n"
        in render_prompt(again)
    )
    answered = ChildNews(at=world.instant(), lane="coder-1", id="answered:q1", text="q1 answered")
    assert world.feed(answered) is None
    place = world.place
    assert place is not None
    again = evolve(place, stage=attrs.evolve(place.stage, attempt=2))
    assert "still open" not in render_prompt(again)


def test_the_answerer_of_a_child_s_question_is_its_live_lead_else_the_caller() -> None:
    """WF-ASK-ONE-ANSWERER: the lead's session answers; with no live lead, the caller does."""
    world = world_of(crew())
    run = world.place
    assert run is not None
    assert answerer(run, lead_session(world)) == (True, False)
    assert answerer(run, SessionId("someone")) == (False, False)
    assert answerer(evolve(run, agent=None), lead_session(world)) == (False, True)
    assert answerer(None, None) == (False, True)


# --- what the survivors of the workflow mutation run showed no test held ------------------------


def said(refused: UsageError | None) -> tuple[int, tuple[Problem, ...]]:
    """A refusal whole: its exit status and its problems (field, what is wrong, the mend)."""
    assert refused is not None
    return refused.exit_status, refused.problems


def test_every_refusal_of_notify_is_said_whole_and_each_note_is_numbered() -> None:
    """Notify's refusals compared whole; notes to two children reported once, each numbered."""
    world = world_of(crew(most=2))
    lead = lead_session(world)

    def notify(to: str, text: str, session: SessionId = lead) -> UsageError | None:
        return world.feed(NotifySaid(at=world.instant(), to=to, text=text, session=session))

    unknown = "name a child, or all"
    assert said(notify("zz", "hi")) == (
        2,
        (Problem("to", "build has no child 'zz' (its children: none yet)", unknown),),
    )
    assert spawn(world, "a") is None
    assert spawn(world, "b") is None
    assert said(notify("zz", "hi")) == (
        2,
        (Problem("to", "build has no child 'zz' (its children: coder-1, coder-2)", unknown),),
    )
    empty = Problem("notify", "the words are empty or over 4000 characters", "say it shorter")
    assert said(notify("all", " ")) == (1, (empty,))
    assert said(notify("all", "x" * (MOST_WORDS + 1))) == (1, (empty,))
    assert said(notify("all", "hi", SessionId("s-other"))) == (
        1,
        (
            Problem(
                "notify",
                "session s-other is not the live agent of crew--x",
                "flume notify is for the agent of the place's running step",
            ),
        ),
    )
    assert notify("all", "use tabs") is None
    assert notify("coder-1", "x" * MOST_WORDS) is None
    place = world.place
    assert place is not None
    notes = [(a.id, a.text[-8:]) for a in world.actions if isinstance(a, NotifyLane)]
    assert notes == [
        ("crew--x#coder-1#1", "use tabs"),
        ("crew--x#coder-2#1", "use tabs"),
        ("crew--x#coder-1#2", "x" * 8),
    ]
    told = [(r.text[:40], r.stage) for r in world.reports_of(Event.NOTIFIED)]
    assert told == [
        ("lead told coder-1, coder-2: use tabs", "lead"),
        ("lead told coder-1: " + "x" * 21, "lead"),
    ]
    end_child(world, "coder-1", finished=False)
    assert said(notify("coder-1", "hi")) == (
        1,
        (
            Problem(
                "notify",
                "no child of build named coder-1 is running or waiting",
                "a child that ended hears nothing more",
            ),
        ),
    )


def test_an_answer_from_another_session_is_refused_whole_at_a_spread_child_s_run() -> None:
    """WF-SPREAD: judged at the run, a session not its live lead's is refused, exit 1, whole."""
    world = world_of(crew())
    place = world.place
    assert place is not None
    with pytest.raises(UsageError) as refused:
        spread_answerer(place, "crew--x+coder-1", SessionId("s-other"))
    assert said(refused.value) == (
        1,
        (
            Problem(
                "answer",
                "a question of crew--x+coder-1 goes to the lead of crew--x, the nearest lead "
                "above it",
                "the lead answers it, from its own session (you may, while no lead of it is live)",
            ),
        ),
    )


def test_a_compose_past_the_tokens_left_is_refused_naming_tokens() -> None:
    """WF-BUDGET-RESERVE: a slice of tokens the run has not left is refused, naming tokens."""
    world = world_of(composing(budgets=Budgets(tokens=100)))
    assert compose(world, DOCS) == (
        "compose: the run cannot reserve 100 tokens: 0 of its 100 are spent or reserved already; "
        "ask for fewer tokens, or raise the run's budget (flume raise)"
    )


def test_the_run_s_head_is_the_children_s_merge_at_once() -> None:
    """Children merged: the run's head is the merge's head from that observation on."""
    world = world_of(crew(most=1))
    assert spawn(world) is None
    end_child(world, "coder-1", finished=True)
    for _ in range(3):
        if world.merges:
            break
        world.deliver()
        world.end_turn()
    merged = [(seen, d.place) for _b, seen, d in world.steps if isinstance(seen, LanesMerged)]
    assert merged
    for seen, place in merged:
        assert place.head == seen.head


def _two_children() -> tuple[Place, Place]:
    """A lead with coder-1 ended and coder-2 running; coder-2's place, launched, with progress."""
    world = world_of(crew(most=2))
    assert spawn(world, "a") is None
    assert spawn(world, "b") is None
    end_child(world, "coder-1", finished=False)
    launch = [a for a in world.actions if isinstance(a, LaunchLane) and a.lane == "coder-2"][-1]
    run = world.place
    assert run is not None
    # Made from the run's entry, as the shell makes it.
    child = evolve(step(S, None, _launched(launch)).place, progress="half", start=run.entry)
    return run, child


def test_news_is_read_past_an_ended_child_and_only_of_a_child_of_this_entry() -> None:
    """A running child's news is heard though one before it ended; one of another start is not."""
    run, child = _two_children()
    news = children_news(run, {child.launch.place: child}, Instant(9.0))
    assert [(each.lane, each.id) for each in news] == [("coder-2", "progress:half")]
    other = evolve(child, start=Sha("f" * 40))
    assert other.start != run.entry
    assert children_news(run, {child.launch.place: other}, Instant(9.0)) == []
    # A child launched from the base is read against the run's start, not its entry.
    based = run.lanes.set("coder-2", attrs.evolve(run.lanes["coder-2"], from_base=True))
    moved = evolve(run, lanes=based, start=Sha("d" * 40))
    from_base = evolve(child, start=moved.start)
    assert from_base.start != moved.entry
    news = children_news(moved, {child.launch.place: from_base}, Instant(9.0))
    assert [each.id for each in news] == ["progress:half"]


def test_a_child_s_news_ids_number_lost_answers_cut_long_progress_and_say_it_goes_on() -> None:
    """News ids: a question whose answer was lost is q1#2, progress is cut at 200, then goes on."""
    run, child = _two_children()
    lane = attrs.evolve(run.lanes["coder-2"], paused="paused (stalled)")
    asked = Question(
        id="q1",
        text="Which?",
        key="coder",
        attempt=1,
        session=SessionId("s-child"),
        asked_at=Instant(1.0),
        lost=1,
    )
    child = evolve(child, progress="p" * 250, questions=pvector([asked]))
    news = news_of(lane, child)
    assert [ident for ident, _text in news] == [
        "q1#2",
        "progress:" + "p" * 200,
        f"resumed:{len(lane.news)}",
    ]
    assert news[-1][1] == "goes on again"


def test_a_child_s_end_is_said_as_it_ended_and_taken_once() -> None:
    """A finished child is said finished at its head, a dropped one unfinished; no repeat."""
    world = world_of(crew(most=3))
    for goal in ("a", "b", "c"):
        assert spawn(world, goal) is None
    end_child(world, "coder-1", finished=True)
    end_child(world, "coder-2", finished=False)
    place = world.place
    assert place is not None
    head = world.git.head(world.lanes["coder-1"].branch)
    ended = place.lanes["coder-1"], place.lanes["coder-2"]
    assert [(run.head, run.note) for run in ended] == [
        (head, f"finished at {head}"),
        (world.git.head(world.lanes["coder-2"].branch), "ended unfinished (dropped)"),
    ]
    assert [(r.text, r.stage) for r in world.reports_of(Event.LANE_ENDED)] == [
        (f"child coder-1 finished at {head}", "lead"),
        ("child coder-2 ended unfinished (dropped)", "lead"),
    ]
    again = LaneEnded(at=world.instant(), lane="coder-2", finished=False, head=head, turns=3)
    assert step(S, place, again).place == place
    assert step(S, place, again).actions == ()
