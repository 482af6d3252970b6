"""Running the real Claude Code offline, against a :class:`~flume.testing.model.ScriptedModel`.

Three things make the pinned Claude Code (``scripts/install-agents``) start straight at its
prompt box with no network: a home of its own whose ``.claude.json`` says onboarding is done,
the API key is approved and the working directories are trusted (:func:`seed_home`); an
environment pointing it at the scripted model and switching off its own traffic
(:func:`claude_env`); and a binary (:func:`claude_binary`). See reference/claude-code.md §8.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from flume.shell.tools.locate import installed

CLAUDE_CODE_VERSION = "2.1.332"
"""The Claude Code version flume is tested against (``scripts/install-agents`` installs it)."""


_KEY_TAIL = 20
"""Claude Code remembers an approved API key by its last 20 characters (a whole key is not
recognised: the approval dialog shows)."""


def claude_binary() -> Path | None:
    """The Claude Code to run: ``$FLUME_CLAUDE``, else the repository's ``.node``, else PATH's."""
    return installed("claude", "FLUME_CLAUDE")


def seed_home(home: Path, *, trusted: Sequence[Path], api_key: str) -> Path:
    """Write ``<home>/.claude.json`` so Claude Code starts at its prompt box; return its path.

    Onboarding is done, the key is approved, and each ``trusted`` directory (and every directory
    below it) skips the trust dialog. Fields already in the file are kept.
    """
    home.mkdir(parents=True, exist_ok=True)
    state_file = home / ".claude.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    state["hasCompletedOnboarding"] = True
    state.setdefault("theme", "dark")
    responses = state.setdefault("customApiKeyResponses", {"approved": [], "rejected": []})
    if api_key[-_KEY_TAIL:] not in responses["approved"]:
        responses["approved"].append(api_key[-_KEY_TAIL:])
    projects = state.setdefault("projects", {})
    for directory in trusted:
        project = projects.setdefault(str(directory.resolve()), {})
        project["hasTrustDialogAccepted"] = True
        project["hasCompletedProjectOnboarding"] = True
    state_file.write_text(json.dumps(state, indent=2))
    return state_file


def claude_env(home: Path, model_url: str, api_key: str) -> dict[str, str]:
    """The environment variables that run Claude Code in ``home`` against ``model_url``, offline.

    Without ``CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL`` a fresh home looks up
    ``github.com`` and ``claude.ai`` at start-up to install the official plugin marketplace.
    """
    return {
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": model_url,
        "ANTHROPIC_API_KEY": api_key,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
    }
