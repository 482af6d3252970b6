"""Kinds, their stages and the deliverable of each stage, as data (docs/config.md, kinds).

Theory of operation: a kind names a branch prefix, its budgets and a *body*, a tree of blocks:
:class:`Step` (one agent, its prompt, its gate, whether it waits on the caller's word),
:class:`Sequence` (its blocks one after another), :class:`Loop` (a body repeated until a step's
verdict says done, or ``max`` passes) and :class:`Parallel` (branches fanned out into lanes,
joined, merged, capped). The built-in kinds are Steps in a Sequence. A stage's identity is its
step's name, unique within the kind; every Step, Loop and Parallel is named, and no two blocks
share a name ("every block is named").

"A deliverable takes one of five forms, and counts only when made since its stage started":
:class:`Commit`, :class:`Landing`, :class:`ChangeWritten`, :class:`TasksTicked`,
:class:`ReportFile`. Gates generalise them (docs/config.md, "Workflows"): the five stay, and
read as gates, beside :class:`Verdict`, :class:`Artifact`, :class:`PassingTests` and
:class:`Approval`. A step keeps its gate in the field ``deliverable``, the name format 1 journals
spell it with.

Steps, Sequences and Loops run in the run's own place (:mod:`flume.core.workflow.tree`,
:mod:`flume.core.workflow.gates`); a Parallel's branches each run in a lane, a place of its own
(:mod:`flume.core.workflow.lanes`); :mod:`flume.core.workflow.caps` plans the worst case the caps
allow.
"""

from __future__ import annotations

import enum
import functools
import re
import string
from collections.abc import Callable, Mapping
from typing import TypeVar, assert_never

import attrs
from pyrsistent import pmap, pset, pvector
from pyrsistent.typing import PMap, PSet, PVector

from flume.core.choices import AgentName
from flume.core.errors import Problem, UsageError, did_you_mean
from flume.core.ids import BlockName, KindName, StageName


@attrs.frozen(kw_only=True)
class Commit:
    """A new commit on the place's branch."""


@attrs.frozen(kw_only=True)
class Landing:
    """The landing on the base; for a change, with the OpenSpec change archived."""

    archived_change: bool = False


@attrs.frozen(kw_only=True)
class ChangeWritten:
    """The OpenSpec change written, its planning complete (and valid), in a new commit."""


@attrs.frozen(kw_only=True)
class TasksTicked:
    """Every task of the change ticked, in a new commit."""


@attrs.frozen(kw_only=True)
class ReportFile:
    """A file at ``path`` (relative to the place) written since the stage started."""

    path: str


Deliverable = Commit | Landing | ChangeWritten | TasksTicked | ReportFile


@attrs.frozen(kw_only=True)
class Verdict:
    """``<board>/<step>/verdict.json`` with ``result: done``, written after the prompt was sent."""


@attrs.frozen(kw_only=True)
class Artifact:
    """A file at ``path`` (relative to the lane's worktree) exists."""

    path: str


@attrs.frozen(kw_only=True)
class PassingTests:
    """The repository's declared test command passes, run by flume in the lane."""


@attrs.frozen(kw_only=True)
class Approval:
    """The caller approved the step (``flume approve``)."""


#: The gates workflows add to the five deliverables; this flume declares them but runs none yet.
WorkflowGate = Verdict | Artifact | PassingTests | Approval
#: What ends a step: a deliverable, or a workflow gate.
Gate = Deliverable | WorkflowGate


#: The gates without fields, in words.
_GATE_WORDS: dict[type, str] = {
    Commit: "a new commit on the place's branch",
    ChangeWritten: "the OpenSpec change written, its planning complete, in a new commit",
    TasksTicked: "every task of the change ticked, in a new commit",
    Verdict: "its verdict, marked done",
    PassingTests: "the repository's tests passing",
    Approval: "the caller's approval",
}


def describe_deliverable(deliverable: Gate) -> str:
    """The deliverable (a step's gate) in words, as prompts and status show it."""
    match deliverable:
        case Landing(archived_change=True):
            return "the landing on its base, with the OpenSpec change archived"
        case Landing():
            return "the landing on its base"
        case ReportFile(path=path):
            return f"its report, {path}"
        case Artifact(path=path):
            return f"the file {path}"
        case _:
            return _GATE_WORDS[type(deliverable)]


class OnMax(enum.StrEnum):
    """What a loop that ran ``max`` passes without its ``until`` step saying done does."""

    CONTINUE = "continue"  #: the loop ends and the run goes on (the seed's rule)
    PAUSE = "pause"  #: the run pauses, named, for the caller


class Join(enum.StrEnum):
    """When a parallel block is done."""

    ALL = "all"  #: every lane's gate passed
    FIRST = "first"  #: the first lane's gate passed; the other lanes' agents end


class Merge(enum.StrEnum):
    """What a parallel block brings back to the run branch."""

    MERGE = "merge"  #: every finished lane, merged in declared order
    PICK = "pick"  #: the first lane to pass
    NONE = "none"  #: nothing: the lanes leave notes only


@attrs.frozen(kw_only=True)
class StepAgent:
    """The agent one step starts, in place of the launch's own."""

    agent: AgentName
    model: str | None = None


@attrs.frozen(kw_only=True)
class Budgets:
    """The caps a run's spending is held to, frozen at launch; None: no cap of that kind.

    ``wall_minutes`` counts active time only; ``tokens`` counts where the agent reports usage.
    """

    turns: int | None = None
    wall_minutes: int | None = None
    turns_per_attempt: int | None = None
    retries: int | None = None
    tokens: int | None = None


@attrs.frozen(kw_only=True, cache_hash=True)
class Step:
    """One stage: a fresh agent, the prompt it is sent, and the deliverable that ends it.

    ``prompt`` is the template text itself (``string.Template`` syntax, see
    :data:`PROMPT_FIELDS`); repository overrides are resolved by the shell before the kind is
    frozen into the launch's journal, so a replay renders exactly what was sent.
    """

    name: StageName
    prompt: str
    #: The step's gate (format 1 named every gate a deliverable).
    deliverable: Gate
    waits_on_caller: bool = False
    #: The agent this step starts; None: the launch's.
    agent: StepAgent | None = None
    #: The edges its agent may message along (WF-EDGES): ``progress``, ``ask``; a lead's also
    #: ``notify``, ``spawn``, ``compose``.
    may: PSet[str] = attrs.field(factory=pset)
    #: The seed's Step is "one sandboxed agent": true, its agent's commands write only its
    #: worktree, its board and what git needs to commit there (docs/config.md, "Sandboxed
    #: steps"); the shell picks how, by the agent.
    sandbox: bool = False

    @property
    def gate(self) -> Gate:
        """What ends the step: its deliverable, read as a gate."""
        return self.deliverable


@attrs.frozen(kw_only=True, cache_hash=True)
class Sequence:
    """Blocks run one after another, each from where the last left the branch."""

    blocks: PVector[Block]


@attrs.frozen(kw_only=True, cache_hash=True)
class Loop:
    """``body`` again and again, until the ``until`` step's verdict is done, or ``max`` passes."""

    name: BlockName
    body: Block
    until: StageName
    max: int
    on_max: OnMax = OnMax.CONTINUE


@attrs.frozen(kw_only=True, cache_hash=True)
class Parallel:
    """Each branch in a lane of its own, cut from the block's entry commit, at most ``cap`` at once.

    A lane is named after its branch's block (``places/<kind>--<name>+<lane>``).
    """

    name: BlockName
    branches: PVector[Block]
    join: Join = Join.ALL
    merge: Merge = Merge.MERGE
    #: The most lanes with a live agent at once; None: every branch at once.
    cap: int | None = None
    #: Each lane a fleet place, carried by whichever host of the fleet takes it (WF-SPREAD).
    spread: bool = False


@attrs.frozen(kw_only=True, cache_hash=True)
class Orchestrate:
    """A lead agent supervising children (:mod:`flume.core.workflow.orchestrate`).

    The lead is a step of the run, its agent in the run's own worktree. Its children are lanes
    (places of their own, as a parallel's): the static ``branches`` start at the block's entry,
    children of the ``template`` step only when the lead runs ``flume spawn``, at most ``max``
    of them, at most ``cap`` with a live agent at once. Once every child is terminal (``join``)
    the finished ones are merged (``merge``) and the lead is told to write its verdict; the block
    ends on the lead's gate. Never nested in another orchestrate block.
    """

    name: BlockName
    lead: Step
    #: The step each spawned child runs; None: the lead spawns none.
    template: Step | None = None
    #: The most children the lead may spawn.
    max: int = 0
    branches: PVector[Block] = attrs.field(factory=pvector)
    join: Join = Join.ALL
    merge: Merge = Merge.MERGE
    #: The most children with a live agent at once; None: every one.
    cap: int | None = None
    #: How many child runs the lead may compose (``flume compose``), and their depth cap.
    compose_runs: int = 0
    compose_depth: int = 2
    #: Each child a fleet place, carried by whichever host of the fleet takes it (WF-SPREAD).
    spread: bool = False


#: The tree a kind's body is made of.
Block = Step | Sequence | Loop | Parallel | Orchestrate


#: The edges a step may declare (``may``): any step's, then a lead's alone.
STEP_EDGES = ("progress", "ask")
LEAD_EDGES = ("notify", "spawn", "compose")

#: The fields a finalize ``pr`` command's arguments may name, each replaced as a whole word.
PR_FIELDS = ("base", "branch", "title", "body")


@attrs.frozen(kw_only=True, cache_hash=True)
class Finalize:
    """What a workflow run does once its body is done: push its branch, then open a PR.

    ``push``: the remote the run's branch is pushed to (only that branch, never forced, never
    the base: WF-PUSH-ONLY-RUN-BRANCH); empty: none. ``pr``: the command that opens a pull
    request, an argument list run with no shell, ``{base}``, ``{branch}``, ``{title}`` and
    ``{body}`` (a file holding the PR's body) replaced in it; empty: none. Or ``land``: the
    run's branch lands on its base through the landers (``[land]`` in .flume.toml).
    """

    push: str = ""
    pr: PVector[str] = attrs.field(factory=pvector)
    #: Land the run's branch on its base with the landers, as a fix's submit stage does.
    land: bool = False


@attrs.frozen(kw_only=True, cache_hash=True)
class Kind:
    """A kind of work: the branch prefix its places use, the blocks it runs, its budgets."""

    name: KindName
    prefix: str
    body: Block
    budgets: Budgets = Budgets()
    #: What the run does once its body is done (WF-FINALIZE-ONCE); None: it finishes there.
    finalize: Finalize | None = None
    #: A step of the run is sandboxed (its lanes' and children's kinds keep this): the gates'
    #: tests and the landing's checks run in a fence, flume's git runs no hook the agent could
    #: have set, and a change to what runs outside (``.flume.toml``, kinds, hooks) is held for a
    #: person before it lands (docs/config.md, "Sandboxed steps"). Set when the kind is read.
    fenced: bool = False


_T = TypeVar("_T")
_R = TypeVar("_R")

#: How many trees :func:`by_identity` keeps the answers of before it forgets them all.
IDENTITY_CACHE_SIZE = 256


def by_identity(compute: Callable[[_T], _R]) -> Callable[[_T], _R]:
    """``compute`` remembered for each object it is given, found by the object's identity.

    A kind's tree is asked about on every step of its place, and ``functools.lru_cache`` finds a
    remembered answer by equality: for a tree equal to the one it remembers but not the same
    object (each journal's kind is decoded afresh), every lookup compared the two trees whole.
    Here a lookup costs an ``id``: the object is kept beside its answer, so its id names no
    other while remembered. Each distinct object is computed once; past
    :data:`IDENTITY_CACHE_SIZE` objects all are forgotten and computed again as asked.
    """
    found: dict[int, tuple[_T, _R]] = {}

    @functools.wraps(compute)
    def remembered(value: _T) -> _R:
        hit = found.get(id(value))
        if hit is not None:
            return hit[1]
        if len(found) >= IDENTITY_CACHE_SIZE:
            found.clear()
        answer = compute(value)
        found[id(value)] = (value, answer)
        return answer

    return remembered


@by_identity
def steps(block: Block) -> tuple[Step, ...]:
    """Every step of a block tree, in the order they run (cached: the rules ask on every step)."""
    match block:
        case Step():
            return (block,)
        case Sequence(blocks=blocks) | Parallel(branches=blocks):
            return tuple(found for inner in blocks for found in steps(inner))
        case Loop(body=body):
            return steps(body)
        case Orchestrate(lead=lead, template=template, branches=blocks):
            own = (lead,) if template is None else (lead, template)
            return (*own, *(found for inner in blocks for found in steps(inner)))
        case _:
            assert_never(block)


def spreading(kind: Kind) -> BlockName | None:
    """WF-SPREAD: the first block of the kind that spreads its lanes over the fleet, if any."""
    return next(
        (
            block.name
            for block in blocks_of(kind.body)
            if isinstance(block, Parallel | Orchestrate) and block.spread
        ),
        None,
    )


def blocks_of(block: Block) -> tuple[Block, ...]:
    """Every block of a tree, itself first, then its blocks in declared order."""
    match block:
        case Step():
            return (block,)
        case Sequence(blocks=inner) | Parallel(branches=inner):
            return (block, *(found for each in inner for found in blocks_of(each)))
        case Loop(body=body):
            return (block, *blocks_of(body))
        case Orchestrate(lead=lead, template=template, branches=inner):
            own = (lead,) if template is None else (lead, template)
            return (block, *own, *(found for each in inner for found in blocks_of(each)))
        case _:
            assert_never(block)


def block_name(block: Block) -> str | None:
    """A block's name; None for a Sequence, named by the block or kind it is the body of."""
    match block:
        case Sequence():
            return None
        case Step() | Loop() | Parallel() | Orchestrate():
            return block.name
        case _:
            assert_never(block)


@by_identity
def parallels(block: Block) -> Mapping[str, Parallel]:
    """Every parallel block of a tree, by name."""
    return {found.name: found for found in blocks_of(block) if isinstance(found, Parallel)}


@by_identity
def orchestrates(block: Block) -> Mapping[str, Orchestrate]:
    """Every orchestrate block of a tree, by its lead step's name (where its run stands)."""
    return {found.lead.name: found for found in blocks_of(block) if isinstance(found, Orchestrate)}


def child_kind(kind: Kind, block: Orchestrate, lane: str, agent: AgentName | None) -> Kind:
    """The kind a child of ``block`` runs: a static branch's block, or the template step.

    A spawned child (``<template>-<n>``) runs the template, with the agent the lead named if it
    named one. Without the run's finalize, as a lane (WF-PUSH-ONLY-RUN-BRANCH).
    """
    branch = next((each for each in block.branches if block_name(each) == lane), None)
    if branch is None:
        template = block.template
        assert template is not None  # noqa: S101 (a spawned child's block has a template)
        if agent is not None:
            template = attrs.evolve(template, agent=StepAgent(agent=agent))
        branch = template
    return attrs.evolve(kind, body=branch, finalize=None)


def lane_names(parallel: Parallel | Orchestrate) -> tuple[str, ...]:
    """A parallel's lanes, in declared order: each branch's block's name."""
    return tuple(block_name(branch) or "" for branch in parallel.branches)


def lane_kind(kind: Kind, parallel: Parallel, lane: str) -> Kind:
    """The kind a lane's place runs: the run's kind, its body the lane's branch's block.

    Without the run's finalize: a lane's work ends merged into its run, which alone pushes,
    opens the pull request or lands (WF-PUSH-ONLY-RUN-BRANCH).
    """
    branch = next(each for each in parallel.branches if block_name(each) == lane)
    return attrs.evolve(kind, body=branch, finalize=None)


def first_stage(kind: Kind) -> Step:
    """The stage a new place starts with."""
    return steps(kind.body)[0]


def stage_named(kind: Kind, name: StageName) -> Step:
    """The step called ``name``; the core only asks for names it took from the kind."""
    for found in steps(kind.body):
        if found.name == name:
            return found
    message = f"kind {kind.name} has no stage {name}"
    raise KeyError(message)


def loop_named(kind: Kind, name: BlockName) -> Loop:
    """The loop called ``name``; the core only asks for names it took from the kind."""
    for found in blocks_of(kind.body):
        if isinstance(found, Loop) and found.name == name:
            return found
    message = f"kind {kind.name} has no loop {name}"
    raise KeyError(message)


def next_stage(kind: Kind, name: StageName) -> Step | None:
    """The stage after ``name``, or None when ``name`` was the last."""
    order = steps(kind.body)
    for index, found in enumerate(order):
        if found.name == name:
            return order[index + 1] if index + 1 < len(order) else None
    message = f"kind {kind.name} has no stage {name}"
    raise KeyError(message)


def map_steps(block: Block, change: Callable[[Step], Step]) -> Block:
    """The block tree with every step (a lead's and a template's too) changed by ``change``."""
    match block:
        case Step():
            return change(block)
        case Sequence(blocks=blocks):
            return Sequence(blocks=pvector(map_steps(inner, change) for inner in blocks))
        case Loop(body=body):
            return attrs.evolve(block, body=map_steps(body, change))
        case Parallel(branches=branches):
            mapped = pvector(map_steps(inner, change) for inner in branches)
            return attrs.evolve(block, branches=mapped)
        case Orchestrate(lead=lead, template=template, branches=branches):
            mapped = pvector(map_steps(inner, change) for inner in branches)
            return attrs.evolve(
                block,
                lead=change(lead),
                template=None if template is None else change(template),
                branches=mapped,
            )
        case _:
            assert_never(block)


def _step_prompt(step: Step, overrides: Mapping[StageName, str]) -> Step:
    return attrs.evolve(step, prompt=overrides[step.name]) if step.name in overrides else step


def has_sandbox(block: Block) -> bool:
    """A step of the tree is sandboxed: the run is fenced (:attr:`Kind.fenced`)."""
    return any(found.sandbox for found in steps(block))


def all_sandboxed(kind: Kind) -> Kind:
    """The kind with every step sandboxed: what a sandboxed lead spawns or composes runs so.

    "Nothing the agent wrote runs outside": a child's goal and a composed fragment are a
    sandboxed agent's words; the agent they start is held in the same fence.
    """
    return attrs.evolve(
        kind,
        body=map_steps(kind.body, lambda step: attrs.evolve(step, sandbox=True)),
        fenced=True,
    )


def with_prompts(kind: Kind, overrides: Mapping[StageName, str]) -> Kind:
    """The kind with some stages' prompts replaced (a repository's overrides), checked.

    Raises :class:`UsageError` for an override of a stage the kind lacks, or a prompt that
    names an unknown field.
    """
    if not overrides:
        return kind
    names = {found.name for found in steps(kind.body)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise UsageError.one(
            f"prompts.{kind.name}",
            f"kind {kind.name} has no stage {', '.join(unknown)}",
            f"override stages of {kind.name}: {', '.join(sorted(names))}",
        )
    replaced = attrs.evolve(
        kind, body=map_steps(kind.body, lambda step: _step_prompt(step, overrides))
    )
    check_kind(replaced)
    return replaced


def known_kind(name: str, declared: Mapping[KindName, Kind]) -> Kind:
    """The kind a launch names: one declared (by the repository or the launch), else built in.

    Raises :class:`UsageError` for a kind nobody declared, naming the kinds there are.
    """
    found = declared.get(KindName(name)) or BUILTIN_KINDS.get(KindName(name))
    if found is None:
        known = ", ".join(sorted({*BUILTIN_KINDS, *declared}))
        raise UsageError.one(
            "kind",
            f"no kind {name!r} is built in or declared",
            f"use one of {known}, or declare it in the repository's config",
        )
    return found


#: The fields every kind's prompt may name, as ``$field`` or ``${field}``.
LINEAR_FIELDS = frozenset(
    {
        "brief",
        "name",
        "kind",
        "stage",
        "place",
        "path",
        "branch",
        "base",
        "deliverable",
        "words",
        "marker",
        "repository",
    },
)
#: The fields a workflow's prompt may name besides (docs/config.md): the blackboard, the step's
#: handoff and verdict files, the loop's pass and its max, the lane's position. Only the engine
#: to come renders them: a kind whose prompts name them is checked and planned, not yet run.
WORKFLOW_FIELDS = frozenset(
    {"board", "handoff", "verdict", "pass", "max", "position", "goal", "question"}
)
#: The fields a prompt template may name.
PROMPT_FIELDS = LINEAR_FIELDS | WORKFLOW_FIELDS

#: The most lanes a kind may hold: the branches of all its parallel blocks together.
MAX_LANES = 32

_SAFE_NAME = re.compile(r"[a-z][a-z0-9-]{0,31}")
_SAFE_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
_NAME_MEND = "use 1-32 lowercase letters, digits or '-', starting with a letter"


def _name_problem(name: str) -> tuple[str, str]:
    """What is wrong with a step's or block's name, and how to mend it."""
    lane = " (no '+', which joins a lane to the work's name)" if "+" in name else ""
    return f"{name!r} is not a name flume takes", f"{_NAME_MEND}{lane}"


@attrs.frozen(kw_only=True)
class Flaw:
    """One problem of a kind's declaration, with the block and key it lies in (for a file's line).

    ``block`` None: the kind itself (its name, prefix, budgets); ``key`` None: the block as a whole.
    """

    block: str | None
    key: str | None
    problem: Problem


#: A remote's name as ``git remote`` takes it: no option, no space, no path trickery.
_SAFE_REMOTE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_PR_FIELD = re.compile(r"\{([A-Za-z_]*)\}")


def _finalize_flaws(kind: Kind) -> list[Flaw]:
    """A finalize whose remote is no remote's name, or whose PR command cannot be run."""
    plan = kind.finalize
    if plan is None:
        return []
    said: list[tuple[str, str, str]] = []
    if plan.push and (not _SAFE_REMOTE.fullmatch(plan.push) or ".." in plan.push):
        said.append(
            ("push", f"{plan.push!r} is not a remote's name", "name a remote, such as origin")
        )
    if plan.pr:
        if not plan.push:
            said.append(
                (
                    "pr",
                    "a pull request needs the run's branch pushed first, and no push is set",
                    'add push = "<remote>" beside pr',
                )
            )
        unknown = sorted(
            {
                field
                for argument in plan.pr
                for field in _PR_FIELD.findall(argument)
                if field not in PR_FIELDS
            }
        )
        if unknown:
            said.append(
                (
                    "pr",
                    f"the pr command names an unknown field {{{unknown[0]}}}",
                    f"use {', '.join('{' + field + '}' for field in PR_FIELDS)}",
                )
            )
    if plan.land and (plan.push or plan.pr):
        said.append(
            (
                "land",
                "finalize both lands the branch and pushes it",
                "keep land = true, or push and pr: the landers land on the base, a PR asks for it",
            )
        )
    if not plan.push and not plan.pr and not plan.land:
        said.append(
            ("finalize", "finalize sets nothing to do", 'set push = "<remote>", or land = true')
        )
    return [
        Flaw(
            block=None,
            key="finalize",
            problem=Problem(field=f"kind {kind.name}: finalize {key}", what=what, mend=mend),
        )
        for key, what, mend in said
    ]


def check_kind(kind: Kind) -> None:
    """Raise a :class:`UsageError` naming every problem in a kind's declaration."""
    flaws = kind_flaws(kind)
    if flaws:
        raise UsageError(tuple(flaw.problem for flaw in flaws))


def kind_flaws(kind: Kind) -> tuple[Flaw, ...]:
    """Every problem in a kind's declaration, each with the block and key it lies in."""
    flaws: list[Flaw] = []
    if not _SAFE_NAME.fullmatch(kind.name):
        problem = Problem(
            field="kind.name", what=f"{kind.name!r} is not a kind name", mend=_NAME_MEND
        )
        flaws.append(Flaw(block=None, key="name", problem=problem))
    # One wrong input, one error: a prefix taken from a bad name is the name's problem alone.
    prefix_is_named = _SAFE_NAME.fullmatch(kind.name) is not None or kind.prefix != kind.name
    if prefix_is_named and not _SAFE_PREFIX.fullmatch(kind.prefix):
        problem = Problem(
            field=f"kind {kind.name}: prefix",
            what=f"{kind.prefix!r} cannot start a branch name",
            mend="use 1-32 letters, digits, '_' or '-'",
        )
        flaws.append(Flaw(block=None, key="prefix", problem=problem))
    flaws.extend(_budget_flaws(kind))
    flaws.extend(_finalize_flaws(kind))
    order = steps(kind.body)
    if not order:
        problem = Problem(
            field=f"kind {kind.name}: stages",
            what="the kind has no stage",
            mend="declare at least one stage",
        )
        flaws.append(Flaw(block=None, key=None, problem=problem))
    seen: set[str] = set()
    leads = set(orchestrates(kind.body))
    for index, found in enumerate(order):
        where = f"kind {kind.name}: stage {index + 1} ({found.name})"

        said: list[tuple[str | None, str, str]] = []
        if not _SAFE_NAME.fullmatch(found.name):
            said.append((None, *_name_problem(found.name)))
        if found.name in seen:
            said.append(
                (None, f"stage {found.name} is declared twice", "give each stage its own name")
            )
        seen.add(found.name)
        said.extend(("prompt", *each) for each in _prompt_problems(found.prompt))
        match found.deliverable:
            case ReportFile(path=path) if not _is_plain_path(path):
                what = f"report path {path!r} is not a plain path inside the place"
                said.append(("gate", what, _PATH_MEND))
            case Artifact(path=path) if not _is_plain_path(path):
                what = f"artifact path {path!r} is not a plain path inside the place"
                said.append(("gate", what, _PATH_MEND))
            case _:
                pass
        said.extend(_edge_problems(found, lead=found.name in leads))
        flaws.extend(_flaw(found.name, key, where, what, mend) for key, what, mend in said)
    flaws.extend(_block_flaws(kind, seen))
    return tuple(flaws)


def _edge_problems(found: Step, *, lead: bool) -> list[tuple[str | None, str, str]]:
    """WF-EDGES: a step's ``may`` names only edges a step (or, a lead, a lead) may message along."""
    said: list[tuple[str | None, str, str]] = []
    for edge in sorted(found.may):
        if edge in LEAD_EDGES and lead:
            continue
        if edge in LEAD_EDGES:
            what = f"may {edge}: only an orchestrate block's lead may {edge}"
            said.append(("may", what, f"leave {edge} out; a step may {', '.join(STEP_EDGES)}"))
        elif edge not in STEP_EDGES:
            what = f"may names an unknown edge {edge!r}{did_you_mean(edge, STEP_EDGES)}"
            said.append(("may", what, f"a step may {', '.join(STEP_EDGES)}"))
    return said


def _flaw(block: str, key: str | None, where: str, what: str, mend: str) -> Flaw:
    return Flaw(block=block, key=key, problem=Problem(field=where, what=what, mend=mend))


def _budget_flaws(kind: Kind) -> list[Flaw]:
    flaws: list[Flaw] = []
    for field in attrs.fields(Budgets):
        value = getattr(kind.budgets, field.name)
        if value is not None and not _is_count(value):
            problem = Problem(
                field=f"kind {kind.name}: budgets",
                what=f"budget {field.name} = {value!r} is not a whole number of at least 1",
                mend=f"give {field.name} as a whole number such as 10, or leave it out",
            )
            flaws.append(Flaw(block=None, key="budgets", problem=problem))
    return flaws


def _is_count(value: object) -> bool:
    """A whole number of at least 1 (a bool is not one, though Python counts it an int)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _block_flaws(kind: Kind, step_names: set[str]) -> list[Flaw]:
    """The loops' and parallels' problems: names, until, max, cap, join with merge, lanes."""
    flaws: list[Flaw] = []
    names = set(step_names)
    lanes = 0
    for block in blocks_of(kind.body):
        if not isinstance(block, Loop | Parallel | Orchestrate):
            continue
        label = {Loop: "loop", Parallel: "parallel", Orchestrate: "orchestrate"}[type(block)]
        where = f"kind {kind.name}: {label} {block.name}"

        said: list[tuple[str | None, str, str]] = []
        if not _SAFE_NAME.fullmatch(block.name):
            said.append((None, *_name_problem(block.name)))
        if block.name in names:
            what = f"the name {block.name} is given to two blocks"
            said.append((None, what, "give each step, loop and parallel its own name"))
        names.add(block.name)
        if isinstance(block, Loop):
            said.extend(_loop_problems(block))
        elif isinstance(block, Parallel):
            lanes += len(block.branches)
            said.extend(_parallel_problems(block))
        else:
            # A max out of its bounds is its own error, not the lanes' too (one input, one error).
            fits = _is_count(block.max) and block.max <= MAX_CHILDREN
            lanes += len(block.branches) + (block.max if fits else 0)
            said.extend(_orchestrate_problems(block))
        flaws.extend(_flaw(block.name, key, where, what, mend) for key, what, mend in said)
    if lanes > MAX_LANES:
        problem = Problem(
            field=f"kind {kind.name}: lanes",
            what=f"the kind's parallel blocks hold {lanes} lanes, over {MAX_LANES}",
            mend=f"fan out into at most {MAX_LANES} branches in all",
        )
        flaws.append(Flaw(block=None, key="body", problem=problem))
    return flaws


def _loop_problems(loop: Loop) -> list[tuple[str, str, str]]:
    problems: list[tuple[str, str, str]] = []
    if not _is_count(loop.max):
        problems.append(
            (
                "max",
                f"max = {loop.max!r} is not a whole number of at least 1",
                "give the most passes the loop may run, such as 3",
            ),
        )
    inside = {found.name: found for found in steps(loop.body)}
    until = inside.get(loop.until)
    if until is None or not isinstance(until.deliverable, Verdict):
        what = (
            f"until names {loop.until!r}, which is not a step of the loop"
            if until is None
            else f"until names step {loop.until}, whose gate is not verdict"
        )
        verdicts = [name for name, found in inside.items() if isinstance(found.gate, Verdict)]
        if until is None:
            what += did_you_mean(loop.until, inside)
        mend = (
            f"name a verdict-gated step of the loop: {', '.join(verdicts)}"
            if verdicts
            else 'name a step of the loop whose gate is "verdict"'
        )
        problems.append(("until", what, mend))
    return problems


def _parallel_problems(parallel: Parallel) -> list[tuple[str, str, str]]:
    problems: list[tuple[str, str, str]] = []
    if parallel.cap is not None and not _is_count(parallel.cap):
        problems.append(
            (
                "cap",
                f"cap = {parallel.cap!r} is not a whole number of at least 1",
                "give the most lanes working at once, such as 2, or leave cap out",
            ),
        )
    if parallel.join is Join.FIRST and parallel.merge is Merge.MERGE:
        problems.append(
            (
                "merge",
                'join = "first" ends the other lanes, so there is nothing to merge but the first',
                'with join = "first" use merge = "pick" or "none"',
            ),
        )
    if not parallel.branches:
        problems.append(("branches", "the parallel has no branch", "name at least one block"))
    # A named branch's name is checked as its block's: one wrong name, one error.
    if any(block_name(branch) is None for branch in parallel.branches):
        problems.append(
            (
                "branches",
                "a branch is an unnamed sequence, which names no lane",
                "make each branch a named block (a step, loop or parallel)",
            ),
        )
    return problems


#: The most children an orchestrate block may spawn, and the deepest its child runs may go.
MAX_CHILDREN = 32
MAX_DEPTH = 2


def _orchestrate_problems(block: Orchestrate) -> list[tuple[str, str, str]]:  # noqa: C901, PLR0912 (one check a line of the issue's list)
    """An orchestrate block's lead, children, join, caps and compose, checked."""
    problems: list[tuple[str, str, str]] = []
    lead, template = block.lead, block.template
    if not judged_at_turn_end(lead.deliverable):
        problems.append(
            (
                "lead",
                (
                    f"the lead {lead.name}'s gate is {describe_deliverable(lead.deliverable)}, "
                    "which is not judged when its turn ends"
                ),
                'give the lead gate = "verdict" (or artifact:, tests, approval)',
            )
        )
    if template is None and not block.branches and not block.compose_runs:
        problems.append(
            (
                "children",
                "the orchestrate block has no children: no template, branches or compose",
                'set children = { template = "<step>", max = N }, branches, or compose',
            )
        )
    if template is not None:
        if template.name == lead.name:
            problems.append(
                ("children", "the lead is its own children's template", "name another step")
            )
        if not _is_count(block.max) or block.max > MAX_CHILDREN:
            problems.append(
                (
                    "children",
                    f"children max = {block.max!r} is outside 1-{MAX_CHILDREN}",
                    f"give the most children the lead may spawn, 1 to {MAX_CHILDREN}",
                )
            )
        if "spawn" not in lead.may:
            problems.append(
                (
                    "children",
                    (
                        "children come of a template only by flume spawn, and the lead "
                        f"{lead.name} may not spawn"
                    ),
                    f'add "spawn" to [step.{lead.name}] may',
                )
            )
    elif "spawn" in lead.may:
        problems.append(
            (
                "children",
                f"the lead {lead.name} may spawn, but the block names no template",
                'set children = { template = "<step>", max = N }',
            )
        )
    if block.cap is not None and not _is_count(block.cap):
        problems.append(
            (
                "cap",
                f"cap = {block.cap!r} is not a whole number of at least 1",
                "give the most children working at once, such as 2, or leave cap out",
            )
        )
    if block.join is not Join.ALL:
        problems.append(
            (
                "join",
                f'join = "{block.join.value}": an orchestrate block joins all its children',
                'write join = "all", or leave it out',
            )
        )
    if block.compose_runs < 0 or isinstance(block.compose_runs, bool):
        problems.append(
            ("compose", f"compose runs = {block.compose_runs!r} is below 0", "give 0 or more")
        )
    if not 1 <= block.compose_depth <= MAX_DEPTH:
        problems.append(
            (
                "compose",
                f"compose depth = {block.compose_depth!r}: runs nest {MAX_DEPTH} deep at most",
                f"give depth = {MAX_DEPTH} or less",
            )
        )
    if block.compose_runs and "compose" not in lead.may:
        problems.append(
            (
                "compose",
                f"compose is set, and the lead {lead.name} may not compose",
                f'add "compose" to [step.{lead.name}] may',
            )
        )
    nested = any(
        isinstance(each, Orchestrate) for branch in block.branches for each in blocks_of(branch)
    )
    if nested:
        problems.append(
            (
                "branches",
                f"orchestrate {block.name} holds another orchestrate block",
                "an orchestrate block is never nested in another: move the inner one out",
            )
        )
    problems.extend(
        each for each in _parallel_problems(_as_parallel(block)) if each[0] == "branches"
    )
    return problems


def _as_parallel(block: Orchestrate) -> Parallel:
    """An orchestrate's static branches, checked as a parallel's (names that make lanes)."""
    return Parallel(name=block.name, branches=block.branches or pvector([block.lead]))


def judged_at_turn_end(gate: Gate) -> bool:
    """The gate is a workflow gate, judged when a turn ends (the five deliverables are not)."""
    match gate:
        case Verdict() | Artifact() | PassingTests() | Approval():
            return True
        case Commit() | Landing() | ChangeWritten() | TasksTicked() | ReportFile():
            return False
        case _:
            assert_never(gate)


@by_identity
def is_workflow(kind: Kind) -> bool:
    """The kind uses what only workflows have: loops, workflow gates, budgets, finalize...

    That is: a loop or parallel, a workflow gate, budgets, a step's own agent, or a finalize.
    A kind of Steps gated by the five deliverables, with no budgets, runs as it always did.
    """
    if kind.budgets != Budgets() or kind.finalize is not None:
        return True
    if any(not isinstance(block, Step | Sequence) for block in blocks_of(kind.body)):
        return True
    return any(
        judged_at_turn_end(found.deliverable) or found.agent is not None
        for found in steps(kind.body)
    )


def _prompt_problems(prompt: str) -> list[tuple[str, str]]:
    if not prompt.strip():
        return [("the prompt is empty", "write the stage's prompt")]
    template = string.Template(prompt)
    if not template.is_valid():
        return [
            ("the prompt has a '$' that names no field", "write '$$' for a literal dollar sign")
        ]
    unknown = sorted(set(template.get_identifiers()) - PROMPT_FIELDS)
    if unknown:
        named = ", ".join(f"${each}{did_you_mean(each, PROMPT_FIELDS)}" for each in unknown)
        return [
            (
                f"the prompt names unknown field{'s' if len(unknown) > 1 else ''} {named}",
                f"use only {', '.join(sorted(PROMPT_FIELDS))} (and $$ for a dollar sign)",
            ),
        ]
    return []


_PATH_MEND = "name a relative path such as 'verify.md' or 'reports/verify.md'"


def _is_plain_path(path: str) -> bool:
    parts = path.split("/")
    return bool(path) and not path.startswith("/") and not any(p in {"", ".", ".."} for p in parts)


_HOW_TO_STOP_SHORT = """\
If you cannot go on (the brief is unclear, something you need is missing, a decision is not yours
to make), do not guess: run `flume needs "<what you need>"` in this directory and stop. Whoever
waits on this stage will read your words."""

FIX_CODE = f"""\
You are working on a fix in its own git worktree.

Where: $path (branch $branch, cut from $base in $repository).

The brief, as the caller wrote it:

$brief

Your stage: code. Make the fix, with tests where the repository has them, and commit it on
$branch. The stage ends when $deliverable exists; uncommitted work does not count.
Do not merge, rebase onto or push to $base: a later stage lands the work.

{_HOW_TO_STOP_SHORT}
$words"""

FIX_SUBMIT = f"""\
You are landing a fix from its own git worktree.

Where: $path (branch $branch, landing on $base in $repository).

The brief, as the caller wrote it:

$brief

Your stage: submit. The fix is committed on $branch. Run `flume submit` in this directory. If
the submission's checks fail, their output comes back to you: mend the cause, commit, and run
`flume submit` again. The stage ends on $deliverable.

{_HOW_TO_STOP_SHORT}
$words"""

CHANGE_CONSTRUCT = f"""\
You are planning a change in its own git worktree, with OpenSpec.

Where: $path (branch $branch, cut from $base in $repository).

The brief, as the caller wrote it:

$brief

Your stage: construct. Write the OpenSpec change `openspec/changes/$name/`: proposal.md,
design.md, tasks.md (every task a `- [ ]` line) and the spec deltas under specs/ (each
requirement with a SHALL and at least one `#### Scenario:`). That makes its planning complete.
Check it with `openspec validate $name --strict` where the CLI is installed, and commit it. Do
not write the code yet. The stage ends when $deliverable exists.

{_HOW_TO_STOP_SHORT}
$words"""

CHANGE_CODE = f"""\
You are building an OpenSpec change in its own git worktree.

Where: $path (branch $branch, cut from $base in $repository).

The brief, as the caller wrote it:

$brief

Your stage: code. Carry out the tasks of `openspec/changes/$name/tasks.md` in order. Tick each
task (`- [x]`) as you finish it, and commit as you go. The stage ends when $deliverable exists.

{_HOW_TO_STOP_SHORT}
$words"""

CHANGE_VERIFY = f"""\
You are verifying an OpenSpec change in its own git worktree.

Where: $path (branch $branch, cut from $base in $repository).

The brief, as the caller wrote it:

$brief

Your stage: verify. Check the code on $branch against `openspec/changes/$name/` (proposal,
tasks, spec deltas): run the tests, read the diff against $base, and write what you found,
with anything left to mend, to verify.md at the root of the place. The stage ends when
$deliverable exists.

{_HOW_TO_STOP_SHORT}
$words"""

CHANGE_SUBMIT = f"""\
You are landing an OpenSpec change from its own git worktree.

Where: $path (branch $branch, landing on $base in $repository).

Your stage: submit. Archive the change (`openspec archive $name --yes`, which moves it under
openspec/changes/archive/), commit, and run `flume submit` in this directory. If the checks fail,
their output comes back to you: mend, commit, and run `flume submit` again. The stage ends on
$deliverable.

{_HOW_TO_STOP_SHORT}
$words"""

QUESTION_SESSION = f"""\
You are answering a question in its own git worktree; no code needs to change.

Where: $path (branch $branch, cut from $base in $repository).

The question, as the caller wrote it:

$brief

Your stage: session. Investigate, then write your conclusion, with the evidence for it, to
conclusion.md at the root of the place. The stage ends when $deliverable exists.

{_HOW_TO_STOP_SHORT}
$words"""


def _kind(name: str, prefix: str, *stages: Step) -> Kind:
    return Kind(name=KindName(name), prefix=prefix, body=Sequence(blocks=pvector(stages)))


def _step(name: str, prompt: str, deliverable: Deliverable) -> Step:
    return Step(name=StageName(name), prompt=prompt, deliverable=deliverable)


#: The kinds flume knows without being told: fix, change and question.
BUILTIN_KINDS: PMap[KindName, Kind] = pmap(
    {
        kind.name: kind
        for kind in (
            _kind(
                "fix",
                "fix",
                _step("code", FIX_CODE, Commit()),
                _step("submit", FIX_SUBMIT, Landing()),
            ),
            _kind(
                "change",
                "change",
                _step("construct", CHANGE_CONSTRUCT, ChangeWritten()),
                _step("code", CHANGE_CODE, TasksTicked()),
                _step("verify", CHANGE_VERIFY, ReportFile(path="verify.md")),
                _step("submit", CHANGE_SUBMIT, Landing(archived_change=True)),
            ),
            _kind(
                "question",
                "sounding",
                _step("session", QUESTION_SESSION, ReportFile(path="conclusion.md")),
            ),
        )
    },
)
