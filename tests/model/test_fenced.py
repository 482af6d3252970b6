"""A run with sandboxed steps, in the core: what it fences, and what a sandboxed lead starts.

"Nothing the agent wrote runs outside" (docs/config.md, "Sandboxed steps"): a kind with a
sandboxed step is fenced, and its lanes and children keep that; a sandboxed lead's spawned
children and composed runs are sandboxed whatever their steps say, for they run its words; and
a fenced run's landing a person holds (LAND-HELD-FOR-A-PERSON) is asked again, once approved,
with the head they approved, at finalize as at a submit stage.
"""

from __future__ import annotations

import attrs
from pyrsistent import pset, pvector

from flume.core.actions import Land, LaunchLane
from flume.core.ids import BlockName, Instant, KindName, Sha, StageName
from flume.core.kinds import (
    Commit,
    Finalize,
    Kind,
    Orchestrate,
    Sequence,
    Step,
    Verdict,
    all_sandboxed,
    check_kind,
    has_sandbox,
    steps,
)
from flume.core.observations import ApproveAsked, ComposeSaid, LandingHeld, SpawnSaid
from flume.core.place import Finalizing, PauseCause, Paused, Submission
from flume.core.settings import Settings
from tests.model.world import FakeWorld

S = Settings()
CODE = Step(name=StageName("code"), prompt="Mend $brief; commit.", deliverable=Commit())
LEAD = Step(
    name=StageName("lead"),
    prompt="Spawn coders; when all are done, write $verdict.",
    deliverable=Verdict(),
    may=pset(["spawn", "compose"]),
    sandbox=True,
)
CODER = Step(name=StageName("coder"), prompt="Build: $goal. Commit.", deliverable=Commit())
DOCS = Kind(
    name=KindName("docs"),
    prefix="docs",
    body=Sequence(blocks=pvector([attrs.evolve(CODER, name=StageName("write"))])),
)


def crew(*, lead: Step = LEAD) -> Kind:
    """A sandboxed lead over unsandboxed coders, which may compose a run of its own."""
    block = Orchestrate(name=BlockName("build"), lead=lead, template=CODER, max=3, compose_runs=1)
    body = Sequence(blocks=pvector([block]))
    kind = Kind(name=KindName("crew"), prefix="crew", body=body, fenced=has_sandbox(body))
    check_kind(kind)
    return kind


def launched(world: FakeWorld) -> LaunchLane:
    """The last lane the world was asked to launch."""
    return [a for a in world.actions if isinstance(a, LaunchLane)][-1]


def test_a_kind_with_a_sandboxed_step_anywhere_is_fenced_and_all_sandboxed_fences_every_step() -> (
    None
):
    """``has_sandbox`` finds a sandboxed step in a lead; ``all_sandboxed`` sandboxes each step."""
    assert has_sandbox(crew().body)
    assert not has_sandbox(DOCS.body)
    every = all_sandboxed(crew(lead=attrs.evolve(LEAD, sandbox=False)))
    assert every.fenced
    assert all(found.sandbox for found in steps(every.body))


def test_a_sandboxed_lead_s_spawned_child_and_composed_run_are_sandboxed() -> None:
    """They run its words (a goal, a fragment): each step of theirs is sandboxed, and fenced."""
    world = FakeWorld(settings=S, kind=crew())
    assert world.launch() is None
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    assert world.feed(SpawnSaid(at=world.instant(), goal="the docs", session=agent.session)) is None
    child = launched(world)
    assert child.kind.fenced
    assert all(found.sandbox for found in steps(child.kind.body))
    composed = ComposeSaid(
        at=world.instant(), kind=DOCS, turns=3, tokens=100, session=agent.session
    )
    assert world.feed(composed) is None
    run = launched(world)
    assert run.kind.fenced
    assert all(found.sandbox for found in steps(run.kind.body))


def test_an_unsandboxed_lead_s_children_keep_their_steps_as_declared() -> None:
    """A lead that is not sandboxed spawns its template as it is."""
    world = FakeWorld(settings=S, kind=crew(lead=attrs.evolve(LEAD, sandbox=False)))
    assert world.launch() is None
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    assert world.feed(SpawnSaid(at=world.instant(), goal="the docs", session=agent.session)) is None
    child = launched(world)
    assert not child.kind.fenced
    assert not any(found.sandbox for found in steps(child.kind.body))


def test_a_finalize_landing_held_for_a_person_lands_the_approved_head_once_approved() -> None:
    """At finalize (no agent): held, paused to finish; approved, landed again, that head named."""
    kind = Kind(
        name=KindName("sb"),
        prefix="sb",
        body=Sequence(blocks=pvector([attrs.evolve(CODE, sandbox=True)])),
        finalize=Finalize(land=True),
        fenced=True,
    )
    world = FakeWorld(settings=S, kind=kind)
    assert world.launch() is None
    assert world.drive_stage()
    place = world.place
    assert place is not None
    assert isinstance(place.stage.phase, Finalizing)
    head = place.head
    assert head is not None
    assert world.feed(LandingHeld(at=world.instant(), head=head, files=[".flume.toml"])) is None
    place = world.place
    assert place is not None
    phase = place.stage.phase
    assert isinstance(phase, Paused)
    assert (phase.cause, phase.landing, phase.finish) == (PauseCause.APPROVAL, head, True)
    assert place.submission is Submission.HELD
    world.actions.clear()
    assert world.feed(ApproveAsked(at=world.instant())) is None
    (land,) = [a for a in world.actions if isinstance(a, Land)]
    assert land.reviewed == head
    assert world.place is not None
    assert world.place.submission is Submission.SUBMITTED


def test_a_held_landing_s_approval_is_not_an_approval_gate_s() -> None:
    """Approving a hold names the head approved; the stage does not pass as a gate would."""
    kind = Kind(
        name=KindName("sb"),
        prefix="sb",
        body=Sequence(blocks=pvector([attrs.evolve(CODE, sandbox=True)])),
        finalize=Finalize(land=True),
        fenced=True,
    )
    world = FakeWorld(settings=S, kind=kind)
    assert world.launch() is None
    assert world.drive_stage()
    assert world.feed(LandingHeld(at=Instant(99), head=Sha("ffff"), files=[".envrc"])) is None
    assert world.feed(ApproveAsked(at=world.instant())) is None
    assert world.place is not None
    assert world.place.reviewed == Sha("ffff")
