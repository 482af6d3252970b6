"""Issue 13: usage accounting's cost on P4. Target: at most +10% on following a transcript.

Following a Claude Code transcript (bench/transcript.py, P4) now also sums each turn's usage:
every assistant line's ``message.usage`` is taken under its ``message.id`` (``usage_of``) and
kept by the session's :class:`~flume.shell.agents.turns.Turn`, which gives a ``TurnEnded`` with
the sum where the turn closes. flume has no switch to read without it, so this bench times,
side by side on the same transcript (about 100 MB of the corpus's lines, as bench/transcript.py
builds it):

- **with**: ``read_from``, as the supervisor reads (usage summed);
- **without**: the same tail reader (``read_tail``) with a line reader that is
  ``read_counted`` less its usage: the same entries (checked equal), no usage asked for, so the
  turn is never given one;
- **summing alone**: ``usage_of`` and ``Turn.take`` over the same lines, parsed beforehand,
  called where ``read_tail`` calls them: the accounting's own work, with no read around it.

Each is timed on ~1 KB appended (P4's case, each round different lines) and on the whole file
read again (the same work per line, a thousand times the lines: the steadier figure).

Run: ``python bench/usage.py [--megabytes N] [--rounds R]``. Prints medians, best and worst,
and the cost of usage as a share of the read without it.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from transcript import SESSION, appendix, build, corpus_lines

from flume.core.ids import Instant, SessionId
from flume.core.observations import TranscriptEntry
from flume.shell.agents import claude_lines
from flume.shell.agents.claude_lines import read_from, usage_of
from flume.shell.agents.tail import Tail, json_line, read_tail, whole_lines
from flume.shell.agents.turns import Counted, Turn
from flume.shell.store.transcript_words import entry_of

TARGET = 0.10


def read_without_usage(
    line: bytes, *, session: SessionId, at: Instant
) -> tuple[TranscriptEntry, Counted | None]:
    """``claude_lines.read_counted`` less its last step: the entry, and no usage asked for."""
    data = json_line(line)
    if not isinstance(data, dict):
        message = "a transcript line must be a JSON object"
        raise ValueError(message)  # noqa: TRY004 (as read_counted)
    line_type = data.get("type")
    message_data = data.get("message")
    content, text, tool = claude_lines._content(message_data)  # noqa: SLF001 (the same steps)
    stop_reason = message_data.get("stop_reason") if isinstance(message_data, dict) else None
    row_source = data.get("rowSource")
    subtype = data.get("subtype")
    said: claude_lines._Said = (
        line_type if isinstance(line_type, str) else "",
        content,
        data.get("isMeta") is True,
        data.get("isCompactSummary") is True,
        data.get("isSidechain") is True,
        row_source if isinstance(row_source, str) else None,
        tool,
        stop_reason if isinstance(stop_reason, str) else None,
        subtype if isinstance(subtype, str) else None,
    )
    words = (
        claude_lines._words(text, said)  # noqa: SLF001
        if text
        else claude_lines._shared_words(said)  # noqa: SLF001
    )
    return entry_of(words, at=at, session=session), None


def without(path: Path, offset: int, at: Instant) -> Tail:
    """The tail as ``read_from`` reads it, less usage."""
    return read_tail(path, offset, read_without_usage, session=SESSION, at=at)


def parsed(path: Path, offset: int) -> list[tuple[object, object, TranscriptEntry]]:
    """Each line's type, message and entry after ``offset``: what the summing is given."""
    with path.open("rb") as file:
        file.seek(offset)
        lines, _ = whole_lines(file.read())
    found = []
    for line in lines:
        if not line.strip():
            continue
        data = json_line(line)
        assert isinstance(data, dict)
        entry, _ = claude_lines.read_counted(line, session=SESSION, at=Instant(0.0))
        found.append((data.get("type"), data.get("message"), entry))
    return found


def summing(lines: list[tuple[object, object, TranscriptEntry]]) -> int:
    """The accounting alone, as ``read_counted`` and ``read_tail`` do it; the turns it ended."""
    turn = Turn()
    ended = 0
    at = Instant(0.0)
    for line_type, message, entry in lines:
        counted = usage_of(line_type, message) if line_type == "assistant" else None
        if (counted is not None or entry.ends_turn or not turn.open) and turn.take(
            entry, counted, session=SESSION, at=at
        ):
            ended += 1
    return ended


def tail_works(
    path: Path, offset: int, lines: list[tuple[object, object, TranscriptEntry]]
) -> dict[str, Callable[[], object]]:
    """The three works on the lines after ``offset``: with usage, without, the summing alone."""
    at = Instant(0.0)
    return {
        "with": lambda: read_from(path, offset, session=SESSION, at=at),
        "without": lambda: without(path, offset, at),
        "summing": lambda: summing(lines),
    }


def timed(work: Callable[[], object]) -> tuple[float, object]:
    """The seconds ``work`` took, and what it gave."""
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def line(label: str, samples: list[float]) -> str:
    """A figure's median, best and worst, in ms."""
    return (
        f"{label:34s} median {statistics.median(samples) * 1000:9.3f} ms  "
        f"best {min(samples) * 1000:9.3f} ms  worst {max(samples) * 1000:9.3f} ms"
    )


def main() -> None:
    """Time the read with and without usage and the summing alone, side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--whole-rounds", type=int, default=7)
    args = parser.parse_args()
    corpus = corpus_lines()
    at = Instant(0.0)
    tails: dict[str, list[float]] = {"with": [], "without": [], "summing": []}
    wholes: dict[str, list[float]] = {"with": [], "without": [], "summing": []}
    with tempfile.TemporaryDirectory(prefix="flume-bench-usage-") as folder:
        path = Path(folder) / f"{SESSION}.jsonl"
        count = build(path, corpus, args.megabytes * 1_000_000)
        whole = read_from(path, 0, session=SESSION, at=at)
        assert without(path, 0, at).entries == whole.entries, "the same entries, less usage"
        assert whole.turns, "the corpus's turns end, with usage"
        every = parsed(path, 0)
        turns = summing(every)
        assert turns == len(whole.turns), "the summing alone ends the turns the read ends"
        offset = whole.offset
        for round_ in range(args.rounds):
            chunk = appendix(corpus, round_)
            with path.open("ab") as file:
                file.write(b"".join(chunk))
            lines = parsed(path, offset)
            works = tail_works(path, offset, lines)
            order = list(works) if round_ % 2 == 0 else list(works)[::-1]
            for name in order:
                seconds, _ = timed(works[name])
                tails[name].append(seconds)
            offset = path.stat().st_size
        every = parsed(path, 0)
        for round_ in range(args.whole_rounds):
            works = tail_works(path, 0, every)
            order = list(works) if round_ % 2 == 0 else list(works)[::-1]
            for name in order:
                seconds, _ = timed(works[name])
                wholes[name].append(seconds)
        size = path.stat().st_size
    print(
        f"transcript: {size / 1e6:.1f} MB, {count:,} lines, {turns:,} turns ended with usage; "
        f"{args.rounds} rounds of ~1 KB appended, {args.whole_rounds} of the whole file"
    )
    for title, samples in (("~1 KB appended", tails), ("whole file", wholes)):
        print(title + ":")
        print(line("  read_from (with usage)", samples["with"]))
        print(line("  same read without usage", samples["without"]))
        print(line("  usage summing alone", samples["summing"]))
        with_, without_ = statistics.median(samples["with"]), statistics.median(samples["without"])
        alone = statistics.median(samples["summing"])
        best = min(samples["with"]) / min(samples["without"])
        print(
            f"  usage costs {(with_ / without_ - 1) * 100:+.1f}% (with/without, medians), "
            f"{(best - 1) * 100:+.1f}% (bests); "
            f"summing alone is {alone / without_ * 100:.1f}% of the read without usage "
            f"(target <= +{TARGET * 100:.0f}%)"
        )


if __name__ == "__main__":
    main()
