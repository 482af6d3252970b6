"""Restarts, model-checked: the shell dies at any point of a fix's life and comes back.

The world crashes after journaling an observation and performing some of the actions it
called for; whatever remained to do, and every observation of what was done, is lost, as in a
SIGKILL of the supervisor. A restart replays the journal and performs :func:`pending`, as the
supervisor does: one batch, in order, that a failed action ends.

The shell may also stay down (paused, slow, or dead) while the caller's commands reach the
journal: a launch dropped before any shell read it is first seen, launch and drop at once, by
the restart.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from flume.core.actions import Action, Land, SendPrompt
from flume.core.delivery import prompt_marker
from flume.core.observations import ActionFailed, Activity, DropAsked, RetryAsked, Tick, TidyAsked
from flume.core.place import Delivering, Life, Short, TidyNotWanted
from flume.core.settings import MAX_SENDS
from flume.core.step import pending, replay
from tests.model.world import FakeWorld, fix_world


def _active(machine: RestartMachine) -> bool:
    place = machine.world.place
    return not machine.down and place is not None and place.life is Life.ACTIVE


def _up(machine: RestartMachine) -> bool:
    return not machine.down


crash_points = st.tuples(st.integers(0, 6), st.integers(0, 4))


class RestartMachine(RuleBasedStateMachine):
    """A fix carried to its landing and tidied while the shell keeps dying."""

    @initialize(setup=st.booleans(), crash=st.none() | crash_points, down=st.booleans())
    def launch(self, setup: bool, crash: tuple[int, int] | None, down: bool) -> None:
        """Launch a fix, perhaps dying on the way; ``down``: no shell reads the launch yet."""
        self.world: FakeWorld = fix_world()
        #: What each restart asked for again.
        self.restarts: list[tuple[Action, ...]] = []
        #: The shell is down (paused, slow, dead): callers' commands are journaled, not read.
        self.down = down
        self.world.setup = (("make", "ready"),) if setup else ()
        self.world.crash = (0, 0) if down else crash
        assert self.world.launch() is None
        # A crash point past the launch's last observation never comes: it must not linger
        # into a later feed that no restart follows.
        self.world.crash = None
        self._restart_if_crashed()

    def _restart_if_crashed(self) -> None:
        """Replay and perform what is pending, as one batch that a failed action ends."""
        world = self.world
        if not self.down and world.crash is None and world.crashes > len(self.restarts):
            place = replay(world.settings, world.journal)
            assert place == world.place
            redo = pending(place)
            self.restarts.append(redo)
            for action in redo:
                world.actions.append(action)
                observed = world.perform(action)
                for seen in observed:
                    assert world.feed(seen) is None
                if any(isinstance(seen, ActionFailed) for seen in observed):
                    break

    @precondition(lambda self: self.down)
    @rule()
    def restart(self) -> None:
        """The shell comes back (resumed, or started again) and reads the journal anew."""
        self.down = False
        self._restart_if_crashed()

    @precondition(_active)
    @rule(crash=st.none() | crash_points)
    def drive_stage(self, crash: tuple[int, int] | None) -> None:
        """The live agent does its stage's work; the shell may die while it is followed."""
        self.world.crash = crash
        self.world.drive_stage()
        self.world.crash = None
        self._restart_if_crashed()

    @precondition(_up)
    @rule(crash=st.none() | crash_points)
    def time_passes(self, crash: tuple[int, int] | None) -> None:
        """Time passes: deadlines send again what a crash lost."""
        self.world.now += self.world.settings.confirm_seconds + 1
        self.world.crash = crash
        self.world.watch_panes()
        self.world.feed(Tick(at=self.world.instant()))
        self.world.crash = None
        self._restart_if_crashed()

    @precondition(_up)
    @rule(crash=st.none() | crash_points)
    def read_printed_file(self, crash: tuple[int, int] | None) -> None:
        """DELIVERY-UNWRITTEN-NOW: a send the mark shows never made is made, with no time passing.

        The shell reads a printed agent's file (the pane's own mark) at once, no deadline
        passed: once it has, a live agent that is not busy or asking has the current send in
        its pane, whatever a crash lost before; it is never made twice (each_send_typed_once).
        """
        world = self.world
        world.crash = crash
        world.read_printed()
        world.crash = None
        self._restart_if_crashed()
        if crash is not None or world.crashes > len(self.restarts):
            return
        place, agent = world.place, world.live_agent()
        if (
            place is None
            or agent is None
            or place.life is not Life.ACTIVE
            or place.agent is None
            or place.agent.session != agent.session
            or place.agent.ending
            or place.agent.activity in {Activity.WORKING, Activity.ASKING}
            or not isinstance(place.stage.phase, Delivering)
            or (place.stage.phase.retyped and not place.stage.phase.typed)
        ):
            return  # a retype a crash lost waits for its window: typed once more at most once
        assert place.stage.phase.typed, place.stage.phase
        assert agent.typed == (prompt_marker(place), place.stage.sends), agent.typed

    @precondition(lambda self: self.world.place is not None)
    @rule(crash=st.none() | crash_points)
    def drop(self, crash: tuple[int, int] | None) -> None:
        """The caller drops the work (journaled only, while the shell is down)."""
        if self.down:
            self.world.record(DropAsked(at=self.world.instant()))
            return
        self.world.crash = crash
        self.world.feed(DropAsked(at=self.world.instant()))
        self.world.crash = None
        self._restart_if_crashed()

    @rule(force=st.booleans(), crash=st.none() | crash_points)
    def tidy(self, force: bool, crash: tuple[int, int] | None) -> None:
        """The caller asks for a tidy (journaled only, while the shell is down)."""
        if self.down:
            self.world.record(TidyAsked(at=self.world.instant(), force=force))
            return
        self.world.crash = crash
        self.world.feed(TidyAsked(at=self.world.instant(), force=force))
        self.world.crash = None
        self._restart_if_crashed()

    def teardown(self) -> None:
        """RESTART-CARRIES-ON: whatever crashes came before, the work reaches its end.

        With the shell alive from here on, the fix lands and is tidied (or, dropped, is
        tidied): nothing a crash lost is left waiting forever. A place dropped before it was
        seen made is tidied with nothing removed, and its name is free
        again: no worktree stands at its path and no branch holds its name.
        """
        if self.down:
            self.restart()
        world = self.world
        for _turn in range(12):
            place = world.place
            assert place is not None
            if place.life is Life.TIDIED:
                break
            if place.life is Life.ACTIVE and isinstance(place.stage.phase, Short):
                assert world.feed(RetryAsked(at=world.instant())) is None
            elif place.life is Life.ACTIVE:
                world.now += world.settings.confirm_seconds + 1
                world.watch_panes()
                world.feed(Tick(at=world.instant()))
                world.drive_stage()
            else:
                assert world.feed(TidyAsked(at=world.instant())) is None
        assert world.place is not None
        assert world.place.life is Life.TIDIED, world.place
        if not world.made_by_flume:
            assert not world.removed, world.removed
            assert world.place.path not in world.worktrees
            assert world.place.branch not in world.git.branches

    @invariant()
    def nothing_done_twice_and_nothing_left_waiting(self) -> None:
        """RESTART-PENDING: after a restart, what the place waits for is asked for again, once.

        With the world still, nothing is pending but a landing the lander has yet to answer;
        no worktree was ever made twice (a second make would fail); no stage attempt ever had
        two agents; and the journal replays to the place.
        """
        world = self.world
        place = world.place
        assert place is not None
        assert replay(world.settings, world.journal) == place
        if not self.down:
            outstanding = pending(place)
            assert all(isinstance(action, Land) for action in outstanding), outstanding
            assert not any(isinstance(a, Land) for a in outstanding) or world.landing
        assert len(world.made_by_flume) <= 1
        assert not any(isinstance(seen, ActionFailed) for seen in world.journal)
        assert sum(1 for agent in world.agents.values() if agent.live) <= 1
        sessions = Counter((agent.stage, agent.attempt) for agent in world.agents.values())
        assert all(count == 1 for count in sessions.values()), sessions

    @invariant()
    def each_send_typed_once(self) -> None:
        """DELIVERY-RETYPE-UNTYPED: a send a crash left untyped is typed, never one typed twice.

        Whatever crashes lose, every agent's pane was given each send of its prompt at most
        once and at most two in all: a send is typed again only when the pane never showed it.
        (That a lost send is typed at all, the teardown shows: the fix still lands.)
        """
        for agent in self.world.agents.values():
            numbers = [sent.send for sent in agent.sends if isinstance(sent, SendPrompt)]
            assert len(numbers) == len(set(numbers)), numbers
            assert len(numbers) <= MAX_SENDS, numbers


TestRestart = RestartMachine.TestCase


def test_a_launch_dropped_before_the_shell_read_it_is_tidied() -> None:
    """A launch and its drop read at once, the worktree never made: tidied, nothing removed.

    The interleaving of a supervisor paused between a launch and its worktree: the restart's
    one batch looks for the worktree (made before a crash?) and then gathers tidy's facts; the
    look finding nothing must not end the batch, or tidy waits for ever on facts never gathered.
    """
    machine = RestartMachine()
    machine.launch(setup=False, crash=None, down=True)
    machine.drop(crash=None)
    machine.restart()
    machine.nothing_done_twice_and_nothing_left_waiting()
    place = machine.world.place
    assert place is not None
    assert place.life is Life.TIDIED, place
    assert place.tidy == TidyNotWanted()
    machine.teardown()
