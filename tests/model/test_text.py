"""The caller's words, checked in the core (``checked_text``): the CLI and the supervisor alike.

A sandboxed agent's words reach the supervisor through its inbox, where they are checked again
as the command checks them: the same function, in the core.
"""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flume.core.errors import UsageError
from flume.core.text import MAX_TEXT_BYTES, checked_text, shell_word


def test_words_that_can_be_carried_are_given_back() -> None:
    """Text, tabs and line breaks, at the limit: as given; empty only when allowed."""
    assert checked_text("words", "a\tb\nc") == "a\tb\nc"
    assert checked_text("words", "x" * MAX_TEXT_BYTES) == "x" * MAX_TEXT_BYTES
    assert checked_text("words", " ", empty_ok=True) == " "


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("  ", "the words is empty"),
        ("a\udcffb", "not UTF-8 text"),
        ("a\0b", "holds a NUL"),
        ("a\x1bb", "control character \\x1b"),
        ("x" * (MAX_TEXT_BYTES + 1), "over the limit"),
    ],
)
def test_words_that_cannot_be_carried_are_refused(text: str, why: str) -> None:
    """Each refusal is bad input (exit 2), naming what is wrong."""
    with pytest.raises(UsageError) as raised:
        checked_text("words", text)
    assert raised.value.exit_status == 2
    assert why in str(raised.value)


@given(st.text())
def test_a_shell_word_is_quoted_as_shlex_quotes_it(text: str) -> None:
    """The core's quoting of a word a person copies is the standard library's, for any text."""
    assert shell_word(text) == shlex.quote(text)
