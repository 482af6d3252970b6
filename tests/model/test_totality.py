"""Totality: every (state, observation) pair gives a Decision or a UsageError, never a crash.

And the transition table (``place.ACCEPTS``) is what ``step`` does: every phase against every
caller's command, accepted where the table says and moved to the phase it names, refused
everywhere else whatever the rest of the place holds.
"""

from __future__ import annotations

from typing import get_args

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pmap, pset, pvector

from flume.core.errors import UsageError
from flume.core.ids import (
    BlockName,
    BranchName,
    Instant,
    KindName,
    PlaceName,
    SessionId,
    Sha,
    StageName,
)
from flume.core.kinds import (
    Budgets,
    Commit,
    Kind,
    Landing,
    Orchestrate,
    Parallel,
    Sequence,
    Step,
    steps,
)
from flume.core.observations import (
    OBSERVATION_TYPES,
    Activity,
    AnswerGiven,
    ApproveAsked,
    AskSaid,
    BudgetRaised,
    Command,
    ComposeSaid,
    DropAsked,
    Launched,
    NeedsSaid,
    NotifySaid,
    Observation,
    PassAsked,
    ProceedAsked,
    ProgressSaid,
    ResolveAsked,
    ResumeAsked,
    RetryAsked,
    SpawnSaid,
    StopAsked,
    SubmitAsked,
    TidyAsked,
    Told,
)
from flume.core.place import (
    ACCEPTS,
    PAUSE_ACCEPTS,
    Agent,
    AwaitingInput,
    AwaitingWord,
    Delivered,
    Delivering,
    Fanned,
    Finalizing,
    Judging,
    LaneRun,
    LaneState,
    Life,
    Merging,
    PauseCause,
    Paused,
    Place,
    Question,
    Queued,
    Short,
    ShortCause,
    StagePhase,
    Starting,
    Working,
    accepts,
    evolve,
)
from flume.core.settings import Settings
from flume.core.status import status
from flume.core.step import Decision, _route, step
from tests.strategies import FACTS, FIXED_LAUNCHES, any_places, fitting, launched, places

SETTINGS = Settings()
#: Totality runs once per observation type; the profile's count is meant for the machines.
ENOUGH = settings(max_examples=min(settings().max_examples, 250))


def _step_is_total(place: Place | None, seen: Observation) -> None:
    try:
        decision = step(SETTINGS, place, seen)
    except UsageError as error:
        refusal = error
    else:
        assert isinstance(decision, Decision)
        assert place is None or decision.place.now >= place.now
        status(decision.place)
        return
    assert refusal.problems
    assert refusal.exit_status in {1, 2}


@pytest.mark.parametrize(
    "kind", [t for t in OBSERVATION_TYPES if t is not Launched], ids=lambda t: t.__name__
)
@ENOUGH
@given(data=st.data())
def test_every_observation_type_in_any_state(kind: type[Observation], data: st.DataObject) -> None:
    """Each observation type, fed to a place in any life, phase, agent and tells, is handled."""
    place = data.draw(any_places())
    _step_is_total(place, data.draw(FACTS[kind]))


@given(place=places(), data=st.data())
def test_reachable_states_take_fitting_observations(place: Place, data: st.DataObject) -> None:
    """A place reached by real steps takes any fitting observation without crashing."""
    _step_is_total(place, data.draw(fitting(place)))


@given(place=any_places(), seen=launched())
def test_a_second_launch_is_refused(place: Place, seen: Launched) -> None:
    """A launch fed to a place that exists is a usage error, never a new state."""
    with pytest.raises(UsageError):
        step(SETTINGS, place, seen)


@given(seen=st.one_of(*FACTS.values()))
def test_nothing_but_a_launch_starts_a_place(seen: Observation) -> None:
    """Any observation but a launch, with no place yet, is a usage error."""
    with pytest.raises(UsageError):
        step(SETTINGS, None, seen)


# --- the transition table --------------------------------------------------------------------

_SESSION = SessionId("s-willing")
_AT = Instant(5.0)
#: One phase of each type.
PHASES: tuple[StagePhase, ...] = (
    AwaitingWord(),
    Queued(),
    Starting(since=_AT),
    AwaitingInput(session=_SESSION, since=_AT),
    Delivering(session=_SESSION, sent_at=_AT),
    Working(session=_SESSION),
    Delivered(at=_AT),
    Short(cause=ShortCause.NEEDS, words="it needs a key"),
    Judging(session=_SESSION, since=_AT),
    *(Paused(cause=cause, words=f"paused for {cause.value}") for cause in PauseCause),
    Fanned(since=_AT),
    Merging(since=_AT),
    Finalizing(since=_AT),
)
#: A fix launch: its second stage lands, so submit can be accepted there.
_FIX = next(seen for seen in FIXED_LAUNCHES if seen.kind.name == "fix")
#: One command of each type, each well formed (words that are not empty, the live session).
COMMANDS: tuple[Command, ...] = (
    _FIX,
    Told(at=Instant(9.0), text="look at the docs too"),
    StopAsked(at=Instant(9.0)),
    RetryAsked(at=Instant(9.0), words="try the other way"),
    DropAsked(at=Instant(9.0)),
    ProceedAsked(at=Instant(9.0)),
    SubmitAsked(at=Instant(9.0), session=_SESSION),
    NeedsSaid(at=Instant(9.0), words="a key", session=_SESSION),
    TidyAsked(at=Instant(9.0), force=False),
    ApproveAsked(at=Instant(9.0)),
    PassAsked(at=Instant(9.0), why="the verdict is wrong: the tests pass"),
    ResumeAsked(at=Instant(9.0)),
    BudgetRaised(at=Instant(9.0), turns=5),
    ResolveAsked(at=Instant(9.0)),
    ProgressSaid(at=Instant(9.0), words="half done", session=_SESSION),
    AskSaid(at=Instant(9.0), question="which API?", session=_SESSION),
    AnswerGiven(at=Instant(9.0), question="q1", text="the new one"),
    SpawnSaid(at=Instant(9.0), goal="the parser", session=_SESSION),
    NotifySaid(at=Instant(9.0), to="all", text="use the new API", session=_SESSION),
    ComposeSaid(
        at=Instant(9.0),
        kind=Kind(
            name=KindName("docs"),
            prefix="docs",
            body=Step(name=StageName("write"), prompt="Write.", deliverable=Commit()),
        ),
        turns=1,
        tokens=1,
        session=_SESSION,
    ),
)


def _leading(place: Place, lead: Step) -> Place:
    """The place's stage ``lead`` made an orchestrate block's lead, with one child running."""
    lead = attrs.evolve(lead, may=pset(["progress", "ask", "spawn", "notify", "compose"]))
    child = Step(name=StageName("coder"), prompt="Build $goal.", deliverable=Commit())
    block = Orchestrate(name=BlockName("build"), lead=lead, template=child, max=3, compose_runs=1)
    run = LaneRun(
        lane="coder-1",
        place=PlaceName("fix--x+coder-1"),
        branch=BranchName("fix/x+coder-1"),
        state=LaneState.RUNNING,
    )
    return evolve(
        place,
        kind=attrs.evolve(place.kind, body=Sequence(blocks=pvector([block]))),
        lanes=pmap({"coder-1": run}),
        lanes_key=place.stage.key,
    )


def _dropped_lane(place: Place) -> Place:
    """The place's stage a parallel: lane ``slice-a`` ended unfinished, ``slice-b`` finished."""
    lanes = Parallel(
        name=BlockName(place.stage.name),
        branches=pvector(
            Step(name=StageName(name), prompt="Build.", deliverable=Commit())
            for name in ("slice-a", "slice-b")
        ),
    )
    runs = {
        name: LaneRun(
            lane=name,
            index=index,
            place=PlaceName(f"fix--x+{name}"),
            branch=BranchName(f"fix/x+{name}"),
            state=state,
        )
        for index, (name, state) in enumerate(
            [("slice-a", LaneState.ENDED), ("slice-b", LaneState.FINISHED)]
        )
    }
    phase = place.stage.phase
    assert isinstance(phase, Paused)
    return evolve(
        place,
        kind=attrs.evolve(place.kind, body=Sequence(blocks=pvector([lanes]))),
        lanes=pmap(runs),
        agent=None,
        stage=attrs.evolve(place.stage, phase=attrs.evolve(phase, lane="slice-a")),
    )


def _willing(phase: StagePhase, command: Command | None = None) -> Place:
    """A place whose every other check lets any command through: only its phase can refuse.

    Active, made and ready, in its landing stage, nothing submitted, its agent live and waiting;
    its steps may report progress and ask (WF-EDGES); for an answer, its agent asked ``q1``;
    its turns budget set (a raise of a budget the kind sets none of is refused).
    """
    launched_place = step(SETTINGS, None, _FIX).place
    kind = launched_place.kind
    body = kind.body
    assert isinstance(body, Sequence)
    talking = Sequence(
        blocks=pvector(
            attrs.evolve(block, may=pset(["progress", "ask"])) if isinstance(block, Step) else block
            for block in body.blocks
        )
    )
    launched_place = evolve(launched_place, kind=attrs.evolve(kind, body=talking))
    lands = next(found for found in steps(_FIX.kind.body) if isinstance(found.deliverable, Landing))
    agent = Agent(
        session=_SESSION,
        stage=lands.name,
        attempt=1,
        pane="%1",
        activity=Activity.WAITING,
        activity_since=_AT,
        last_output_at=_AT,
        said_at=_AT,
    )
    stage = attrs.evolve(launched_place.stage, name=lands.name, phase=phase)
    if isinstance(command, SpawnSaid | NotifySaid | ComposeSaid):
        launched_place = _leading(evolve(launched_place, stage=stage), lands)
    return evolve(
        launched_place,
        life=Life.ACTIVE,
        made=True,
        ready=True,
        head=Sha("a" * 40),
        stage=stage,
        agent=agent,
        now=_AT,
        budgets=Budgets(turns=100),
        questions=pvector(
            [
                Question(
                    id="q1",
                    text="which API?",
                    key=lands.name,
                    attempt=1,
                    session=_SESSION,
                    asked_at=_AT,
                )
            ]
            if isinstance(command, AnswerGiven)
            else []
        ),
    )


def test_the_table_has_a_row_for_every_phase_and_names_only_commands() -> None:
    """ACCEPTS covers every phase type; its entries are commands moving to phases."""
    phase_types = set(get_args(StagePhase))
    command_types = set(get_args(Command))
    assert {type(phase) for phase in PHASES} == phase_types
    assert {phase.cause for phase in PHASES if isinstance(phase, Paused)} == set(PauseCause)
    for taken in PAUSE_ACCEPTS.values():
        assert taken <= set(ACCEPTS[Paused])
    assert {type(command) for command in COMMANDS} == command_types
    assert set(ACCEPTS) == phase_types
    for row in ACCEPTS.values():
        assert set(row) <= command_types
        assert set(row.values()) <= phase_types


@pytest.mark.parametrize("phase", PHASES, ids=lambda phase: type(phase).__name__)
@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: type(command).__name__)
def test_each_phase_takes_each_command_as_the_table_says(
    phase: StagePhase, command: Command
) -> None:
    """In a place where only the phase can refuse: accepted and moved per the table, or refused.

    A run paused on a lane that ended unfinished stands at a parallel with that lane; resolve
    there names it (``--without``), as its pause says.
    """
    place = _willing(phase, command)
    if isinstance(phase, Paused) and phase.cause is PauseCause.LANE_DROPPED:
        place = _dropped_lane(place)
        if isinstance(command, ResolveAsked):
            command = attrs.evolve(command, without="slice-a")
    moves_to = ACCEPTS[type(phase)].get(type(command))
    if not accepts(phase, type(command)):
        with pytest.raises(UsageError) as refusal:
            step(SETTINGS, place, command)
        assert refusal.value.exit_status == 1
        return
    decision = step(SETTINGS, place, command)
    assert decision.place.now >= place.now
    moved, _actions = _route(place, command)
    assert type(moved.stage.phase) is moves_to


@pytest.mark.parametrize("kind", list(get_args(Command)), ids=lambda kind: kind.__name__)
@ENOUGH
@given(data=st.data())
def test_no_command_is_taken_where_the_table_refuses_it(
    kind: type[Command], data: st.DataObject
) -> None:
    """Any place, reachable or not: a command its phase's row lacks is refused.

    And one taken moves the stage to the phase the table names.
    """
    place = data.draw(any_places())
    seen: Command = data.draw(launched() if kind is Launched else FACTS[kind])
    moves_to = ACCEPTS[type(place.stage.phase)].get(kind)
    try:
        moved, _actions = _route(place, seen)
    except UsageError:
        return
    assert moves_to is not None, f"{kind.__name__} taken in {place.stage.phase}"
    assert accepts(place.stage.phase, kind), f"{kind.__name__} taken in {place.stage.phase}"
    assert type(moved.stage.phase) is moves_to
