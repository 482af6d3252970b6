"""Kinds, their stages and the deliverable of each stage, as data (docs/config.md, kinds).

Theory of operation: a kind names a branch prefix and a *body*, a tree of blocks. Today the only
blocks are :class:`Step` (one agent, its prompt, its deliverable, whether it waits on the caller's
word) and :class:`Sequence` (its blocks one after another), which is all the built-in kinds need.
Workflow blocks to come (Parallel, Loop, Orchestrate) join the ``Block`` union later;
nothing outside this module walks the tree, so they will not have to be threaded through the
rest of the core. A stage's identity is its step's name, unique within the kind.

"A deliverable takes one of five forms, and counts only when made since its stage started":
:class:`Commit`, :class:`Landing`, :class:`ChangeWritten`, :class:`TasksTicked`,
:class:`ReportFile`.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Mapping
from typing import assert_never

import attrs
from pyrsistent import pmap, pvector
from pyrsistent.typing import PMap, PVector

from flume.core.errors import Problem, UsageError
from flume.core.ids import KindName, StageName


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


def describe_deliverable(deliverable: Deliverable) -> str:
    """The deliverable in words, as prompts and status show it."""
    match deliverable:
        case Commit():
            return "a new commit on the place's branch"
        case Landing(archived_change=True):
            return "the landing on its base, with the OpenSpec change archived"
        case Landing():
            return "the landing on its base"
        case ChangeWritten():
            return "the OpenSpec change written, its planning complete, in a new commit"
        case TasksTicked():
            return "every task of the change ticked, in a new commit"
        case ReportFile(path=path):
            return f"its report, {path}"
        case _:
            assert_never(deliverable)


@attrs.frozen(kw_only=True, cache_hash=True)
class Step:
    """One stage: a fresh agent, the prompt it is sent, and the deliverable that ends it.

    ``prompt`` is the template text itself (``string.Template`` syntax, see
    :data:`PROMPT_FIELDS`); repository overrides are resolved by the shell before the kind is
    frozen into the launch's journal, so a replay renders exactly what was sent.
    """

    name: StageName
    prompt: str
    deliverable: Deliverable
    waits_on_caller: bool = False


@attrs.frozen(kw_only=True, cache_hash=True)
class Sequence:
    """Blocks run one after another, each from where the last left the branch."""

    blocks: PVector[Block]


#: The tree a kind's body is made of. Parallel, Loop and Orchestrate will join here.
Block = Step | Sequence


@attrs.frozen(kw_only=True, cache_hash=True)
class Kind:
    """A kind of work: the branch prefix its places use and the blocks it runs."""

    name: KindName
    prefix: str
    body: Block


@functools.lru_cache(maxsize=256)
def steps(block: Block) -> tuple[Step, ...]:
    """Every step of a block tree, in the order they run (cached: the rules ask on every step)."""
    match block:
        case Step():
            return (block,)
        case Sequence(blocks=blocks):
            return tuple(found for inner in blocks for found in steps(inner))
        case _:
            assert_never(block)


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


def next_stage(kind: Kind, name: StageName) -> Step | None:
    """The stage after ``name``, or None when ``name`` was the last."""
    order = steps(kind.body)
    for index, found in enumerate(order):
        if found.name == name:
            return order[index + 1] if index + 1 < len(order) else None
    message = f"kind {kind.name} has no stage {name}"
    raise KeyError(message)


def _replace_prompts(block: Block, overrides: Mapping[StageName, str]) -> Block:
    match block:
        case Step(name=name):
            return attrs.evolve(block, prompt=overrides[name]) if name in overrides else block
        case Sequence(blocks=blocks):
            return Sequence(blocks=pvector(_replace_prompts(inner, overrides) for inner in blocks))
        case _:
            assert_never(block)


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
    replaced = attrs.evolve(kind, body=_replace_prompts(kind.body, overrides))
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


#: The fields a prompt template may name, as ``$field`` or ``${field}``.
PROMPT_FIELDS = frozenset(
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

_SAFE_NAME = re.compile(r"[a-z][a-z0-9-]{0,31}")
_SAFE_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")


def check_kind(kind: Kind) -> None:
    """Raise a :class:`UsageError` naming every problem in a kind's declaration."""
    problems: list[Problem] = []
    if not _SAFE_NAME.fullmatch(kind.name):
        problems.append(
            Problem(
                field="kind.name",
                what=f"{kind.name!r} is not a kind name",
                mend="use 1-32 lowercase letters, digits or '-', starting with a letter",
            ),
        )
    if not _SAFE_PREFIX.fullmatch(kind.prefix):
        problems.append(
            Problem(
                field=f"kind {kind.name}: prefix",
                what=f"{kind.prefix!r} cannot start a branch name",
                mend="use 1-32 letters, digits, '_' or '-'",
            ),
        )
    order = steps(kind.body)
    if not order:
        problems.append(
            Problem(
                field=f"kind {kind.name}: stages",
                what="the kind has no stage",
                mend="declare at least one stage",
            ),
        )
    seen: set[str] = set()
    for index, found in enumerate(order):
        where = f"kind {kind.name}: stage {index + 1} ({found.name})"
        if not _SAFE_NAME.fullmatch(found.name):
            problems.append(
                Problem(
                    field=where,
                    what=f"{found.name!r} is not a stage name",
                    mend="use 1-32 lowercase letters, digits or '-', starting with a letter",
                ),
            )
        if found.name in seen:
            problems.append(
                Problem(
                    field=where,
                    what=f"stage {found.name} is declared twice",
                    mend="give each stage its own name",
                ),
            )
        seen.add(found.name)
        problems.extend(_check_prompt(where, found.prompt))
        if isinstance(found.deliverable, ReportFile):
            problems.extend(_check_report_path(where, found.deliverable.path))
    if problems:
        raise UsageError(tuple(problems))


def _check_prompt(where: str, prompt: str) -> list[Problem]:
    if not prompt.strip():
        return [Problem(field=where, what="the prompt is empty", mend="write the stage's prompt")]
    template = string.Template(prompt)
    if not template.is_valid():
        return [
            Problem(
                field=where,
                what="the prompt has a '$' that names no field",
                mend="write '$$' for a literal dollar sign",
            ),
        ]
    unknown = sorted(set(template.get_identifiers()) - PROMPT_FIELDS)
    if unknown:
        return [
            Problem(
                field=where,
                what=f"the prompt names unknown fields {', '.join(unknown)}",
                mend=f"use only {', '.join(sorted(PROMPT_FIELDS))}",
            ),
        ]
    return []


def _check_report_path(where: str, path: str) -> list[Problem]:
    parts = path.split("/")
    if not path or path.startswith("/") or any(part in {"", ".", ".."} for part in parts):
        return [
            Problem(
                field=where,
                what=f"report path {path!r} is not a plain path inside the place",
                mend="name a relative path such as 'verify.md' or 'reports/verify.md'",
            ),
        ]
    return []


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
