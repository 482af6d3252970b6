"""``flume demo`` told as a story: the live board in a terminal, the events one a line elsewhere.

Theory of operation. :mod:`flume.testing.demo` makes the sample, launches a fix and a change and
starts the supervisor, all in a temporary folder of the demo's own. What happens then is shown
with what flume already has for it: in a terminal that can move its cursor, the board ``flume
watch`` draws (:mod:`flume.cli.board`); into a pipe, a file or a dumb terminal, each event as
``flume events`` prints it (:func:`flume.cli.render.event_text`), both read by one
:class:`~flume.shell.store.events.EventStream`. Either ends once both places have settled (or
the time is up), and the summary follows: what main holds and the places left. With
``--monitor`` the demo's run monitor is served from the sample's making on; at a terminal the
places are launched once a person opened its URL (or pressed Enter), so that the page shows the
demo from its start, and it serves on after the summary until Enter.

However the demo ends (finished, time up, Ctrl-C, SIGTERM, SIGHUP from a closed terminal), its
supervisor and tmux server are stopped and its folder is removed; while that is done, further
signals are ignored so the clean-up is never cut short. The exit status is 0 only when both
places landed and were tidied; 1 when the demo ran but did not finish; 128 plus the signal's
number when a signal ended it.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import typer

from flume.cli import board, render
from flume.core.settings import Settings
from flume.shell.store.events import EventStream
from flume.testing import demo

if TYPE_CHECKING:
    from flume.web.serve import Served

#: The signals that end the demo, each cleanly: Ctrl-C, ``kill``/``timeout``, a closed terminal.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: How often the story looks at the journals.
_INTERVAL = 0.2


class Ended(BaseException):
    """A signal ended the demo (a BaseException, so nothing on the way swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise(signum: int, frame: FrameType | None) -> None:
    del frame
    raise Ended(signum)


def _ignore_signals() -> None:
    """From here on, :data:`SIGNALS` are ignored: the clean-up is not cut short."""
    while True:
        try:
            for each in SIGNALS:
                signal.signal(each, signal.SIG_IGN)
        except Ended:
            continue  # one came just before it was ignored: ignore them all, then go on
        return


def _say(line: str) -> None:
    """Print a line; a terminal gone (SIGHUP) or a reader gone is no reason to stop cleaning up."""
    with contextlib.suppress(OSError):
        typer.echo(line)


def run(*, keep: bool, seconds: float, monitor: bool = False) -> int:
    """The demo, start to clean-up; its exit status. ``monitor``: its monitor served too."""
    if monitor:
        _monitor_installed()
    saved = {each: signal.signal(each, _raise) for each in SIGNALS}
    folder: Path | None = None
    status = 1
    try:
        folder = demo.temporary()
        _say(f"flume demo in {folder}")
        status = 0 if _story(folder, seconds, monitor=monitor) else 1
    except Ended as ended:
        status = 128 + ended.signum
    finally:
        _ignore_signals()
        try:
            if folder is not None:
                demo.stop(folder)
                if keep:
                    _say(f"kept: {folder}")
                else:
                    demo.remove(folder)
        finally:
            for each, handler in saved.items():
                signal.signal(each, handler)
    return status


def _monitor_installed() -> None:
    """The monitor's packages are there, or the demo does not start (exit status 1, said)."""
    try:
        from flume.web import serve  # noqa: F401 (its packages are what is looked for)
    except ImportError as error:
        _say(
            f"flume: demo: the monitor's packages are not installed ({error.name} is missing); "
            "install them with pip install 'flume[monitor]'"
        )
        raise typer.Exit(1) from error


def _story(folder: Path, seconds: float, *, monitor: bool = False) -> bool:
    """Launch, show what happens until both settle or time is up, then the summary."""
    lines = demo.start(folder)
    if not monitor:
        for line in lines:
            _say(line)
        return _shown(folder, demo.repository_of(folder), seconds)
    _say(next(lines))  # the sample is made: its monitor follows it from the first launch on
    repository = demo.repository_of(folder)
    at_terminal = sys.stdin is not None and sys.stdin.isatty()
    with _served(repository) as served:
        _say(f"flume monitor: open {served.url}")
        if at_terminal:
            _say("the demo starts once that page is open (or press Enter)")
            _opened_or_enter(served.monitor.opened)
        for line in lines:
            _say(line)
        finished = _shown(folder, repository, seconds)
        if at_terminal:
            _say("the demo ended; its monitor serves until you press Enter")
            with contextlib.suppress(EOFError, OSError):
                input()
        return finished


def _opened_or_enter(opened: threading.Event) -> None:
    """Wait until a person opened the monitor's page, or pressed Enter at the terminal."""
    while not opened.is_set():
        ready, _, _ = select.select([sys.stdin], [], [], _INTERVAL)
        if ready:
            sys.stdin.readline()
            return


@contextlib.contextmanager
def _served(repository: Path) -> Iterator[Served]:
    """The demo's monitor, served in a thread of this process."""
    from flume.web.serve import Served

    served = Served(repository=repository)
    served.start()
    try:
        yield served
    finally:
        served.stop()


def _shown(folder: Path, repository: Path, seconds: float) -> bool:
    """Show what happens until both settle or time is up, then the summary: whether it finished."""
    follower = EventStream(Settings(), repository=repository)
    deadline = time.monotonic() + seconds

    def over() -> bool:
        return demo.all_settled(follower) or time.monotonic() > deadline

    console = board.console()
    if board.is_dumb(os.environ, terminal=console.is_terminal):
        _events(follower, over, _say)
    else:
        board.watch(follower, console, interval=_INTERVAL, where=str(repository), until=over)
    summary = demo.summary(folder)
    for line in summary.lines:
        _say(line)
    return summary.finished


def _events(follower: EventStream, over: Callable[[], bool], say: Callable[[str], None]) -> None:
    """Each event as ``flume events`` prints it, until ``over``."""
    while True:
        for event in follower.poll():
            say(render.event_text(event))
        if over():
            return
        time.sleep(_INTERVAL)
