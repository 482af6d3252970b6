"""The worst case a kind's caps allow (``flume launch --plan``), computed from its tree alone.

Theory of operation: a launch may ask what a kind could spend before it spends anything. Each
figure is the most the kind's declaration lets happen, read off the block tree and the budgets:

- agents at once: a step runs one agent; a sequence and a loop one block at a time; a parallel
  block its branches side by side, at most ``cap`` of them (the hungriest ``cap``);
- lanes: the main worktree and one per parallel branch (a branch's lane is named once, however
  often a loop around it passes);
- step runs: each step once per pass of every loop around it (``max`` passes each);
- attempts: each run tried at most ``1 + retries`` times, where a ``retries`` budget says;
- turns: the ``turns`` budget, or ``turns_per_attempt`` times the attempts, whichever is less;
- tokens and wall minutes: their budgets.

A figure no cap bounds is None ("no cap"), never a guess: a person's own retry always gets its
attempt (issue 13's decision), so nothing here counts those. Nothing here runs anything.
"""

from __future__ import annotations

from typing import assert_never

import attrs
from pyrsistent import pvector
from pyrsistent.typing import PVector

from flume.core.ids import KindName
from flume.core.kinds import Block, Kind, Loop, Orchestrate, Parallel, Sequence, Step


@attrs.frozen(kw_only=True)
class PlannedStep:
    """One step: its path in the tree and the most runs the loops around it allow."""

    #: The blocks from the kind's body down to the step, ``/``-joined (``review-loop/review``).
    path: str
    runs: int


@attrs.frozen(kw_only=True)
class WorstCase:
    """The worst case a kind's caps allow; None where no cap bounds a figure."""

    kind: KindName
    agents_at_once: int
    #: Worktrees the run may hold: the main one and one per parallel branch.
    lanes: int
    step_runs: int
    attempts: int | None
    turns: int | None
    tokens: int | None
    wall_minutes: int | None
    steps: PVector[PlannedStep] = attrs.field(factory=pvector)


def worst_case(kind: Kind) -> WorstCase:
    """The worst case ``kind``'s declaration allows (the kind is checked already)."""
    planned = pvector(_runs(kind.body, "", 1))
    step_runs = sum(each.runs for each in planned)
    budgets = kind.budgets
    attempts = None if budgets.retries is None else step_runs * (1 + budgets.retries)
    by_attempts = (
        None
        if attempts is None or budgets.turns_per_attempt is None
        else attempts * budgets.turns_per_attempt
    )
    bounds = [bound for bound in (budgets.turns, by_attempts) if bound is not None]
    return WorstCase(
        kind=kind.name,
        agents_at_once=_agents(kind.body),
        lanes=1 + _branches(kind.body),
        step_runs=step_runs,
        attempts=attempts,
        turns=min(bounds) if bounds else None,
        tokens=budgets.tokens,
        wall_minutes=budgets.wall_minutes,
        steps=planned,
    )


def _agents(block: Block) -> int:
    """The most agents ``block`` may run at once."""
    match block:
        case Step():
            return 1
        case Sequence(blocks=blocks):
            return max((_agents(inner) for inner in blocks), default=0)
        case Loop(body=body):
            return _agents(body)
        case Parallel(branches=branches, cap=cap):
            hungriest = sorted((_agents(inner) for inner in branches), reverse=True)
            return sum(hungriest if cap is None else hungriest[:cap])
        case Orchestrate(branches=branches, cap=cap, max=most, template=template):
            hungriest = sorted((_agents(inner) for inner in branches), reverse=True)
            hungriest += [1] * (most if template is not None else 0)
            return 1 + sum(hungriest if cap is None else hungriest[:cap])
        case _:
            assert_never(block)


def _branches(block: Block) -> int:
    """The parallel branches in ``block``'s tree, each a lane of its own."""
    match block:
        case Step():
            return 0
        case Sequence(blocks=inner):
            return sum(_branches(each) for each in inner)
        case Loop(body=body):
            return _branches(body)
        case Parallel(branches=inner):
            return len(inner) + sum(_branches(each) for each in inner)
        case Orchestrate(branches=inner, max=most, template=template):
            spawned = most if template is not None else 0
            return len(inner) + spawned + sum(_branches(each) for each in inner)
        case _:
            assert_never(block)


def _runs(block: Block, above: str, passes: int) -> list[PlannedStep]:
    """Each step of ``block`` with its most runs, ``passes`` being the loops' passes above it."""
    match block:
        case Step(name=name):
            return [PlannedStep(path=f"{above}{name}", runs=passes)]
        case Sequence(blocks=inner):
            return [found for each in inner for found in _runs(each, above, passes)]
        case Loop(name=name, body=body, max=most):
            return _runs(body, f"{above}{name}/", passes * most)
        case Parallel(name=name, branches=inner):
            return [found for each in inner for found in _runs(each, f"{above}{name}/", passes)]
        case Orchestrate(name=name, lead=lead, template=template, branches=inner, max=most):
            found = [PlannedStep(path=f"{above}{name}/{lead.name}", runs=passes)]
            if template is not None:
                found.append(PlannedStep(path=f"{above}{name}/{template.name}", runs=passes * most))
            return found + [
                each for branch in inner for each in _runs(branch, f"{above}{name}/", passes)
            ]
        case _:
            assert_never(block)
