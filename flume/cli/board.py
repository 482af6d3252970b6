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
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from flume import views
from flume.cli import statusview
from flume.core.status import PhaseWord, PlaceStatus
from flume.core.status import status as core_status
from flume.shell.store import places
from flume.shell.store.codec import codec
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
    return views.duration(seconds)


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


#: The board's layouts, widest first: as ``flume status``'s, with each place's ages at the end.
LAYOUTS = statusview._narrowing(  # noqa: SLF001 (the status table's narrowing, shared)
    ("place", "kind", "stage", "phase", "agent", "deliverable", "submission", "tasks"),
    rest=("age", "last"),
)[1:]


def plain(row: Row) -> dict[str, Any]:
    """The row's place as plain data (the form ``status --json`` prints), with its ages."""
    view = dict(codec().unstructure(row.view))
    view["age"] = views.duration(row.age)
    view["last"] = views.duration(row.quiet)
    return view


def board(  # noqa: PLR0913 (what to show, and the room it has)
    found: list[Row],
    *,
    heading: str,
    width: int | None = None,
    height: int | None = None,
    which: views.Which = views.Which.FOLDED,
    now: float | None = None,
    supervised: bool = True,
) -> RenderableType:
    """The board of the rows: :func:`drawn` of each place's plain data with its ages.

    Not ``supervised`` (no supervisor runs), a place in flight is said not to be followed, with
    the command that starts it (as ``flume status`` says).
    """
    if not found:
        return Group(Text(heading), Text("no places: launch one with flume launch"))
    every = [plain(row) for row in found]
    board = drawn(every, heading=heading, width=width, height=height, which=which, now=now)
    if supervised:
        return board
    return Group(board, *_unsupervised(found, width))


def drawn(  # noqa: PLR0913 (what to show, and the room it has)
    every: Sequence[views.View],
    *,
    heading: str,
    width: int | None = None,
    height: int | None = None,
    which: views.Which = views.Which.FOLDED,
    now: float | None = None,
) -> RenderableType:
    """The board: a heading, a table of the places, and what a person must read of them.

    The places that need a person first, then those at work, then the rest, as ``flume status``
    lists them (the view model, :mod:`flume.views`); fitted to ``width`` columns by leaving
    columns out, never by folding a word. With ``height`` and ``which`` folded (the default),
    the done places fold into one line when the board would be taller than the terminal, and
    then what is read of the places is cut short, then the places at work past the screen:
    those that need a person come first, and stay on screen.
    """
    shown = views.chosen(every, which)
    folded: list[views.View] = []
    notes = list(statusview.wrapped(views.every_note_line(shown, now), width))
    fold = which is views.Which.FOLDED and height is not None
    if fold and height is not None and 3 + len(shown) + len(notes) > height:
        folded = [view for view in shown if views.standing(view) is views.Standing.DONE]
        shown = [view for view in shown if views.standing(view) is not views.Standing.DONE]
        notes = list(statusview.wrapped(views.every_note_line(shown, now), width))
    hidden = 0
    if fold and height is not None:
        # The heading, the table's two and the folded line: every other line is a place's.
        room = max(1, height - 3 - (1 if folded else 0))
        if len(shown) > room:
            hidden = len(shown) - (room - 1)
            shown = shown[: room - 1]
            notes = []
    lines: list[Text] = [Text(heading)]
    if shown:
        layout = statusview.fitting(LAYOUTS, shown, width)
        lines.extend(_table(layout, shown))
    elif folded:
        lines.append(Text("no place needs you or is at work"))
    if hidden:
        lines.append(Text(f"... {hidden} more at work: flume status lists them all"))
    if folded:
        lines.append(
            Text(
                f"{len(folded)} done (finished, dropped or tidied), folded: flume watch --all "
                "shows them",
                style="dim",
            )
        )
    left = None if height is None else max(0, height - len(lines) - 1)
    if fold and left is not None and len(notes) > left:
        cut = len(notes) - max(0, left - 1)
        notes = [*notes[: max(0, left - 1)], f"... {cut} more lines: flume status shows them all"]
    lines.extend(Text(line) for line in notes)
    return Group(*lines)


def _unsupervised(found: list[Row], width: int | None) -> list[Text]:
    """The lines saying no supervisor follows the places in flight (issue 25, 2.6)."""
    lives = [{"life": row.view.life.value} for row in found]
    said = statusview.supervisor_lines(lives, running=False, width=width)
    return [Text(line, style="bold red") for line in said]


def _table(layout: statusview.Layout, shown: list[views.View]) -> list[Text]:
    """The places' table in ``layout``, its phase coloured: each row one line, nothing folded."""
    columns = layout.columns
    cells = [[statusview._cell(key, view) for key in layout.keys] for view in shown]  # noqa: SLF001 (one table's cells)
    widths = [statusview.cell_width(column.heading) for column in columns]
    for row in cells:
        for number, cell in enumerate(row):
            widths[number] = max(widths[number], statusview.cell_width(cell))

    def line(row: list[str], styles: list[str]) -> Text:
        drawn = Text()
        for number, (cell, size, column) in enumerate(zip(row, widths, columns, strict=True)):
            pad = " " * (size - statusview.cell_width(cell))
            padded = pad + cell if column.justify == "right" else cell + pad
            drawn.append(padded, style=styles[number])
            if number < len(row) - 1:
                drawn.append("  ")
        drawn.rstrip()
        return drawn

    plain_style = [""] * len(columns)
    drawn = [line([column.heading for column in columns], plain_style)]
    drawn.append(Text("─" * (sum(widths) + 2 * (len(widths) - 1))))
    for view, row in zip(shown, cells, strict=True):
        styles = [
            _PHASE_STYLES.get(PhaseWord(view["phase"]), "")
            if key in {"phase", "stage phase"}
            else ("bold yellow" if key == "agent" and view["agent"] == "asking" else "")
            for key in layout.keys
        ]
        drawn.append(line(row, styles))
    return drawn


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
    which: views.Which = views.Which.FOLDED,
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
        drawn = board(
            found,
            heading=heading,
            width=console.width,
            height=console.height,
            which=which,
            now=now,
            supervised=supervised,
        )
        return found, drawn

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


def once(
    follower: EventStream,
    console: Console,
    *,
    where: str,
    which: views.Which = views.Which.FOLDED,
) -> None:
    """Print the board once (into a file or a pipe, unbounded in height)."""
    now = time.time()
    supervised = client.ping(timeout=1.0) is not None
    found = rows(follower, now, supervised=supervised)
    count = f"{len(found)} place{'' if len(found) == 1 else 's'}"
    height = console.height if console.is_terminal else None
    drawn = board(
        found,
        heading=f"flume watch: {count} in {where}",
        width=console.width,
        height=height,
        which=which,
        now=now,
        supervised=supervised,
    )
    console.print(drawn)


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
