"""The shell's facts judged by the core: which source speaks, a silent start, output, naming.

The shell reports what each source said and when, how long an agent has gone unregistered, when
its pane last changed; :mod:`flume.core.judging` and :mod:`flume.core.naming` decide. The machine
feeds them facts in any order and checks each decision against the rule's own words; the
examples below pin each threshold at its edge.
"""

from __future__ import annotations

import re

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule
from pyrsistent import pvector

from flume.core.choices import AgentName, Panes
from flume.core.ids import Instant
from flume.core.judging import (
    Said,
    latest_said,
    launch_settings,
    program_of,
    shows_output,
    unregistered_asks,
)
from flume.core.kinds import Sequence, Step, StepAgent, stage_named
from flume.core.launch import name_problems
from flume.core.naming import NAME_LENGTH, made_names, name_from, names_taken
from flume.core.observations import Activity
from flume.core.place import Agent, AwaitingInput, Place, Working, evolve
from flume.core.settings import (
    NAME_TRIES,
    OUTPUT_SLACK_SECONDS,
    PRINT_CONFIRM_SECONDS,
    STARTUP_GRACE_SECONDS,
    Settings,
)
from flume.core.stage import agent_for
from tests.model.world import fix_world

activities = st.sampled_from([a for a in Activity if a is not Activity.UNKNOWN])
stamps = st.integers(min_value=0, max_value=40).map(float)
#: Few stamps, so that the two sources often speak at the same second.
spoken_at = st.integers(min_value=0, max_value=3).map(float)


def _awaiting() -> Place:
    """A fix whose first agent started and waits to take input."""
    world = fix_world()
    assert world.launch() is None
    place = world.place
    assert place is not None
    assert isinstance(place.stage.phase, AwaitingInput), place.stage.phase
    return place


def _with_agent(place: Place, name: AgentName) -> Place:
    launch = place.launch
    return evolve(place, launch=attrs.evolve(launch, agent=attrs.evolve(launch.agent, agent=name)))


def _working(place: Place) -> Place:
    """The place with its prompt taken: its agent works."""
    phase = place.stage.phase
    assert isinstance(phase, AwaitingInput)
    return evolve(place, stage=attrs.evolve(place.stage, phase=Working(session=phase.session)))


class JudgingMachine(RuleBasedStateMachine):
    """Reports from an agent's hooks and registry, its pane, its start, in any order."""

    @initialize()
    def start(self) -> None:
        """An agent awaiting input; neither source has spoken yet."""
        self.place = _awaiting()
        self.said: dict[str, Said] = {}
        self.order: list[tuple[float, int, str]] = []

    @rule(source=st.sampled_from(["hooks", "registry"]), activity=activities, at=spoken_at)
    def a_source_speaks(self, source: str, activity: Activity, at: float) -> None:
        """SOURCES-LATEST-SPEAKS: whichever of hooks and registry spoke last says what it does.

        Each source's latest report is kept; of the two, the later stamp wins, and at the same
        stamp the registry's. Nothing said by either: nothing decided.
        """
        self.said[source] = Said(activity=activity, at=at)
        decided = latest_said(self.said.get("hooks"), self.said.get("registry"))
        hooks, registry = self.said.get("hooks"), self.said.get("registry")
        if registry is None:
            assert hooks is not None
            assert decided is hooks.activity
        elif hooks is None or hooks.at <= registry.at:
            assert decided is registry.activity
        else:
            assert decided is hooks.activity
        assert latest_said(None, None) is None

    @rule(
        name=st.sampled_from(list(AgentName)),
        registered=st.booleans(),
        waited=st.sampled_from([-0.1, 0.0, 0.1]).map(lambda d: STARTUP_GRACE_SECONDS + d)
        | st.integers(min_value=0, max_value=30).map(float),
    )
    def a_start_goes_silent(self, name: AgentName, registered: bool, waited: float) -> None:
        """UNREGISTERED-ASKS: a Claude Code agent unregistered long after it started is asking.

        Only Claude Code, only unregistered, only awaiting input, and only once the grace passed;
        every other agent, a registered one, or one still within its grace is not.
        """
        place = _with_agent(self.place, name)
        phase = place.stage.phase
        assert isinstance(phase, AwaitingInput)
        now = Instant(phase.since + waited)
        asks = unregistered_asks(place, registered=registered, now=now)
        expected = name is AgentName.CLAUDE and not registered and waited >= STARTUP_GRACE_SECONDS
        assert asks is expected
        assert not unregistered_asks(_working(place), registered=registered, now=now)

    @rule(last=stamps, later=st.integers(min_value=-20, max_value=20).map(lambda n: n / 10))
    def the_pane_changes(self, last: float, later: float) -> None:
        """PANE-OUTPUT-MOVES: a pane's activity is new output only when clearly later.

        Later than the output already seen by more than the slack: new output, and the quiet
        clock moves; the same output read again a moment later, or earlier output, is not.
        """
        agent = self.place.agent
        assert agent is not None
        seen = attrs.evolve(agent, last_output_at=Instant(last))
        assert shows_output(seen, last + later) is (later > OUTPUT_SLACK_SECONDS)

    @rule(
        panes=st.sampled_from(list(Panes)),
        declared=st.booleans(),
        confirm=st.integers(min_value=1, max_value=100).map(float),
    )
    def a_launch_is_settled(self, panes: Panes, declared: bool, confirm: float) -> None:
        """PRINTED-CONFIRM-WAITS: a printed agent's send waits an hour, unless declared.

        A printed launch with no confirmation window declared waits an hour for a person to run
        it; anything else keeps the window it was given, and every other setting stays.
        """
        given = Settings(confirm_seconds=confirm)
        settled = launch_settings(given, panes=panes, confirm_declared=declared)
        if panes is Panes.PRINT and not declared:
            assert settled == attrs.evolve(given, confirm_seconds=PRINT_CONFIRM_SECONDS)
        else:
            assert settled == given

    @rule(
        brief=st.text(max_size=80),
        taken=st.integers(min_value=0, max_value=NAME_TRIES + 2),
        kind=st.sampled_from(["", "fix", "change", "question"]),
        telling=st.lists(
            st.sampled_from(["greeting", "typo", "login", "docs", "home"]), min_size=1
        ),
    )
    def work_is_named(self, brief: str, taken: int, kind: str, telling: list[str]) -> None:
        """NAME-FROM-BRIEF: unnamed work is named from its brief, numbered while taken.

        The made name is one flume takes, short; tried in order, the first not taken is used,
        and with every one of the tries taken the launch is refused naming them. It repeats no
        kind: a brief's leading word that is the kind ("Fix the typo", a fix) is left out.
        """
        base = name_from(brief, kind)
        said = " ".join(telling)
        assert name_from(f"{kind.title()} the {said}", kind) == name_from(said, kind)
        assert not name_problems(base), base
        assert len(base) <= NAME_LENGTH
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", base)
        names = made_names(base)
        assert len(names) == len(set(names)) == NAME_TRIES
        assert names[0] == base
        assert all(not name_problems(name) for name in names)
        used = next((name for name in names[taken:]), None)
        if taken < NAME_TRIES:
            assert used == (base if taken == 0 else f"{base}-{taken + 1}")
        else:
            assert used is None
            assert names_taken(base).what.endswith(f"{base} to {base}-{NAME_TRIES}, are all taken")


TestJudging = JudgingMachine.TestCase


# --- examples: each threshold at its edge ------------------------------------------------------


def test_the_later_source_speaks_and_a_tie_goes_to_the_registry() -> None:
    """The hooks' later stamp wins; at the same stamp, or earlier, the registry's does."""
    hooks = Said(activity=Activity.WORKING, at=10.0)
    assert latest_said(hooks, None) is Activity.WORKING
    assert latest_said(None, Said(activity=Activity.ASKING, at=1.0)) is Activity.ASKING
    assert latest_said(hooks, Said(activity=Activity.WAITING, at=9.0)) is Activity.WORKING
    assert latest_said(hooks, Said(activity=Activity.WAITING, at=10.0)) is Activity.WAITING
    assert latest_said(hooks, Said(activity=Activity.WAITING, at=11.0)) is Activity.WAITING
    assert latest_said(None, None) is None


def test_an_unregistered_claude_asks_once_its_grace_passed() -> None:
    """Ten seconds after its start and no registry entry: asking; a moment before, not yet."""
    place = _awaiting()
    phase = place.stage.phase
    assert isinstance(phase, AwaitingInput)
    edge = Instant(phase.since + STARTUP_GRACE_SECONDS)
    assert STARTUP_GRACE_SECONDS == 10.0
    assert unregistered_asks(place, registered=False, now=edge)
    assert not unregistered_asks(place, registered=False, now=Instant(edge - 0.1))
    assert not unregistered_asks(place, registered=True, now=edge)
    codex = _with_agent(place, AgentName.CODEX)
    assert not unregistered_asks(codex, registered=False, now=Instant(edge + 100))


def test_an_unregistered_agent_past_awaiting_input_is_not_taken_to_ask() -> None:
    """Once its prompt was sent, an agent's silence in the registry says nothing of a dialog."""
    place = _awaiting()
    phase = place.stage.phase
    assert isinstance(phase, AwaitingInput)
    assert unregistered_asks(place, registered=False, now=Instant(1e6))
    assert not unregistered_asks(_working(place), registered=False, now=Instant(1e6))


def test_pane_output_counts_only_past_half_a_second() -> None:
    """0.5 s later is the same output read again; a moment past it is new output."""
    agent: Agent | None = _awaiting().agent
    assert agent is not None
    seen = attrs.evolve(agent, last_output_at=Instant(100.0))
    assert OUTPUT_SLACK_SECONDS == 0.5
    assert not shows_output(seen, 100.5)
    assert shows_output(seen, 100.6)
    assert not shows_output(seen, 99.0)


def test_a_printed_launch_waits_an_hour_unless_its_repository_says() -> None:
    """Print with nothing declared: 3600 s; declared, or a pane of tmux or herdr: as given."""
    given = Settings(confirm_seconds=30)
    assert launch_settings(given, panes=Panes.PRINT, confirm_declared=False).confirm_seconds == (
        3600.0
    )
    assert launch_settings(given, panes=Panes.PRINT, confirm_declared=True) == given
    assert launch_settings(given, panes=Panes.TMUX, confirm_declared=False) == given
    assert launch_settings(given, panes=Panes.HERDR, confirm_declared=False) == given


def test_names_are_made_from_the_brief_and_numbered_up_to_fifty() -> None:
    """The brief's telling words; then -2 to -50; then a refusal naming the range."""
    assert name_from("Please fix the login page's timeout") == "fix-login-page-s"
    assert name_from("!!!") == "work"
    assert name_from("Straße " + "b" * 40) == "strasse"  # a word past the length is left out
    assert name_from("x" * 40) == "x" * NAME_LENGTH
    # The kind is not repeated: a leading word that is it is left out, unless it is all.
    assert name_from('Fix the "greeting" typo in $HOME docs', "fix") == "greeting-typo-home-docs"
    assert name_from("Fix the greeting typo", "change") == "fix-greeting-typo"
    assert name_from("Fix it", "fix") == "fix"
    names = made_names("fix-login")
    assert NAME_TRIES == 50
    assert names[:3] == ("fix-login", "fix-login-2", "fix-login-3")
    assert names[-1] == "fix-login-50"
    assert made_names("x", 0) == ()
    problem = names_taken("fix-login")
    assert problem.field == "name"
    assert "fix-login to fix-login-50" in problem.what
    assert problem.mend == "name the work: name=<name>"


def test_a_steps_own_agent_is_the_program_read_and_judged() -> None:
    """UNREGISTERED-ASKS of the live agent's own program, its step's, else the launch's.

    A Codex step in a Claude Code launch is Codex (never taken to ask for want of a registry
    entry); a Claude Code step in a Codex launch is Claude Code.
    """
    place = _awaiting()
    phase = place.stage.phase
    assert isinstance(phase, AwaitingInput)
    edge = Instant(phase.since + STARTUP_GRACE_SECONDS)
    assert program_of(place) is AgentName.CLAUDE

    def own(place: Place, name: AgentName) -> Place:
        body = place.kind.body
        assert isinstance(body, Sequence)
        blocks = pvector(
            attrs.evolve(block, agent=StepAgent(agent=name))
            if isinstance(block, Step) and block.name == place.stage.name
            else block
            for block in body.blocks
        )
        kind = attrs.evolve(place.kind, body=attrs.evolve(body, blocks=blocks))
        return evolve(place, kind=kind)

    codex_step = own(place, AgentName.CODEX)
    assert program_of(codex_step) is AgentName.CODEX
    assert not unregistered_asks(codex_step, registered=False, now=Instant(edge + 100))
    claude_step = own(_with_agent(place, AgentName.CODEX), AgentName.CLAUDE)
    assert program_of(claude_step) is AgentName.CLAUDE
    assert unregistered_asks(claude_step, registered=False, now=edge)


def test_a_step_names_its_agent_and_model_and_keeps_only_its_own_flags() -> None:
    """agent_for: the launch's agent, with the step's program and model where it names them.

    Another program than the launch's takes none of the launch's flags: they are not its.
    """
    place = _awaiting()
    launch = place.launch
    place = evolve(
        place,
        launch=attrs.evolve(
            launch, agent=attrs.evolve(launch.agent, model="opus", flags=pvector(["--x"]))
        ),
    )
    code = stage_named(place.kind, place.stage.name)
    assert agent_for(place, code) == place.launch.agent
    same = attrs.evolve(code, agent=StepAgent(agent=AgentName.CLAUDE, model="haiku"))
    assert agent_for(place, same) == attrs.evolve(place.launch.agent, model="haiku")
    unnamed = attrs.evolve(code, agent=StepAgent(agent=AgentName.CLAUDE))
    assert agent_for(place, unnamed) == place.launch.agent
    other = attrs.evolve(code, agent=StepAgent(agent=AgentName.CODEX))
    started = agent_for(place, other)
    assert (started.agent, started.model, started.flags) == (AgentName.CODEX, None, pvector())
    assert started.panes is place.launch.agent.panes
