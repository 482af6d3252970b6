"""What this host hands the fleet for a spread block's lanes: launched, ordered, told, answered.

Theory of operation. A block that spreads (``spread = true``, rule WF-SPREAD) makes each of its
lanes and children a fleet place, carried by whichever host of the fleet takes it
(docs/fleet.md). Its run stays here, and what the run's rules ask of such a lane (its launch, a
drop or tidy, a lead's words) or a lead's answer to its question is not journaled here: the
supervisor and the commands load no Temporal. Each is written instead as a :class:`Word` in this
host's outbox, ``<state>/fleet/outbox/``, one file a word, which this host's fleet worker
(``flume fleet worker``, beside the supervisor) takes in the order written, hands to Temporal
(a lane's workflow started, or a signal to it), and removes once Temporal has it.

A word is written whole (staged, then renamed into place) and named by when it was written and
a random part, so the worker takes a place's words in the order its run asked them. Each is
safe to hand over twice (a restart of either side): a lane's workflow is started once (its id
is the lane's place), an order a lane had is not given again, a note is told once (its id), and
an answer to a question answered already is refused there. While no worker serves this host the
words wait here, kept; a word the worker cannot hand over (the lane unknown to Temporal) is
named in its log and removed.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from pathlib import Path
from typing import Any

import attrs

from flume.core.place import LaneRun, Place
from flume.shell.host import private, state_dir

#: What a word asks of the fleet.
KINDS = ("launch", "order", "notify", "answer")
#: The most a word's file may weigh: a lane's launch (its kind, its brief) and some room.
MOST_BYTES = 4 * 1024 * 1024


@attrs.frozen(kw_only=True)
class Word:
    """One thing the fleet is to carry for a spread lane (``place``) of the run ``run``."""

    #: ``launch``, ``order``, ``notify`` or ``answer``.
    kind: str
    #: The lane's (or child's) place, which is its workflow's id in the fleet.
    place: str
    #: The run that launched it, here, in ``repository`` (this host's clone), and its name in
    #: the run's block (``launch``).
    run: str
    repository: str
    lane: str = ""
    #: ``launch``: the lane's launch as its journal's first line would be (the codec's line).
    line: str = ""
    #: ``launch``: its branch, and the commit it is cut from (the run's head at the block).
    branch: str = ""
    start: str = ""
    #: ``order``: ``drop`` or ``tidy``.
    order: str = ""
    #: ``notify``: the lead's words and their id; ``answer``: the answer.
    text: str = ""
    id: str = ""
    #: ``answer``: the question's id, and who answers it (WF-ASK-ONE-ANSWERER, judged here).
    question: str = ""
    by_lead: bool = False
    no_lead: bool = False


def folder() -> Path:
    """This host's outbox."""
    return state_dir() / "fleet" / "outbox"


def put(word: Word) -> Path:
    """Write ``word`` into the outbox, whole; its file."""
    if word.kind not in KINDS:
        message = f"{word.kind!r} is no word the fleet carries ({', '.join(KINDS)})"
        raise ValueError(message)
    where = private(folder())
    name = f"{time.time_ns():020d}-{secrets.token_hex(6)}"
    staged = where / f".{name}.staged"
    staged.write_text(json.dumps(attrs.asdict(word)), encoding="utf-8")
    target = where / f"{name}.json"
    staged.replace(target)
    return target


def waiting() -> list[tuple[Path, Word | None]]:
    """The words in the outbox, in the order written; None for one that cannot be read."""
    try:
        paths = sorted(folder().glob("[0-9]*.json"))
    except OSError:
        return []
    return [(path, _read(path)) for path in paths]


def _read(path: Path) -> Word | None:
    try:
        if path.stat().st_size > MOST_BYTES:
            return None
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        word = Word(**data) if isinstance(data, dict) else None
    except (OSError, ValueError, TypeError):
        return None
    return word if word is not None and word.kind in KINDS else None


def done(path: Path) -> None:
    """The word at ``path`` was handed over (or cannot be): it leaves the outbox."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def answer(  # noqa: PLR0913 (each is one thing an answer carries)
    run: Place, child: LaneRun, question: str, text: str, *, by_lead: bool, no_lead: bool
) -> str:
    """An answer to the question of ``run``'s child on another host, into the outbox.

    Who gave it was judged here, at the run (WF-ASK-ONE-ANSWERER); the child's host journals
    it as given. What the command prints.
    """
    put(
        Word(
            kind="answer",
            place=child.place,
            run=run.launch.place,
            repository=run.launch.repository,
            question=question,
            text=text,
            id=secrets.token_hex(8),
            by_lead=by_lead,
            no_lead=no_lead,
        )
    )
    return (
        f"{child.place}: question {question} answered; the answer goes to its host through the "
        "fleet, to the agent that asked, once it waits, and counts once its transcript holds it"
    )
