"""The thresholds the rules compare instants against. Not rules: the rules are in the modules."""

from __future__ import annotations

import attrs

#: R5: "Never a third send." A rule, not a setting.
MAX_SENDS = 2
#: LAND-BASE-BLOCKED-WAITS: a landing the base repository's state blocked is tried again after
#: this long, the wait doubling with each block in a row up to the most.
LAND_RETRY_SECONDS = 2.0
LAND_RETRY_MOST_SECONDS = 30.0
#: UNREGISTERED-ASKS: a Claude Code agent that has not registered this long after it started,
#: with nothing on its screen to say otherwise, is taken to be showing a person a dialog (it
#: registers within a second or two when it starts at its prompt box).
STARTUP_GRACE_SECONDS = 10.0
#: PANE-OUTPUT-MOVES: a pane's last activity counts as new output only when it is later than the
#: output already seen by more than this (tmux reports activity in whole seconds, herdr finer).
OUTPUT_SLACK_SECONDS = 0.5
#: PRINTED-CONFIRM-WAITS: how long a printed agent's send waits to be found in its transcript, an
#: hour for a person to run the printed command, unless the repository declares its own.
PRINT_CONFIRM_SECONDS = 3600.0
#: WF-RETRY-EXITED: the seed's "retry attempts per step (default 2)": an attempt whose agent
#: exited is tried again this many times a step, unless the run's ``retries`` budget says.
RETRIES = 2
#: NAME-FROM-BRIEF: how many names a launch named from its brief tries (the made name, then
#: ``<name>-2``, ``<name>-3``, ...) while each is taken, before it asks for a name.
NAME_TRIES = 50


@attrs.frozen(kw_only=True)
class Settings:
    """How long flume waits for things; every value is in seconds."""

    #: The agent is quiet once it waits and its pane has shown nothing for this long (R7).
    quiet_seconds: float = 5.0
    #: How long a send waits to be found in the transcript before it counts as missing (R5).
    confirm_seconds: float = 30.0
    #: How long to wait for an agent to take input before sending anyway (R5; a lost send
    #: is then found missing and resent, never assumed taken).
    ready_seconds: float = 60.0
    #: How long a tests gate's commands may run, all told, before they count as not finished.
    tests_seconds: float = 600.0
    #: How long a workflow step's agent may work mid-turn showing nothing (no output, no change
    #: of state) before flume nudges it, and as long again after the nudge before it pauses the
    #: run as stalled (WF-STALL-NUDGES-ONCE).
    stall_seconds: float = 600.0
