"""The choices a launch names by word: which agent, and where it runs.

Apart from :mod:`flume.core.launch`, which uses them, so that the CLI can offer them as its
options' choices without building the launch's classes first.
"""

from __future__ import annotations

import enum


class AgentName(enum.Enum):
    """The agents flume can start in a place."""

    CLAUDE = "claude"  #: Claude Code, the default
    CODEX = "codex"  #: OpenAI's Codex CLI
    TEST = "test"  #: flume's scripted test agent (flume.testing)


class Panes(enum.Enum):
    """Where a stage's agent runs (R4: "in a pane, or as a command flume prints for you")."""

    TMUX = "tmux"  #: a window of flume's own tmux server, one per place
    PRINT = "print"  #: a command flume writes down for you to run in a terminal of your own
    HERDR = "herdr"  #: a tab of the running herdr server, one per place (its socket API)
