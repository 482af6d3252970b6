"""The environment a command's checks read: this process's, or the one its caller sent.

The supervisor runs a launch for ``flume launch`` (:mod:`flume.shell.supervisor.client`), and the
launch's
checks must read the caller's environment, not the supervisor's: its ``PATH`` and
``$FLUME_CLAUDE`` find the agent's program, its ``HERDR_SOCKET_PATH`` the herdr asked, its
``GIT_*`` and ``HOME`` what git reads. Everything that reads the environment for a launch reads
:func:`current`, which is ``os.environ`` unless :func:`given` names another for the code run in
it. The choice is a context variable, so it holds in the thread that made it only: the
supervisor's workers, making places meanwhile, keep reading the supervisor's own environment.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

_given: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar(
    "flume_environment", default=None
)


def current() -> Mapping[str, str]:
    """The environment the code running now reads: the one given to it, else this process's."""
    given = _given.get()
    return os.environ if given is None else given


def home() -> Path:
    """``$HOME`` of :func:`current`, else the user's home as the system says."""
    given = current().get("HOME")
    if given:
        return Path(given)
    import pwd  # noqa: PLC0415 (rarely: no HOME at all)

    return Path(pwd.getpwuid(os.getuid()).pw_dir)


@contextlib.contextmanager
def given(environment: Mapping[str, str]) -> Iterator[None]:
    """Run the block reading ``environment`` in place of this process's."""
    token = _given.set(dict(environment))
    try:
        yield
    finally:
        _given.reset(token)
