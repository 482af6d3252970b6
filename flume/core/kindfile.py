"""The kind file's format as data: every table and key, its type, its default and its meaning.

Theory of operation. A kind file (``flume launch --kind-file``, a ``[[kinds]] file`` of
``.flume.toml``, a fragment a lead composes) is read by :mod:`flume.shell.declared.kinds`, which
takes the keys each table may hold from here, and refuses any other naming its line and the
nearest key it takes; the manual's reference page on the format is drawn from here too. One list,
so the page cannot name a key the reader refuses, nor leave out one it takes.

A key's ``default`` is in words as the page shows it; where it is a TOML value (``literal``),
writing it out reads the same as leaving the key out, which the tests check key by key.

The gate words (:data:`GATES`) are data here as well: the reader turns a word into its gate with
:func:`gate_of`, and the page lists them with their meanings.
"""

from __future__ import annotations

import enum

import attrs

from flume.core.choices import AgentName
from flume.core.kinds import (
    LEAD_EDGES,
    MAX_CHILDREN,
    MAX_DEPTH,
    MAX_LANES,
    PR_FIELDS,
    STEP_EDGES,
    Approval,
    Artifact,
    Budgets,
    ChangeWritten,
    Commit,
    Gate,
    Join,
    Landing,
    Merge,
    OnMax,
    PassingTests,
    ReportFile,
    TasksTicked,
    Verdict,
)


@attrs.frozen(kw_only=True)
class Key:
    """One key a table takes: its name, the type of its value, its default and its meaning."""

    name: str
    #: The value's type, in words (``text``, ``a whole number of at least 1``...).
    type: str
    meaning: str
    #: The default in words; None: the key is required.
    default: str | None = None
    #: The default is a TOML value: written out, it reads the same as the key left out.
    literal: bool = False

    @property
    def required(self) -> bool:
        """A table without this key is refused."""
        return self.default is None


@attrs.frozen(kw_only=True)
class Table:
    """One table of a kind file: how it is written, what it is, and the keys it takes."""

    #: How the file writes it: ``[kind]``, ``[step.NAME]``, ``budgets = { ... }``.
    header: str
    #: What it is called in messages: ``[kind]``, ``a step``, ``budgets``.
    called: str
    meaning: str
    keys: tuple[Key, ...]

    def names(self) -> tuple[str, ...]:
        """The keys it takes, in the order the page lists them."""
        return tuple(key.name for key in self.keys)

    def key(self, name: str) -> Key:
        """The key called ``name``; the reader asks only for keys it takes."""
        return next(key for key in self.keys if key.name == name)


def words(choices: type[enum.Enum] | tuple[str, ...]) -> str:
    """The words a choice takes, quoted, as a type: ``"all" or "first"``."""
    found = [str(each.value) for each in choices] if isinstance(choices, type) else list(choices)
    quoted = [f'"{each}"' for each in found]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


_TEXT = "text"
_FLAG = "true or false"
_COUNT = "a whole number of at least 1"
_NAMES = "a list of block names"
_STEP_NAME = "a step's name"
_GATE_TYPE = "a gate word (below)"
_COMMAND = "a list of strings: a program and its arguments, no shell"

#: A workflow's ``[kind]``: a tree of named blocks.
KIND = Table(
    header="[kind]",
    called="[kind]",
    meaning=(
        "The kind itself, as a workflow: its name, its branch prefix, the blocks it runs in "
        "order, its budgets and what it does once its body is done. Each block is declared "
        "once, as [step.NAME], [loop.NAME], [parallel.NAME] or [orchestrate.NAME], and named "
        "exactly once in a body or in branches, so the file reads top-down."
    ),
    keys=(
        Key(
            name="name",
            type="1-32 lowercase letters, digits or '-', starting with a letter",
            meaning="The kind's name: `flume launch --kind NAME`, and the start of each place's "
            "name (`<kind>--<name>`).",
        ),
        Key(
            name="prefix",
            type="1-32 letters, digits, '_' or '-'",
            default="the kind's name",
            meaning="The branch prefix: a place's branch is `<prefix>/<name>`.",
        ),
        Key(
            name="body",
            type=_NAMES,
            meaning="The blocks the run goes through, in order; at least one.",
        ),
        Key(
            name="budgets",
            type="a table (below)",
            default="no cap",
            meaning="The caps the run's spending is held to, frozen at launch; over one, the run "
            "pauses (`flume raise` lets it go on).",
        ),
        Key(
            name="finalize",
            type="a table (below)",
            default="none: the run finishes when its body is done",
            meaning="What the run does once its body is done: push its branch and open a pull "
            "request, or land it.",
        ),
    ),
)

#: The older form's ``[kind]``: a list of stages.
KIND_OF_STAGES = Table(
    header="[kind]",
    called="[kind]",
    meaning=(
        "A kind as a list of stages, the form the built-in kinds have (and a `[[kinds]]` table "
        "of `.flume.toml` takes): each stage a fresh agent, ended by its deliverable."
    ),
    keys=(
        KIND.key("name"),
        KIND.key("prefix"),
        Key(
            name="stages",
            type="[[kind.stages]] tables (below)",
            meaning="The stages, in the order they run; at least one.",
        ),
    ),
)

#: One stage of the older form.
STAGE = Table(
    header="[[kind.stages]]",
    called="a stage",
    meaning="One stage of a kind of stages: a fresh agent, its prompt, and the deliverable that "
    "ends it.",
    keys=(
        Key(
            name="name",
            type="1-32 lowercase letters, digits or '-', starting with a letter",
            meaning="The stage's name, unique in the kind.",
        ),
        Key(
            name="prompt",
            type="text: a template (prompt fields below)",
            meaning="What the stage's agent is sent.",
        ),
        Key(
            name="deliverable",
            type="a deliverable word (the first six gate words below)",
            meaning="What ends the stage; it counts only when made since the stage started.",
        ),
        Key(
            name="waits_on_caller",
            type=_FLAG,
            default="false",
            literal=True,
            meaning="The stage starts only on the caller's word (`flume proceed`).",
        ),
    ),
)

#: A step: one agent, its prompt and its gate.
STEP = Table(
    header="[step.NAME]",
    called="a step",
    meaning="One agent with a prompt and a gate: the condition that means it is done, judged "
    "when the agent's turn ends, never on quiet.",
    keys=(
        Key(
            name="prompt",
            type="text: a template (prompt fields below)",
            meaning="What the step's agent is sent.",
        ),
        Key(
            name="gate",
            type=_GATE_TYPE,
            default='"verdict"',
            literal=True,
            meaning="What ends the step. A verdict is the file `$verdict` "
            '(`{"result": "done"}`, see the board files).',
        ),
        Key(
            name="deliverable",
            type=_GATE_TYPE,
            default="the gate",
            meaning="The gate's older name: a step names one of gate and deliverable.",
        ),
        Key(
            name="agent",
            type=f"{words(AgentName)}, or a table {{ agent = ..., model = ... }}",
            default="the launch's agent",
            meaning="The agent this step starts, and its model, in place of the launch's.",
        ),
        Key(
            name="waits_on_caller",
            type=_FLAG,
            default="false",
            literal=True,
            meaning="The step starts only on the caller's word (`flume proceed`).",
        ),
        Key(
            name="may",
            type=f"a list of {words(STEP_EDGES + LEAD_EDGES)}",
            default="[]",
            literal=True,
            meaning="The messages its agent may send: `progress` (`flume progress`), `ask` "
            "(`flume ask`); a lead's also `notify`, `spawn` and `compose`.",
        ),
        Key(
            name="sandbox",
            type=_FLAG,
            default="false",
            literal=True,
            meaning="Its agent's commands may write only its worktree, the board and what git "
            "needs to commit there (bubblewrap; Claude Code's own sandbox).",
        ),
    ),
)

#: A loop: a body again and again until a verdict says done.
LOOP = Table(
    header="[loop.NAME]",
    called="a loop",
    meaning="Its body again and again, until its `until` step's verdict says done, or `max` "
    "passes ran.",
    keys=(
        Key(name="body", type=_NAMES, meaning="The blocks of one pass, in order."),
        Key(
            name="until",
            type=_STEP_NAME,
            meaning='A step of the body whose gate is "verdict": the loop ends when its verdict '
            "is done.",
        ),
        Key(name="max", type=_COUNT, meaning="The most passes the loop runs."),
        Key(
            name="on_max",
            type=words(OnMax),
            default='"continue"',
            literal=True,
            meaning="After `max` passes without done: the run goes on, or pauses for a person "
            "(`flume resume`).",
        ),
    ),
)

#: A parallel: branches fanned out into lanes.
PARALLEL = Table(
    header="[parallel.NAME]",
    called="a parallel",
    meaning="Its branches side by side, each in a lane: a place of its own, cut from the run's "
    f"head. A kind holds at most {MAX_LANES} lanes in all.",
    keys=(
        Key(
            name="branches",
            type=_NAMES,
            meaning="The blocks it fans out, each in a lane named after it; at least one.",
        ),
        Key(
            name="join",
            type=words(Join),
            default='"all"',
            literal=True,
            meaning="Done when every lane finished, or when the first did (which ends the others).",
        ),
        Key(
            name="merge",
            type=words(Merge),
            default='"merge"',
            literal=True,
            meaning="Merge every finished lane into the run's branch in declared order, the "
            'first to finish, or none. A "first" join takes "pick" or "none".',
        ),
        Key(
            name="cap",
            type=_COUNT,
            default="every lane at once",
            meaning="The most lanes working at once; the others wait their turn.",
        ),
        Key(
            name="spread",
            type=_FLAG,
            default="false",
            literal=True,
            meaning="Each lane a place of a fleet, carried by whichever host takes it, and merged "
            "on the run's host; a kind that spreads is launched only on a host of the fleet.",
        ),
    ),
)

#: An orchestrate block: a lead agent and its children.
ORCHESTRATE = Table(
    header="[orchestrate.NAME]",
    called="an orchestrate block",
    meaning="A lead agent that hands work to children (`flume spawn`), answers their "
    "questions and hears their news; once every child is done and merged, it writes its "
    "verdict. Never nested in another.",
    keys=(
        Key(
            name="lead",
            type=_STEP_NAME,
            meaning="The lead's step, run in the run's own worktree; its gate is judged when "
            "its turn ends.",
        ),
        Key(
            name="children",
            type="a table (below)",
            default="none: the lead spawns no child",
            meaning="The step each spawned child runs, and how many the lead may spawn.",
        ),
        Key(
            name="branches",
            type=_NAMES,
            default="[]",
            literal=True,
            meaning="Children started at the block's entry, as a parallel's lanes are.",
        ),
        Key(
            name="join",
            type=words((Join.ALL.value,)),
            default='"all"',
            literal=True,
            meaning="An orchestrate block joins all its children.",
        ),
        PARALLEL.key("merge"),
        Key(
            name="cap",
            type=_COUNT,
            default="every child at once",
            meaning="The most children working at once; the others wait their turn.",
        ),
        Key(
            name="compose",
            type="a table (below)",
            default="{ runs = 0, depth = 2 }",
            literal=True,
            meaning="The child runs of a workflow fragment the lead may start (`flume "
            "compose`), and how deep they nest.",
        ),
        Key(
            name="spread",
            type=_FLAG,
            default="false",
            literal=True,
            meaning="Each child a place of a fleet, carried by whichever host takes it; the lead "
            "stays on the run's host, and hears and answers it through the fleet.",
        ),
    ),
)

#: The caps of ``budgets``, by their names in :class:`~flume.core.kinds.Budgets`.
_BUDGET_MEANINGS = {
    "turns": "agent turns, all told",
    "wall_minutes": "minutes of active driving (not calendar time)",
    "turns_per_attempt": "agent turns of one attempt of a step",
    "retries": "attempts of a step after its first",
    "tokens": "tokens, where the agent reports its usage",
}

BUDGETS = Table(
    header="budgets = { ... }",
    called="budgets",
    meaning="In [kind]. Each cap optional; over one, the run pauses before its next agent.",
    keys=tuple(
        Key(
            name=field.name,
            type=_COUNT,
            default="no cap",
            meaning=f"The most {_BUDGET_MEANINGS[field.name]}.",
        )
        for field in attrs.fields(Budgets)
    ),
)

FINALIZE = Table(
    header="finalize = { ... }",
    called="finalize",
    meaning="In [kind]. Each act done once, and never again once observed done.",
    keys=(
        Key(
            name="push",
            type="a remote's name",
            default="no push",
            meaning="Push the run's branch (that branch alone, never forced) to this remote.",
        ),
        Key(
            name="pr",
            type=_COMMAND,
            default="no pull request",
            meaning="Then run this command once, in the run's worktree, to open a pull request: "
            f"{', '.join('{' + field + '}' for field in PR_FIELDS)} are replaced in its "
            "arguments. Needs push.",
        ),
        Key(
            name="land",
            type=_FLAG,
            default="false",
            meaning="Land the run's branch on its base through the repository's landers, as a "
            "fix's submit stage does; not with push or pr.",
        ),
    ),
)

CHILDREN = Table(
    header="children = { ... }",
    called="children",
    meaning="In [orchestrate.NAME].",
    keys=(
        Key(
            name="template",
            type=_STEP_NAME,
            meaning="The step each child the lead spawns runs (`$goal` in its prompt is the "
            "goal the lead gave). The lead's step must name spawn in its may.",
        ),
        Key(
            name="max",
            type=f"a whole number from 1 to {MAX_CHILDREN}",
            default="1",
            literal=True,
            meaning="The most children the lead may spawn.",
        ),
    ),
)

COMPOSE = Table(
    header="compose = { ... }",
    called="compose",
    meaning="In [orchestrate.NAME]. The lead's step must name compose in its may.",
    keys=(
        Key(
            name="runs",
            type="a whole number of at least 0",
            default="0",
            literal=True,
            meaning="How many child runs the lead may compose.",
        ),
        Key(
            name="depth",
            type=f"a whole number from 1 to {MAX_DEPTH}",
            default=str(MAX_DEPTH),
            literal=True,
            meaning="How deep runs may nest.",
        ),
    ),
)

AGENT = Table(
    header="agent = { ... }",
    called="agent",
    meaning="In [step.NAME], when the step names a model too.",
    keys=(
        Key(name="agent", type=words(AgentName), meaning="The agent the step starts."),
        Key(
            name="model",
            type=_TEXT,
            default="the agent's own",
            meaning="The model it runs.",
        ),
    ),
)

#: The tables of named blocks, by the word a file declares them with.
BLOCKS: dict[str, Table] = {
    "step": STEP,
    "loop": LOOP,
    "parallel": PARALLEL,
    "orchestrate": ORCHESTRATE,
}

#: Every table of the format, in the order the manual's page lists them.
TABLES = (KIND, BUDGETS, FINALIZE, STEP, AGENT, LOOP, PARALLEL, ORCHESTRATE, CHILDREN, COMPOSE)
#: The older form's tables.
STAGES_TABLES = (KIND_OF_STAGES, STAGE)


@attrs.frozen(kw_only=True)
class GateWord:
    """A word a file names a gate (or a deliverable) with, and what it means."""

    word: str
    meaning: str
    #: A deliverable too: a stage of the older form may end on it.
    deliverable: bool
    #: The gate, for a word without a path; None for ``report:`` and ``artifact:``.
    gate: Gate | None = None


#: The gate words, deliverables first.
GATES = (
    GateWord(
        word="commit",
        meaning="a new commit on the place's branch",
        deliverable=True,
        gate=Commit(),
    ),
    GateWord(
        word="landing",
        meaning="the landing on its base (the agent runs `flume submit`)",
        deliverable=True,
        gate=Landing(),
    ),
    GateWord(
        word="landing-archived",
        meaning="the landing, with the OpenSpec change archived",
        deliverable=True,
        gate=Landing(archived_change=True),
    ),
    GateWord(
        word="change-written",
        meaning="the OpenSpec change written, its planning complete, in a new commit",
        deliverable=True,
        gate=ChangeWritten(),
    ),
    GateWord(
        word="tasks-ticked",
        meaning="every task of the change ticked, in a new commit",
        deliverable=True,
        gate=TasksTicked(),
    ),
    GateWord(
        word="report:<path>",
        meaning="the file at <path> in the place, written since the stage started",
        deliverable=True,
    ),
    GateWord(
        word="verdict",
        meaning="the step's verdict file, `$verdict` on the board, written for this attempt "
        'with result "done" or "revise" ("blocked" pauses the run)',
        deliverable=False,
        gate=Verdict(),
    ),
    GateWord(
        word="artifact:<path>",
        meaning="the file at <path> (a relative path inside the worktree) exists",
        deliverable=False,
    ),
    GateWord(
        word="tests",
        meaning="the repository's test command (`[tests]` of .flume.toml) passes, run by flume",
        deliverable=False,
        gate=PassingTests(),
    ),
    GateWord(
        word="approval",
        meaning="a person approves (`flume approve`)",
        deliverable=False,
        gate=Approval(),
    ),
)

#: The words a gate is named with, paths shown as ``<path>``.
GATE_WORDS = tuple(each.word for each in GATES)


def gate_of(word: str) -> Gate | None:
    """The gate a word names; None for a word flume does not know."""
    for each in GATES:
        if each.gate is not None and each.word == word:
            return each.gate
    for prefix, made in (("report:", ReportFile), ("artifact:", Artifact)):
        if word.startswith(prefix):
            return made(path=word.removeprefix(prefix))
    return None


#: What each prompt field is replaced with (``$field`` or ``${field}``; ``$$`` is a dollar).
PROMPT_FIELD_MEANINGS = {
    "brief": "the brief, whole, as the caller wrote it",
    "name": "the work's name",
    "kind": "the kind's name",
    "stage": "the stage's (or step's) name",
    "place": "the place, `<kind>--<name>`",
    "path": "the place's worktree",
    "branch": "the place's branch",
    "base": "the branch the work lands on",
    "repository": "the repository's main worktree",
    "deliverable": "the stage's deliverable (its gate), in words",
    "words": "the caller's words on a retry; empty otherwise",
    "marker": "flume's marker (added at the end of every prompt whatever the template says)",
    "board": "the place's board, the folder beside the worktrees a step writes its files in",
    "handoff": "this step's `handoff.md` on the board",
    "verdict": "this step's `verdict.json` on the board (`<board>/<step>/verdict.json`)",
    "pass": "the innermost loop's pass, from 1 (1 outside loops)",
    "max": "the innermost loop's max (1 outside loops)",
    "position": "the attempt's key, each loop's pass in it (`review-loop@2/review`)",
    "goal": "an orchestrate child's goal, as its lead spawned it; empty elsewhere",
    "question": "the last question the place's agents asked, with its answer once given",
}
