"""The thresholds the rules compare instants against. Not rules: the rules are in the modules."""

from __future__ import annotations

import attrs

#: R5: "Never a third send." A rule, not a setting.
MAX_SENDS = 2
#: LAND-BASE-BLOCKED-WAITS: a landing the base repository's state blocked is tried again after
#: this long, the wait doubling with each block in a row up to the most.
LAND_RETRY_SECONDS = 2.0
LAND_RETRY_MOST_SECONDS = 30.0


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
