"""flume's pure core: values in, values out; no I/O, no clock, no randomness.

The public API: :func:`step` and its fold :func:`replay`, the :class:`Decision` it returns,
the :class:`Place` it folds, :class:`Settings`, the observation and action unions, kinds,
the launch and its checks, the tidy plan and the status view.
"""

from __future__ import annotations

from flume.core.actions import Action
from flume.core.errors import FlumeError, UsageError
from flume.core.kinds import BUILTIN_KINDS, Kind
from flume.core.launch import Launch, check_launch
from flume.core.observations import Observation
from flume.core.place import Place
from flume.core.settings import Settings
from flume.core.status import PlaceStatus, status
from flume.core.step import Decision, TraceRow, replay, step, trace
from flume.core.tidy import plan as plan_tidy

__all__ = [
    "BUILTIN_KINDS",
    "Action",
    "Decision",
    "FlumeError",
    "Kind",
    "Launch",
    "Observation",
    "Place",
    "PlaceStatus",
    "Settings",
    "TraceRow",
    "UsageError",
    "check_launch",
    "plan_tidy",
    "replay",
    "status",
    "step",
    "trace",
]
