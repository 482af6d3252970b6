"""P4: following a transcript. Target: 1 KB appended to a 100 MB transcript observed in < 10 ms.

Builds a transcript of about 100 MB in a temporary folder by repeating the lines of the real
Claude Code transcripts in ../shared/corpus/claude-code/ (never in the repository), reads it
whole once to get the offset after its last line, then for each round:

- appends about 1 KB of corpus lines, as Claude Code would during a turn;
- times ``read_from`` from the stored offset (what the supervisor does each tick), and checks
  it returns exactly the lines appended;
- times, side by side, reading the whole file again (what a reader without offsets would do).

Run: ``python bench/transcript.py [--megabytes N] [--rounds R]``. Prints the median, best and
worst of each, their ratio, and whether P4 is met (by the worst round, not the median).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from flume.core.ids import Instant, SessionId
from flume.shell.agents.claude_lines import read_from

TARGET = 0.010
SESSION = SessionId("4d5611e5-241a-462a-8d15-5122611a9569")
SHARED = Path(os.environ.get("FLUME_SHARED", Path(__file__).resolve().parents[2] / "shared"))
CORPUS = SHARED / "corpus" / "claude-code"


def corpus_lines() -> list[bytes]:
    """Every line of the corpus transcripts, newline included."""
    if not CORPUS.is_dir():
        message = f"the corpus is not at {CORPUS}; set FLUME_SHARED to the shared/ folder"
        raise SystemExit(message)
    return [
        line
        for path in sorted(CORPUS.glob("*.jsonl"))
        for line in path.read_bytes().splitlines(keepends=True)
        if line.strip()
    ]


def build(path: Path, lines: list[bytes], size: int) -> int:
    """Write the corpus again and again to ``path`` until it holds ``size`` bytes; the lines."""
    block = b"".join(lines)
    written = count = 0
    with path.open("wb") as file:
        while written < size:
            file.write(block)
            written += len(block)
            count += len(lines)
    return count


def appendix(lines: list[bytes], round_: int) -> list[bytes]:
    """About 1 KB of whole corpus lines, a different run of them each round."""
    small = [line for line in lines if 150 <= len(line) <= 600]
    chosen: list[bytes] = []
    start = round_ * 7
    while sum(map(len, chosen)) < 1024:
        chosen.append(small[(start + len(chosen)) % len(small)])
    return chosen


def main() -> None:
    """Time the tail against the whole file, and print the figures against P4's target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    lines = corpus_lines()
    at = Instant(0.0)
    with tempfile.TemporaryDirectory(prefix="flume-bench-transcript-") as folder:
        path = Path(folder) / f"{SESSION}.jsonl"
        count = build(path, lines, args.megabytes * 1_000_000)
        start = time.perf_counter()
        whole = read_from(path, 0, session=SESSION, at=at)
        first = time.perf_counter() - start
        assert len(whole.entries) == count, "every line of the built transcript is read"
        offset = whole.offset
        tails: list[float] = []
        wholes: list[float] = []
        appended = 0
        for round_ in range(args.rounds):
            chunk = appendix(lines, round_)
            appended += sum(map(len, chunk))
            with path.open("ab") as file:
                file.write(b"".join(chunk))
            start = time.perf_counter()
            tail = read_from(path, offset, session=SESSION, at=at)
            tails.append(time.perf_counter() - start)
            assert len(tail.entries) == len(chunk), "exactly the appended lines"
            assert tail.offset == path.stat().st_size
            offset = tail.offset
            start = time.perf_counter()
            again = read_from(path, 0, session=SESSION, at=at)
            wholes.append(time.perf_counter() - start)
            assert again.offset == offset
        size = path.stat().st_size
    print(
        f"transcript: {size / 1e6:.1f} MB, {count:,} lines; first read {first:.2f} s; "
        f"{args.rounds} rounds of ~{appended / args.rounds / 1024:.2f} KB appended",
    )
    for label, samples in (("tail (read_from offset)", tails), ("whole file again", wholes)):
        print(
            f"{label:24s} median {statistics.median(samples) * 1000:9.3f} ms  "
            f"best {min(samples) * 1000:9.3f} ms  worst {max(samples) * 1000:9.3f} ms",
        )
    ratio = statistics.median(wholes) / statistics.median(tails)
    met = max(tails) < TARGET
    print(f"the whole file costs {ratio:,.0f}x the tail (medians)")
    print(
        f"P4 (1 KB appended observed in < {TARGET * 1000:.0f} ms): "
        f"{'met' if met else 'NOT met'}, worst round {max(tails) * 1000:.3f} ms",
    )


if __name__ == "__main__":
    main()
