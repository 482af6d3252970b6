"""Running the real Codex offline, against a :class:`~flume.testing.model.ScriptedModel`.

Three things make the pinned Codex (``scripts/install-agents``) start straight at its composer
with no network and no dialog: a ``CODEX_HOME`` of its own whose ``config.toml`` names the
scripted model as a custom Responses API provider and trusts the working directories
(:func:`seed_home`); an environment pointing Codex at that folder and any stray request at a
closed loopback port (:func:`codex_env`); and a binary (:func:`codex_binary`).

What Codex 0.171.0 was seen to need, and why (each by experiment, reference/codex.md):

- **A custom provider** (``[model_providers.X]`` with ``base_url = "{url}/v1"`` and
  ``wire_api = "responses"``): with no ``env_key`` and no ``requires_openai_auth`` Codex sends
  no key and shows no login screen. The model's name is free; an unknown one only earns a
  "model metadata not found" warning behind ``f2``.
- **Trust** (``[projects."DIR"] trust_level = "trusted"``): without it the TUI opens on "Trust
  this folder?" even with ``--dangerously-bypass-approvals-and-sandbox``, and its default
  answer writes the trust into ``config.toml``. Trusting a repository covers its worktrees.
- **No background server** (``[features] daemon_auto_start = false``): by default the TUI copies
  itself under ``CODEX_HOME/packages`` and starts a shared ``codex app-server`` daemon (and an
  update loop) that outlive its pane. ``--no-daemon`` on the command line does the same.
- **No plugin sync** (``[features] plugins = false``): at start the TUI syncs curated plugins
  from ``api.github.com`` and ``chatgpt.com``. ``check_for_update_on_startup = false`` and
  ``[analytics] enabled = false`` keep the update check and analytics off.
- **A dead proxy** for what no switch stops: the TUI fetches an announcement tip from
  ``raw.githubusercontent.com`` at every start. ``HTTPS_PROXY`` at a closed loopback port, with
  ``NO_PROXY`` for loopback, makes that fail at once without a DNS lookup; the scripted model,
  on loopback, is reached directly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from flume.shell.tools.locate import installed

CODEX_VERSION = "0.171.0"
"""The Codex version flume is tested against (``scripts/install-agents`` installs it)."""

MODEL = "scripted"
"""The model name Codex is given; the scripted model answers any."""

PROVIDER = "flume-scripted"
"""The id of the custom model provider :func:`seed_home` writes."""

CLOSED_PORT = "http://127.0.0.1:9"
"""A loopback address nothing listens on (discard): a request sent there is refused at once."""


def codex_binary() -> Path | None:
    """The Codex to run: ``$FLUME_CODEX``, else the repository's ``.node``, else PATH's."""
    return installed("codex", "FLUME_CODEX")


def _string(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value)


def config_toml(model_url: str, *, trusted: Sequence[Path], model: str = MODEL) -> str:
    """The ``config.toml`` that runs Codex against ``model_url`` offline, trusting ``trusted``."""
    lines = [
        "# Written by flume.testing.codex: Codex offline against a scripted model.",
        f"model = {_string(model)}",
        f"model_provider = {_string(PROVIDER)}",
        "check_for_update_on_startup = false",
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[features]",
        "daemon_auto_start = false",
        "plugins = false",
        "",
        f"[model_providers.{PROVIDER}]",
        'name = "flume scripted model"',
        f"base_url = {_string(model_url.rstrip('/') + '/v1')}",
        'wire_api = "responses"',
    ]
    for directory in trusted:
        lines += ["", f"[projects.{_string(str(directory.resolve()))}]", 'trust_level = "trusted"']
    return "\n".join(lines) + "\n"


def seed_home(
    codex_home: Path, *, model_url: str, trusted: Sequence[Path], model: str = MODEL
) -> Path:
    """Write ``<codex_home>/config.toml`` so Codex starts at its composer; return its path.

    Codex talks to ``model_url`` (a :attr:`ScriptedModel.url`) only, and each ``trusted``
    directory (with its worktrees) skips the trust dialog. A config already there is replaced.
    """
    codex_home.mkdir(parents=True, exist_ok=True)
    path = codex_home / "config.toml"
    path.write_text(config_toml(model_url, trusted=trusted, model=model), encoding="utf-8")
    return path


def codex_env(codex_home: Path, home: Path) -> dict[str, str]:
    """The environment variables that run Codex from ``codex_home`` with ``home`` as HOME, offline.

    Every proxy variable points at :data:`CLOSED_PORT` and ``NO_PROXY`` exempts loopback, so
    a request for anywhere but the scripted model fails at once, without leaving the machine.
    """
    proxies = dict.fromkeys(
        ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy"), CLOSED_PORT
    )
    return {
        "CODEX_HOME": str(codex_home),
        "HOME": str(home),
        **proxies,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
