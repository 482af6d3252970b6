"""What text a caller gives flume may hold: its weight, and no key an agent would take as typed.

Apart from :mod:`flume.core.launch`, which checks a brief with them, so that a command checking
the caller's words (``flume needs``) does so before it loads the rest of the core.
"""

from __future__ import annotations

import re

from flume.core.errors import UsageError

#: "brief non-empty, at most 1 MiB", counted in UTF-8 bytes.
MAX_BRIEF_BYTES = 1024 * 1024
#: What a caller's words may weigh, in UTF-8 bytes: the brief's limit.
MAX_TEXT_BYTES = MAX_BRIEF_BYTES


#: Control characters text pasted into an agent may not hold: tab, newline and carriage return
#: are text; the rest are keys (an ESC could end the bracketed paste early, and what followed it
#: would arrive as typed keys, Enter included).
_KEYS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def control_character(text: str) -> str | None:
    r"""The first control character in text meant for an agent, as ``\\xNN``; None if none.

    The caller's words reach an agent by bracketed paste (R6), where a control character would
    be taken as a key.
    """
    found = _KEYS.search(text)
    return None if found is None else f"\\x{ord(found.group()):02x}"


def checked_text(field: str, text: str, *, empty_ok: bool = False) -> str:
    """The caller's words, if they can be carried; else a :class:`UsageError` (exit 2).

    Words go into the journal and, pasted literally, into an agent's input: they must be text
    (no lone surrogates, which is what undecodable bytes become), hold no NUL or other control
    character but tab and line breaks (an ESC could end the paste and type keys), and weigh at
    most 1 MiB. Empty words (or only white space) are refused unless ``empty_ok``.
    """
    if not empty_ok and not text.strip():
        raise UsageError.one(field, f"the {field} is empty", f"give the {field} as text")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as error:
        raise UsageError.one(
            field,
            f"the {field} is not UTF-8 text (it holds bytes that are not characters)",
            f"give the {field} as UTF-8 text",
        ) from error
    if "\0" in text:
        raise UsageError.one(
            field, f"the {field} holds a NUL character", "leave out the NUL (\\0) bytes"
        )
    control = control_character(text)
    if control is not None:
        raise UsageError.one(
            field,
            f"the {field} holds the control character {control}, which the agent would take "
            "as a key, not text",
            "leave it out; tabs and line breaks are fine",
        )
    if size > MAX_TEXT_BYTES:
        raise UsageError.one(
            field,
            f"the {field} is {size} bytes, over the limit of {MAX_TEXT_BYTES} (1 MiB)",
            "shorten it, or point to a file in the repository",
        )
    return text


#: A word a POSIX shell reads back as it is, unquoted.
_PLAIN_WORD = re.compile(r"[\w@%+=:,./-]+", re.ASCII)


def shell_word(text: str) -> str:
    """``text`` as one word of a command a person copies: quoted unless a shell keeps it as is.

    As ``shlex.quote`` (which the pure core does not import): in single quotes, a single quote
    closed, escaped and opened again.
    """
    if _PLAIN_WORD.fullmatch(text):
        return text
    return "'" + text.replace("'", "'\"'\"'") + "'"
