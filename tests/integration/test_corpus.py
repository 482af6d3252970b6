"""The core's delivery rule on real Claude Code transcripts (../shared/corpus/claude-code/)."""

from __future__ import annotations

import pytest

from flume.core.delivery import infer_activity, is_typed_by_user
from flume.core.ids import Instant, SessionId
from flume.core.observations import Activity
from flume.shell.agents.claude_lines import read_line
from flume.shell.store.transcript_words import words_of
from tests import shared
from tests.shared import CORPUS

TYPED = {
    "4d5611e5-241a-462a-8d15-5122611a9569.jsonl": [
        "Work on bead spotter-dov. Run bd show spotter-dov to see the issue details",
        "continue",
    ],
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": [
        "Work on bead spotter-4te. Run bd show spotter-4te to see the issue details",
        "continue implementation",
    ],
}


@pytest.fixture(autouse=True)
def _corpus() -> None:
    """Each test here reads the corpus: skipped without it, failed where it is required."""
    shared.corpus()


@pytest.mark.parametrize("name", sorted(TYPED))
def test_only_the_typed_prompts_count(name: str) -> None:
    """Of thousands of lines, exactly the prompts a person typed are taken as typed by the user.

    Not the compact summary that quotes them, the task notification injected with a typed
    prompt's flags, the skill's meta line, the /compact command's caveat and stdout, tool
    results, hook progress or assistant text.
    """
    lines = (CORPUS / name).read_text(encoding="utf-8").splitlines()
    entries = [read_line(line, session=SessionId("s"), at=Instant(0)) for line in lines]
    typed = [entry.text for entry in entries if is_typed_by_user(entry)]
    assert len(typed) == len(TYPED[name])
    for text, opening in zip(typed, TYPED[name], strict=True):
        assert text.startswith(opening)
    quoted = [e for e in entries if TYPED[name][0][:40] in e.text and not is_typed_by_user(e)]
    assert quoted, "the corpus quotes the first prompt somewhere that is not typed"


def test_every_corpus_line_is_readable() -> None:
    """The reader takes every line of both transcripts."""
    for name in TYPED:
        for line in (CORPUS / name).read_text(encoding="utf-8").splitlines():
            read_line(line, session=SessionId("s"), at=Instant(0))


@pytest.mark.parametrize("name", sorted(TYPED))
def test_activity_follows_the_turns(name: str) -> None:
    """The agent reads as working after each typed prompt and waiting once each turn ended."""
    activity = Activity.UNKNOWN
    after_typed: list[Activity] = []
    for line in (CORPUS / name).read_text(encoding="utf-8").splitlines():
        entry = read_line(line, session=SessionId("s"), at=Instant(0))
        activity = infer_activity(entry, activity)
        if is_typed_by_user(entry):
            after_typed.append(activity)
        if words_of(entry).subtype == "turn_duration":
            assert activity is Activity.WAITING
    assert after_typed == [Activity.WORKING] * len(TYPED[name])
    assert activity is Activity.WAITING


@pytest.mark.parametrize("line", ["", "{", "[1, 2]", '"text"', "null"])
def test_unreadable_lines_raise_value_error(line: str) -> None:
    """A line that is not a JSON object is a ValueError, for the caller to skip and count."""
    with pytest.raises(ValueError):  # noqa: PT011 (json's own errors are ValueErrors too)
        read_line(line, session=SessionId("s"), at=Instant(0))
