"""Every name ``flume.api`` exports resolves, those loaded on first use included.

The API loads the rules, git and the codec only in the functions that use them; the classes it
re-exports from those modules (``PlaceStatus``, ``Cursor``, ...) load when first asked for.
"""

from __future__ import annotations

import importlib

import pytest

from flume import api

#: Each name loaded on first use: its module, and its name there.
LATER = {
    "Attaching": ("flume.shell.commands.attach", "Attaching"),
    "AttemptChat": ("flume.shell.commands.transcripts", "AttemptChat"),
    "Cursor": ("flume.shell.store.events", "Cursor"),
    "EventStream": ("flume.shell.store.events", "EventStream"),
    "DAEMON_START_SECONDS": ("flume.shell.supervisor.client", "START_SECONDS"),
    "DaemonStatus": ("flume.api_records", "DaemonStatus"),
    "HerdrClient": ("flume.shell.panes.herdr", "Client"),
    "HerdrContext": ("flume.shell.commands.herdr_plugin", "Context"),
    "HerdrError": ("flume.shell.panes.herdr", "HerdrError"),
    "HerdrRequest": ("flume.shell.commands.herdr_plugin", "HerdrRequest"),
    "InFlight": ("flume.shell.commands.herdr_plugin", "InFlight"),
    "Inspection": ("flume.shell.agents.inspection", "Inspection"),
    "LaunchAsked": ("flume.shell.perform.launch_words", "LaunchAsked"),
    "Launched": ("flume.api_records", "Launched"),
    "PlaceEvent": ("flume.shell.store.events", "PlaceEvent"),
    "PlaceStatus": ("flume.core.status", "PlaceStatus"),
    "Prompt": ("flume.shell.commands.verbs", "Prompt"),
    "Simulated": ("flume.api_records", "Simulated"),
    "Survey": ("flume.api_records", "Survey"),
    "TidyOutcome": ("flume.shell.commands.tidying", "TidyOutcome"),
    "Unanswered": ("flume.shell.supervisor.handover", "Unanswered"),
    "Versioned": ("flume.api_records", "Versioned"),
}


@pytest.mark.parametrize("name", api.__all__)
def test_each_exported_name_resolves(name: str) -> None:
    """``from flume.api import <name>`` works for each name in ``__all__``."""
    assert getattr(api, name) is not None


@pytest.mark.parametrize(("name", "module", "there"), [(k, *v) for k, v in sorted(LATER.items())])
def test_a_name_loaded_later_is_the_module_s_own(name: str, module: str, there: str) -> None:
    """The name re-exported is the one its module defines, not a copy."""
    assert getattr(api, name) is getattr(importlib.import_module(module), there)


def test_an_unknown_name_is_an_attribute_error() -> None:
    """The lazy lookup answers only for the names it re-exports."""
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        _ = api.Nothing  # type: ignore[attr-defined]
