"""A launch as its caller words it (:class:`LaunchAsked`), and the words checked before its brief.

Apart from :mod:`flume.shell.perform.launcher`, which checks them first among the rest, so that the
CLI can build a launch and check a kind named, the agent and the panes at once, loading neither
git nor the core's rules, before it reads the brief (from stdin, perhaps) and hands the launch to
the supervisor. Its records are plain classes, not attrs ones: ``flume launch`` handed to the
supervisor loads no attrs, a tenth of its start-up (bench/launch.py).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from flume.core.choices import AgentName, Panes
from flume.core.errors import UsageError
from flume.core.ids import BranchName, PlaceName
from flume.shell.host import FORMAT

_Choice = TypeVar("_Choice", bound=enum.Enum)


def choice(kind: type[_Choice], field: str, value: str) -> _Choice:
    """The member of ``kind`` whose value is ``value``; a usage error naming the choices."""
    try:
        return kind(value)
    except ValueError:
        *others, last = (member.value for member in kind)
        raise UsageError.one(
            field, f"unknown {field} {value!r}", f"choose {', '.join(others)} or {last}"
        ) from None


def checked(
    *, kind: str | None, kind_carried: bool, agent: str, panes: str
) -> tuple[AgentName, Panes]:
    """The agent and the panes chosen; a usage error when no kind is named or a word is unknown.

    ``kind_carried``: the launch carries a kind file, whose kind stands when ``kind`` is None.
    """
    if kind is None and not kind_carried:
        raise UsageError.one("kind", "no kind named", "give --kind fix|change|question|<declared>")
    return choice(AgentName, "agent", agent), choice(Panes, "panes", panes)


def _strings(given: str | Sequence[str]) -> tuple[str, ...]:
    """A sequence of words as a tuple; a lone string is one word, not a sequence of letters."""
    return (given,) if isinstance(given, str) else tuple(given)


#: The agent's flags whose value is a file the caller names (the test agent's script, a kind
#: file): resolved against the caller's folder, as the caller meant, never the place's.
PATH_FLAGS = ("--script", "--kind-file")


def _caller_paths(args: tuple[str, ...]) -> tuple[str, ...]:
    """``args`` with each relative file a :data:`PATH_FLAGS` flag names made absolute.

    The agent starts in the place's worktree: ``--script story.json`` there names another file
    than the one beside the caller (or none), and the agent dies at once.
    """
    made = list(args)
    for number, arg in enumerate(made):
        flag, equals, value = arg.partition("=")
        if flag not in PATH_FLAGS:
            continue
        if equals and value and not Path(value).is_absolute():
            made[number] = f"{flag}={Path(value).absolute()}"
        elif not equals and number + 1 < len(made):
            value = made[number + 1]
            if value and not value.startswith("-") and not Path(value).is_absolute():
                made[number + 1] = str(Path(value).absolute())
    return tuple(made)


def _optional_path(given: str | Path | None) -> Path | None:
    return None if given is None else Path(given)


#: The JSON a launch handed to the supervisor carries (:meth:`LaunchAsked.words`): each key
#: and the types its value may have. A kind file is read where the command runs: never handed.
WORDS: dict[str, tuple[type, ...]] = {
    "repository": (str,),
    "name": (str,),
    "brief": (str,),
    "kind": (str, type(None)),
    "base": (str, type(None)),
    "mark": (str, type(None)),
    "waits": (list,),
    "agent": (str,),
    "model": (str, type(None)),
    "agent_args": (list,),
    "panes": (str,),
}


class LaunchAsked:
    """A launch as its caller words it: :func:`flume.api.launch`'s arguments, carried once.

    The CLI, the MCP server and the API build it; :func:`flume.shell.perform.launcher.launch_asked`
    checks and journals it; a command hands it to the supervisor as JSON (:meth:`words`,
    :meth:`from_words`). ``brief`` may be a function returning the brief, called once the kind
    file, the agent and the panes are read (the CLI reads stdin so). Immutable: :meth:`evolve`
    makes a changed copy.
    """

    __slots__ = (
        "agent",
        "agent_args",
        "base",
        "brief",
        "carried",
        "kind",
        "kind_file",
        "mark",
        "model",
        "name",
        "panes",
        "repository",
        "waits",
    )
    repository: Path
    name: str
    brief: str | Callable[[], str]
    kind: str | None
    #: A TOML file with a ``[kind]`` table: a kind this launch carries.
    kind_file: Path | None
    base: str | None
    mark: str | None
    #: Stages that wait on the caller's word.
    waits: tuple[str, ...]
    agent: str
    model: str | None
    #: Arguments for the agent's command line, in order.
    agent_args: tuple[str, ...]
    panes: str
    #: A fleet place carried again: the head its branch starts at (FLEET-CARRIED-HEAD).
    carried: str | None

    def __init__(  # noqa: PLR0913 (the launch's words, each a keyword)
        self,
        *,
        repository: str | Path,
        name: str,
        brief: str | Callable[[], str],
        kind: str | None = None,
        kind_file: str | Path | None = None,
        base: str | None = None,
        mark: str | None = None,
        waits: str | Sequence[str] = (),
        agent: str = AgentName.CLAUDE.value,
        model: str | None = None,
        agent_args: str | Sequence[str] = (),
        panes: str = Panes.TMUX.value,
        carried: str | None = None,
    ) -> None:
        fields = {
            "repository": Path(repository),
            "name": name,
            "brief": brief,
            "kind": kind,
            "kind_file": _optional_path(kind_file),
            "base": base,
            "mark": mark,
            "waits": _strings(waits),
            "agent": agent,
            "model": model,
            "agent_args": _caller_paths(_strings(agent_args)),
            "panes": panes,
            "carried": carried,
        }
        for field, value in fields.items():
            object.__setattr__(self, field, value)

    def __setattr__(self, field: str, value: object) -> None:
        message = f"a LaunchAsked is immutable: evolve() makes a copy with {field} changed"
        raise AttributeError(message)

    def _fields(self) -> dict[str, Any]:
        return {field: getattr(self, field) for field in self.__slots__}

    def evolve(self, **changes: Any) -> LaunchAsked:  # noqa: ANN401 (any field's value)
        """A copy with ``changes``, converted as the constructor converts them."""
        return LaunchAsked(**{**self._fields(), **changes})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LaunchAsked):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(tuple(self._fields().values()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{field}={value!r}" for field, value in self._fields().items())
        return f"LaunchAsked({shown})"

    def checked(self) -> tuple[AgentName, Panes]:
        """:func:`checked` for this launch, its kind file not yet read."""
        return checked(
            kind=self.kind,
            kind_carried=self.kind_file is not None,
            agent=self.agent,
            panes=self.panes,
        )

    def words(self) -> dict[str, Any] | None:
        """The launch as the JSON handed to the supervisor; None when it cannot be handed.

        A kind file is read, and a brief function called, where the command runs; a fleet's
        launch carried from a pushed head is launched where it was asked.
        """
        if self.kind_file is not None or not isinstance(self.brief, str) or self.carried:
            return None
        return {
            "repository": str(self.repository.absolute()),
            "name": self.name,
            "brief": self.brief,
            "kind": self.kind,
            "base": self.base,
            "mark": self.mark,
            "waits": list(self.waits),
            "agent": self.agent,
            "model": self.model,
            "agent_args": list(self.agent_args),
            "panes": self.panes,
        }

    @classmethod
    def from_words(cls, words: object) -> LaunchAsked | None:
        """The launch :meth:`words` wrote, read from a request's JSON; None if unfit."""
        if not isinstance(words, dict) or set(words) != set(WORDS):
            return None
        for key, types in WORDS.items():
            if not isinstance(words[key], types):
                return None
        listed = (*words["waits"], *words["agent_args"])
        if not all(isinstance(each, str) for each in listed):
            return None
        if not Path(words["repository"]).is_absolute():
            return None
        return cls(**words)


class Made(NamedTuple):
    """A launch journaled: the place's id and where it lives."""

    place: PlaceName
    repository: Path
    path: Path
    branch: BranchName
    base: BranchName
    journal: Path

    def as_dict(self) -> dict[str, Any]:
        """The launch as JSON-ready data: what ``flume launch --json`` prints (format 1)."""
        return {
            "format": FORMAT,
            "place": self.place,
            "repository": str(self.repository),
            "path": str(self.path),
            "branch": self.branch,
            "base": self.base,
            "journal": str(self.journal),
        }

    @classmethod
    def from_dict(cls, made: dict[str, Any]) -> Made:
        """The launch :meth:`as_dict` wrote (the supervisor's answer to a launch handed over)."""
        return cls(
            place=PlaceName(made["place"]),
            repository=Path(made["repository"]),
            path=Path(made["path"]),
            branch=BranchName(made["branch"]),
            base=BranchName(made["base"]),
            journal=Path(made["journal"]),
        )
