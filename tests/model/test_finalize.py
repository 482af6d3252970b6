"""Finalize: once the body is done, the run's branch is pushed and its PR opened, each once.

The run is the FakeWorld's place: one step that commits, then the kind's finalize. The world
stands in for the remote (``remote``, which may be down) and the PR command (``pr_ok``; each try
it ran, ``pr_runs``, as the shell's runner keeps it: a try started before a restart is waited
for, never run again). The machine restarts the shell at any point: the run replayed from its
journal, its pending actions performed again.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import settings as hypothesis_settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from pyrsistent import pvector

from flume.core.actions import Event, Land, OpenPR, Push, Report
from flume.core.errors import UsageError
from flume.core.ids import BranchName, KindName, Sha, StageName
from flume.core.kinds import Commit, Finalize, Kind, Sequence, Step, check_kind
from flume.core.observations import ChecksFailed, PROpened, Pushed, ResumeAsked, Tick
from flume.core.place import Finalizing, Life, PauseCause, Paused, Place
from flume.core.settings import Settings
from flume.core.status import status
from flume.core.step import pending, replay
from flume.core.workflow import finalize
from tests.model.world import FakeWorld

S = Settings()
SHA = Sha("0123456789abcdef0123456789abcdef01234567")
PR = pvector(["gh", "pr", "create", "--base", "{base}", "--head", "{branch}", "--title", "{title}"])


def shipped(finalize: Finalize) -> Kind:
    """One step that commits, then ``finalize``."""
    code = Step(name=StageName("code"), prompt="Build $brief; commit.", deliverable=Commit())
    return Kind(
        name=KindName("ship"),
        prefix="ship",
        body=Sequence(blocks=pvector([code])),
        finalize=finalize,
    )


def world_of(finalize: Finalize) -> FakeWorld:
    """A world that launched the kind; its step's agent started."""
    world = FakeWorld(settings=S, kind=shipped(finalize))
    assert world.launch() is None
    return world


def body_done(world: FakeWorld) -> None:
    """The step's agent commits and goes quiet: the step ends, the body is done."""
    assert world.deliver()
    assert world.commit() is None
    assert world.end_turn() is None
    world.now += S.quiet_seconds + 1
    world.feed(Tick(at=world.instant()))


def test_the_branch_is_pushed_then_the_pr_opened_and_the_run_finishes() -> None:
    """WF-FINALIZE-ONCE: a push, then the PR command, each once; status shows both."""
    world = world_of(Finalize(push="origin", pr=PR))
    body_done(world)
    place = world.place
    assert place is not None
    assert place.life is Life.FINISHED
    assert world.pushes == [(place.branch, place.head)]
    assert world.pr_runs == {1: True}
    (push,) = [a for a in world.actions if isinstance(a, Push)]
    assert (push.remote, push.branch) == ("origin", "ship/x")
    (opened,) = [a for a in world.actions if isinstance(a, OpenPR)]
    assert (opened.title, opened.base, list(opened.handoffs)) == (
        "Mend the greeting.",
        "main",
        ["code"],
    )
    view = status(place)
    assert (view.pushed, view.pr_url) == (place.head, "https://example.test/pr/1")
    texts = [r.text for r in world.reports_of(Event.PUSHED) + world.reports_of(Event.PR_OPENED)]
    assert texts == [
        f"ship/x pushed to origin at {place.head}",
        "the pull request for ship/x is open: https://example.test/pr/1",
    ]


def test_a_remote_gone_pauses_and_resume_pushes_once() -> None:
    """The remote gone: paused finalize-failed with git's words; restored, resume pushes once."""
    world = world_of(Finalize(push="origin"))
    world.remote_up = False
    body_done(world)
    place = world.place
    assert place is not None
    phase = place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.FINALIZE_FAILED
    assert "does not appear to be a git repository" in phase.words
    assert status(place).resolve == (
        "flume resume ship--x (once the remote or the pull request command is mended)"
    )
    assert world.pushes == []
    world.remote_up = True
    assert world.feed(ResumeAsked(at=world.instant())) is None
    assert world.place is not None
    assert world.place.life is Life.FINISHED
    assert len(world.pushes) == 1


def test_a_failed_pr_is_tried_anew_on_resume_and_the_push_is_not_made_again() -> None:
    """The PR command failed: paused; resumed, try 2 runs it, the push is not asked again."""
    world = world_of(Finalize(push="origin", pr=PR))
    world.pr_ok = False
    body_done(world)
    assert world.place is not None
    assert isinstance(world.place.stage.phase, Paused)
    world.pr_ok = True
    assert world.feed(ResumeAsked(at=world.instant())) is None
    assert world.place.life is Life.FINISHED
    assert world.pr_runs == {1: False, 2: True}
    assert len([a for a in world.actions if isinstance(a, Push)]) == 1


def test_a_restart_mid_finalize_asks_only_what_is_not_done() -> None:
    """Killed with the PR pending: the restarted shell asks for the PR alone, try 1 again."""
    world = world_of(Finalize(push="origin", pr=PR))
    body_done(world)
    assert world.place is not None
    # Replay the journal up to the push: the PR was asked for, and not yet seen opened.
    cut = next(
        index
        for index, (_b, _seen, d) in enumerate(world.steps)
        if any(isinstance(a, OpenPR) for a in d.actions)
    )
    before = replay(S, world.journal[: cut + 1])
    assert isinstance(before.stage.phase, Finalizing)
    (again,) = [a for a in pending(before) if isinstance(a, Push | OpenPR)]
    assert isinstance(again, OpenPR)
    assert again.attempt == 1


def test_land_lands_the_branch_and_a_failed_check_pauses() -> None:
    """``land = true``: the landers land it; checks failing pause, and resume lands again."""
    world = world_of(Finalize(land=True))
    body_done(world)
    assert world.place is not None
    assert isinstance(world.place.stage.phase, Finalizing)
    assert world.landing
    world.feed(ChecksFailed(at=world.instant(), reason="tests failed", output="1 failed"))
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.FINALIZE_FAILED
    assert "landing failed: tests failed" in phase.words
    assert world.feed(ResumeAsked(at=world.instant())) is None
    assert len([a for a in world.actions if isinstance(a, Land)]) == 2
    assert world.land() is None
    # Landed, the run finishes and is tidied, as a fix that landed is.
    assert world.place.life in {Life.FINISHED, Life.TIDIED}
    assert [r.text for r in world.reports_of(Event.FINISHED)] == ["ship--x finished"]
    assert world.place.landed_at is not None


def test_a_long_brief_gives_a_title_cut_to_72_characters() -> None:
    """The PR's title is the brief's first line that says something, cut to 72 characters."""
    from flume.core.place import _title  # noqa: PLC0415 (the one test of it)

    assert _title("\n  Fix the greeting  \nmore") == "Fix the greeting"
    long = _title("word " * 30)
    assert len(long) == 72
    assert long.endswith("…")


def test_a_finalize_word_out_of_its_time_changes_nothing() -> None:
    """A push or PR seen while the run is not finalizing (or of another branch) is no news."""
    from flume.core.observations import PROpened, Pushed  # noqa: PLC0415

    world = world_of(Finalize(push="origin", pr=PR))
    assert world.feed(Pushed(at=world.instant(), remote="origin", branch="ship/x")) is None
    assert world.feed(PROpened(at=world.instant(), url="https://x")) is None
    assert world.place is not None
    assert (world.place.pushed, world.place.pr_opened) == (None, False)
    assert [a for a in world.actions if isinstance(a, Push | OpenPR)] == []
    body_done(world)
    done = world.place
    assert done is not None
    assert done.life is Life.FINISHED
    assert world.feed(PROpened(at=world.instant(), url="https://y")) is None
    assert world.place is not None
    assert world.place.pr_url == "https://example.test/pr/1"


def landing_run() -> tuple[FakeWorld, Place]:
    """A run finalizing by landing: its body done, the landing asked and not yet seen."""
    world = world_of(Finalize(land=True))
    body_done(world)
    place = world.place
    assert place is not None
    assert isinstance(place.stage.phase, Finalizing)
    return world, place


def test_a_push_of_another_branch_while_finalizing_changes_nothing() -> None:
    """Only a push of the run's own branch counts: another branch's, at any head, is no news."""
    world, place = landing_run()
    other = Pushed(at=world.instant(), remote="origin", branch=BranchName("other"), head=SHA)
    assert finalize.on_pushed(place, other) == (place, ())


def test_a_push_of_the_runs_branch_before_its_body_is_done_changes_nothing() -> None:
    """A push seen while the body still runs, naming the run's branch and a head, is no news."""
    world = world_of(Finalize(push="origin", pr=PR))
    place = world.place
    assert place is not None
    seen = Pushed(at=world.instant(), remote="origin", branch=place.branch, head=SHA)
    assert finalize.on_pushed(place, seen) == (place, ())


def test_the_push_and_the_pr_are_reported_for_the_last_step_and_a_pr_without_url_says_so() -> None:
    """Each finalize report names the run's last step; a PR command that printed no URL says so."""
    world = world_of(Finalize(push="origin", pr=PR))
    world.pr_ok = False
    body_done(world)
    assert [r.stage for r in world.reports_of(Event.PUSHED)] == ["code"]
    world, place = landing_run()
    _, reports = finalize.on_pr_opened(place, PROpened(at=world.instant()))
    assert reports[0] == Report(
        event=Event.PR_OPENED,
        text="the pull request for ship/x is open: no URL printed",
        stage=StageName("code"),
    )


def test_a_lane_does_not_finalize_its_run_does() -> None:
    """WF-PUSH-ONLY-RUN-BRANCH: a lane's kind has no finalize; its place finishes, no push."""
    from flume.core.actions import LaunchLane  # noqa: PLC0415 (here alone)
    from flume.core.observations import Launched  # noqa: PLC0415
    from flume.core.step import step  # noqa: PLC0415
    from tests.model.test_lanes import sliced  # noqa: PLC0415

    kind = attrs.evolve(sliced(), finalize=Finalize(push="origin", pr=PR))
    world = FakeWorld(settings=S, kind=kind)
    assert world.launch() is None
    launches = [a for a in world.actions if isinstance(a, LaunchLane)]
    assert launches
    for launched in launches:
        assert launched.kind.finalize is None
        lane = step(
            S,
            None,
            Launched(
                at=world.instant(),
                launch=launched.launch,
                kind=launched.kind,
                start=launched.start,
                board=launched.board,
            ),
        ).place
        assert lane.kind.finalize is None


@pytest.mark.parametrize(
    ("finalize", "says"),
    [
        (Finalize(), "finalize sets nothing to do"),
        (Finalize(pr=PR), "a pull request needs the run's branch pushed first"),
        (Finalize(push="-o"), "'-o' is not a remote's name"),
        (Finalize(push="a..b"), "'a..b' is not a remote's name"),
        (Finalize(push="origin", pr=pvector(["gh", "{url}"])), "unknown field {url}"),
        (Finalize(push="origin", land=True), "both lands the branch and pushes it"),
    ],
)
def test_a_finalize_that_cannot_run_is_refused(finalize: Finalize, says: str) -> None:
    """Bad input: a finalize with nothing to do, no push for its PR, a bad remote or field."""
    with pytest.raises(UsageError, match=says):
        check_kind(shipped(finalize))


# --- the machine --------------------------------------------------------------------------------


class FinalizeMachine(RuleBasedStateMachine):
    """The body done, finalize under a remote and a PR command that fail and mend, restarted."""

    world: FakeWorld

    @initialize()
    def launch(self) -> None:
        """Launch the kind that pushes and opens a PR."""
        self.world = world_of(Finalize(push="origin", pr=PR))

    @precondition(lambda self: self.world.live_agent() is not None)
    @rule()
    def the_step_is_done(self) -> None:
        """The step's agent commits and goes quiet."""
        body_done(self.world)

    @rule()
    def the_remote_goes_down(self) -> None:
        """The remote stops answering (gone, renamed, the network down)."""
        self.world.remote_up = False

    @rule()
    def the_remote_is_mended(self) -> None:
        """A person mends the remote."""
        self.world.remote_up = True

    @rule()
    def the_pr_command_breaks(self) -> None:
        """The PR command will fail (no auth)."""
        self.world.pr_ok = False

    @rule()
    def the_pr_command_is_mended(self) -> None:
        """A person mends the PR command."""
        self.world.pr_ok = True

    @rule()
    def a_person_resumes(self) -> None:
        """``flume resume`` (refused unless a pause it resolves waits)."""
        self.world.feed(ResumeAsked(at=self.world.instant()))

    @rule()
    def the_shell_restarts(self) -> None:
        """SIGKILL: the run replayed from its journal, its pending actions performed again."""
        self.world.restart()

    @invariant()
    def each_act_once(self) -> None:
        """WF-FINALIZE-ONCE: never pushed twice, the PR opened at most once, nothing after done.

        The remote moved once at most; each try of the PR command ran once, and one succeeded
        at most; after the PR was seen opened, no push or PR is decided again.
        """
        assert len(self.world.pushes) <= 1
        assert sum(1 for ok in self.world.pr_runs.values() if ok) <= 1
        opened = False
        for _before, seen, decision in self.world.steps:
            if opened:
                assert not any(isinstance(a, Push | OpenPR) for a in decision.actions), seen
            place = decision.place
            opened = opened or place.pr_opened
        place = self.world.place
        assert place is not None
        if place.life is Life.FINISHED:
            assert place.pr_opened
            assert place.pushed == place.head

    @invariant()
    def push_only_the_run_branch(self) -> None:
        """WF-PUSH-ONLY-RUN-BRANCH: every push names the run's own branch, never the base."""
        place = self.world.place
        assert place is not None
        for action in self.world.actions:
            if isinstance(action, Push):
                assert action.branch == place.branch != place.launch.base
        for branch, _head in self.world.pushes:
            assert branch == place.branch

    @invariant()
    def never_failed_or_dropped(self) -> None:
        """A finalize that fails pauses, named; the run is never dropped or failed for it."""
        place = self.world.place
        assert place is not None
        assert place.life in {Life.ACTIVE, Life.FINISHED}
        if isinstance(place.stage.phase, Paused):
            assert place.stage.phase.cause is PauseCause.FINALIZE_FAILED


TestFinalizeMachine = FinalizeMachine.TestCase
TestFinalizeMachine.settings = hypothesis_settings(
    max_examples=60, stateful_step_count=25, deadline=None
)


def test_the_machine_reaches_finished_when_all_is_mended() -> None:
    """A plain path through the machine: done, pushed, opened, finished."""
    machine = FinalizeMachine()
    machine.launch()
    machine.the_step_is_done()
    machine.each_act_once()
    machine.push_only_the_run_branch()
    assert machine.world.place is not None
    assert machine.world.place.life is Life.FINISHED
    machine.teardown()
