"""The person's commands the fleet carries to a place's host (loaded by ``flume --help``)."""

from __future__ import annotations

#: The person's commands a fleet place takes from any host: each runs as ``flume <command>
#: PLACE ...`` on the host carrying the place (docs/fleet.md). A command added to flume that
#: names a place first and takes ``--repository`` is routed by adding its name here.
ROUTED = (
    "status",
    "events",
    "transcript",
    "tell",
    "stop",
    "retry",
    "proceed",
    "approve",
    "pass",
    "resume",
    "raise",
    "answer",
    "resolve",
    "drop",
)
