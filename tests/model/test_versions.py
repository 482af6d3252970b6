"""A journal folded under a changed definition: the first decision that differs, or the same.

Example tests of :mod:`flume.core.workflow.versions`, on journals the FakeWorld makes of a
workflow's run (plan, a review loop, an approval); the rules themselves are named by the workflow
machine's ``definition_edited`` rule and ``kind_frozen_at_launch`` invariant (tests/model/
test_workflow_run.py).
"""

from __future__ import annotations

import attrs
import pytest
from pyrsistent import pmap, pvector

from flume.core.actions import SendPrompt
from flume.core.errors import Problem, UsageError
from flume.core.ids import BlockName, KindName, PlaceName, StageName
from flume.core.kinds import Budgets, Commit, Join, Kind, Parallel, Sequence, Step, Verdict
from flume.core.observations import Launched, Tick
from flume.core.settings import Settings
from flume.core.workflow.versions import Decided, Difference, compare, differences, relaunched
from tests.model.test_workflow_run import review, reviewed, through_plan, world_of

S = Settings()


def _launched(journal: list[object]) -> Launched:
    launched = journal[0]
    assert isinstance(launched, Launched)
    return launched


def test_a_journal_under_its_own_definition_is_the_same() -> None:
    """Every decision the same, counted over the whole journal, the launch among them."""
    world = world_of(reviewed())
    through_plan(world)
    review(world, "revise")
    compared = compare(S, world.journal, reviewed())
    assert compared.first is None
    assert compared.observations == len(world.journal)


def test_an_edited_prompt_differs_first_where_it_is_sent() -> None:
    """Under a reworded fix prompt: the step that sent fix its prompt, its text alone differing."""
    world = world_of(reviewed())
    through_plan(world)
    review(world, "revise")
    world.deliver()
    edited = reviewed(fix_prompt="Mend every finding; commit.")
    first = compare(S, world.journal, edited).first
    assert first is not None
    sent = next(
        index
        for index, (_before, _seen, decision) in enumerate(world.steps)
        if any(isinstance(a, SendPrompt) and a.stage == "fix" for a in decision.actions)
    )
    assert first.index == sent
    assert first.seen == world.journal[sent]
    assert first.journaled.actions == world.steps[sent][2].actions
    (difference,) = first.differences
    assert difference.path.startswith("actions[")
    assert difference.path.endswith("].text")
    assert isinstance(difference.changed, str)
    assert difference.changed.startswith("Mend every finding; commit.")


def test_a_definition_the_rules_refuse_differs_at_the_launch() -> None:
    """A verdict gate where the launch names no board: the changed launch is refused."""
    world = world_of(reviewed())
    plain = attrs.evolve(
        reviewed(),
        body=Sequence(
            blocks=pvector(
                [Step(name=StageName("plan"), prompt="Plan $brief.", deliverable=Commit())]
            )
        ),
    )
    journal = [attrs.evolve(_launched(world.journal), board="", kind=plain)]
    assert compare(S, journal, plain).first is None
    found = compare(S, journal, reviewed()).first
    assert found is not None
    assert found.index == 0
    assert found.journaled.actions
    assert not found.changed.actions
    (problem,) = found.changed.refused
    assert "no blackboard" in problem.what
    assert found.differences[0].path == "actions[0]"
    assert found.differences[-1].path == "refused[0]"


def test_the_changed_kind_takes_the_journal_s_name_and_keeps_its_own_prefix() -> None:
    """A rename is folded under the journal's name; its prefix names its branch."""
    world = world_of(reviewed())
    renamed = attrs.evolve(reviewed(), name=KindName("checked"), prefix="checked")
    assert relaunched(_launched(world.journal), renamed).kind.name == "reviewed"
    first = compare(S, world.journal, renamed).first
    assert first is not None
    assert first.index == 0
    assert "actions[1].branch" in [each.path for each in first.differences]
    same_prefix = attrs.evolve(renamed, prefix="reviewed")
    assert compare(S, world.journal, same_prefix).first is None


def _parallel_kind(prompt: str) -> Kind:
    lane = Step(name=StageName("slice-a"), prompt=prompt, deliverable=Commit())
    other = Step(name=StageName("slice-b"), prompt="Build slice b.", deliverable=Commit())
    block = Parallel(
        name=BlockName("slices"), branches=pvector([lane, other]), join=Join.ALL, cap=2
    )
    return Kind(
        name=KindName("sliced"),
        prefix="sliced",
        body=Sequence(blocks=pvector([block])),
        budgets=Budgets(turns=10),
    )


def test_a_lane_s_journal_takes_the_file_s_block_for_its_lane_under_its_own_budgets() -> None:
    """A lane's launch: the changed kind's branch of that name, the lane's budgets as launched."""
    world = world_of(reviewed())
    launched = _launched(world.journal)
    old = _parallel_kind("Build slice a.")
    lane = attrs.evolve(
        launched,
        launch=attrs.evolve(launched.launch, parent=PlaceName("sliced--x"), lane="slice-a"),
        kind=attrs.evolve(old, body=old.body.blocks[0].branches[0], budgets=Budgets(turns=4)),
    )
    new = _parallel_kind("Build slice a, with tests.")
    changed = relaunched(lane, new).kind
    assert changed.body == new.body.blocks[0].branches[0]
    assert changed.budgets == Budgets(turns=4)
    assert changed.name == old.name
    unnamed = attrs.evolve(lane, launch=attrs.evolve(lane.launch, lane="slice-c"))
    with pytest.raises(UsageError) as refused:
        relaunched(unnamed, new)
    assert refused.value.problems == (
        Problem(
            field="kind",
            what="kind sliced has no parallel with a lane slice-c, which this journal's place is "
            "(a lane of sliced--x)",
            mend="compare the run's journal, sliced--x's, whose LaunchLane actions carry each "
            "lane's kind",
        ),
    )
    # A launch with a parent but no lane is no lane's: it takes the changed kind whole.
    laneless = attrs.evolve(lane, launch=attrs.evolve(lane.launch, lane=""))
    assert relaunched(laneless, new).kind == attrs.evolve(new, name=old.name)


def test_a_journal_that_does_not_start_with_its_launch_is_refused() -> None:
    """Nothing to fold the changed kind into: a usage error naming the journal and its mend."""
    with pytest.raises(UsageError) as refused:
        compare(S, [Tick(at=S.quiet_seconds)], reviewed())  # type: ignore[arg-type]
    assert refused.value.problems == (
        Problem(
            field="journal", what="does not start with its launch", mend="name a place's journal"
        ),
    )


def test_differences_name_each_field_deepest_first() -> None:
    """Records by field, named tuples by name, sequences by item, mappings by key, leaves whole."""
    one = Problem(field="a", what="b", mend="c")
    assert differences(one, one._replace(what="B")) == (
        Difference(path="what", journaled="b", changed="B"),
    )
    assert differences((1, 2), (1, 3, 4)) == (
        Difference(path="[1]", journaled=2, changed=3),
        Difference(path="[2]", journaled=None, changed=4),
    )
    assert differences(pmap({"a": 1}), pmap({"a": 2, "b": 3}), "x") == (
        Difference(path="x['a']", journaled=1, changed=2),
        Difference(path="x['b']", journaled=None, changed=3),
    )
    # Keys of mixed types are taken in one order, that of their repr ('b' before 1).
    assert differences(pmap({1: "a", "b": 2}), pmap({1: "c", "b": 3})) == (
        Difference(path="['b']", journaled=2, changed=3),
        Difference(path="[1]", journaled="a", changed="c"),
    )
    assert differences("ab", "ac") == (Difference(path="", journaled="ab", changed="ac"),)
    assert differences(1, "1") == (Difference(path="", journaled=1, changed="1"),)
    verdict = Step(name=StageName("s"), prompt="p", deliverable=Verdict())
    assert differences(verdict, attrs.evolve(verdict, deliverable=Commit())) == (
        Difference(path="deliverable", journaled=Verdict(), changed=Commit()),
    )
    assert differences(Decided(), Decided()) == ()
