"""Versions of a definition: a running place keeps its own; a changed one is judged by replay.

Theory of operation. A place's kind (a workflow's steps, loops, parallels, gates, prompts and
budgets) is in its journal's first line, the ``Launched`` its launch wrote, and every step folds
the journal from there: nothing else is read. So VERSION-FROZEN holds by construction: a
running place keeps the definition frozen at its launch, whatever becomes of the file it was read
from, and a restarted supervisor, replaying the journal, carries it on under the same definition.

To see what an edit would change, :func:`compare` folds the same journal twice, step by step:
once as journaled, and once with the kind in its ``Launched`` replaced by the changed one
(:func:`relaunched`; the rest of the launch unchanged). VERSION-FIRST-DIFFERENCE: it names the
first observation whose decisions differ, or says the two are the same. A decision is what
``step`` returns to be done, never the place it folds (which holds the kind, so always differs):
its actions, in order, every field of each (a prompt's text, a lane's kind, a report's words), or
its refusal with its words. It stops at that first difference: past it, the journal holds what
the shell observed of the journaled decisions, which the changed definition might never have
asked for, so later steps compare nothing meaningful.

The changed kind is folded under the journal's own kind name: a launch's kind name is the
place's (``<kind>--<name>``), and the rules refuse a launch whose kind is named otherwise. Its
prefix is its own: a changed prefix names another branch, at the launch itself. A lane's
journal (a place a parallel launched) is folded with the changed kind's block for that lane,
under the budgets the lane was launched with (its run's remainder then, which the run's journal
decides: folding the run's journal compares each lane's kind in its ``LaunchLane``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs

from flume.core.actions import Action
from flume.core.errors import Problem, UsageError
from flume.core.kinds import Kind, lane_kind, lane_names, parallels
from flume.core.observations import Launched, Observation
from flume.core.settings import Settings
from flume.core.step import TraceRow, trace


@attrs.frozen(kw_only=True)
class Decided:
    """What one definition made of one observation: its actions, in order, or its refusal."""

    actions: tuple[Action, ...] = ()
    #: The refusal's problems, when the rules refused the observation (a caller's command).
    refused: tuple[Problem, ...] = ()

    @classmethod
    def of(cls, row: TraceRow) -> Decided:
        """The decision of one row of a trace."""
        if row.refusal is not None:
            return cls(refused=row.refusal.problems)
        assert row.decision is not None  # noqa: S101 (a row has a decision or a refusal)
        return cls(actions=row.decision.actions)


@attrs.frozen(kw_only=True)
class Difference:
    """One field two decisions disagree on: where (``actions[1].text``) and each one's value.

    A value one side lacks (an action only one decided) is None on that side.
    """

    path: str
    journaled: object
    changed: object


@attrs.frozen(kw_only=True)
class Divergence:
    """The first observation the two definitions decide differently."""

    #: Its place in the journal: 0 is the launch.
    index: int
    seen: Observation
    #: What the definition the journal was launched with decided.
    journaled: Decided
    #: What the changed definition decided.
    changed: Decided
    #: The fields they disagree on, in order; never empty.
    differences: tuple[Difference, ...]


@attrs.frozen(kw_only=True)
class Comparison:
    """A journal folded under its own definition and a changed one."""

    #: How many observations the journal holds (its launch among them).
    observations: int
    #: The first that was decided differently; None: every decision the same.
    first: Divergence | None


def relaunched(launched: Launched, kind: Kind) -> Launched:
    """VERSION-FIRST-DIFFERENCE: the journal's launch with ``kind`` in place of its own.

    Named as the journal's kind is; a lane's launch takes ``kind``'s block for its lane, under
    the budgets it was launched with. A kind with no such lane raises :class:`UsageError`.
    """
    named = attrs.evolve(kind, name=launched.kind.name)
    lane = launched.launch.lane
    if launched.launch.parent is None or not lane:
        return attrs.evolve(launched, kind=named)
    block = next(
        (found for found in parallels(kind.body).values() if lane in lane_names(found)), None
    )
    if block is None:
        raise UsageError.one(
            "kind",
            f"kind {kind.name} has no parallel with a lane {lane}, which this journal's place is "
            f"(a lane of {launched.launch.parent})",
            f"compare the run's journal, {launched.launch.parent}'s, whose LaunchLane actions "
            "carry each lane's kind",
        )
    laned = attrs.evolve(lane_kind(named, block, lane), budgets=launched.kind.budgets)
    return attrs.evolve(launched, kind=laned)


def compare(settings: Settings, observations: Sequence[Observation], kind: Kind) -> Comparison:
    """VERSION-FIRST-DIFFERENCE: fold ``observations`` as journaled and under ``kind``; compare.

    The first observation must be the launch (``Launched``); each step's decisions are compared
    as values (:class:`Decided`) and the fold stops at the first that differ.
    """
    launched = observations[0]
    if not isinstance(launched, Launched):
        raise UsageError.one("journal", "does not start with its launch", "name a place's journal")
    changed = (relaunched(launched, kind), *observations[1:])
    pairs = zip(trace(settings, observations), trace(settings, changed), strict=True)
    for index, (before, after) in enumerate(pairs):
        journaled, now = Decided.of(before), Decided.of(after)
        if journaled != now:
            return Comparison(
                observations=len(observations),
                first=Divergence(
                    index=index,
                    seen=observations[index],
                    journaled=journaled,
                    changed=now,
                    differences=differences(journaled, now),
                ),
            )
    return Comparison(observations=len(observations), first=None)


def differences(journaled: object, changed: object, path: str = "") -> tuple[Difference, ...]:
    """The fields two values disagree on, deepest first found, each once; () when equal.

    Records (attrs classes, named tuples) are compared field by field, sequences item by item
    (an item only one holds is None on the other side), mappings key by key; anything else, or
    values of two types, is one difference at ``path``.
    """
    if journaled == changed:
        return ()
    if type(journaled) is type(changed):
        pairs = _pairs(journaled, changed)
        if pairs is not None:
            return tuple(
                found
                for name, one, other in pairs
                for found in differences(one, other, _join(path, name))
            )
    return (Difference(path=path, journaled=journaled, changed=changed),)


def _pairs(journaled: object, changed: object) -> Iterable[tuple[str, object, object]] | None:
    """The parts of two values of one type, side by side; None for a value with no parts."""
    kind = type(journaled)
    if attrs.has(kind):
        names = [field.name for field in attrs.fields(kind)]
        return [(name, getattr(journaled, name), getattr(changed, name)) for name in names]
    if isinstance(journaled, tuple) and hasattr(journaled, "_fields"):
        return [
            (name, getattr(journaled, name), getattr(changed, name)) for name in journaled._fields
        ]
    if isinstance(journaled, Mapping) and isinstance(changed, Mapping):
        keys = sorted({*journaled, *changed}, key=repr)
        return [(f"[{key!r}]", journaled.get(key), changed.get(key)) for key in keys]
    if isinstance(journaled, Sequence) and isinstance(changed, Sequence):
        if isinstance(journaled, str):
            return None
        longest = max(len(journaled), len(changed))
        return [
            (
                f"[{index}]",
                journaled[index] if index < len(journaled) else None,
                changed[index] if index < len(changed) else None,
            )
            for index in range(longest)
        ]
    return None


def _join(path: str, name: str) -> str:
    if name.startswith("["):
        return f"{path}{name}"
    return f"{path}.{name}" if path else name
