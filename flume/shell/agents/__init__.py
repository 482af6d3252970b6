"""The agents: one module per agent program behind one port, run in panes, their lines read.

:mod:`~flume.shell.agents.port` is the port; :mod:`~flume.shell.agents.claude` (Claude Code),
:mod:`~flume.shell.agents.codex` (Codex) and :mod:`~flume.shell.agents.scripted` (flume's test
agent) implement it, each holding its command line, its files, and how its hooks, registry,
screen and transcript become observations. :func:`of` is the one place an agent's name is
turned into its module.
"""

from __future__ import annotations

from flume.core.launch import AgentName
from flume.shell.agents import claude, codex, scripted
from flume.shell.agents.port import AgentPort

#: Each agent's module, by the name a launch gives it; Claude Code's registry is read first.
KNOWN: dict[AgentName, AgentPort] = {
    AgentName.CLAUDE: claude,
    AgentName.CODEX: codex,
    AgentName.TEST: scripted,
}


def of(name: AgentName) -> AgentPort:
    """The module of the agent ``name``."""
    return KNOWN[name]
