"""Names made for work launched with none: from its brief, numbered while taken.

Theory of operation. A launch given no name (the MCP server's ``launch`` with only a brief) is
named from its brief's first telling words (:func:`name_from`). The shell tries the names
:func:`made_names` gives, in order, launching with each until one is free; a made name taken by
another place is the only refusal that moves it to the next. When every one is taken the launch
is refused with :func:`names_taken`, which asks for a name.

Rule ids: NAME-FROM-BRIEF.
"""

from __future__ import annotations

import re
import unicodedata

from flume.core.errors import Problem
from flume.core.settings import NAME_TRIES

#: How long a name made from a brief may grow (flume allows 64; a short one reads better).
NAME_LENGTH = 32

#: How many words of the brief a made name keeps.
NAME_WORDS = 4

#: Words a made name leaves out: they say little about the work.
_FILLER = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "do", "does", "for", "from",
        "has", "have", "i", "in", "into", "is", "it", "its", "make", "me", "my", "of", "on",
        "or", "our", "please", "should", "so", "that", "the", "their", "then", "there", "this",
        "to", "was", "we", "were", "when", "which", "will", "with", "would", "you", "your",
    }
)  # fmt: skip


def name_from(brief: str, kind: str = "") -> str:
    """A short kebab-case name for the work, made from its brief's first telling words.

    Letters are case-folded and folded to ASCII (ß to ss, ä to a); filler words are left out;
    at most :data:`NAME_WORDS` words and :data:`NAME_LENGTH` characters. A brief with no letters or
    digits gives ``work``. The name is always one flume accepts (``[a-z0-9][a-z0-9-]*``). A
    leading word that is the ``kind`` is left out too: the place is ``<kind>--<name>``, and "Fix
    the greeting typo" launched as a fix is ``fix--greeting-typo``, not ``fix--fix-greeting-typo``.
    """
    folded = unicodedata.normalize("NFKD", brief.casefold()).encode("ascii", "ignore").decode()
    found = re.findall(r"[a-z0-9]+", folded)
    telling = [word for word in found if word not in _FILLER] or found
    if len(telling) > 1 and telling[0] == kind.casefold():
        telling = telling[1:]
    name = ""
    for word in telling[:NAME_WORDS]:
        longer = f"{name}-{word}" if name else word[:NAME_LENGTH]
        if len(longer) > NAME_LENGTH:
            break
        name = longer
    return name or "work"


def made_names(base: str, tries: int = NAME_TRIES) -> tuple[str, ...]:
    """NAME-FROM-BRIEF: the names a launch named from its brief tries, in order, while taken.

    The made name, then ``<name>-2`` up to ``<name>-<tries>``; none when ``tries`` is below 1.
    """
    return tuple(base if number == 1 else f"{base}-{number}" for number in range(1, tries + 1))


def names_taken(base: str, tries: int = NAME_TRIES) -> Problem:
    """The refusal once every made name is taken: it names the range and asks for a name."""
    return Problem(
        field="name",
        what=f"the names made from the brief, {base} to {base}-{tries}, are all taken",
        mend="name the work: name=<name>",
    )
