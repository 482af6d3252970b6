"""flume's pure core: values in, values out; no I/O, no clock, no randomness.

The public API: :func:`replay`, the fold of ``step``, and the :class:`Decision` it returns, the
:class:`Place` it folds, :class:`Settings`, the observation and action unions, kinds, the launch
and its checks, the tidy plan and the status view. ``step`` and ``status`` name modules of the
package as well as their functions, so the functions are imported from those modules:
``from flume.core.step import step`` and ``from flume.core.status import status``.

Each name is imported when first asked for, not with the package: a command that needs one
module of the core (the CLI's ``--help`` needs only :mod:`flume.core.choices`) does not pay for
building every class of the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flume.core.actions import Action
    from flume.core.errors import FlumeError, UsageError
    from flume.core.kinds import BUILTIN_KINDS, Kind
    from flume.core.launch import Launch, check_launch
    from flume.core.observations import Observation
    from flume.core.place import Place
    from flume.core.settings import Settings
    from flume.core.status import PlaceStatus
    from flume.core.step import Decision, TraceRow, replay, trace
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
    "trace",
]


def __getattr__(name: str) -> object:  # noqa: C901, PLR0911 (one arm a module of the API)
    """The public name ``name``, its module imported on first use (PEP 562)."""
    # Written out, not looked up by module name: the core imports nothing dynamically.
    # Plain ``import`` statements: a ``from flume.core import ...`` would ask this again.
    if name == "Action":
        import flume.core.actions  # noqa: PLC0415 (imported on first use)

        return flume.core.actions.Action
    if name in {"FlumeError", "UsageError"}:
        import flume.core.errors  # noqa: PLC0415 (imported on first use)

        return getattr(flume.core.errors, name)
    if name in {"BUILTIN_KINDS", "Kind"}:
        import flume.core.kinds  # noqa: PLC0415 (imported on first use)

        return getattr(flume.core.kinds, name)
    if name in {"Launch", "check_launch"}:
        import flume.core.launch  # noqa: PLC0415 (imported on first use)

        return getattr(flume.core.launch, name)
    if name == "Observation":
        import flume.core.observations  # noqa: PLC0415 (imported on first use)

        return flume.core.observations.Observation
    if name == "Place":
        import flume.core.place  # noqa: PLC0415 (imported on first use)

        return flume.core.place.Place
    if name == "Settings":
        import flume.core.settings  # noqa: PLC0415 (imported on first use)

        return flume.core.settings.Settings
    if name == "PlaceStatus":
        import flume.core.status  # noqa: PLC0415 (imported on first use)

        return flume.core.status.PlaceStatus
    if name in {"Decision", "TraceRow", "replay", "trace"}:
        import flume.core.step  # noqa: PLC0415 (imported on first use)

        return getattr(flume.core.step, name)
    if name == "plan_tidy":
        import flume.core.tidy  # noqa: PLC0415 (imported on first use)

        return flume.core.tidy.plan
    message = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(message)
