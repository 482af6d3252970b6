"""The examples of docs/api.md and docs/testing.md, run as they stand, so the docs cannot rot.

Every ``python`` block of those pages runs in a process of its own (the examples make their own
hosts with ``flume.testing.scenario``); it must exit 0, and print, in order, each line of the
``text`` block that follows it (``...`` in a shown line stands for anything: paths, hashes).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

DOCS = Path(__file__).resolve().parents[2] / "docs"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def examples(page: str) -> list[tuple[str, list[str]]]:
    """Each ``python`` block of a page, with the lines of the ``text`` block after it."""
    found: list[tuple[str, list[str]]] = []
    for language, body in _BLOCK.findall((DOCS / page).read_text(encoding="utf-8")):
        if language == "python":
            found.append((body, []))
        elif language == "text" and found and not found[-1][1]:
            found[-1] = (found[-1][0], body.splitlines())
    return found


def shown(line: str) -> re.Pattern[str]:
    """A shown output line as a pattern: ``...`` stands for anything."""
    return re.compile(".*".join(re.escape(part) for part in line.split("...")))


def printed_in_order(expected: list[str], output: list[str]) -> list[str]:
    """The expected lines not printed, in order (extra lines printed between are allowed)."""
    lines = iter(output)
    return [line for line in expected if not any(shown(line).fullmatch(out) for out in lines)]


CASES = [
    pytest.param(page, number, code, expected, id=f"{page}-{number}")
    for page in ("api.md", "testing.md")
    for number, (code, expected) in enumerate(examples(page), 1)
]


def test_each_page_has_examples_with_their_output() -> None:
    """Both pages have runnable examples, each followed by the output it prints."""
    assert {case.values[0] for case in CASES} == {"api.md", "testing.md"}
    assert len([case for case in CASES if case.values[0] == "testing.md"]) == 3
    assert all(case.values[3] for case in CASES)


@pytest.mark.parametrize(("page", "number", "code", "expected"), CASES)
def test_a_documented_example_runs_and_prints_what_the_page_shows(
    tmp_path: Path, page: str, number: int, code: str, expected: list[str]
) -> None:
    """The example exits 0 and prints the lines its page shows, in order."""
    source = tmp_path / f"example_{number}.py"
    source.write_text(code, encoding="utf-8")
    ran = subprocess.run(  # noqa: S603 (our own interpreter, the page's own code)
        [sys.executable, str(source)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=os.environ.copy(),
    )
    assert ran.returncode == 0, f"{page} example {number}:\n{ran.stdout}\n{ran.stderr}"
    missing = printed_in_order(expected, ran.stdout.splitlines())
    assert not missing, f"{page} example {number} did not print {missing}:\n{ran.stdout}"


def test_the_order_check_finds_a_line_missing_or_out_of_order() -> None:
    """The output check fails a line not printed, or printed before the one shown above it."""
    assert printed_in_order(["a ... c", "d"], ["x", "a b c", "d"]) == []
    assert printed_in_order(["a", "b"], ["b", "a"]) == ["b"]
    assert printed_in_order(["made at ...", "z"], ["made at 6f0c"]) == ["z"]
