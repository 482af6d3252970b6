"""Where a run stands in its kind's block tree, and where it goes when a step ends.

Theory of operation: a place runs one step at a time, or stands at a parallel block while its lanes
(places of their own, :mod:`flume.core.workflow.lanes`) run its branches. Which step or parallel, in
which pass of each loop around it, is a :class:`Position`; its :func:`key` addresses the attempt
(``review-loop@2/review``), in markers, completed stages and status. A step of no loop has its name
as its key, so a kind of Steps in a Sequence keys, marks and journals its stages exactly as before
loops existed.

:func:`advance` is the one pure function that moves a run: given the body, the position of the
step that just passed its gate and whether its verdict said ``done``, it returns the position
of the next step, or that the body is finished, with every loop that ran out of passes on the
way. The rules:

- WF-LOOP-EXITS-ON-DONE: the loop's ``until`` step passing with ``done`` leaves the loop at once:
  the rest of its body does not run in that pass.
- WF-LOOP-CAP: a loop's body runs at most ``max`` passes; one that ends pass ``max`` without
  ``done`` ends (``loop-max``) and the run goes on after it, or, ``on_max = "pause"``, the run
  pauses there (its next position is kept, to go on from when resumed).
"""

from __future__ import annotations

from typing import assert_never

import attrs

from flume.core.ids import BlockName, StageName
from flume.core.kinds import (
    Block,
    Loop,
    OnMax,
    Orchestrate,
    Parallel,
    Sequence,
    Step,
    parallels,
    steps,
)


@attrs.frozen(kw_only=True)
class Pass:
    """Pass ``number`` (from 1) of the loop ``loop``."""

    loop: BlockName
    number: int


@attrs.frozen(kw_only=True)
class Position:
    """A step, and the pass of each loop around it, outermost first."""

    step: StageName
    passes: tuple[Pass, ...] = ()


def key(position: Position) -> str:
    """The attempt's address: each loop's ``name@pass``, then the step, joined by ``/``."""
    return "/".join((*(f"{each.loop}@{each.number}" for each in position.passes), position.step))


@attrs.frozen(kw_only=True)
class LoopMax:
    """A loop ended ``max`` passes without its ``until`` step's ``done``."""

    loop: BlockName
    passes: int
    pause: bool


@attrs.frozen(kw_only=True)
class Advanced:
    """Where the run goes after a step passed.

    ``position``: the next step; None: the body is finished. ``maxed``: the loops that ran out
    of passes on the way, in the order they ended. A loop that pauses on its max stops the
    advance there: ``position`` is where the run goes on when resumed.
    """

    position: Position | None
    maxed: tuple[LoopMax, ...] = ()

    @property
    def pauses(self) -> LoopMax | None:
        """The loop whose max pauses the run, if one does."""
        return next((each for each in self.maxed if each.pause), None)


def first(block: Block, passes: tuple[Pass, ...] = ()) -> Position:
    """The first step ``block`` runs, every loop it enters in its first pass."""
    match block:
        case Step(name=name):
            return Position(step=name, passes=passes)
        case Sequence(blocks=blocks):
            return first(blocks[0], passes)
        case Loop(name=name, body=body):
            return first(body, (*passes, Pass(loop=name, number=1)))
        case Parallel(name=name):
            # The run stands at the block itself while its lanes run (flume.core.workflow.lanes).
            return Position(step=StageName(name), passes=passes)
        case Orchestrate(lead=lead):
            # The run's own step is the lead; its children run in lanes (orchestrate.py).
            return Position(step=lead.name, passes=passes)
        case _:
            assert_never(block)


def position_of(block: Block, step: StageName, passes: tuple[Pass, ...] = ()) -> Position | None:
    """Where ``step`` first runs in ``block``: in the first pass of each loop around it."""
    match block:
        case Step(name=name):
            return Position(step=step, passes=passes) if name == step else None
        case Parallel(name=name) if str(name) == str(step):
            return Position(step=step, passes=passes)
        case Sequence(blocks=inner) | Parallel(branches=inner):
            found = (position_of(each, step, passes) for each in inner)
            return next((each for each in found if each is not None), None)
        case Loop(name=name, body=body):
            return position_of(body, step, (*passes, Pass(loop=name, number=1)))
        case Orchestrate(lead=lead):
            return Position(step=step, passes=passes) if lead.name == step else None
        case _:
            assert_never(block)


def _holds(block: Block, step: StageName) -> bool:
    """``block`` holds the step (or parallel block, where a run stands) called ``step``."""
    return any(found.name == step for found in steps(block)) or step in parallels(block)


def _after(block: Block, position: Position, depth: int, *, done: bool) -> Advanced:  # noqa: PLR0911 (one arm per block)
    """Past the step at ``position`` inside ``block``, whose loops are ``position.passes[:depth]``.

    ``Advanced(position=None)``: ``block`` is finished.
    """
    match block:
        case Step():
            return Advanced(position=None)
        case Sequence(blocks=blocks):
            index = next(i for i, inner in enumerate(blocks) if _holds(inner, position.step))
            went = _after(blocks[index], position, depth, done=done)
            if went.position is not None:
                return went
            if index + 1 < len(blocks):
                return Advanced(
                    position=first(blocks[index + 1], position.passes[:depth]),
                    maxed=went.maxed,
                )
            return went
        case Loop(name=name, body=body, until=until, max=most, on_max=on_max):
            outer = position.passes[:depth]
            number = position.passes[depth].number
            if position.step == until and done:
                return Advanced(position=None)
            went = _after(body, position, depth + 1, done=done)
            if went.position is not None:
                return went
            if number < most:
                again = first(body, (*outer, Pass(loop=name, number=number + 1)))
                return Advanced(position=again, maxed=went.maxed)
            ended = LoopMax(loop=name, passes=number, pause=on_max is OnMax.PAUSE)
            return Advanced(position=None, maxed=(*went.maxed, ended))
        case Parallel() | Orchestrate():
            # Its lanes ran its branches and were merged (an orchestrate's lead passed its gate
            # after): the block is finished.
            return Advanced(position=None)
        case _:
            assert_never(block)


def advance(body: Block, position: Position, *, done: bool) -> Advanced:
    """Where the run goes after the step at ``position`` passed (``done``: its verdict said so).

    A loop that pauses on its max does not stop the walk: the position returned is where the
    run goes on once resumed (None: the body finishes then), and ``pauses`` names the loop.
    """
    return _after(body, position, 0, done=done)
