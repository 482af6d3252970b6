"""Which files changed, pushed by the OS (inotify), so the supervisor looks only at those.

Theory of operation. The supervisor's observers look at many files a tick: each agent's
transcript, hook file and fence ref, each place's worktree. :class:`Notify` watches the folders
that hold them with inotify (through ``inotify_simple``, a thin ``ctypes`` wrapper of the three
system calls: watches are added as places come, and the events read without blocking, once a
tick) and keeps the paths named by the events since they were last taken. An observer asks
:meth:`Notify.changed` of each path it would read: True when the path changed since it last
asked, or when its folder is not watched, so what is not watched is looked at every tick, as it
was before (the poller).

The poller takes over wherever inotify cannot help: no inotify on this system (or the library
missing), the watch limit reached (a folder added after that is polled; those watched before
stay watched), the event queue overflowed (every watch dropped, so everything is looked at once
and watched anew). :attr:`Notify.mode`
names which, for ``flume daemon status``. Besides the events, each observer looks at everything
it follows every :data:`SAFETY_SECONDS` (its safety net): an event missed is found within
seconds, never lost.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from pathlib import Path
from typing import Any

_log = logging.getLogger("flume.notify")

#: How often an observer looks at what it follows even when no event said it changed.
SAFETY_SECONDS = 5.0
#: What the events of a watched folder report: its files written, made, removed or renamed.
_EVENTS = (
    "MODIFY",
    "CLOSE_WRITE",
    "ATTRIB",
    "CREATE",
    "DELETE",
    "MOVED_FROM",
    "MOVED_TO",
    "DELETE_SELF",
    "MOVE_SELF",
)


class Notify:
    """Folders watched with inotify, and the paths changed in them since last taken."""

    def __init__(self, *, enabled: bool = True, most: int | None = None) -> None:
        """Watch with inotify when ``enabled`` and it is there; ``most`` caps the watches."""
        self._most = most
        self._inotify: Any = None
        self._mask = 0
        self._overflow = 0
        self._ignored = 0
        self._gone = 0
        #: The folders watched, by watch descriptor, and the descriptors by folder.
        self._folders: dict[int, str] = {}
        self._watches: dict[str, int] = {}
        #: The names changed in each watched folder since they were taken.
        self._changed: dict[str, set[str]] = {}
        #: Why the poller looks where inotify does not; None while inotify watches all asked.
        self.poller: str | None = None
        #: How many times the event queue overflowed (then every folder is watched anew).
        self.overflows = 0
        self._make: Any = None
        if not enabled:
            self.poller = "inotify turned off"
            return
        try:
            from inotify_simple import INotify, flags  # type: ignore[import-untyped]  # noqa: PLC0415

            self._make = INotify
            self._inotify = INotify(nonblocking=True)
        except ImportError:
            self.poller = "inotify_simple is not installed"
            return
        except OSError as error:
            self.poller = f"inotify is not available: {error.strerror}"
            return
        for name in _EVENTS:
            self._mask |= getattr(flags, name)
        self._overflow, self._ignored = flags.Q_OVERFLOW, flags.IGNORED
        self._gone = flags.IGNORED | flags.DELETE_SELF | flags.MOVE_SELF

    @property
    def mode(self) -> str:
        """How changes are found: ``inotify``, or ``poller (why)`` where inotify cannot help."""
        if self._inotify is None:
            return f"poller ({self.poller})"
        if self.poller is not None:
            return f"inotify, and the poller ({self.poller})"
        return "inotify"

    @property
    def watches(self) -> int:
        """How many folders are watched."""
        return len(self._watches)

    def fileno(self) -> int | None:
        """The descriptor that turns readable when events come; None without inotify.

        It changes when the event queue overflows (inotify is opened anew): ask after each read.
        """
        return None if self._inotify is None else int(self._inotify.fileno())

    def watching(self, folder: str) -> bool:
        """``folder`` is watched now."""
        return folder in self._watches

    def watch(self, folder: str) -> bool:
        """Watch ``folder`` (once); False when it cannot be: it is polled instead."""
        if folder in self._watches:
            return True
        if self._inotify is None:
            return False
        if self._most is not None and len(self._watches) >= self._most:
            self._exhausted()
            return False
        try:
            descriptor = self._inotify.add_watch(folder, self._mask)
        except OSError as error:
            if error.errno == errno.ENOSPC:
                self._exhausted()
            return False  # not there (yet): polled, and watched once it is asked again
        self._folders[descriptor] = folder
        self._watches[folder] = descriptor
        self._changed.setdefault(folder, set())
        return True

    def _exhausted(self) -> None:
        if self.poller is None:
            self.poller = f"inotify's watch limit reached at {len(self._watches)} folders"
            _log.warning("%s: the poller looks at the rest", self.poller)

    def read(self) -> None:
        """Take in the events that came since the last read (without waiting for any).

        Events lost (the kernel's queue overflowed): every watch is dropped, so each path asked
        of next is taken as changed, and its folder watched anew.
        """
        if self._inotify is None:
            return
        try:
            events = self._inotify.read(timeout=0)
        except BlockingIOError:
            return
        for event in events:
            if event.mask & self._overflow:
                self._lost()
                return
            folder = self._folders.get(event.wd)
            if folder is None:
                continue
            if event.mask & self._gone:
                # The folder is gone, or moved away (a watch follows the folder, not its path):
                # its path asked of again is watched anew, and taken as changed.
                self._forget(event.wd, folder, removed=bool(event.mask & self._ignored))
                continue
            self._changed[folder].add(event.name)

    def _forget(self, descriptor: int, folder: str, *, removed: bool) -> None:
        del self._folders[descriptor]
        if self._watches.get(folder) == descriptor:
            del self._watches[folder]
            self._changed.pop(folder, None)
        if not removed:
            with contextlib.suppress(OSError):
                self._inotify.rm_watch(descriptor)

    def _lost(self) -> None:
        """Events were lost: start again with no watch (each folder is watched when asked)."""
        self.overflows += 1
        _log.warning("inotify's event queue overflowed: every file is looked at again")
        self._inotify.close()
        self._folders.clear()
        self._watches.clear()
        self._changed.clear()
        try:
            self._inotify = self._make(nonblocking=True)
        except OSError as error:
            self._inotify = None
            self.poller = f"inotify is not available: {error.strerror}"

    def changed(self, path: Path) -> bool:
        """``path`` may have changed since it was last asked of (and is taken as asked now).

        True when an event said so, or when its folder is not watched (it is watched from now
        on, when it can be: events lost drop every watch).
        """
        return self.changed_in(*os.path.split(path))

    def changed_in(self, folder: str, name: str) -> bool:
        """:meth:`changed`, of the file ``name`` in ``folder`` (as strings: asked often)."""
        names = self._changed.get(folder)
        if names is None:
            self.watch(folder)
            return True
        if name in names:
            names.discard(name)
            return True
        return False

    def quiet(self, folder: str) -> bool:
        """``folder`` is watched and nothing in it changed since last asked (nothing is taken)."""
        names = self._changed.get(folder)
        return names is not None and not names

    def taken(self, folder: str) -> set[str] | None:
        """The names changed in ``folder`` since last taken, all taken now.

        None when the folder is not watched (it is watched from now on, when it can be): all
        of it may have changed.
        """
        names = self._changed.get(folder)
        if names is None:
            self.watch(folder)
            return None
        changed = set(names)
        names.clear()
        return changed

    def close(self) -> None:
        """Stop watching."""
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
            self.poller = "closed"
