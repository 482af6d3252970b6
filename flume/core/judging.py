"""What the shell saw of an agent, judged: the shell reports each source's facts, the core decides.

Theory of operation. The shell reads an agent's hooks, the live-session registry and its pane;
what they mean for the rules is decided here, from the facts alone (what each source said and
when, how long the agent has gone unregistered, when its pane last changed), so that the shell
carries out a decision and never makes one. The thresholds are in :mod:`flume.core.settings`.

- Of the hooks and the registry, the one that spoke last says what the agent does
  (SOURCES-LATEST-SPEAKS); the transcript's hints are the core's fallback (:mod:`step`).
- A Claude Code agent still unregistered a while after it started, its screen showing nothing
  flume reads, is showing a person a start-up dialog (UNREGISTERED-ASKS): typed into, the dialog
  would take the prompt as its answer.
- A pane's activity moves the quiet clock only when it is clearly later than the output already
  seen (PANE-OUTPUT-MOVES): never a stage (STAGE-NEVER-ON-QUIET).
- A printed agent's send waits an hour to be found, for a person to run it, unless the
  repository declares its own window (PRINTED-CONFIRM-WAITS).

Rule ids: SOURCES-LATEST-SPEAKS, UNREGISTERED-ASKS, PANE-OUTPUT-MOVES, PRINTED-CONFIRM-WAITS.
"""

from __future__ import annotations

import attrs

from flume.core.choices import AgentName, Panes
from flume.core.ids import Instant
from flume.core.observations import Activity
from flume.core.place import Agent, AwaitingInput, Place, step_of
from flume.core.settings import (
    OUTPUT_SLACK_SECONDS,
    PRINT_CONFIRM_SECONDS,
    STARTUP_GRACE_SECONDS,
    Settings,
)


@attrs.frozen(kw_only=True)
class Said:
    """What one source (the hooks, the registry) last said the agent does, and when.

    ``at`` is the source's own stamp, in epoch seconds.
    """

    activity: Activity
    at: float


def latest_said(hooks: Said | None, registry: Said | None) -> Activity | None:
    """SOURCES-LATEST-SPEAKS: what the source that spoke last says; a tie goes to the registry.

    None when neither said anything flume reads.
    """
    if hooks is not None and (registry is None or hooks.at > registry.at):
        return hooks.activity
    return registry.activity if registry is not None else None


def program_of(place: Place) -> AgentName:
    """The program the place's live agent (else its stage's) runs: its step's own, or the launch's.

    A Codex review in a Claude Code launch is Codex: its transcript, screen and registry are read
    as Codex's, and no rule for Claude Code applies to it. The agent ``flume resolve --agent``
    starts runs a parallel's merge step, which names no agent: the launch's.
    """
    stage = place.agent.stage if place.agent is not None else place.stage.name
    own = step_of(place, stage).agent
    return own.agent if own is not None else place.launch.agent.agent


def unregistered_asks(place: Place, *, registered: bool, now: Instant) -> bool:
    """UNREGISTERED-ASKS: the place's agent is taken to be asking a person, though none said so.

    A Claude Code agent writes no registry entry while a start-up dialog is open (an API key's
    approval, a project's MCP servers); one awaiting input and unregistered for
    :data:`STARTUP_GRACE_SECONDS` since is asking. The shell asks only when no source and nothing
    on the screen said what the agent does.
    """
    phase = place.stage.phase
    return (
        program_of(place) is AgentName.CLAUDE
        and not registered
        and isinstance(phase, AwaitingInput)
        and now - phase.since >= STARTUP_GRACE_SECONDS
    )


def shows_output(agent: Agent, pane_activity: float) -> bool:
    """PANE-OUTPUT-MOVES: the pane's last activity is new output of the agent's.

    Later than the output already seen by more than :data:`OUTPUT_SLACK_SECONDS`: the same
    output read again, stamped a moment apart, is not new.
    """
    return pane_activity > agent.last_output_at + OUTPUT_SLACK_SECONDS


def launch_settings(settings: Settings, *, panes: Panes, confirm_declared: bool) -> Settings:
    """PRINTED-CONFIRM-WAITS: the settings a launch is journaled with.

    A printed agent starts when a person runs its command: its first send waits
    :data:`PRINT_CONFIRM_SECONDS` to be found in its transcript, unless the repository declares
    its own confirmation window. Every other launch keeps the settings it was given.
    """
    if panes is Panes.PRINT and not confirm_declared:
        return attrs.evolve(settings, confirm_seconds=PRINT_CONFIRM_SECONDS)
    return settings
