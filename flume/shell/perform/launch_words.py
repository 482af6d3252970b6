"""A launch's words checked before its brief is read: a kind named, the agent, the panes.

Apart from :mod:`flume.shell.perform.launch`, which checks them first among the rest, so that the
CLI
can check them at once, loading neither git nor the core's rules, before it reads the brief
(from stdin, perhaps) and hands the launch to the supervisor.
"""

from __future__ import annotations

import enum
from typing import TypeVar

from flume.core.choices import AgentName, Panes
from flume.core.errors import UsageError

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
