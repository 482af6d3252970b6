"""What text a caller gives flume may hold: its weight, and no key an agent would take as typed.

Apart from :mod:`flume.core.launch`, which checks a brief with them, so that a command checking
the caller's words (``flume needs``) does so before it loads the rest of the core.
"""

from __future__ import annotations

import re

#: "brief non-empty, at most 1 MiB", counted in UTF-8 bytes.
MAX_BRIEF_BYTES = 1024 * 1024


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
