"""``flume mcp``: flume's commands as the tools of an MCP server, over stdio.

Theory of operation. Claude Code (and any other MCP client) starts ``flume mcp`` and talks to it
over its stdin and stdout with the official MCP SDK's :class:`MCPServer`. Each tool is one of
flume's commands, called through :mod:`flume.api` exactly as the CLI would run it: ``status``,
``launch``, ``tell``, ``stop``, ``retry``, ``drop``, ``proceed``, ``approve``, ``resume``,
``raise_budgets``, ``resolve`` and ``transcript``. Tools take typed arguments
and answer JSON objects; nothing a caller writes reaches a shell. A request flume refuses (a
:class:`UsageError`) comes back as a tool error naming what is wrong and how to mend it, and the
server goes on serving.

``launch`` runs in the repository of the folder the server was started in, unless told another:
Claude Code starts a plugin's MCP servers in the project's folder (seen with 2.1.332). It also
takes ``words``, the arguments of the plugin's ``/flume:launch`` command as the person typed
them: leading ``kind=``, ``name=``, ``base=``, ``mark=``, ``wait=``, ``agent=`` and ``model=``
settings, then the brief (:func:`read_words`). So the model only copies the person's text into
one string, and flume, not the model, reads it. A launch with no name gets one made from its
brief (:func:`name_from`), made unique in the repository by a number when it is taken.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import attrs
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field
from pyrsistent import pmap
from pyrsistent.typing import PMap

from flume import __version__, api
from flume.core.errors import Problem, UsageError
from flume.core.naming import made_names, name_from, names_taken
from flume.core.settings import NAME_TRIES

#: The kind a launch runs when it names none (the /flume:launch command's default).
DEFAULT_KIND = "fix"


#: The settings ``words`` may start with; ``wait`` may be given more than once.
SETTINGS = ("kind", "name", "base", "mark", "wait", "agent", "model")

_SETTING = re.compile(r"(?P<key>[a-z]+)=(?P<value>\S*)(?=\s|$)")
_END = re.compile(r"--(?=\s|$)")

INSTRUCTIONS = """\
flume carries work for AI coding agents from launch to landing: a launch makes a place (a git
worktree on a branch of its own, named <kind>--<name>) and runs each stage of the work's kind
with a fresh agent, until the work lands on its base. Use launch to start work, status to follow
places, tell to give a place's agent words, stop to end an agent that went the wrong way, retry
to run a stopped stage again, proceed to release a stage that waits on the caller's word,
approve, resume, raise_budgets or resolve to let a paused workflow run go on (status names which
one a pause takes), drop to abandon work (its branch is kept), and transcript to read again what
each attempt's agent was told and did."""


@attrs.frozen(kw_only=True)
class Words:
    """The ``/flume:launch`` command's arguments, read: its settings and its brief."""

    settings: PMap[str, str] = attrs.field(factory=pmap)
    waits: tuple[str, ...] = ()
    brief: str = ""


def read_words(words: str) -> Words:
    """Read leading ``key=value`` settings off ``words``; the rest, stripped, is the brief.

    The settings are those of :data:`SETTINGS`, each a word of its own; ``--`` ends them, so a
    brief may start with ``name=`` too. The first word that is not a setting starts the brief,
    and the brief keeps its own spacing and lines. A setting given twice, or given no value, is
    a :class:`UsageError` (field ``words``).
    """
    settings: dict[str, str] = {}
    waits: list[str] = []
    at = 0
    while True:
        at = len(words) - len(words[at:].lstrip())
        ended = _END.match(words, at)
        if ended is not None:
            at = ended.end()
            break
        found = _SETTING.match(words, at)
        if found is None or found["key"] not in SETTINGS:
            break
        key, value = found["key"], found["value"]
        if not value:
            raise UsageError.one(
                "words", f"{key}= has no value", f"write {key}=<value> with no space after '='"
            )
        if key == "wait":
            waits.append(value)
        elif key in settings:
            raise UsageError.one(
                "words", f"{key}= is given twice", f"give {key}= once, before the brief"
            )
        else:
            settings[key] = value
        at = found.end()
    return Words(settings=pmap(settings), waits=tuple(waits), brief=words[at:].strip())


def failure(error: UsageError) -> ToolError:
    """The tool error a :class:`UsageError` becomes: each problem, and that nothing was done."""
    head = (
        "flume refused this in the place's present state; nothing was done"
        if error.exit_status == 1
        else "flume found bad input; nothing was created or changed"
    )
    if any(problem.field == "supervisor" for problem in error.problems):
        # The request was journaled; the supervisor that carries it out did not answer.
        head = "flume journaled this, but no supervisor answered to carry it out"
    lines = [head, *(f"- {problem.render()}" for problem in error.problems)]
    return ToolError("\n".join(lines))


def _folder() -> Path:
    """The folder the server runs in; a usage error when it is gone (its worktree removed)."""
    try:
        return Path.cwd()
    except FileNotFoundError as error:
        raise UsageError.one(
            "repository",
            "the folder flume mcp runs in no longer exists",
            "name the repository with repository=<path>",
        ) from error


def _repository(given: str | None) -> Path:
    """The repository named (relative to the server's folder), else the server's folder."""
    if given is None:
        return _folder()
    path = Path(given).expanduser()
    return path if path.is_absolute() else _folder() / path


def _where(given: str | None) -> Path | None:
    return None if given is None else _repository(given)


Place = Annotated[str, Field(description="The place, <kind>--<name>, as status lists it.")]
Repository = Annotated[
    str | None,
    Field(description="The repository's path, when the place's name is in several repositories."),
]
Step = Annotated[
    str,
    Field(
        description="Only at this step: its name or key as status shows it (review, "
        "review-loop@2/review); a lane's step (slice-a) goes to that lane. Empty: any step."
    ),
]
Increment = Annotated[
    int | None,
    Field(description="Raise this budget by so much: a whole number of at least 1."),
]


def do_launch(  # noqa: PLR0913 (each parameter is one thing a launch names)
    *,
    brief: str | None,
    words: str | None,
    kind: str | None,
    name: str | None,
    repository: str | None,
    base: str | None,
    mark: str | None,
    waits: list[str] | None,
    kind_file: str | None,
    agent: str | None,
    model: str | None,
    panes: Literal["tmux", "print"],
) -> dict[str, Any]:
    """The launch tool's work, as a plain function: check, launch, and answer the place.

    It takes no arguments for the agent's command line: the tool may run without a person's
    approval (the plugin's command allows it), and flags such as ``--settings`` or a permission
    mode are for a person to give, at ``flume launch``.
    """
    if (brief is None) == (words is None):
        raise UsageError.one(
            "brief",
            "both brief and words are given" if brief is not None else "no brief is given",
            "give the brief as brief, or the /flume:launch command's text as words",
        )
    read = read_words(words) if words is not None else Words(brief=brief or "")
    given = {
        "kind": kind,
        "name": name,
        "base": base,
        "mark": mark,
        "agent": agent,
        "model": model,
    }
    clashes = [
        Problem(
            field=key,
            what=f"{key} is given both as a parameter and in words",
            mend=f"give {key} once",
        )
        for key, value in given.items()
        if value is not None and key in read.settings
    ]
    if clashes:
        raise UsageError(tuple(clashes))
    chosen = {
        key: value if value is not None else read.settings.get(key) for key, value in given.items()
    }
    if not read.brief.strip():
        raise UsageError.one(
            "brief", "the brief is empty", "say what the work is, e.g. /flume:launch <brief>"
        )
    where = _repository(repository)
    kind_chosen = chosen["kind"] or (None if kind_file is not None else DEFAULT_KIND)
    made_name = chosen["name"] is None
    base_name = chosen["name"] or name_from(read.brief, kind_chosen or "")
    taken: tuple[Problem, ...] = ()
    asked = api.LaunchAsked(
        repository=where,
        name=base_name,
        brief=read.brief,
        kind=kind_chosen,
        kind_file=None if kind_file is None else _repository(kind_file),
        base=chosen["base"],
        mark=chosen["mark"],
        waits=(*read.waits, *(waits or ())),
        agent=chosen["agent"] or "claude",
        model=chosen["model"],
        panes=panes,
    )
    for tried in made_names(base_name, NAME_TRIES):
        try:
            launched = api.launch_asked(asked.evolve(name=tried))
        except UsageError as error:
            if made_name and all(problem.field == "name" for problem in error.problems):
                taken = error.problems
                continue  # the made name is taken: try the next number
            raise
        return launched.as_dict()
    last = names_taken(base_name, NAME_TRIES)
    raise UsageError((*taken, last))


def server() -> MCPServer[Any]:
    """The MCP server: a tool for each of flume's commands."""
    made: MCPServer[Any] = MCPServer(
        "flume", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )

    @made.tool(annotations=ToolAnnotations(read_only_hint=True))
    def status(
        place: Annotated[
            str | None, Field(description="One place, <kind>--<name>; all places when left out.")
        ] = None,
        repository: Annotated[
            str | None,
            Field(description="Only this repository's places (default: every one flume knows)."),
        ] = None,
        mark: Annotated[
            str | None, Field(description="Only the places launched with this mark.")
        ] = None,
    ) -> dict[str, Any]:
        """Show each place flume follows on this host, read from its journal.

        Answers {"places": [...]}, each place as `flume status --json` gives it: place, kind,
        stage, attempt, phase, agent (working, waiting, asking a person, stopped, unknown),
        deliverable and whether it exists, submission, tasks, short_cause and needs (why a
        stage stopped short, and the agent's words), waits_on_caller, path, branch, base.
        """
        try:
            found = api.status_dicts(place=place, repository=_where(repository), mark=mark)
        except UsageError as error:
            raise failure(error) from error
        return {"places": found}

    @made.tool(annotations=ToolAnnotations(destructive_hint=False, open_world_hint=False))
    def launch(  # noqa: PLR0913 (each parameter is one thing a launch names)
        *,
        brief: Annotated[
            str | None,
            Field(
                description="What the work is, in full: every stage's agent gets it whole. "
                "Give brief or words, not both."
            ),
        ] = None,
        words: Annotated[
            str | None,
            Field(
                description="The /flume:launch command's text exactly as the person typed it: "
                "leading kind=, name=, base=, mark=, wait=, agent=, model= settings (-- ends "
                "them), then the brief. flume reads it; copy it unchanged."
            ),
        ] = None,
        kind: Annotated[
            str | None,
            Field(
                description="fix (the default), change, question, or a kind the repository "
                "declares."
            ),
        ] = None,
        name: Annotated[
            str | None,
            Field(
                description="The work's name (letters, digits, '.', '_', '-'); it names the "
                "place <kind>--<name> and its branch. Made from the brief when left out."
            ),
        ] = None,
        repository: Annotated[
            str | None,
            Field(description="The repository (default: the folder flume mcp runs in)."),
        ] = None,
        base: Annotated[
            str | None,
            Field(description="The branch to cut the place from and land on (default: shared)."),
        ] = None,
        mark: Annotated[
            str | None, Field(description="A mark to find the place by (status mark=...).")
        ] = None,
        waits: Annotated[
            list[str] | None,
            Field(description="Stages that wait on the caller's word (proceed) before starting."),
        ] = None,
        kind_file: Annotated[
            str | None, Field(description="A TOML file declaring the launch's own kind.")
        ] = None,
        agent: Annotated[
            str | None, Field(description="claude (the default), codex, or test.")
        ] = None,
        model: Annotated[str | None, Field(description="The agent's model.")] = None,
        panes: Annotated[
            Literal["tmux", "print"],
            Field(
                description="tmux: each agent in flume's own tmux server; print: flume writes "
                "the command down for you to run."
            ),
        ] = "tmux",
    ) -> dict[str, Any]:
        """Launch work: flume makes a place for it and carries it from stage to stage to landing.

        The place is a git worktree at <repository>/places/<kind>--<name> on its own branch.
        Answers the place's id, path, branch and base. Bad input creates nothing and comes back
        as an error naming what is wrong and how to mend it.
        """
        try:
            return do_launch(
                brief=brief,
                words=words,
                kind=kind,
                name=name,
                repository=repository,
                base=base,
                mark=mark,
                waits=waits,
                kind_file=kind_file,
                agent=agent,
                model=model,
                panes=panes,
            )
        except UsageError as error:
            raise failure(error) from error

    @made.tool()
    def tell(
        place: Place,
        text: Annotated[str, Field(description="What to tell the place's agent.")],
        step: Step = "",
        repository: Repository = None,
    ) -> dict[str, str]:
        """Tell a place's agent something: held while it works, sent once it waits.

        Refused, with nothing typed, when no agent is live, the agent is asking a person, or
        the run is not at the step named.
        """
        return _said(place, lambda: api.tell(place, text, step=step, repository=_where(repository)))

    @made.tool(annotations=ToolAnnotations(destructive_hint=True))
    def stop(place: Place, repository: Repository = None) -> dict[str, str]:
        """End a place's agent that went the wrong way; its stage waits for retry or drop."""
        return _said(place, lambda: api.stop(place, repository=_where(repository)))

    @made.tool()
    def retry(
        place: Place,
        words: Annotated[
            str, Field(description="Your words for the new attempt, put in its prompt.")
        ] = "",
        step: Step = "",
        repository: Repository = None,
    ) -> dict[str, str]:
        """Run a stage that stopped short again, with a fresh agent and your words."""
        return _said(
            place,
            lambda: api.retry(place, words=words, step=step, repository=_where(repository)),
        )

    @made.tool()
    def proceed(place: Place, repository: Repository = None) -> dict[str, str]:
        """Give your word to a stage that waits on it, so that it starts."""
        return _said(place, lambda: api.proceed(place, repository=_where(repository)))

    @made.tool(annotations=ToolAnnotations(destructive_hint=True))
    def drop(place: Place, repository: Repository = None) -> dict[str, str]:
        """Abandon the work: its agent ends, its place is removed and its branch is kept."""
        return _said(place, lambda: api.drop(place, repository=_where(repository)))

    _pause_tools(made)
    _transcript_tool(made)
    return made


def _transcript_tool(made: MCPServer[Any]) -> None:
    """The tool that replays each attempt's chat (``flume transcript``)."""

    @made.tool(annotations=ToolAnnotations(read_only_hint=True))
    def transcript(
        place: Place,
        step: Annotated[
            str,
            Field(
                description="Only this step: its key as status shows it "
                "(review-loop@2/review), its name (every pass) or a loop's. Empty: every attempt."
            ),
        ] = "",
        attempt: Annotated[
            int | None, Field(description="Only the step's attempt of this number (from 1).")
        ] = None,
        repository: Repository = None,
    ) -> dict[str, Any]:
        """Replay a place's conversations: each attempt's, read from its agent's own transcript.

        Answers {"place", "attempts": [...]}, each with its key, attempt, agent, session,
        transcript path, and its lines, each a part (prompt, text, tool, result) and its text;
        or, in missing, why it could not be read. A tidied place is found too.
        """
        try:
            chats = api.transcript(place, step, attempt=attempt, repository=_where(repository))
        except UsageError as error:
            raise failure(error) from error
        return {"place": place, "attempts": [chat.as_dict() for chat in chats]}


def _pause_tools(made: MCPServer[Any]) -> None:
    """The tools that let a paused run go on: approve, pass_gate, resume, raise_budgets, resolve.

    And answer: a question an agent asked, which the run waits on.
    """

    @made.tool()
    def answer(
        place: Place,
        question: Annotated[str, Field(description="The question's id, as status names it: q1.")],
        text: Annotated[str, Field(description="Your answer to the agent that asked.")],
        repository: Repository = None,
    ) -> dict[str, str]:
        """Answer a question a workflow step's agent asked (status: paused, question), once.

        The answer reaches the agent that asked as a message its transcript must hold.
        """
        return _said(
            place, lambda: api.answer(place, question, text, repository=_where(repository))
        )

    @made.tool()
    def approve(place: Place, repository: Repository = None) -> dict[str, str]:
        """Approve the step an approval gate holds, so the run goes on.

        Refused when the place is not paused for an approval.
        """
        return _said(place, lambda: api.approve(place, repository=_where(repository)))

    @made.tool()
    def pass_gate(
        place: Place,
        why: Annotated[str, Field(description="Why you pass it: kept with the step, shown.")],
        step: Annotated[
            str, Field(description="Only if the run is at this step (a lane's step: that lane).")
        ] = "",
        repository: Repository = None,
    ) -> dict[str, str]:
        """Pass, as a person, the gate a run holds blocked (status: paused, gate-blocked).

        Journaled as your decision with your words; the step ends and the run goes on. Refused
        where no gate is blocked (the refusal names what the place waits on).
        """
        return _said(
            place,
            lambda: api.pass_gate(place, why, step=step, repository=_where(repository)),
        )

    @made.tool()
    def resume(place: Place, repository: Repository = None) -> dict[str, str]:
        """Let a run paused on a blocked gate or a loop's max go on: its step starts again.

        Refused when the place is not paused for one of those (status names what each pause
        takes).
        """
        return _said(place, lambda: api.resume(place, repository=_where(repository)))

    @made.tool()
    def raise_budgets(  # noqa: PLR0913 (one argument per budget)
        place: Place,
        *,
        turns: Increment = None,
        tokens: Increment = None,
        wall_minutes: Increment = None,
        retries: Increment = None,
        turns_per_attempt: Increment = None,
        repository: Repository = None,
    ) -> dict[str, str]:
        """Raise the budgets of a run paused on one by these amounts, so it goes on.

        Name at least one. A budget still spent after the raise pauses the run again.
        """
        return _said(
            place,
            lambda: api.raise_budgets(
                place,
                turns=turns,
                tokens=tokens,
                wall_minutes=wall_minutes,
                retries=retries,
                turns_per_attempt=turns_per_attempt,
                repository=_where(repository),
            ),
        )

    @made.tool()
    def resolve(
        place: Place,
        agent: Annotated[
            bool,
            Field(
                description="True: a fresh agent merges the lanes and commits. False: you "
                "merged the lane that conflicted in the run's worktree and committed (by hand)."
            ),
        ],
        repository: Repository = None,
    ) -> dict[str, str]:
        """Let a run paused on a merge conflict of its parallel's lanes go on.

        Refused when the place is not paused on a merge conflict (status names its files).
        """
        return _said(place, lambda: api.resolve(place, agent=agent, repository=_where(repository)))


def _said(place: str, command: Callable[[], str]) -> dict[str, str]:
    """Run one of the caller's commands; its words, or the tool error it was refused with."""
    try:
        said = command()
    except UsageError as error:
        raise failure(error) from error
    return {"place": place, "said": said}


def serve() -> None:
    """Serve MCP over stdin and stdout until the client closes them."""
    server().run("stdio")
