"""Claude Code: its command line, its files, and what its hooks, registry and screen say.

Claude Code gets its session id (``--session-id``), so its transcript's path is known before the
prompt (``HOME/projects/SLUG/SESSION.jsonl``, :func:`transcript_path`), and hooks installed for
the run only (``--settings``), each appending what Claude Code says to a file flume reads
(``hookrecord.py``, :func:`hooks_path`). A sandboxed step's run is held whole in flume's fence
(:func:`sandbox_needs`, :mod:`~flume.shell.agents.sandbox`). Its home is ``$CLAUDE_CONFIG_DIR`` or
``~/.claude``; its live-session registry is ``HOME/sessions/*.json`` (reference/claude-code.md
§1, §4). Before it registers, a workspace trust dialog on its screen is a person being asked
(§5, §8). Its lines are read by :mod:`~flume.shell.agents.claude_lines`. flume's test agent
writes the same files in a home of its own (:mod:`~flume.shell.agents.scripted`), and is read by
what is here.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from flume.core.ids import Instant, SessionId
from flume.core.judging import Said
from flume.core.observations import Activity
from flume.core.place import Place
from flume.shell import environment
from flume.shell.agents import chat, claude_lines
from flume.shell.agents.chat import Chat
from flume.shell.agents.port import agents_dir
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

#: The variable that names Claude Code's program in place of ``claude`` on PATH.
VARIABLE = "FLUME_CLAUDE"
#: The hooks flume installs for a Claude Code run (reference/claude-code.md §4).
HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PermissionRequest",
    "Notification",
    "Stop",
    "StopFailure",
    "SessionEnd",
)
#: Words of Claude Code's workspace trust dialog (reference/claude-code.md §5, §8).
TRUST_WORDS = ("trust the files in this folder", "Do you trust", "trust this folder")
#: Claude Code cuts a project folder's name at this length and adds a hash of its own (§1).
_SLUG_LIMIT = 200
#: The hook recorder, run by Claude Code for each hook call.
_RECORDER = Path(__file__).with_name("hookrecord.py")
#: A sandboxed step's guard on Claude Code's file tools, run before each of their calls.
_FENCE_HOOK = Path(__file__).with_name("fencehook.py")
#: Claude Code's tools that write files from its own process, outside its sandbox's reach.
FILE_TOOLS = "Write|Edit|MultiEdit|NotebookEdit"


def home() -> Path:
    """Claude Code's folder: ``$CLAUDE_CONFIG_DIR``, or ``~/.claude`` (reference §1)."""
    given = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(given) if given else Path.home() / ".claude"


def program() -> str:
    """Claude Code's program: ``$FLUME_CLAUDE``, else ``claude`` on PATH."""
    return locate.program_named(VARIABLE, "claude")


def missing() -> tuple[str, str] | None:
    """Claude Code's program, when it is not found here: what is wrong and how to mend it."""
    return locate.missing_named(program(), VARIABLE, "claude")


def hooks_path(session: str) -> Path:
    """The file a Claude Code session's hooks append to."""
    return agents_dir() / f"{session}.hooks.jsonl"


def hook_settings(session: str, fenced: Sequence[str] = ()) -> str:
    """The ``--settings`` JSON that installs flume's hooks for this run only.

    ``fenced`` (the worktree, then the board): the run is a sandboxed step's, inside flume's
    fence (:mod:`.sandbox`), which
    holds the whole of Claude Code, its file tools as its Bash commands. Claude Code's own
    sandbox is off there (a sandbox of bubblewrap cannot start inside another: a new proc cannot
    be mounted) and its Bash commands run without asking, as its own sandbox let them; a guard
    still refuses its file tools' writes to the worktree's ``.git``, ``.claude/`` and
    ``.mcp.json`` (what a later, unsandboxed Claude Code there would run).
    """
    command = shlex.join([sys.executable, "-I", str(_RECORDER), str(hooks_path(session))])
    handler = {"type": "command", "command": command, "timeout": 10}
    hooks: dict[str, list[dict[str, object]]] = {
        event: [{"hooks": [handler]}] for event in HOOK_EVENTS
    }
    settings: dict[str, object] = {"hooks": hooks}
    if fenced:
        guard = shlex.join([sys.executable, "-I", str(_FENCE_HOOK), *fenced])
        guarding = {"type": "command", "command": guard, "timeout": 10}
        hooks["PreToolUse"].append({"matcher": FILE_TOOLS, "hooks": [guarding]})
        settings["sandbox"] = {"enabled": False}
        settings["permissions"] = {"allow": ["Bash"]}
    return json.dumps(settings, separators=(",", ":"))


#: An agent's tools are an agent's: a Claude Code flume starts loads no MCP server of the
#: caller's (the user's, the project's, a plugin's: flume's own plugin serves a person's verbs,
#: approve, drop, raise), only those its launch's flags name (``--mcp-config``).
NO_CALLERS_TOOLS = ("--strict-mcp-config", "--mcp-config", '{"mcpServers":{}}')


def sandbox_missing() -> tuple[str, str] | None:
    """A sandboxed step's Claude Code runs inside bubblewrap: missing, when it is."""
    return bubblewrap.missing()


#: What a fenced Claude Code reads of its folder, read-only: its settings, instructions, login,
#: its own agents, commands, skills and output styles. Its plugins are not: a plugin's MCP
#: server is the caller's tools (flume's own among them), never a sandboxed step's.
KEPT = (
    "settings.json",
    "CLAUDE.md",
    ".credentials.json",
    "agents",
    "commands",
    "skills",
    "output-styles",
    "keybindings.json",
)
#: The variables Claude Code reads: its key, its endpoint, its settings.
VARIABLES = ("ANTHROPIC_", "CLAUDE_", "DISABLE_", "MCP_", "BASH_", "MAX_THINKING_TOKENS")
#: The endpoint of Anthropic's API, where no ``ANTHROPIC_BASE_URL`` names another.
API = Endpoint(host="api.anthropic.com", port=443)
#: Where Claude Code's model is not Anthropic's API, which flume cannot name a host of.
_UNNAMED = ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")


def sandbox_needs(session: SessionId, flags: Sequence[str]) -> Needs:  # noqa: ARG001 (none read)
    """Its folder and ``.claude.json`` as the session's own, its program, its hook file, its API.

    Its folder (``$CLAUDE_CONFIG_DIR``, ``~/.claude``) is a stand-in where it writes its
    transcripts and registry (flume reads them there), its settings seen read-only through it;
    ``.claude.json`` (its state: onboarding, trust, approved keys) is the session's own copy.
    """
    env = environment.current()
    folder = home()
    state = folder if env.get("CLAUDE_CONFIG_DIR") else Path(env.get("HOME") or Path.home())
    unnamed = [name for name in _UNNAMED if env.get(name) not in {None, "", "0", "false"}]
    given = env.get("ANTHROPIC_BASE_URL")
    endpoint = endpoint_of(given) if given else API
    why = ""
    if unnamed:
        why = f"{unnamed[0]} is set: Claude Code's model is not at a host flume can name"
    elif endpoint is None:
        why = f"ANTHROPIC_BASE_URL ({env.get('ANTHROPIC_BASE_URL')}) names no host and port"
    return Needs(
        homes=(Home(real=folder, kept=KEPT), Home(real=state, copied=(".claude.json",))),
        reads=tuple(install_of(program())),
        writes=(hooks_path(session),),
        variables=VARIABLES,
        endpoints=(endpoint,) if endpoint is not None else (),
        unnamed=why,
    )


def command(
    place: Place, session: SessionId, model: str | None, *, fenced: bool = False
) -> list[str]:
    """Claude Code's command line: its session id, flume's hooks, the place's board, the model.

    The board (``<repository>/places/.boards/<place>``) is outside the worktree, so it is
    named with ``--add-dir`` (reference/claude-code.md §3): a step writes its verdict there.
    ``fenced``: a sandboxed step's (:func:`hook_settings`).
    """
    allowed = [place.path, place.board] if place.board else [place.path]
    settings = hook_settings(session, allowed if fenced else ())
    argv = [program(), "--session-id", session, "--settings", settings, *NO_CALLERS_TOOLS]
    if place.board:
        argv += ["--add-dir", place.board]
    if model:
        argv += ["--model", model]
    return argv


def prepare(session: SessionId) -> None:
    """The hook file, there before the first hook call appends to it."""
    agents_dir().mkdir(parents=True, exist_ok=True)
    hooks_path(session).touch()


def registry_home() -> Path:
    """Claude Code's home holds its live-session registry (``sessions/``)."""
    return home()


def project_slug(cwd: str) -> str:
    """Claude Code's folder name for a working directory: every non-alphanumeric is ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def transcript_path(cwd: str, session: str, folder: Path | None = None) -> Path:
    """Where Claude Code writes the session's transcript: in its home, or in ``folder``.

    ``folder`` is laid out as Claude Code lays out its home (the test agent's is).
    """
    return (folder or home()) / "projects" / project_slug(cwd) / f"{session}.jsonl"


def find_in(folder: Path, place: Place, session: str) -> str | None:
    """Where the session's transcript is in ``folder``: by the slug rule, or found by its name.

    A working directory whose slug is longer than Claude Code's limit gets a hashed folder name
    flume does not recompute: the file is looked for by its session id, until it exists.
    """
    cwd = os.path.realpath(place.path)
    if len(project_slug(cwd)) <= _SLUG_LIMIT:
        return str(transcript_path(cwd, session, folder))
    found = sorted(folder.glob(f"projects/*/{session}.jsonl"))
    return str(found[0]) if found else None


def find_transcript(
    place: Place,
    session: SessionId,
    claimed: AbstractSet[str | None],  # noqa: ARG001 (its session id names it)
) -> str | None:
    """The session's transcript in Claude Code's home (its stand-in, when it was fenced)."""
    return find_in(seen_home(session, home()), place, session)


def read_from(
    path: Path, offset: int, *, session: SessionId, at: Instant, turn: Turn | None = None
) -> Tail:
    """Claude Code's transcript lines appended after byte ``offset``."""
    return claude_lines.read_from(path, offset, session=session, at=at, turn=turn)


def hook_activity(record: dict[str, Any]) -> Activity | None:
    """What one hook call says the main agent is doing; None when it says nothing of it."""
    if record.get("agent_id"):
        return None  # a subagent spoke, not the agent flume follows
    event = record.get("hook_event_name")
    tool = record.get("tool_name")
    if event == "PreToolUse" and tool == "AskUserQuestion":
        return Activity.ASKING
    if event == "PermissionRequest":
        return Activity.ASKING
    if event == "Notification":
        kind = record.get("notification_type")
        if kind in {"elicitation_dialog", "agent_needs_input"}:
            return Activity.ASKING
        return Activity.WAITING if kind == "idle_prompt" else None
    return {
        "UserPromptSubmit": Activity.WORKING,
        "PreToolUse": Activity.WORKING,
        "PostToolUse": Activity.WORKING,
        "Stop": Activity.WAITING,
        "StopFailure": Activity.WAITING,
        "SessionEnd": Activity.STOPPED,
    }.get(str(event))


def hooks_file(session: str) -> Path | None:
    """The file the session's hooks append to (:func:`hooks_path`)."""
    return hooks_path(session)


def hooks_said(session: str, offset: int) -> tuple[int, Said | None]:
    """The hook calls recorded after ``offset`` (whole lines only), and the last that spoke."""
    path = hooks_path(session)
    try:
        if path.stat().st_size <= offset:
            return offset, None
        with path.open("rb") as file:
            file.seek(offset)
            data = file.read()
    except FileNotFoundError:
        return offset, None
    end = data.rfind(b"\n") + 1
    said: Said | None = None
    for line in data[:end].splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            activity = hook_activity(record) if isinstance(record, dict) else None
            if activity is not None:
                said = Said(activity=activity, at=float(record.get("at", 0.0)))
    return offset + end, said


def registry_status(entry: Mapping[str, object]) -> tuple[str, str]:
    """A live-session registry entry's ``status`` and ``waitingFor`` (reference §1)."""
    status = entry.get("status")
    waiting = entry.get("waitingFor")
    return (status if isinstance(status, str) else "", waiting if isinstance(waiting, str) else "")


def registry_activity(entry: Mapping[str, object]) -> Activity | None:
    """What a live-session registry entry says the agent is doing."""
    status, _waiting_for = registry_status(entry)
    return {
        "idle": Activity.WAITING,
        "busy": Activity.WORKING,
        "waiting": Activity.ASKING,
    }.get(status)


def registry_said(entry: Mapping[str, object]) -> Said | None:
    """What a live-session registry entry says the agent does, and when; None if nothing."""
    activity = registry_activity(entry)
    if activity is None:
        return None
    stamp = entry.get("statusUpdatedAt") or entry.get("updatedAt") or 0
    return Said(
        activity=activity, at=float(stamp) / 1000 if isinstance(stamp, int | float) else 0.0
    )


def screen(capture: Callable[[], str | None]) -> Activity | None:
    """Before Claude Code registers: its workspace trust dialog asks a person."""
    shown = capture() or ""
    return Activity.ASKING if any(words in shown for words in TRUST_WORDS) else None


def conversation(path: Path) -> Chat:
    """Claude Code's conversation in its transcript (:mod:`~flume.shell.agents.chat`)."""
    return chat.read_claude(path)
