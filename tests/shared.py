"""What some tests need from outside the repository, and what they do without it.

Two things flume's tests use are others' files, kept out of the repository: real Claude Code
transcripts (the corpus, ``shared/corpus/claude-code/``) and the schema herdr publishes
(``shared/reference/herdr-api.schema.json``), read from a ``shared/`` folder laid beside the clone
(or where ``FLUME_SHARED`` says). The pinned real agents (Claude Code, Codex, OpenSpec) are
installed into ``.node/`` by scripts/install-agents, which needs npm. Sandboxed steps need
Debian's ``bubblewrap``, which scripts/test installs where it runs as root.

Without them, the tests that need them are skipped, each with one line naming what is missing.
Where a run promises them, it says so, and then a missing one is a failure: ``.ci/run`` exports
``FLUME_REQUIRE_SHARED=1`` (CI lays ``shared/`` beside the clone), and scripts/test exports
``FLUME_REQUIRE_AGENTS=1`` once it has installed the agents itself, and
``FLUME_REQUIRE_SANDBOX=1`` once bubblewrap is there. ``CI`` alone requires
neither: a contributor's clone run by any CI service has no ``shared/``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

#: The clone's root.
ROOT = Path(__file__).resolve().parents[1]
#: Where the others' files are: ``shared/`` beside the clone, or ``$FLUME_SHARED``.
SHARED = Path(os.environ.get("FLUME_SHARED") or ROOT.parent / "shared")
CORPUS = SHARED / "corpus" / "claude-code"
#: Set to 1 where the run promises ``shared/`` (.ci/run).
REQUIRE_SHARED = "FLUME_REQUIRE_SHARED"
#: Set to 1 where the run installed the pinned agents (scripts/test).
REQUIRE_AGENTS = "FLUME_REQUIRE_AGENTS"
#: Set to 1 where the run installed bubblewrap, which sandboxed steps need (scripts/test).
REQUIRE_SANDBOX = "FLUME_REQUIRE_SANDBOX"


def required(variable: str) -> bool:
    """The run promises what ``variable`` stands for."""
    return os.environ.get(variable) == "1"


def lacking(what: str, variable: str) -> NoReturn:
    """A test cannot run without ``what``: a failure where ``variable`` requires it, else a skip."""
    if required(variable):
        pytest.fail(f"{what} ({variable}=1 requires it)")
    pytest.skip(what)


def corpus() -> Path:
    """The corpus of real Claude Code transcripts; a skip (or failure, if required) without it."""
    if CORPUS.is_dir():
        return CORPUS
    lacking(
        f"NOT TESTED ON REAL TRANSCRIPTS: no corpus at {CORPUS} "
        "(lay shared/ beside the clone, or set FLUME_SHARED)",
        REQUIRE_SHARED,
    )


def sandbox_programs() -> None:
    """What sandboxed steps need is here (bwrap); else a skip, or a failure if required."""
    if shutil.which("bwrap") is None:
        lacking(
            "NOT TESTED IN A SANDBOX: bwrap not installed (apt-get install bubblewrap)",
            REQUIRE_SANDBOX,
        )
