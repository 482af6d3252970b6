"""Codex's screen before its first turn, as flume reads it: screens captured from Codex 0.171.0.

Codex draws its composer with its splash, then checks the folder's trust: a composer seen then
may give way to the trust dialog 0.4 s later, and a prompt pasted on it would be answered by the
dialog (its default, "Trust and continue"). Only the footer drawn once the start is over says
the composer waits.
"""

from __future__ import annotations

import pytest

from flume.core.observations import Activity
from flume.shell.agents import codex

LOGO = " " * 26 + "\u28b8\u28ff\u28ff\u28c7 \u2838\u28ff\u28ff\u28f7\u28e6\u28fc\u28ff\u28ff"
HEADER = "  >_ OpenAI Codex (v0.171.0)\n     /tmp/repo/places/fix--wary\n"
#: The splash, its composer already drawn, before the trust check (0.0-0.4 s after start).
SPLASH = f"{HEADER}{LOGO}\n\n\u203a Ask Codex to do anything\n\n  ? for shortcuts\n"
#: The same, once started, in a folder Codex trusts.
READY = SPLASH.replace("  ? for shortcuts", "  \u2190 for agents \u00b7 ? for shortcuts")
#: The trust dialog, in a folder Codex does not trust.
DIALOG = (
    "  Folder access\n  /tmp/repo/places/fix--wary\n\n"
    "  Trust this folder? Codex can read, edit, and run files here, subject to your permission\n"
    "  settings.\n\n\u203a 1. Trust and continue\n  2. Back to Agent Command Center\n\n"
    "  enter continue \u00b7 esc back\n"
)


@pytest.mark.parametrize(
    ("shown", "read"),
    [
        (SPLASH, None),
        (READY, Activity.WAITING),
        (DIALOG, Activity.ASKING),
        ("", None),
        (READY.replace("\u203a Ask Codex", "  Ask Codex"), None),
    ],
    ids=["splash", "ready", "trust-dialog", "blank", "ready-no-composer"],
)
def test_codex_waits_only_once_its_start_is_over(shown: str, read: Activity | None) -> None:
    """The splash's composer is no wait: the trust dialog may follow; the started one is."""
    assert codex.screen(lambda: shown) is read
