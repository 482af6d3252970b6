"""A near miss of a word flume knows gets a "did you mean" (issue 27), and nothing else does.

:func:`flume.core.errors.nearest` is what every "did you mean" of a kind file is drawn from: a
gate, a block, a prompt field, a key. The property: a slip of the keyboard in a known word (a
letter left out, one too many, one for another, two swapped) is answered with that word, unless
another known word is as near; and the answer is always a known word.
"""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from flume.core.errors import did_you_mean, nearest, slips
from flume.core.kindfile import BLOCKS, GATE_WORDS, PROMPT_FIELD_MEANINGS, TABLES
from flume.core.kinds import PROMPT_FIELDS

#: Each list of words a file's words are checked against.
VOCABULARIES = [
    sorted(GATE_WORDS),
    sorted(PROMPT_FIELDS),
    *(sorted(table.names()) for table in TABLES),
    sorted(BLOCKS),
]


def test_the_prompt_fields_have_meanings_and_no_more() -> None:
    """Every prompt field a template may name has its meaning in the format's data."""
    assert set(PROMPT_FIELD_MEANINGS) == PROMPT_FIELDS


def test_slips_are_counted_as_a_person_makes_them() -> None:
    """Left out, one too many, one for another, two swapped: one slip each; none for the same."""
    assert slips("gate", "gate") == 0
    assert slips("gat", "gate") == 1
    assert slips("gatee", "gate") == 1
    assert slips("gase", "gate") == 1
    assert slips("agte", "gate") == 1
    assert slips("approved", "approval") == 2
    assert slips("", "max") == 3


def test_the_issue_s_near_misses_are_answered() -> None:
    """``approved`` is the approval gate; ``gat`` the gate key; ``revue`` a block named review."""
    assert nearest("approved", GATE_WORDS) == "approval"
    assert nearest("gat", BLOCKS["step"].names()) == "gate"
    assert nearest("revue", ["plan", "review", "fix"]) == "review"
    assert did_you_mean("breif", PROMPT_FIELDS) == " (did you mean 'brief'?)"


def test_a_far_word_or_a_tie_gets_no_answer() -> None:
    """Nothing near: no answer; two as near: no answer rather than the wrong one."""
    assert nearest("colour", BLOCKS["step"].names()) is None
    assert nearest("ma", ["max", "may"]) is None
    assert nearest("gate", ["gate"]) is None
    assert nearest("x", []) is None
    assert did_you_mean("colour", ["name"]) == ""


def _slip(word: str, where: int, letter: str, how: int) -> str:
    """``word`` with one slip at ``where``: left out, one added, one changed, two swapped."""
    where %= len(word)
    match how:
        case 0:
            return word[:where] + word[where + 1 :]
        case 1:
            return word[:where] + letter + word[where:]
        case 2:
            return word[:where] + letter + word[where + 1 :]
        case _:
            if where + 1 >= len(word):
                return word[:-2] + word[-1] + word[-2]
            return word[:where] + word[where + 1] + word[where] + word[where + 2 :]


def _one_slip_away(word: str) -> set[str]:
    """Every word one slip from ``word``, made one by one (not by :func:`slips`)."""
    letters = string.ascii_lowercase + "-_:<>"
    made = {word[:i] + word[i + 1 :] for i in range(len(word))}
    made |= {word[:i] + c + word[i:] for i in range(len(word) + 1) for c in letters}
    made |= {word[:i] + c + word[i + 1 :] for i in range(len(word)) for c in letters}
    made |= {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(len(word) - 1)}
    return made


@given(
    vocabulary=st.sampled_from(VOCABULARIES),
    pick=st.integers(min_value=0),
    where=st.integers(min_value=0, max_value=40),
    letter=st.sampled_from(string.ascii_lowercase),
    how=st.integers(min_value=0, max_value=3),
)
def test_a_slip_in_a_known_word_is_answered_with_that_word(
    vocabulary: list[str], pick: int, where: int, letter: str, how: int
) -> None:
    """One slip from a known word, and from no other: the answer is that word."""
    word = vocabulary[pick % len(vocabulary)]
    typed = _slip(word, where, letter, how)
    answer = nearest(typed, vocabulary)
    assert answer is None or answer in vocabulary
    others = [each for each in vocabulary if each != word and typed in _one_slip_away(each)]
    if typed not in vocabulary and not others and len(word) > 1:
        assert answer == word, (typed, word, answer)
