"""Workflow kinds as the core declares them: Loop and Parallel blocks, gates, budgets, the plan.

The core checks a kind's tree (every block named once, a loop's until a verdict-gated step of
its body, whole counts of at least 1, no join first with merge, plain artifact paths, at most 32
safe lanes, known prompt fields), and computes the worst case the caps allow. These are checks
of a declaration, as the existing kind checks are.
"""

from __future__ import annotations

import gc
import weakref

import attrs
import pytest
from pyrsistent import pmap, pset, pvector

from flume.core.errors import UsageError
from flume.core.ids import BlockName, Instant, KindName, StageName
from flume.core.kinds import (
    BUILTIN_KINDS,
    IDENTITY_CACHE_SIZE,
    Approval,
    Artifact,
    Block,
    Budgets,
    Commit,
    Join,
    Kind,
    Landing,
    Loop,
    Merge,
    Orchestrate,
    Parallel,
    PassingTests,
    ReportFile,
    Sequence,
    Step,
    Verdict,
    block_name,
    by_identity,
    check_kind,
    describe_deliverable,
    first_stage,
    kind_flaws,
    next_stage,
    steps,
    with_prompts,
)
from flume.core.launch import check_launch
from flume.core.observations import Launched
from flume.core.place import has_deliverable
from flume.core.settings import Settings
from flume.core.step import step
from flume.core.workflow.caps import worst_case
from tests.model.test_rules import launch


def _step(name: str, gate: object = None, prompt: str = "Do $brief.") -> Step:
    return Step(
        name=StageName(name),
        prompt=prompt,
        deliverable=Commit() if gate is None else gate,  # type: ignore[arg-type]
    )


def _seq(*blocks: Block) -> Sequence:
    return Sequence(blocks=pvector(blocks))


def _loop(name: str, *body: Block, until: str = "review", most: int = 3) -> Loop:
    return Loop(name=BlockName(name), body=_seq(*body), until=StageName(until), max=most)


def _par(name: str, *branches: Block, **given: object) -> Parallel:
    return Parallel(name=BlockName(name), branches=pvector(branches), **given)  # type: ignore[arg-type]


def _kind(*body: Block, budgets: Budgets | None = None) -> Kind:
    return Kind(
        name=KindName("feature"),
        prefix="feature",
        body=_seq(*body),
        budgets=budgets or Budgets(),
    )


#: The issue's example, as the core holds it.
FEATURE = _kind(
    _step("plan", Artifact(path="PLAN.md")),
    _par("slices", _step("slice-a"), _step("slice-b", PassingTests()), cap=2),
    _loop("review-loop", _step("review", Verdict(), "Write $verdict."), _step("fix")),
    budgets=Budgets(turns=100, wall_minutes=480, turns_per_attempt=10, retries=2, tokens=2_000_000),
)


def _says(kind: Kind) -> str:
    return "\n".join(f"{f.block}/{f.key}: {f.problem.render()}" for f in kind_flaws(kind))


def test_the_example_is_sound_and_its_steps_run_in_declared_order() -> None:
    """The example passes its checks; its steps are walked loops and branches included."""
    check_kind(FEATURE)
    names = [found.name for found in steps(FEATURE.body)]
    assert names == ["plan", "slice-a", "slice-b", "review", "fix"]
    assert first_stage(FEATURE).name == "plan"
    assert next_stage(FEATURE, StageName("fix")) is None
    assert block_name(FEATURE.body) is None
    assert block_name(FEATURE.body.blocks[1]) == "slices"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        (_kind(_loop("review-loop", _step("review", Verdict()), most=0)), "None/max" and "max = 0"),
        (_kind(_loop("l", _step("review", Verdict()), most=True)), "max = True"),
        (_kind(_loop("l", _step("review", Verdict()), until="nobody")), "'nobody', which is not"),
        (_kind(_loop("l", _step("review"))), "whose gate is not verdict"),
        (
            _kind(_loop("l", _step("review"), _step("judge", Verdict()))),
            "name a verdict-gated step of the loop: judge",
        ),
        (_kind(_par("p", _step("a"), cap=0)), "cap = 0 is not"),
        (_kind(_par("p", _step("a"), join=Join.FIRST)), 'join = "first" ends the other lanes'),
        (_kind(_par("p")), "the parallel has no branch"),
        (_kind(_par("p", _seq(_step("a")))), "an unnamed sequence, which names no lane"),
        (_kind(_par("p", _par("A+b", _step("x")))), "(no '+', which joins a lane to the work"),
        (_kind(_par("P", _step("a"))), "'P' is not a name flume takes"),
        (_kind(_step("p"), _par("p", _step("a"))), "the name p is given to two blocks"),
        (
            _kind(*(_par(f"p{n}", *(_step(f"s{n}-{m}") for m in range(11))) for n in range(3))),
            "hold 33 lanes, over 32",
        ),
        (_kind(_step("a", Artifact(path="/abs"))), "artifact path '/abs' is not a plain path"),
        (_kind(_step("a", Artifact(path="x/../y"))), "artifact path 'x/../y'"),
        (_kind(_step("a", ReportFile(path=""))), "report path '' is not a plain path"),
        (_kind(_step("a", prompt="See $boardz.")), "unknown field $boardz (did you mean 'board'?)"),
        (_kind(_step("a"), budgets=Budgets(turns=0)), "budget turns = 0 is not"),
        (_kind(_step("a"), budgets=Budgets(tokens=True)), "budget tokens = True is not"),
    ],
)
def test_a_bad_workflow_declaration_is_named_with_its_block(kind: Kind, says: str) -> None:
    """Each flaw of a loop, parallel, gate, prompt or budget is named, with how to mend it."""
    assert says in _says(kind)
    with pytest.raises(UsageError):
        check_kind(kind)


def test_a_flaw_names_the_block_and_key_it_lies_in() -> None:
    """A file's reader finds the line from the flaw's block and key."""
    (flaw,) = kind_flaws(_kind(_loop("rl", _step("review", Verdict()), most=0)))
    assert (flaw.block, flaw.key) == ("rl", "max")
    (flaw,) = kind_flaws(_kind(_step("a"), budgets=Budgets(retries=0)))
    assert (flaw.block, flaw.key) == (None, "budgets")


def test_the_workflow_prompt_fields_are_known() -> None:
    """$board $handoff $verdict $pass $max $position pass the kind's checks."""
    prompt = "$board $handoff $verdict $pass $max $position"
    check_kind(_kind(_step("a", prompt=prompt)))


def test_a_launch_of_a_kind_with_parallels_passes_its_checks() -> None:
    """Lanes run now: the example with its slices is launched like any kind; unsound is not."""
    asked = launch(kind=FEATURE.name)
    check_launch(asked, FEATURE)
    with pytest.raises(UsageError) as unsound:
        check_launch(asked, _kind(_loop("l", _step("review"))))
    assert "whose gate is not verdict" in str(unsound.value)


def test_gates_read_in_words() -> None:
    """Every gate has its words, for prompts, status and messages."""
    assert describe_deliverable(Verdict()) == "its verdict, marked done"
    assert describe_deliverable(Artifact(path="PLAN.md")) == "the file PLAN.md"
    assert describe_deliverable(PassingTests()) == "the repository's tests passing"
    assert describe_deliverable(Approval()) == "the caller's approval"
    assert describe_deliverable(Landing()) == "the landing on its base"


def test_a_workflow_gate_is_never_a_deliverable_this_flume_judges() -> None:
    """A stage gated on a workflow gate never counts as delivered on evidence.

    Its turn's end judges it (workflow/gates.py); the place is made by hand with such a stage.
    """
    fix = BUILTIN_KINDS[KindName("fix")]
    made = step(Settings(), None, Launched(at=Instant(0), launch=launch(), kind=fix)).place
    for gate in (Verdict(), Artifact(path="x"), PassingTests(), Approval()):
        kind = _kind(_step("code", gate))
        assert not has_deliverable(attrs.evolve(made, kind=kind))


def test_prompt_overrides_reach_steps_in_loops_and_parallels() -> None:
    """A repository's prompt override replaces a step's prompt wherever it sits in the tree."""
    replaced = with_prompts(
        FEATURE, pmap({StageName("fix"): "Mend $brief.", StageName("slice-b"): "Slice $brief."})
    )
    prompts = {found.name: found.prompt for found in steps(replaced.body)}
    assert prompts["fix"] == "Mend $brief."
    assert prompts["slice-b"] == "Slice $brief."
    assert prompts["plan"] == "Do $brief."


def test_the_worst_case_of_the_example() -> None:
    """9 step runs, 27 attempts, turns held to 100, two agents at once, three lanes."""
    worst = worst_case(FEATURE)
    assert (worst.agents_at_once, worst.lanes, worst.step_runs, worst.attempts) == (2, 3, 9, 27)
    assert (worst.turns, worst.tokens, worst.wall_minutes) == (100, 2_000_000, 480)
    assert [(each.path, each.runs) for each in worst.steps][-1] == ("review-loop/fix", 3)


def test_the_worst_case_follows_caps_nesting_and_missing_budgets() -> None:
    """The hungriest `cap` branches at once; loops multiply; an unbounded figure is None."""
    nested = _kind(
        _loop(
            "outer",
            _par(
                "fan",
                _par("wide", _step("w1"), _step("w2"), _step("w3")),
                _step("solo"),
                Merge.NONE and _step("review", Verdict()),
                cap=2,
            ),
            most=2,
        ),
        budgets=Budgets(turns_per_attempt=5, retries=0),
    )
    worst = worst_case(nested)
    assert worst.agents_at_once == 3 + 1
    assert worst.lanes == 1 + 3 + 3
    assert worst.step_runs == 5 * 2
    assert (worst.attempts, worst.turns, worst.tokens) == (10, 50, None)
    assert worst.steps[0].path == "outer/fan/wide/w1"
    bare = worst_case(_kind(_step("a"), _loop("l", _step("review", Verdict()), most=4)))
    assert (bare.agents_at_once, bare.lanes, bare.step_runs) == (1, 1, 5)
    assert (bare.attempts, bare.turns, bare.wall_minutes) == (None, None, None)
    turns_only = worst_case(_kind(_step("a"), budgets=Budgets(turns=7)))
    assert turns_only.turns == 7
    assert worst_case(_kind(_par("p", _step("a"), _step("b")))).agents_at_once == 2
    empty = Kind(name=KindName("e"), prefix="e", body=_seq())
    assert worst_case(empty).agents_at_once == 0


def _crew(*branches: Block, spawns: int = 0, cap: int | None = None) -> Kind:
    """A kind of one orchestrate block: a lead, ``branches``, and ``spawns`` coders at most."""
    lead = Step(
        name=StageName("lead"),
        prompt="Lead; write $verdict.",
        deliverable=Verdict(),
        may=pset(["spawn"] if spawns else []),
    )
    block = Orchestrate(
        name=BlockName("build"),
        lead=lead,
        template=_step("coder") if spawns else None,
        max=spawns,
        branches=pvector(branches),
        cap=cap,
    )
    kind = _kind(block)
    check_kind(kind)
    return kind


def test_the_worst_case_of_an_orchestrate_block_counts_its_lead_and_its_hungriest_children() -> (
    None
):
    """The lead, then the hungriest ``cap`` children (spawned ones one agent each); lanes nest."""
    wide = _par("wide", _step("w1"), _step("w2"), _step("w3"))
    capped = worst_case(_crew(_step("docs"), wide, spawns=2, cap=1))
    # Children of 1 (docs), 3 (wide), 1 and 1 (spawns): the hungriest, wide, beside the lead.
    assert capped.agents_at_once == 1 + 3
    # The main worktree; docs, wide and two spawns; wide's three lanes.
    assert capped.lanes == 1 + 4 + 3
    every = worst_case(_crew(_step("docs"), wide, spawns=2))
    assert (every.agents_at_once, every.lanes) == (1 + 1 + 3 + 2, 1 + 4 + 3)
    # With no template, the lead spawns nothing, whatever its max says.
    unspawned = _crew(_step("docs"), wide)
    body = unspawned.body.blocks[0]
    assert isinstance(body, Orchestrate)
    many = attrs.evolve(unspawned, body=_seq(attrs.evolve(body, max=3)))
    check_kind(many)
    for kind in (unspawned, many):
        planned = worst_case(kind)
        assert (planned.agents_at_once, planned.lanes) == (1 + 1 + 3, 1 + 2 + 3)


def _one_step(number: int) -> Sequence:
    return Sequence(
        blocks=pvector([Step(name=StageName(f"s{number}"), prompt="Do.", deliverable=Commit())])
    )


def test_a_tree_is_asked_about_by_identity_and_forgotten_past_the_cache_size() -> None:
    """A kind's tree is remembered by identity, within a bound.

    by_identity computes once per object (an equal tree decoded afresh is its own), answers
    rightly, and holds no tree past IDENTITY_CACHE_SIZE others.
    """
    computed: list[int] = []

    @by_identity
    def size(block: Sequence) -> int:
        computed.append(1)
        return len(block.blocks)

    first, twin = _one_step(0), _one_step(0)
    assert first == twin
    assert first is not twin
    assert size(first) == size(first) == 1
    assert len(computed) == 1
    assert size(twin) == 1
    assert len(computed) == 2
    probe = weakref.ref(first)
    del first
    for number in range(1, IDENTITY_CACHE_SIZE + 1):
        assert size(_one_step(number)) == 1
    gc.collect()
    assert probe() is None
    assert steps(twin) == steps(_one_step(0)) == (twin.blocks[0],)
