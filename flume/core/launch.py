"""The launch: what a caller asks flume to carry, and the checks it must pass (R1).

Theory of operation: a launch is checked whole before anything exists, so a bad one creates no
branch, worktree, journal or pane. Every problem is named with how to mend it. The name must be
safe both as a path segment (``places/<kind>--<name>``) and as a git ref component
(``<prefix>/<name>``); the base must be a branch name git would accept (``git check-ref-format``
rules, applied here without running git).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs
from pyrsistent import pset, pvector
from pyrsistent.typing import PSet, PVector

# The choices and the text checks are re-exported: a launch is where they were always found.
from flume.core.choices import AgentName as AgentName  # noqa: PLC0414
from flume.core.choices import Panes as Panes  # noqa: PLC0414
from flume.core.errors import Problem, UsageError
from flume.core.ids import BranchName, KindName, PlaceName, Sha, StageName, WorkName
from flume.core.kinds import Kind, check_kind, steps
from flume.core.text import MAX_BRIEF_BYTES as MAX_BRIEF_BYTES  # noqa: PLC0414
from flume.core.text import control_character as control_character  # noqa: PLC0414

MAX_NAME = 64
#: A printed agent gets its prompt as one argument (Linux takes at most 128 KiB in one); the
#: prompt's own text around the brief fits in what is left.
MAX_PRINTED_BRIEF_BYTES = 100 * 1024


@attrs.frozen(kw_only=True)
class AgentSettings:
    """Which agent a stage starts, and how."""

    agent: AgentName = AgentName.CLAUDE
    model: str | None = None
    flags: PVector[str] = attrs.field(factory=pvector)
    panes: Panes = Panes.TMUX


@attrs.frozen(kw_only=True)
class Host:
    """The host whose supervisor carries a place: the one that launched it (HOST-OWNS-PLACE)."""

    #: A random id the host made once and keeps in its state folder.
    id: str
    #: The host's state folder (``$XDG_STATE_HOME/flume``), to name it to a person.
    state: str


@attrs.frozen(kw_only=True)
class Launch:
    """One launch, as the caller made it: the repository, the kind, the name and the brief."""

    repository: str
    kind: KindName
    name: WorkName
    brief: str
    base: BranchName
    agent: AgentSettings = AgentSettings()
    #: The stages that wait on the caller's word before they start.
    waits: PSet[StageName] = attrs.field(factory=pset)
    mark: str | None = None
    #: The launching host; None in a launch journaled before hosts were recorded.
    host: Host | None = None
    #: A lane's run: the place whose parallel block launched this one; None: a caller's launch.
    parent: PlaceName | None = None
    #: A lane's name (its branch's block): the lane is named ``<run's name>+<lane>``.
    lane: str = ""
    #: An orchestrate child's goal, as its lead spawned it (``$goal``).
    goal: str = ""
    #: An orchestrate block's child: its questions go to the run's lead (WF-ASK-ONE-ANSWERER).
    led: bool = False
    #: How deep the run is: 1 a caller's launch (and its lanes), 2 a run a lead composed.
    depth: int = 1
    #: A fleet place carried again on another host (FLEET-CARRIED-HEAD): the head its branch
    #: starts at, the last one its lost host pushed; None: cut from the base's revision.
    carried: Sha | None = None
    #: A lane or child of a block that spreads over the fleet (WF-SPREAD): a fleet place, its
    #: run on the host that launched it, which hears of it only through the fleet.
    spread: bool = False

    @property
    def place(self) -> PlaceName:
        """R1: the name of the place this launch makes, ``<kind>--<name>``."""
        return place_name(self.kind, self.name)


def followed_by(launch: Launch, host: str | None) -> bool:
    """HOST-OWNS-PLACE: only the supervisor of the host ``host`` (its id) follows the place.

    A place belongs to the host that launched it: another host's supervisor, though it reads
    the same repository's journals, neither observes it nor acts on it. A launch journaled
    before hosts were recorded names none, and is followed as before, by any host's supervisor.
    """
    return launch.host is None or launch.host.id == host


def place_name(kind: KindName, name: WorkName) -> PlaceName:
    """R1: the place is named ``<kind>--<name>``."""
    return PlaceName(f"{kind}--{name}")


def place_path(launch: Launch) -> str:
    """R1: the place is the worktree at ``<repository>/places/<kind>--<name>``."""
    root = launch.repository.rstrip("/")
    return f"{root}/places/{launch.place}"


def place_branch(kind: Kind, name: WorkName) -> BranchName:
    """R1: the place's branch is ``<prefix>/<name>``."""
    return BranchName(f"{kind.prefix}/{name}")


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_MARK = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}")
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
_NAME_MEND = (
    "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, "
    "with no '..' and not ending in '.' or '.lock'"
)


def _is_control(char: str) -> bool:
    return ord(char) < 0x20 or ord(char) == 0x7F


#: Each check: a test the name fails, and what to say of it.
_NAME_CHECKS: tuple[tuple[Callable[[str], bool], Callable[[str], str]], ...] = (
    (lambda name: not name, lambda _name: "the name is empty"),
    (
        lambda name: len(name) > MAX_NAME,
        lambda name: f"the name is {len(name)} characters long, over {MAX_NAME}",
    ),
    (
        lambda name: name.startswith("-"),
        lambda name: f"{name!r} starts with '-', which a command would read as an option",
    ),
    (
        lambda name: any(_is_control(char) for char in name),
        lambda _name: "the name holds a control character",
    ),
    (lambda name: " " in name, lambda name: f"{name!r} holds a space"),
    (
        lambda name: "/" in name,
        lambda name: f"{name!r} holds '/', which would make it two path segments",
    ),
    (lambda name: ".." in name, lambda name: f"{name!r} holds '..'"),
    (
        lambda name: name.endswith(".lock"),
        lambda name: f"{name!r} ends in '.lock', which git reserves",
    ),
    (lambda name: name.endswith("."), lambda name: f"{name!r} ends in '.'"),
    (
        lambda name: not _NAME.fullmatch(name),
        lambda name: f"{name!r} holds a character outside letters, digits, '.', '_' and '-'",
    ),
)


def lane_work_name(name: WorkName, lane: str, passes: tuple[int, ...] = ()) -> WorkName:
    """A lane's work name: its run's name and its own, joined by ``+``, which no name holds.

    ``passes``: those of the loops around its parallel, outermost first. In any pass but the
    first they follow an ``@``, which no name holds either (``+slice-a@2``, ``+slice-a@1-2``):
    each entry of the block has lanes of its own, so a lane branch an earlier pass kept (its
    commits unmerged, under ``merge = "pick"`` or ``"none"``) never stands in a later one's way.
    """
    suffix = "" if all(number == 1 for number in passes) else "@" + "-".join(map(str, passes))
    return WorkName(f"{name}+{lane}{suffix}")


def name_problems(name: str) -> list[Problem]:
    """Why ``name`` is unsafe as a path segment and a ref component, if it is (the first reason)."""
    for fails, say in _NAME_CHECKS:
        if fails(name):
            return [Problem(field="name", what=say(name), mend=_NAME_MEND)]
    return []


def branch_problems(field: str, branch: str) -> list[Problem]:
    """Why ``branch`` is not a branch name git accepts (check-ref-format rules), if it is not."""
    what: str | None = None
    if not branch:
        what = "no branch is named"
    elif _REF_FORBIDDEN.search(branch):
        what = f"{branch!r} holds a space, control character or one of ~ ^ : ? * [ \\"
    elif branch.startswith("-"):
        what = f"{branch!r} starts with '-'"
    elif branch == "@" or "@{" in branch:
        what = f"{branch!r} holds '@{{' or is '@'"
    elif ".." in branch or "//" in branch:
        what = f"{branch!r} holds '..' or '//'"
    elif branch.endswith(("/", ".")):
        what = f"{branch!r} ends in '/' or '.'"
    elif any(part.startswith(".") or part.endswith(".lock") for part in branch.split("/")):
        what = f"a part of {branch!r} starts with '.' or ends in '.lock'"
    if what is None:
        return []
    return [Problem(field=field, what=what, mend="name an existing branch, such as 'main'")]


def _launch_name_problems(launch: Launch) -> list[Problem]:
    """The name's problems; a lane's name is its run's and its own, joined by '+'."""
    if not launch.lane:
        return name_problems(launch.name)
    # Each part a name (a lane of a lane holds two '+'), the last the lane's own; a lane's part
    # may carry the passes of the loops around its parallel after an '@', when any is past
    # its first (an outer lane's too, for a lane of a lane in a later pass).
    parts = launch.name.split("+")
    names = [part.partition("@")[0] for part in parts]
    problems = [problem for name in names for problem in name_problems(name)]
    passes_ok = all(_passes_ok(part) for part in parts[1:]) and "@" not in parts[0]
    if names[-1] != launch.lane or launch.parent is None or not passes_ok:
        problems.append(
            Problem(
                field="name",
                what=f"the lane {launch.lane!r} is launched as {launch.name!r}",
                mend="a lane is launched by its run, as <name>+<lane>",
            ),
        )
    return problems


def _passes_ok(part: str) -> bool:
    """A lane's part: its name alone, or ``name@2``, ``name@1-3``: passes, one past its first."""
    _name, at, passes = part.partition("@")
    if not at:
        return True
    numbers = passes.split("-")
    return all(number.isdigit() and not number.startswith("0") for number in numbers) and any(
        number != "1" for number in numbers
    )


def check_launch(launch: Launch, kind: Kind) -> None:
    """Raise a :class:`UsageError` naming every problem in ``launch`` of resolved ``kind``.

    The shell resolves the kind (built in, declared by the repository, or carried by the launch)
    and checks what only the world can tell (the repository exists, the base exists, the name is
    free); everything that can be decided from the values alone is decided here.
    """
    problems = _launch_name_problems(launch)
    problems.extend(branch_problems("base", launch.base))
    if not launch.repository.startswith("/"):
        problems.append(
            Problem(
                field="repository",
                what=f"{launch.repository!r} is not an absolute path",
                mend="the shell resolves the path before it launches",
            ),
        )
    problems.extend(brief_problems(launch.brief))
    if launch.kind != kind.name:
        problems.append(
            Problem(
                field="kind",
                what=f"the launch names kind {launch.kind!r} but carries {kind.name!r}",
                mend="name the kind the launch declares",
            ),
        )
    stage_names = {found.name for found in steps(kind.body)}
    unknown = sorted(set(launch.waits) - stage_names)
    if unknown:
        problems.append(
            Problem(
                field="wait",
                what=f"kind {kind.name} has no stage {', '.join(unknown)}",
                mend=f"name stages of {kind.name}: {', '.join(sorted(stage_names))}",
            ),
        )
    if launch.mark is not None and not _MARK.fullmatch(launch.mark):
        problems.append(
            Problem(
                field="mark",
                what=f"{launch.mark!r} is not a mark",
                mend="use up to 128 letters, digits or . _ : / @ + -, starting with a letter",
            ),
        )
    problems.extend(agent_problems(launch.agent))
    size = len(launch.brief.encode("utf-8", errors="surrogatepass"))
    if launch.agent.panes is Panes.PRINT and size > MAX_PRINTED_BRIEF_BYTES:
        problems.append(
            Problem(
                field="brief",
                what=f"the brief is {size} bytes: a printed agent takes its prompt as one "
                f"command-line argument, which holds at most {MAX_PRINTED_BRIEF_BYTES} bytes of it",
                mend="shorten it, point to a file from it, or run the agent in tmux (--panes tmux)",
            ),
        )
    try:
        check_kind(kind)
    except UsageError as error:
        problems.extend(error.problems)
    if problems:
        raise UsageError(tuple(problems))


def brief_problems(brief: str) -> list[Problem]:
    """What is wrong with a brief: empty, not text, a control character, or over 1 MiB."""
    problems: list[Problem] = []
    if not brief.strip():
        problems.append(
            Problem(field="brief", what="the brief is empty", mend="say what the work is"),
        )
    try:
        brief.encode("utf-8")
    except UnicodeEncodeError:
        problems.append(
            Problem(
                field="brief",
                what="the brief is not UTF-8 text (it holds bytes that are not characters)",
                mend="give the brief as UTF-8 text",
            ),
        )
    control = control_character(brief)
    if control is not None:
        problems.append(
            Problem(
                field="brief",
                what=f"the brief holds the control character {control}, which an agent would "
                "take as a key, not text",
                mend="leave it out; tabs and line breaks are fine",
            ),
        )
    size = len(brief.encode("utf-8", errors="surrogatepass"))
    if size > MAX_BRIEF_BYTES:
        problems.append(
            Problem(
                field="brief",
                what=f"the brief is {size} bytes, over the limit of {MAX_BRIEF_BYTES} (1 MiB)",
                mend="shorten it, or point to a file in the repository from the brief",
            ),
        )
    return problems


def agent_problems(agent: AgentSettings) -> list[Problem]:
    """The agent's model and arguments become one argv entry each: none empty, none with NUL."""
    problems: list[Problem] = []
    if agent.model is not None and (not agent.model.strip() or "\0" in agent.model):
        problems.append(
            Problem(
                field="model",
                what=f"the model {agent.model!r} is empty or holds a NUL",
                mend="name a model, such as 'sonnet', or leave --model out",
            ),
        )
    for number, flag in enumerate(agent.flags, start=1):
        if not flag or "\0" in flag:
            problems.append(
                Problem(
                    field="agent-arg",
                    what=f"agent argument {number} is empty or holds a NUL",
                    mend="give each --agent-arg a value, such as --agent-arg=--effort",
                ),
            )
    return problems
