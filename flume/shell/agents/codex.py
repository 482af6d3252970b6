"""Codex: its command line, its rollout found, and what its screen says.

Codex is started in the place (``-C``) and chooses its own session id: its rollout
(``$CODEX_HOME/sessions/YYYY/MM/DD/*.jsonl``, ``~/.codex`` without the variable) is found by its
first line's ``session_meta``: begun in the place, since the stage started. It installs no hooks
for flume and keeps no live-session registry: before its first turn, its screen says whether its
folder trust dialog asks a person or its composer waits (reference/codex.md §5). Its lines are
read by :mod:`~flume.shell.agents.codex_lines`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime, timedelta
from pathlib import Path

from flume.core.ids import Instant, SessionId
from flume.core.judging import Said
from flume.core.observations import Activity
from flume.core.place import Place
from flume.shell import environment
from flume.shell.agents import chat, codex_lines
from flume.shell.agents.chat import Chat
from flume.shell.agents.sandbox import (
    Endpoint,
    Home,
    Needs,
    endpoint_of,
    install_of,
    seen_home,
)
from flume.shell.agents.tail import Tail
from flume.shell.agents.turns import Turn
from flume.shell.tools import bubblewrap, locate

#: The variable that names Codex's program in place of ``codex`` on PATH.
VARIABLE = "FLUME_CODEX"
#: Codex's composer prompt, drawn once it takes input (reference/codex.md §5).
COMPOSER = "\u203a"
#: Words of Codex's folder trust dialog ("Trust this folder?"): its default answer, the Enter
#: that follows a paste, trusts the folder for good in the person's config.toml.
TRUST_WORDS = ("Trust this folder?",)
#: A Codex dialog's cursor on a numbered choice ("U+203A 1. Trust and continue"): drawn with
#: the composer's glyph, but no composer.
_CHOICE = re.compile(COMPOSER + r"\s*\d+\. ")
#: Words of the footer Codex draws under its composer once its start is over ("<- for agents ·
#: ? for shortcuts"). Before it, Codex draws its composer with its splash ("? for shortcuts"
#: alone) and only then checks the folder's trust: a composer seen then may yet give way to the
#: trust dialog, whose default answer the Enter after a paste would give (seen with 0.171.0:
#: the dialog drew 0.4 s after the splash's composer).
READY_WORDS = ("for agents",)
#: What a sandboxed Codex reads of its real home, read-only: its settings, login, instructions
#: and rules (and profiles, ``<name>.config.toml``).
KEPT = frozenset(
    {"config.toml", "auth.json", "AGENTS.md", "AGENTS.override.md", "rules", "prompts"}
)
#: Seconds a rollout's own start may read before the stage's (clocks read a moment apart).
_CLOCK_SLACK = 1.0


def home() -> Path:
    """Codex's folder: ``$CODEX_HOME``, or ``~/.codex``."""
    given = os.environ.get("CODEX_HOME")
    return Path(given) if given else Path.home() / ".codex"


def program() -> str:
    """Codex's program: ``$FLUME_CODEX``, else ``codex`` on PATH."""
    return locate.program_named(VARIABLE, "codex")


def missing() -> tuple[str, str] | None:
    """Codex's program, when it is not found here: what is wrong and how to mend it."""
    return locate.missing_named(program(), VARIABLE, "codex")


def command(
    place: Place,
    session: SessionId,  # noqa: ARG001 (Codex chooses its own)
    model: str | None,
    *,
    fenced: bool = False,
) -> list[str]:
    """Codex's command line: started in the place, with the model if named.

    ``fenced``: inside flume's fence, Codex's own sandbox is off (it runs its commands in
    bubblewrap, which cannot start inside another: ``codex sandbox`` in the fence says "bwrap:
    setting up uid map: Operation not permitted"); the fence holds Codex whole.
    """
    # Codex runs commands in a login shell, which resets PATH from /etc/profile and loses
    # flume: the agent could not run flume needs. A later -c overrides this.
    argv = [program(), "-C", place.path, "-c", "allow_login_shell=false"]
    # An agent's tools are an agent's: no MCP server of the caller's (flume's own serves a
    # person's verbs), as Codex's settings name them, in its home or the place's project.
    for name in mcp_servers(home(), Path(place.path)):
        argv += ["-c", f"mcp_servers.{_key(name)}.enabled=false"]
    if place.board:
        # The board is outside the worktree; --add-dir makes it writable (reference/codex.md).
        argv += ["--add-dir", place.board]
    if model:
        argv += ["-m", model]
    if fenced:
        argv += ["-c", 'sandbox_mode="danger-full-access"']
    return argv


def mcp_servers(folder: Path, project: Path) -> list[str]:
    """The MCP servers Codex's settings name: its home's ``config.toml``, the project's own."""
    found: dict[str, None] = {}
    for path in (folder / "config.toml", project / ".codex" / "config.toml"):
        try:
            config = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        servers = config.get("mcp_servers")
        if isinstance(servers, dict):
            found.update(dict.fromkeys(str(name) for name in servers))
    return list(found)


def _key(name: str) -> str:
    """A TOML key for a server's name: bare where it may be, quoted where it must."""
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)


def _kept(name: str) -> bool:
    """Whether a sandboxed Codex reads this entry of its home as it is, read-only."""
    return name in KEPT or name.endswith(".config.toml")


def sandbox_missing() -> tuple[str, str] | None:
    """A sandboxed step's Codex runs inside bubblewrap: missing, when it is."""
    return bubblewrap.missing()


#: The variables Codex reads: its key, its endpoint, its home.
VARIABLES = ("OPENAI_", "CODEX_", "RUST_LOG")
#: Where Codex's model is, with no provider named: OpenAI's API, and ChatGPT's for its login.
DEFAULT_ENDPOINTS = (
    Endpoint(host="api.openai.com", port=443),
    Endpoint(host="chatgpt.com", port=443),
)


def sandbox_needs(session: SessionId, flags: Sequence[str]) -> Needs:  # noqa: ARG001 (none read)
    """Its home as a stand-in (its settings and login read-only), its program, its endpoint.

    Its home (``$CODEX_HOME``) is not its to write: its ``config.toml`` names commands the next
    Codex runs unsandboxed (``notify``, MCP servers), its ``auth.json`` its login. It writes the
    session's stand-in instead (its rollouts, flume reads them there; its databases, history,
    logs), where those are seen read-only from the real home.
    """
    folder = home()
    kept = tuple(sorted(entry.name for entry in _entries(folder) if _kept(entry.name)))
    endpoints, why = endpoints_of(folder, environment.current())
    return Needs(
        homes=(Home(real=folder, kept=kept),),
        reads=tuple(install_of(program())),
        variables=VARIABLES,
        endpoints=endpoints,
        unnamed=why,
    )


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(folder))
    except OSError:
        return []


def endpoints_of(folder: Path, env: Mapping[str, str]) -> tuple[tuple[Endpoint, ...], str]:
    """Where Codex's model is, and why it cannot be named when it cannot ("" else).

    Its provider's ``base_url`` in ``config.toml``; else ``OPENAI_BASE_URL``; else OpenAI's.
    """
    try:
        config = tomllib.loads((folder / "config.toml").read_text(encoding="utf-8"))
    except FileNotFoundError:
        config = {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        return (), f"Codex's config.toml cannot be read ({error})"
    provider = config.get("model_provider", "openai")
    providers = config.get("model_providers", {})
    named = providers.get(provider) if isinstance(providers, dict) else None
    url = named.get("base_url") if isinstance(named, dict) else None
    if url is None and provider == "openai":
        url = env.get("OPENAI_BASE_URL")
        if not url:
            return DEFAULT_ENDPOINTS, ""
    if not isinstance(url, str):
        return (), f"Codex's provider {provider!r} names no base_url flume can read"
    endpoint = endpoint_of(url)
    if endpoint is None:
        return (), f"Codex's provider {provider!r} has base_url {url!r}: no host and port"
    return (endpoint,), ""


def prepare(session: SessionId) -> None:
    """Codex needs nothing written before it starts."""


def registry_home() -> None:
    """Codex keeps no live-session registry flume reads."""


def registry_said(entry: Mapping[str, object]) -> Said | None:  # noqa: ARG001 (no registry)
    """Codex has no registry entry to say anything."""
    return None


def hooks_file(session: str) -> Path | None:  # noqa: ARG001 (no hooks)
    """Flume installs no hooks in Codex: no file."""
    return None


def hooks_said(session: str, offset: int) -> tuple[int, Said | None]:  # noqa: ARG001 (no hooks)
    """Flume installs no hooks in Codex: nothing is read."""
    return offset, None


def screen(capture: Callable[[], str | None]) -> Activity | None:
    """Before its first turn: Codex's trust dialog asks a person; its composer, once started, waits.

    Codex's dialogs mark their chosen line with the composer's glyph: a numbered choice is not
    the composer, and Codex's trust dialog, like Claude Code's, is a person being asked.
    """
    shown = capture() or ""
    if any(words in shown for words in TRUST_WORDS):
        return Activity.ASKING
    if not any(words in shown for words in READY_WORDS):
        return None  # still starting: its trust dialog may yet come
    if any(
        line.lstrip().startswith(COMPOSER) and not _CHOICE.match(line.lstrip())
        for line in shown.splitlines()
    ):
        return Activity.WAITING
    return None


def find_transcript(
    place: Place,
    session: SessionId,
    claimed: AbstractSet[str | None],
) -> str | None:
    """Codex's rollout for the place: the first begun there since the stage started, unclaimed.

    Begun is what its ``session_meta`` says, not when the file last changed: a stopped agent
    writes its own rollout until it is gone, after its retry's stage started.
    """
    folder = seen_home(session, home()) / "sessions"
    started = place.stage.started_at
    days = {
        (datetime.fromtimestamp(started, tz) + timedelta(days=delta)).strftime("%Y/%m/%d")
        for tz in (UTC, None)
        for delta in (-1, 0, 1)
    }
    cwd = os.path.realpath(place.path)
    candidates: list[tuple[float, str]] = []
    for day in days:
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(folder / day):
                stat = entry.stat()
                if entry.name.endswith(".jsonl") and stat.st_mtime >= started - 1:
                    candidates.append((stat.st_mtime, entry.path))
    for _mtime, path in sorted(candidates):
        if path in claimed:
            continue
        with contextlib.suppress(OSError), Path(path).open(encoding="utf-8") as file:
            first = file.readline()
            begun = codex_lines.session_meta_started(first)
            if (
                codex_lines.session_meta_cwd(first) in {cwd, place.path}
                and begun is not None
                and begun >= started - _CLOCK_SLACK
            ):
                return path
    return None


def read_from(
    path: Path, offset: int, *, session: SessionId, at: Instant, turn: Turn | None = None
) -> Tail:
    """Codex's rollout lines appended after byte ``offset``."""
    return codex_lines.read_from(path, offset, session=session, at=at, turn=turn)


def conversation(path: Path) -> Chat:
    """Codex's conversation in its rollout (:mod:`~flume.shell.agents.chat`)."""
    return chat.read_codex(path)
