"""``flume watch``: a board of every place, redrawn as their journals grow.

Theory of operation. An :class:`~flume.shell.store.events.EventStream` reads what each journal
gained since the last look (from stored offsets, as ``flume events`` does), so a refresh costs what
changed; each place's row is its status (R11), with its age since launch and since the last thing
seen. The board is drawn for a plain terminal, as one reached over SSH is: no mouse, no alternate
screen, keys read one by one (q quits; Ctrl-C too). Where the terminal cannot move its cursor
(``TERM=dumb``) or the output is not a terminal, the board is printed again, whole, each time a
place changes; colour follows rich's rules (none with ``NO_COLOR``, ``TERM=dumb``, or no terminal).
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import termios
import time
import tty
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime

import attrs
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from flume.cli import render, statusview
from flume.core.status import PhaseWord, PlaceStatus
from flume.core.status import status as core_status
from flume.shell.store import places
from flume.shell.store.events import EventStream
from flume.shell.supervisor import client

#: Terminals that cannot move the cursor: the board is printed anew instead of redrawn.
_DUMB = frozenset({"dumb", "unknown", ""})
#: How wide the board is drawn when the output is no terminal.
_PLAIN_WIDTH = 200
_PLAIN_HEIGHT = 50
_PHASE_STYLES = {
    PhaseWord.WORKING: "green",
    PhaseWord.DELIVERED: "cyan",
    PhaseWord.SHORT: "bold red",
    PhaseWord.WAITS_WORD: "yellow",
    PhaseWord.PAUSED: "bold yellow",
    PhaseWord.LANES: "green",
    PhaseWord.MERGING: "cyan",
    PhaseWord.FINISHED: "cyan",
    PhaseWord.DROPPED: "dim",
    PhaseWord.TIDIED: "dim",
}
_MINUTE, _HOUR, _DAY = 60, 3600, 86400


@attrs.frozen(kw_only=True)
class Row:
    """One place on the board."""

    view: PlaceStatus
    #: Seconds since the place was launched.
    age: float
    #: Seconds since the last thing seen of it.
    quiet: float

    def key(self) -> tuple[object, ...]:
        """What the row shows but its ages: a change here is a change of the place.

        The instant of the place's last observation is left out: it moves with every line an
        agent writes, which the board shows only as an age.
        """
        return attrs.astuple(
            self.view, recurse=False, filter=lambda field, _value: field.name != "updated_at"
        )


def duration(seconds: float) -> str:
    """Seconds in one short word: 42s, 5m, 3h, 2d."""
    seconds = max(0.0, seconds)
    if seconds < _MINUTE:
        return f"{int(seconds)}s"
    if seconds < _HOUR:
        return f"{int(seconds // _MINUTE)}m"
    if seconds < _DAY:
        return f"{int(seconds // _HOUR)}h"
    return f"{int(seconds // _DAY)}d"


def rows(follower: EventStream, now: float, *, supervised: bool) -> list[Row]:
    """Read what the journals gained, and each place's row."""
    follower.poll()
    found: list[Row] = []
    here = places.host_id()
    for each in follower.places():
        assert each.place is not None  # noqa: S101 (places() holds only places read)
        view = core_status(each.place, agent_known=supervised, here=here)
        launched = each.launched_at if each.launched_at is not None else float(view.updated_at)
        found.append(Row(view=view, age=now - launched, quiet=now - float(view.updated_at)))
    return found


def board(
    found: list[Row], *, heading: str, width: int | None = None, supervised: bool = True
) -> RenderableType:
    """The board: a heading, a table of the places, and what waits on the caller.

    Fitted to ``width`` columns as ``flume status`` is: a terminal too narrow for the whole
    table gets one without the kind, stage and phase in one column; a state is never cut.
    Not ``supervised`` (no supervisor runs), a place in flight is said not to be followed, with
    the command that starts it (as ``flume status`` says).
    """
    if not found:
        return Group(Text(heading), Text("no places: launch one with flume launch"))
    columns = [
        statusview.Column("place", whole=False),
        statusview.Column("kind"),
        statusview.Column("stage"),
        statusview.Column("phase"),
        statusview.Column("agent"),
        statusview.Column("deliverable"),
        statusview.Column("submission"),
        statusview.Column("tasks"),
        statusview.Column("age", justify="right"),
        statusview.Column("last", justify="right"),
    ]
    rows: list[list[str | Text]] = []
    for row in found:
        view = row.view
        cause = view.short_cause or view.paused
        phase = view.phase.value + (f" ({cause})" if cause else "")
        rows.append(
            [
                view.place,
                view.kind,
                f"{view.key or view.stage}#{view.attempt}",
                Text(phase, style=_PHASE_STYLES.get(view.phase, "")),
                Text(view.agent.value, style="bold yellow" if view.agent.value == "asking" else ""),
                "yes" if view.deliverable_exists else "no",
                view.submission.value,
                f"{view.tasks[0]}/{view.tasks[1]}" if view.tasks else "",
                duration(row.age),
                duration(row.quiet),
            ]
        )
    table = statusview.places_table(columns, rows)
    if width is not None and statusview.width_of(table) > width:
        narrow = [each for each in columns if each.heading not in {"kind", "phase"}]
        table = statusview.places_table(
            narrow,
            [[row[0], Text.assemble(row[2], " ", row[3]), *row[4:]] for row in rows],
        )
    waiting = [Text(line) for line in render.waiting_lines([row.view for row in found])]
    views = [{"life": row.view.life.value} for row in found]
    said = statusview.supervisor_lines(views, running=supervised)
    waiting.extend(Text(line, style="bold red") for line in said)
    return Group(Text(heading), table, *waiting)


def is_dumb(environ: Mapping[str, str], *, terminal: bool) -> bool:
    """The output cannot be redrawn in place: no terminal, or one that cannot move its cursor."""
    return not terminal or environ.get("TERM", "") in _DUMB


class Keys:
    """The keys typed at the board, one at a time (cbreak mode), when stdin is a terminal."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    @classmethod
    @contextlib.contextmanager
    def reading(cls) -> Iterator[Keys]:
        """Read keys as they are typed, the terminal's mode put back at the end."""
        fd = sys.stdin.fileno() if sys.stdin is not None and sys.stdin.isatty() else None
        if fd is None:
            yield cls(None)
            return
        saved = termios.tcgetattr(fd)
        try:
            # cbreak, not raw: keys come one by one, and Ctrl-C still interrupts.
            tty.setcbreak(fd)
            yield cls(fd)
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)

    def quit_within(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for a key; True when q was typed (or stdin ended)."""
        if self.fd is None:
            time.sleep(seconds)
            return False
        ready, _, _ = select.select([self.fd], [], [], seconds)
        if not ready:
            return False
        typed = os.read(self.fd, 1024)
        return not typed or b"q" in typed.lower()


def watch(  # noqa: PLR0913 (what to follow, where to draw, how often, and when to end)
    follower: EventStream,
    console: Console,
    *,
    interval: float,
    where: str,
    clock: Callable[[], float] = time.time,
    until: Callable[[], bool] | None = None,
) -> None:
    """Show the board until q or Ctrl-C: redrawn in place, or printed anew on a dumb terminal.

    With ``until``, the board also ends once it holds, after the look that found it so.
    """

    def over() -> bool:
        return until is not None and until()

    def look() -> tuple[list[Row], RenderableType]:
        now = clock()
        supervised = client.ping(timeout=1.0) is not None
        found = rows(follower, now, supervised=supervised)
        shown = datetime.fromtimestamp(now).astimezone().strftime("%H:%M:%S")
        count = f"{len(found)} place{'' if len(found) == 1 else 's'}"
        heading = f"flume watch: {count} in {where} at {shown}; q quits"
        return found, board(found, heading=heading, width=console.width, supervised=supervised)

    with Keys.reading() as keys:
        if is_dumb(os.environ, terminal=console.is_terminal):
            last: list[tuple[object, ...]] | None = None
            while True:
                found, drawn = look()
                if [row.key() for row in found] != last:
                    last = [row.key() for row in found]
                    console.print(drawn)
                    console.print()
                if over() or keys.quit_within(interval):
                    return
        with Live(
            look()[1],
            console=console,
            auto_refresh=False,
            redirect_stdout=False,
            redirect_stderr=False,
        ) as live:
            while not over() and not keys.quit_within(interval):
                live.update(look()[1], refresh=True)


def once(follower: EventStream, console: Console, *, where: str) -> None:
    """Print the board once."""
    now = time.time()
    supervised = client.ping(timeout=1.0) is not None
    found = rows(follower, now, supervised=supervised)
    count = f"{len(found)} place{'' if len(found) == 1 else 's'}"
    heading = f"flume watch: {count} in {where}"
    console.print(board(found, heading=heading, width=console.width, supervised=supervised))


def console() -> Console:
    """The console the board is drawn on: rich's own choice of colour, and the board's width.

    rich takes a dumb terminal to be 80 columns wide whatever it is; the board asks the
    terminal itself, and draws 200 columns wide into a file or pipe.
    """
    made = Console(highlight=False)
    if made.is_terminal and not made.is_dumb_terminal:
        return made
    try:
        size = os.get_terminal_size(sys.stdout.fileno())
    except (OSError, ValueError):
        size = os.terminal_size((_PLAIN_WIDTH, _PLAIN_HEIGHT))
    # Both given, or rich takes a dumb terminal's size to be 80 by 25 all the same.
    return Console(highlight=False, width=size.columns, height=size.lines)
