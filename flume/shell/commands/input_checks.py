"""What the caller's commands check before they read any journal: their words, and their folder.

Apart from :mod:`flume.shell.commands.verbs` (which re-exports them) so that an agent's ``flume
needs``
or ``flume submit`` refused for its words or its folder is refused at once, before git, the
journal's codec and the core's rules are loaded.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from flume.core.errors import UsageError

# Re-exported: the caller's words are checked where they were always found. In the core, so
# that the supervisor checks a sandboxed agent's words the same way (flume.shell.store.inbox).
from flume.core.text import MAX_TEXT_BYTES as MAX_TEXT_BYTES  # noqa: PLC0414
from flume.core.text import checked_text as checked_text  # noqa: PLC0414

#: A step's key: block names (``[a-z][a-z0-9-]*``, at most 32), each with its loop's pass
#: (``@2``) where it has one, joined by ``/``: ``review``, ``review-loop@2/review``.
_STEP_KEY = re.compile(
    r"[a-z][a-z0-9-]{0,31}(@[1-9][0-9]{0,5})?(/[a-z][a-z0-9-]{0,31}(@[1-9][0-9]{0,5})?)*"
)
#: A question's id, as ``flume status`` names it: ``q1``, ``q2``...
QUESTION_ID = re.compile(r"q[1-9][0-9]{0,5}")
#: Where flume makes each place's worktree: ``<repository>/places/<kind>--<name>``.
PLACES = "places"


def checked_step(step: str) -> str:
    """A ``--step KEY``, if it can name a step; else a :class:`UsageError` (exit 2).

    Empty names none. Anything else is a key as ``flume status`` shows it: block names, each
    with its loop's pass where it has one, joined by ``/`` (``review-loop@2/review``).
    """
    if not step or (len(step) <= 256 and _STEP_KEY.fullmatch(step)):
        return step
    shown = step if len(step) <= 80 else step[:77] + "..."
    raise UsageError.one(
        "step",
        f"{shown!r} is not a step's key",
        "give it as flume status shows it: a step's name (review), or its key with the loops' "
        "passes (review-loop@2/review)",
    )


def decoded(field: str, data: bytes) -> str:
    """Bytes read from stdin as UTF-8 text; a :class:`UsageError` (exit 2) when they are not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError.one(
            field,
            f"the {field} on stdin is not UTF-8 text ({error.reason} at byte {error.start})",
            f"give the {field} as UTF-8 text",
        ) from error


def outside(cwd: Path) -> UsageError:
    """The error for a command run in ``cwd``, which is inside no place flume made."""
    return UsageError.one(
        "place",
        f"{cwd} is not inside a place flume made",
        "run it inside a place flume made (<repository>/places/<kind>--<name>), "
        "as the agent of its stage does",
    )


def in_no_place(cwd: Path) -> bool:
    """No folder holding ``cwd`` sits in a ``places`` folder: ``cwd`` is surely in no place.

    A place's worktree is ``<repository>/places/<kind>--<name>``, and git names the top of the
    worktree holding the folder a command runs in (``cwd`` is its real path, as git's). When git
    is pointed elsewhere by its environment (``GIT_DIR``, ``GIT_WORK_TREE``), nothing is sure
    without asking it.
    """
    if os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE"):
        return False
    return not any(folder.parent.name == PLACES for folder in (cwd, *cwd.parents))
