"""The test agent: ``python -m flume.testing.agent``, a scripted stand-in for Claude Code's TUI.

Theory of operation. flume watches an agent in three places: the pane's screen, the agent's
transcript and its live-session registry entry (reference/claude-code.md §1, §2). This program
behaves like Claude Code in all three and nowhere else, fast and by a script, so that flume's
tests and demo can run real panes without a model:

- the terminal: stdin in raw mode, bracketed paste on, a screen with a banner, the conversation
  and the composer (``\u276f <text>``), redrawn after every input; a paste is inserted literally, CR
  outside a paste submits, Ctrl-C or Ctrl-D ends it. Keys that arrive before it is ready
  (``ready_after``) are read and dropped, as the real TUI drops early keys (§5);
- the transcript ``<home>/projects/<slug>/<session>.jsonl``, made on the first recorded
  prompt, one JSON object a line in Claude Code's shapes (user prompts as strings, one assistant
  line per content block, each repeating its message's usage, tool results as lists,
  ``turn_duration`` at a turn's end);
- the registry ``<home>/sessions/<pid>.json``, written whole (temporary file, then rename) on
  each change of ``status``: ``busy`` while starting and during a turn, ``idle`` when ready
  and waiting, ``waiting`` with ``waitingFor: "input needed"`` while it asks a person.

The script (TOML; see :func:`parse_script`) says which inputs are lost, how long start-up takes,
and what each turn does: say, work, write a file, commit, run a command, ask, exit. Input
submitted during a turn is queued and taken after it, as Claude Code queues it; the next input
submitted while it asks is the answer. One thread reads the terminal, one runs turns; they share
the state under one lock.

Usage: ``python -m flume.testing.agent [--session-id UUID] [--script FILE] [--home DIR]
[--add-dir DIR] [PROMPT]``; the script may instead be named by ``$FLUME_TEST_AGENT_SCRIPT``,
and without one the defaults hold (nothing lost, ready after 0.5 s, every prompt answered
"ok"). PROMPT is submitted once ready, as ``claude "PROMPT"`` does, and counts as the first
submitted input, so ``lose = 1`` loses it. ``--add-dir`` names the folder ``$board/`` write paths
are in. Its files go in Claude Code's layout under ``--home``, or else in flume's own state
folder (``$XDG_STATE_HOME/flume/test-agent``, which flume passes as ``--home`` too): never under
a real agent's home (``~/.claude``, ``$CLAUDE_CONFIG_DIR``), so a stand-in leaves nothing among
a person's real sessions. A turn whose last step is a tool call ends with the text "Done." (a
model always answers a tool result). Exit status: 0 on Ctrl-C, Ctrl-D or the terminal's end, an
``exit`` step's own, 1 for a bad or used session id, 2 for a script it cannot follow.
"""

from __future__ import annotations

import argparse
import codecs
import collections
import contextlib
import datetime as dt
import enum
import functools
import json
import os
import re
import select
import shlex
import signal
import subprocess
import sys
import termios
import threading
import time
import tomllib
import tty
import unicodedata
import uuid
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, Literal, assert_never

import attrs

#: What the agent calls itself: the registry's and the transcript's ``version``.
VERSION = "flume-test-agent"
#: The model named in assistant lines.
MODEL = "flume-test-agent"
#: The environment variable naming the script when ``--script`` is not given.
SCRIPT_VARIABLE = "FLUME_TEST_AGENT_SCRIPT"
#: How long a slug may be before Claude Code cuts it and appends a hash (§1).
MAX_SLUG = 200
#: How often the spinner turns while a turn runs: the pane shows output while working.
SPIN_SECONDS = 0.25
#: The composer's mark, as Claude Code draws it.
PROMPT_MARK = "\u276f"
#: How long a cut escape sequence waits for the rest before it is a lone Escape key.
ESCAPE_SECONDS = 0.05
_SPINNER = "·✢✳✶✻✽"
_PASTE_START = b"\x1b[200~"
_PASTE_END = b"\x1b[201~"
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
#: The longest escape sequence read as one key; a longer one is dropped piecemeal.
_MAX_ESCAPE = 64


# --- the script ----------------------------------------------------------------------------


class ScriptError(ValueError):
    """A script the agent cannot follow; the message says where and why."""


@attrs.frozen
class Say:
    """Write an assistant text line."""

    text: str


@attrs.frozen
class Work:
    """Stay busy this long, writing nothing."""

    seconds: float


#: A write path starting with this is in the folder ``--add-dir`` names (the place's board).
BOARD_PREFIX = "$board/"


@attrs.frozen
class Write:
    """Write a file in the working directory (a ``Write`` tool call).

    A path starting with ``$board/`` is in the folder ``--add-dir`` names instead, as Claude
    Code writes in a folder added to its own: flume's board, where a step writes its verdict.
    """

    path: str
    text: str


@attrs.frozen
class Commit:
    """``git add -A && git commit -m MESSAGE`` in the working directory (a ``Bash`` tool call)."""

    message: str


@attrs.frozen
class Run:
    """Run a command, an argv without a shell, in the working directory (a ``Bash`` tool call)."""

    argv: tuple[str, ...]


@attrs.frozen
class Ask:
    """Ask a person (an ``AskUserQuestion`` tool call); the next submitted input answers."""

    question: str


@attrs.frozen
class Exit:
    """End the process with this status."""

    status: int


Step = Say | Work | Write | Commit | Run | Ask | Exit
"""One thing a turn does."""


@attrs.frozen(kw_only=True)
class Turn:
    """What the agent does for one recorded prompt."""

    #: Answer the first prompt holding this text instead of going by order.
    match: str | None = None
    steps: tuple[Step, ...] = ()


#: The turn for a recorded prompt when the script has none left.
DEFAULT_TURN = Turn(steps=(Say("ok"),))
#: How a recorded prompt's turn is chosen (:meth:`Agent._turn_for` does it), in words.
TURN_CHOICE = (
    "Each prompt the agent records is answered by one turn, taken from the script's turns not "
    "yet used: the first whose match the prompt holds; else the first without a match; with "
    'none left, it says "ok". A turn answers one prompt, once. A prompt the agent loses (lose) '
    "is never answered."
)


@attrs.frozen(kw_only=True)
class Script:
    """How the agent behaves: its losses, its start-up time, and its turns."""

    #: The first this many submitted inputs are lost; ``"all"``: every one.
    lose: int | Literal["all"] = 0
    #: Seconds from start before input is taken; earlier keys are dropped.
    ready_after: float = 0.5
    #: ``False``: no prompt is ever recorded or answered.
    record: bool = True
    #: A file every submitted input is appended to (one JSON string a line), lost ones too.
    inputs: str | None = None
    turns: tuple[Turn, ...] = ()


@attrs.frozen(kw_only=True)
class ScriptKey:
    """One key of a script, or one kind of step: its type, its default and its meaning.

    :func:`parse_script` takes the keys from these lists, and the manual's reference page on the
    script's format is drawn from them.
    """

    name: str
    type: str
    #: The default in words; None: required.
    default: str | None
    meaning: str


#: Where a relative path of the script is read: the agent's working directory. flume starts it
#: in the place's worktree, so a script committed in the repository is found there by its path
#: (``--agent-arg=--script --agent-arg=agent.toml``), in every place cut from it.
RELATIVE_PATHS = (
    "A relative path (the script's own, given to --script, and a write's, an inputs file's) is "
    "taken from the agent's working directory: flume starts it in the place's worktree, so a "
    "script committed in the repository is found there by its path, in every place cut from "
    "it. A write path starting with $board/ is in the folder --add-dir names instead: flume "
    "adds the place's board, where a step writes its verdict and handoff."
)

#: The script's top-level keys.
SCRIPT_KEYS = (
    ScriptKey(
        name="lose",
        type='a whole number of at least 0, or "all"',
        default="0",
        meaning="How many submitted inputs are lost, never recorded or answered, as the real "
        "Claude Code can lose its first: flume finds a lost prompt missing and sends it again.",
    ),
    ScriptKey(
        name="ready_after",
        type="seconds",
        default="0.5",
        meaning="How long after it starts it takes input; keys typed before are dropped.",
    ),
    ScriptKey(
        name="record",
        type="true or false",
        default="true",
        meaning="false: no prompt is ever recorded in its transcript, or answered.",
    ),
    ScriptKey(
        name="inputs",
        type="a file's path",
        default="none",
        meaning="A file every submitted input is appended to, one JSON string a line, lost "
        "ones too.",
    ),
    ScriptKey(
        name="turn",
        type="[[turn]] tables",
        default='none: every prompt is answered "ok"',
        meaning="What it does for each prompt it records, one table a turn.",
    ),
)

#: A turn's keys.
TURN_KEYS = (
    ScriptKey(
        name="match",
        type="text",
        default="none: the turn answers prompts in order",
        meaning="The turn answers the first prompt that holds this text. flume ends every "
        "prompt with its marker, `[flume:<place>:<key>:<attempt>]`, so `:code:1]` picks the "
        "first attempt of stage code, `:review-loop@2/review:1]` a loop's second pass; words "
        "of a tell or of flume's own message (an answer, a gate's reason) pick those.",
    ),
    ScriptKey(
        name="steps",
        type="a list of one-key tables (below)",
        default="[]",
        meaning="What the turn does, in order; a turn whose last step is a tool call ends "
        'saying "Done."',
    ),
)

#: The kinds of step a turn takes, each a table of one key.
STEP_KINDS = (
    ScriptKey(
        name="say",
        type="text",
        default=None,
        meaning="Write an assistant text line.",
    ),
    ScriptKey(
        name="work",
        type="seconds",
        default=None,
        meaning="Stay busy this long, writing nothing (flume sees the agent working).",
    ),
    ScriptKey(
        name="write",
        type="{ path = ..., text = ... }",
        default=None,
        meaning="Write a file (a Write tool call): a relative path, or $board/... on the board.",
    ),
    ScriptKey(
        name="commit",
        type="text: the message",
        default=None,
        meaning="`git add -A` and `git commit -m MESSAGE` in the working directory (a Bash "
        "tool call).",
    ),
    ScriptKey(
        name="run",
        type="a list of strings: a program and its arguments",
        default=None,
        meaning="Run a command, no shell, in the working directory (a Bash tool call): "
        '`["flume", "submit"]`, `["flume", "needs", "..."]`, `["flume", "spawn", "--goal", '
        '"..."]`.',
    ),
    ScriptKey(
        name="ask",
        type="text: the question",
        default=None,
        meaning="Ask a person (an AskUserQuestion tool call): flume shows the agent asking; "
        "the next input submitted answers it.",
    ),
    ScriptKey(
        name="exit",
        type="a whole number from 0 to 255",
        default=None,
        meaning="End the process with this status.",
    ),
)


def _is_number(value: object) -> bool:
    """``value`` is an int or float and not a bool (TOML's ``true`` is no number)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_script(text: str) -> Script:
    """The script in TOML ``text``; :class:`ScriptError` says what is wrong with a bad one.

    Top-level keys: ``lose`` (a whole number or ``"all"``, default 0), ``ready_after`` (seconds,
    default 0.5), ``record`` (default true), ``inputs`` (a file to log every submitted input
    to), and ``[[turn]]`` tables, each with an optional
    ``match`` and a list ``steps`` of one-key tables: ``say``, ``work``, ``write`` (``path``,
    ``text``; a relative path, or ``$board/...`` for the ``--add-dir`` folder), ``commit``,
    ``run`` (an argv), ``ask`` and ``exit``.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ScriptError(f"not TOML: {error}") from error
    known = [key.name for key in SCRIPT_KEYS]
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ScriptError(f"unknown keys {unknown}: use {', '.join(known)}")
    lose = data.get("lose", 0)
    if lose != "all" and not (isinstance(lose, int) and not isinstance(lose, bool) and lose >= 0):
        raise ScriptError(f'lose must be a whole number >= 0 or "all", not {lose!r}')
    ready_after = data.get("ready_after", 0.5)
    if not _is_number(ready_after) or ready_after < 0:
        raise ScriptError(f"ready_after must be a number of seconds >= 0, not {ready_after!r}")
    record = data.get("record", True)
    if not isinstance(record, bool):
        raise ScriptError(f"record must be true or false, not {record!r}")
    inputs = data.get("inputs")
    if inputs is not None and not (isinstance(inputs, str) and inputs):
        raise ScriptError(f"inputs must be the path of a file, not {inputs!r}")
    turns = data.get("turn", [])
    if not isinstance(turns, list):
        raise ScriptError("turn must be an array of tables: [[turn]]")
    return Script(
        lose=lose,
        ready_after=float(ready_after),
        record=record,
        inputs=inputs,
        turns=tuple(_turn(each, number) for number, each in enumerate(turns, 1)),
    )


def _turn(data: object, number: int) -> Turn:
    """Turn ``number`` of the script."""
    if not isinstance(data, dict):
        raise ScriptError(f"turn {number} must be a table")
    known = [key.name for key in TURN_KEYS]
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ScriptError(f"turn {number}: unknown keys {unknown}: use {', '.join(known)}")
    match = data.get("match")
    if match is not None and not isinstance(match, str):
        raise ScriptError(f"turn {number}: match must be a string")
    steps = data.get("steps", [])
    if not isinstance(steps, list):
        raise ScriptError(f"turn {number}: steps must be an array")
    return Turn(
        match=match,
        steps=tuple(_step(step, f"turn {number} step {k}") for k, step in enumerate(steps, 1)),
    )


def _step(data: object, where: str) -> Step:  # noqa: PLR0911 (one arm per kind of step)
    """One step of a turn; ``where`` names it in errors."""
    if not isinstance(data, dict) or len(data) != 1:
        kinds = ", ".join(kind.name for kind in STEP_KINDS)
        raise ScriptError(f"{where}: a step is a table of one key: {kinds}")
    ((key, value),) = data.items()
    match key:
        case "say" if isinstance(value, str):
            return Say(value)
        case "work" if _is_number(value) and value >= 0:
            return Work(float(value))
        case "write" if (
            isinstance(value, dict)
            and set(value) == {"path", "text"}
            and isinstance(value["path"], str)
            and isinstance(value["text"], str)
            and value["path"]
            and not Path(value["path"]).is_absolute()
        ):
            return Write(value["path"], value["text"])
        case "commit" if isinstance(value, str) and value:
            return Commit(value)
        case "run" if isinstance(value, list) and value and all(isinstance(p, str) for p in value):
            return Run(tuple(value))
        case "ask" if isinstance(value, str):
            return Ask(value)
        case "exit" if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 256:
            return Exit(value)
    names = [kind.name for kind in STEP_KINDS]
    if key not in names:
        raise ScriptError(f"{where}: no step is called {key!r}; a step is {', '.join(names)}")
    raise ScriptError(f"{where}: cannot follow {key} = {value!r}")


# --- the files Claude Code keeps -----------------------------------------------------------


def default_home() -> Path:
    """Where the agent keeps its files without ``--home``: in flume's own state folder.

    ``$XDG_STATE_HOME/flume/test-agent`` (``~/.local/state`` without the variable), as
    :func:`flume.shell.store.places.state_dir` names flume's state folder; flume passes the same
    folder as ``--home`` (:func:`flume.shell.agents.scripted.home`).
    """
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "flume" / "test-agent"


def slug(cwd: str) -> str:
    """The project folder's name for ``cwd``: every character not ``[A-Za-z0-9]`` becomes ``-``.

    A slug over 200 characters is cut and gets ``-<hash>``; Claude Code's hash is not
    documented, so this one (a 32-bit string hash in base 36) is this agent's own (§1).
    """
    made = re.sub(r"[^A-Za-z0-9]", "-", cwd)
    if len(made) <= MAX_SLUG:
        return made
    value = 0
    for char in cwd:
        value = (value * 31 + ord(char)) & 0xFFFFFFFF
    digits, out = "0123456789abcdefghijklmnopqrstuvwxyz", ""
    while True:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
        if not value:
            break
    return f"{made[:MAX_SLUG]}-{out}"


def transcript_path(root: Path, cwd: str, session_id: str) -> Path:
    """Where the transcript of ``session_id`` started in ``cwd`` lives under ``root``."""
    return root / "projects" / slug(cwd) / f"{session_id}.jsonl"


def _now_iso() -> str:
    """Now, as Claude Code stamps lines: ISO-8601 UTC with milliseconds and ``Z``."""
    now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    return now.replace("+00:00", "Z")


def _now_ms() -> int:
    """Now, in milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class Transcript:
    """The session's transcript: made on the first line, each line appended whole."""

    def __init__(self, path: Path, *, session_id: str, cwd: str) -> None:
        self.path = path
        self._session_id = session_id
        self._cwd = cwd
        self._fd: int | None = None
        self._parent: str | None = None

    def append(self, fields: dict[str, object]) -> str:
        """Append one line of ``fields`` and the common ones, chained to the last; its uuid."""
        line_id = str(uuid.uuid4())
        line: dict[str, object] = {
            "parentUuid": self._parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self._cwd,
            "sessionId": self._session_id,
            "version": VERSION,
            "entrypoint": "cli",
            **fields,
            "uuid": line_id,
            "timestamp": _now_iso(),
        }
        data = (json.dumps(line, ensure_ascii=False) + "\n").encode()
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        _write_all(self._fd, data)
        self._parent = line_id
        return line_id


class Registry:
    """The live-session entry ``sessions/<pid>.json``: rewritten whole, removed at exit."""

    def __init__(self, root: Path, *, session_id: str, cwd: str) -> None:
        self.pid = os.getpid()
        self.path = root / "sessions" / f"{self.pid}.json"
        self._fixed: dict[str, object] = {
            "pid": self.pid,
            "sessionId": session_id,
            "cwd": cwd,
            "startedAt": _now_ms(),
            "version": VERSION,
            "kind": "interactive",
            "entrypoint": "cli",
        }

    def write(self, status: str, waiting_for: str | None) -> None:
        """Say ``status`` (and what it waits for): a temporary file renamed over the entry."""
        now = _now_ms()
        entry = {
            **self._fixed,
            "status": status,
            "waitingFor": waiting_for,
            "updatedAt": now,
            "statusUpdatedAt": now,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}.tmp")
        temporary.write_text(json.dumps(entry) + "\n", encoding="utf-8")
        temporary.replace(self.path)

    def remove(self) -> None:
        """Remove the entry: the session is over."""
        self.path.unlink(missing_ok=True)


# --- the keyboard --------------------------------------------------------------------------


class Key(enum.Enum):
    """A key that is not text."""

    SUBMIT = "submit"  #: CR outside a paste
    ERASE = "erase"  #: backspace
    QUIT = "quit"  #: Ctrl-C or Ctrl-D


def _partial_suffix(data: bytes, marker: bytes) -> int:
    """How many bytes at the end of ``data`` could begin ``marker``."""
    for size in range(min(len(marker) - 1, len(data)), 0, -1):
        if marker.startswith(data[-size:]):
            return size
    return 0


def _escape_length(data: bytes, start: int) -> int | None:  # noqa: PLR0911 (one arm a kind)
    """The length of the escape sequence at ``start``; None while it may be incomplete."""
    if start + 1 >= len(data):
        return None
    kind = data[start + 1]
    if kind == ord("["):  # CSI: parameters, then a final byte in 0x40-0x7e
        for index in range(start + 2, min(len(data), start + _MAX_ESCAPE)):
            if 0x40 <= data[index] <= 0x7E:
                return index - start + 1
        return None if len(data) - start < _MAX_ESCAPE else 2
    if kind == ord("]"):  # OSC: up to BEL or ESC backslash
        for index in range(start + 2, min(len(data), start + _MAX_ESCAPE)):
            if data[index] == 0x07:
                return index - start + 1
            if data[index : index + 2] == b"\x1b\\":
                return index - start + 2
        return None if len(data) - start < _MAX_ESCAPE else 2
    if kind == ord("O"):  # SS3: one more byte
        return 3 if start + 2 < len(data) else None
    return 2  # Alt plus a key, or Escape twice


class Keys:
    """Turns the bytes read from the terminal into text and keys, across reads."""

    def __init__(self) -> None:
        self._pending = b""
        self._pasting = False
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    @property
    def is_waiting(self) -> bool:
        """An escape sequence outside a paste is cut short: more bytes should follow soon."""
        return bool(self._pending) and not self._pasting

    def expire(self) -> None:
        """No more bytes came: the cut sequence was a key of its own (Escape), doing nothing."""
        if not self._pasting:
            self._pending = b""

    def reset(self) -> None:
        """Forget a half-read sequence or paste: the bytes so far were dropped."""
        self._pending, self._pasting = b"", False
        self._decoder.reset()

    def feed(self, data: bytes) -> list[str | Key]:  # noqa: C901 (one arm per kind of byte)
        """The text and keys in ``data``; a sequence cut by the read's end waits for the next."""
        buffer, self._pending = self._pending + data, b""
        found: list[str | Key] = []
        text = bytearray()

        def flush() -> None:
            decoded = self._decoder.decode(bytes(text))
            text.clear()
            if decoded:
                found.append(decoded)

        index = 0
        while index < len(buffer):
            if self._pasting:
                end = buffer.find(_PASTE_END, index)
                if end < 0:
                    keep = _partial_suffix(buffer[index:], _PASTE_END)
                    text += buffer[index : len(buffer) - keep]
                    self._pending = buffer[len(buffer) - keep :]
                    break
                text += buffer[index:end]
                index, self._pasting = end + len(_PASTE_END), False
                continue
            byte = buffer[index]
            if byte == 0x1B:
                length = _escape_length(buffer, index)
                if length is None:
                    self._pending = buffer[index:]
                    break
                if buffer[index : index + length] == _PASTE_START:
                    self._pasting = True
                index += length
                continue
            if byte == 0x0D:
                flush()
                found.append(Key.SUBMIT)
            elif byte in {0x7F, 0x08}:
                flush()
                found.append(Key.ERASE)
            elif byte in {0x03, 0x04}:
                flush()
                found.append(Key.QUIT)
            elif byte >= 0x20 or byte in {0x09, 0x0A}:
                text.append(byte)
            index += 1
        flush()
        return found


# --- the screen ----------------------------------------------------------------------------


def _cell_width(char: str) -> int:
    """How many terminal cells ``char`` takes."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in {"W", "F"} else 1


def _printable(text: str) -> str:
    """``text`` with control characters shown as spaces, so it cannot move the cursor."""
    return "".join(" " if ord(char) < 0x20 or ord(char) == 0x7F else char for char in text)


def _fit(text: str, columns: int) -> str:
    """``text`` cut to fit ``columns`` cells."""
    used, out = 0, []
    for char in _printable(text):
        width = _cell_width(char)
        if used + width > columns:
            break
        used += width
        out.append(char)
    return "".join(out)


def _wrap(text: str, columns: int) -> list[str]:
    """``text`` as rows of at most ``columns`` cells (at least one row)."""
    rows: list[str] = []
    row: list[str] = []
    used = 0
    for char in _printable(text):
        width = _cell_width(char)
        if used + width > columns and row:
            rows.append("".join(row))
            row, used = [], 0
        row.append(char)
        used += width
    rows.append("".join(row))
    return rows


class Terminal:
    """The controlling terminal: raw mode and bracketed paste while the agent runs."""

    def __init__(self, fd_in: int = 0, fd_out: int = 1) -> None:
        self.fd_in = fd_in
        self.fd_out = fd_out
        self._saved: list[Any] | None = None

    def enter(self) -> None:
        """Raw mode (discarding what was typed before: early keys are lost), bracketed paste."""
        with contextlib.suppress(termios.error):
            self._saved = termios.tcgetattr(self.fd_in)
            tty.setraw(self.fd_in, termios.TCSAFLUSH)
        self.write("\x1b[?2004h\x1b[H\x1b[2J")

    def leave(self) -> None:
        """Bracketed paste off, the terminal as it was, the cursor below what was drawn."""
        with contextlib.suppress(OSError):
            self.write("\x1b[?2004l\r\n")
        if self._saved is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(self.fd_in, termios.TCSADRAIN, self._saved)

    def size(self) -> tuple[int, int]:
        """Columns and rows."""
        try:
            size = os.get_terminal_size(self.fd_out)
        except OSError:
            return 80, 24
        return max(size.columns, 10), max(size.lines, 4)

    def write(self, text: str) -> None:
        """Write ``text`` to the terminal."""
        _write_all(self.fd_out, text.encode())


# --- the agent -----------------------------------------------------------------------------


def _produces_block(step: Step) -> bool:
    """The step writes an assistant line."""
    return not isinstance(step, Work | Exit)


class Agent:
    """One session: the composer, the queue of prompts, the turns and the files they write."""

    def __init__(  # noqa: PLR0913 (each is one thing a session is made of)
        self,
        *,
        script: Script,
        session_id: str,
        cwd: str,
        root: Path,
        prompt: str | None,
        terminal: Terminal,
        added: str | None = None,
    ) -> None:
        self.script = script
        self.session_id = session_id
        self.cwd = cwd
        #: The folder ``--add-dir`` names, which ``$board/`` paths are written in.
        self.added = added
        self.prompt = prompt
        self.terminal = terminal
        self.transcript = Transcript(
            transcript_path(root, cwd, session_id), session_id=session_id, cwd=cwd
        )
        self.registry = Registry(root, session_id=session_id, cwd=cwd)
        self.keys = Keys()
        self.lock = threading.Condition(threading.RLock())
        self.composer = ""
        self.log: collections.deque[str] = collections.deque(maxlen=500)
        self.status = "busy"
        self.waiting_for: str | None = None
        self.ready = False
        self.busy_since = time.monotonic()
        self.submitted = 0
        self.queue: collections.deque[str] = collections.deque()
        self.asking = False
        self.answer: str | None = None
        self.turns = list(script.turns)
        self.exit_status: int | None = None
        self._message_id = ""
        #: How many model messages it has begun, and the output tokens of the current one so far.
        self._messages = 0
        self._output = 0
        self._wake_read, self._wake_write = os.pipe()

    # --- the terminal thread ---------------------------------------------------------------

    def run(self) -> int:
        """Run the session until Ctrl-C, Ctrl-D, an ``exit`` step or the terminal's end."""
        self.registry.write("busy", None)
        self.terminal.enter()
        try:
            if self._drop_early_input():
                with self.lock:
                    self.ready = True
                    self.keys.reset()
                if self.prompt:
                    self.submit(self.prompt)
                threading.Thread(target=self._take_prompts, daemon=True).start()
                self._read_input()
        finally:
            self.terminal.leave()
            self.registry.remove()
        return self.exit_status or 0

    def wake(self) -> None:
        """Wake the terminal thread: it redraws, and ends if the session is over."""
        with contextlib.suppress(OSError):
            os.write(self._wake_write, b".")

    def _drop_early_input(self) -> bool:
        """Read and drop every key until ``ready_after`` seconds from start; False at the end."""
        deadline = time.monotonic() + self.script.ready_after
        self.redraw()
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.terminal.fd_in], [], [], left)
            if readable and not self._read():
                return False
        return True

    def _read(self) -> bytes:
        """What the terminal has; empty at its end."""
        try:
            return os.read(self.terminal.fd_in, 65536)
        except OSError:
            return b""

    def _read_input(self) -> None:
        """Read keys until the session ends, redrawing after each read and each spinner turn."""
        while True:
            with self.lock:
                ended = self.exit_status is not None
                timeout = SPIN_SECONDS if self.status == "busy" else None
                if self.keys.is_waiting:
                    timeout = ESCAPE_SECONDS
            if ended:
                # What it said last stays on its screen: the exit may come before the redraw.
                self.redraw()
                return
            readable, _, _ = select.select([self.terminal.fd_in, self._wake_read], [], [], timeout)
            if not readable and self.keys.is_waiting:
                self.keys.expire()
            if self._wake_read in readable:
                os.read(self._wake_read, 512)
            if self.terminal.fd_in in readable:
                data = self._read()
                if not data:
                    return
                for key in self.keys.feed(data):
                    if key is Key.QUIT:
                        return
                    self._press(key)
            self.redraw()

    def _press(self, key: str | Key) -> None:
        """Edit the composer, or submit it."""
        with self.lock:
            if isinstance(key, str):
                self.composer += key
            elif key is Key.ERASE:
                self.composer = self.composer[:-1]
            elif key is Key.SUBMIT:
                text, self.composer = self.composer, ""
                self.submit(text)

    def submit(self, text: str) -> None:
        """A submitted input: lost, ignored, the answer to a question, or queued as a prompt."""
        if not text.strip():
            return
        with self.lock:
            self.submitted += 1
            if self.script.inputs is not None:
                with Path(self.script.inputs).open("a", encoding="utf-8") as log:
                    log.write(json.dumps(text) + "\n")
            lose = self.script.lose
            if lose == "all" or self.submitted <= lose or not self.script.record:
                return
            if self.asking and self.answer is None:
                self.answer = text
            else:
                self.queue.append(text)
            self.lock.notify_all()

    # --- the screen ------------------------------------------------------------------------

    def redraw(self) -> None:
        """Draw the banner, the conversation's end, the status and the composer."""
        columns, rows = self.terminal.size()
        width = columns - 1
        with self.lock:
            banner = f"✻ flume test agent · {self.session_id} · {self.cwd}"
            status = self._status_line()
            shown = self.composer[-rows * columns :]
            composer: list[str] = []
            for number, line in enumerate(shown.split("\n")):
                lead = f"{PROMPT_MARK} " if number == 0 else "  "
                composer.extend(lead + row for row in _wrap(line, width - 2))
            fits = max(2, rows - 3)
            if len(composer) > fits or len(shown) < len(self.composer):  # the mark stays
                composer = [f"{PROMPT_MARK} … (the start is above)", *composer[-fits + 1 :]]
            room = max(0, rows - 2 - len(composer))
            conversation = list(self.log)[-room:] if room else []
        lines = [banner, *conversation, *([""] * (room - len(conversation))), status]
        lines = [_fit(line, width) for line in lines] + composer
        with contextlib.suppress(OSError), self.lock:
            self.terminal.write("\x1b[H" + "\x1b[K\r\n".join(lines) + "\x1b[K\x1b[J")

    def _status_line(self) -> str:
        """The line above the composer: starting, working, asking, or what is queued."""
        queued = f" · {len(self.queue)} queued" if self.queue else ""
        if not self.ready:
            return "  starting…"
        if self.status == "busy":
            elapsed = time.monotonic() - self.busy_since
            frame = _SPINNER[int(elapsed / SPIN_SECONDS) % len(_SPINNER)]
            return f"{frame} Working… ({int(elapsed)}s){queued}"
        if self.status == "waiting":
            return f"? {self.waiting_for}: type the answer and press Enter{queued}"
        return ""

    def show(self, text: str, mark: str = "●") -> None:
        """Add ``text`` to the conversation on screen, its first line after ``mark``."""
        with self.lock:
            for number, line in enumerate(text.splitlines() or [""]):
                self.log.append(f"{mark if number == 0 else ' ' * len(mark)} {line}")
        self.wake()

    def _set_status(self, status: str, waiting_for: str | None = None) -> None:
        """Change the status: the registry says it at once."""
        with self.lock:
            if (status, waiting_for) == (self.status, self.waiting_for):
                return
            if status == "busy" and self.status != "waiting":
                self.busy_since = time.monotonic()
            self.status, self.waiting_for = status, waiting_for
            self.registry.write(status, waiting_for)
        self.wake()

    # --- the turn thread -------------------------------------------------------------------

    def _take_prompts(self) -> None:
        """Take queued prompts one at a time: record each, then run its turn."""
        while True:
            with self.lock:
                while not self.queue:
                    self._set_status("idle")
                    self.lock.wait()
                prompt = self.queue.popleft()
                self.transcript.append(
                    {
                        "type": "user",
                        "promptSource": "typed",
                        "message": {"role": "user", "content": prompt},
                    }
                )
                self._set_status("busy")
                self.show(prompt, ">")
                turn = self._turn_for(prompt)
            try:
                if not self._take(turn):
                    return
            except Exception as error:  # noqa: BLE001 (a broken turn is shown; the session goes on)
                self.show(f"the test agent failed: {error!r}", "✗")

    def _turn_for(self, prompt: str) -> Turn:
        """The first unused turn matching ``prompt``, else the next unused plain one.

        With none left, :data:`DEFAULT_TURN`: it says "ok" (:data:`TURN_CHOICE` says it so).
        """
        for index, turn in enumerate(self.turns):
            if turn.match is not None and turn.match in prompt:
                return self.turns.pop(index)
        for index, turn in enumerate(self.turns):
            if turn.match is None:
                return self.turns.pop(index)
        return DEFAULT_TURN

    def _take(self, turn: Turn) -> bool:
        """Run ``turn``'s steps; False when one ended the session."""
        started = time.monotonic()
        self._new_message()
        lines, ended = 0, True
        for index, step in enumerate(turn.steps):
            match step:
                case Say(text):
                    ended = not any(_produces_block(later) for later in turn.steps[index + 1 :])
                    self._assistant({"type": "text", "text": text}, "end_turn" if ended else None)
                    self.show(text)
                    lines += 1
                case Work(seconds):
                    time.sleep(seconds)
                case Write(path, text):
                    lines += self._tool(
                        "Write",
                        {"file_path": str(self._written(path)), "content": text},
                        f"Write({path})",
                        functools.partial(self._write, step),
                    )
                    ended = False
                case Commit(message):
                    command = f"git add -A && git commit -m {shlex.quote(message)}"
                    lines += self._tool(
                        "Bash",
                        {"command": command, "description": "Commit the work"},
                        f"Bash({command})",
                        functools.partial(self._commit, message),
                    )
                    ended = False
                case Run(argv):
                    command = shlex.join(argv)
                    lines += self._tool(
                        "Bash",
                        {"command": command, "description": "Run a command"},
                        f"Bash({command})",
                        functools.partial(self._run, argv),
                    )
                    ended = False
                case Ask(question):
                    lines += self._ask(question)
                    ended = False
                case Exit(status):
                    with self.lock:
                        self.exit_status = status
                    self.wake()
                    return False
                case _:  # pragma: no cover (mypy proves this unreachable)
                    assert_never(step)
        if not ended:
            self._assistant({"type": "text", "text": "Done."}, "end_turn")
            self.show("Done.")
            lines += 1
        with self.lock:
            self.transcript.append(
                {
                    "type": "system",
                    "subtype": "turn_duration",
                    "durationMs": int((time.monotonic() - started) * 1000),
                    "messageCount": lines,
                    "isMeta": False,
                }
            )
        return True

    def _new_message(self) -> None:
        """Begin the next model message: a new id, no output yet."""
        self._message_id = f"msg_{uuid.uuid4().hex[:24]}"
        self._messages += 1
        self._output = 0

    def _usage(self, block: dict[str, object]) -> dict[str, int]:
        """The current message's usage once ``block`` is written, as Claude Code writes it.

        Every line of a message repeats its usage, the output tokens growing to the message's
        count on its last block (reference/claude-code.md §2): the n-th message of the session
        reads 10 + n fresh input tokens, 100 n from the cache and writes 5 n to it, and each
        block adds about a token per four characters of its JSON to the output.
        """
        self._output += len(json.dumps(block)) // 4 + 1
        number = self._messages
        return {
            "input_tokens": 10 + number,
            "cache_creation_input_tokens": 5 * number,
            "cache_read_input_tokens": 100 * number,
            "output_tokens": self._output,
        }

    def _assistant(self, block: dict[str, object], stop_reason: str | None) -> str:
        """Write one assistant line holding ``block``; its uuid."""
        with self.lock:
            return self.transcript.append(
                {
                    "type": "assistant",
                    "message": {
                        "id": self._message_id,
                        "type": "message",
                        "role": "assistant",
                        "model": MODEL,
                        "content": [block],
                        "stop_reason": stop_reason,
                        "stop_sequence": None,
                        "usage": self._usage(block),
                    },
                }
            )

    def _result(self, tool_use_id: str, asked_in: str, content: str, *, is_error: bool) -> None:
        """Write the user line carrying a tool's result; the next model message starts."""
        result: dict[str, object] = {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": content,
        }
        if is_error:
            result["is_error"] = True
        with self.lock:
            self.transcript.append(
                {
                    "type": "user",
                    "message": {"role": "user", "content": [result]},
                    "toolUseResult": content,
                    "sourceToolAssistantUUID": asked_in,
                }
            )
        self._new_message()

    def _tool(
        self,
        name: str,
        tool_input: dict[str, object],
        title: str,
        act: Callable[[], tuple[str, bool]],
    ) -> int:
        """Call a tool: its ``tool_use`` line, the act, its result line; the lines written."""
        tool_use_id = f"toolu_{uuid.uuid4().hex[:24]}"
        asked_in = self._assistant(
            {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input},
            "tool_use",
        )
        self.show(title)
        output, is_error = act()
        self.show(output.strip().splitlines()[0] if output.strip() else "(no output)", "  ⎿")
        self._result(tool_use_id, asked_in, output, is_error=is_error)
        return 2

    def _ask(self, question: str) -> int:
        """Ask a person: wait, ``waiting``/``input needed``, for the next submitted input."""
        tool_use_id = f"toolu_{uuid.uuid4().hex[:24]}"
        tool_input = {
            "questions": [
                {"question": question, "header": "Question", "options": [], "multiSelect": False}
            ]
        }
        with self.lock:
            asked_in = self._assistant(
                {
                    "type": "tool_use",
                    "id": tool_use_id,
                    "name": "AskUserQuestion",
                    "input": tool_input,
                },
                "tool_use",
            )
            self.show(question, "?")
            self.asking, self.answer = True, None
            self._set_status("waiting", "input needed")
            while self.answer is None:
                self.lock.wait()
            answer, self.asking, self.answer = self.answer, False, None
            self._set_status("busy")
            self.show(answer, "  ⎿")
        self._result(
            tool_use_id,
            asked_in,
            f'User has answered your questions: "{question}"="{answer}". '
            "You can now continue with the user's answers in mind.",
            is_error=False,
        )
        return 2

    # --- the tools -------------------------------------------------------------------------

    def _written(self, path: str) -> Path:
        """Where ``path`` of a write step is: under ``--add-dir`` for ``$board/``, else the cwd."""
        if path.startswith(BOARD_PREFIX) and self.added is not None:
            return Path(self.added) / path.removeprefix(BOARD_PREFIX)
        return Path(self.cwd) / path

    def _write(self, step: Write) -> tuple[str, bool]:
        """Write the file; what the tool says, and whether it failed."""
        if step.path.startswith(BOARD_PREFIX) and self.added is None:
            return f"Error writing {step.path}: no folder was added (--add-dir)", True
        path = self._written(step.path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(step.text, encoding="utf-8")
        except OSError as error:
            return f"Error writing {step.path}: {error}", True
        return f"File created successfully at: {path}", False

    def _commit(self, message: str) -> tuple[str, bool]:
        """Stage everything and commit it; git's output, and whether it failed."""
        added, add_failed = self._run(("git", "add", "-A"))
        if add_failed:
            return added, True
        committed, failed = self._run(("git", "commit", "-m", message))
        return added + committed, failed

    def _run(self, argv: tuple[str, ...]) -> tuple[str, bool]:
        """Run ``argv`` in the working directory; its output, and whether it failed."""
        try:
            ran = subprocess.run(  # noqa: S603 (the script's own argv, no shell)
                argv,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                check=False,
            )
        except OSError as error:
            return f"Error: {argv[0]}: {error.strerror or error}", True
        output = ran.stdout.decode(errors="replace")
        if ran.returncode:
            return f"Exit code {ran.returncode}\n{output}", True
        return output, False


# --- the command line ----------------------------------------------------------------------


def _stop(signum: int, frame: FrameType | None) -> None:
    """End the session on SIGHUP or SIGTERM: the terminal is restored, the entry removed."""
    del frame
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run a session; the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m flume.testing.agent",
        description="A scripted stand-in for Claude Code's TUI, for flume's tests and demo.",
    )
    parser.add_argument("--session-id", help="the session's UUID (default: a new one)")
    parser.add_argument("--script", help=f"a TOML script (default: ${SCRIPT_VARIABLE})")
    parser.add_argument(
        "--home",
        help="the folder of its transcripts and registry (default: flume's state folder's)",
    )
    parser.add_argument(
        "--add-dir",
        help="a folder outside the working directory it may write in ($board/ in write paths)",
    )
    parser.add_argument("prompt", nargs="?", help="the first prompt, submitted once ready")
    args = parser.parse_args(argv)
    session_id = args.session_id or str(uuid.uuid4())
    if not _UUID.fullmatch(session_id):
        sys.stderr.write("Error: Invalid session ID. Must be a valid UUID.\n")
        return 1
    script_file = args.script or os.environ.get(SCRIPT_VARIABLE)
    try:
        script = (
            parse_script(Path(script_file).read_text(encoding="utf-8")) if script_file else Script()
        )
    except (OSError, ScriptError) as error:
        sys.stderr.write(f"Error: script {script_file}: {error}\n")
        return 2
    cwd = str(Path.cwd())
    root = Path(args.home) if args.home else default_home()
    if transcript_path(root, cwd, session_id).exists():
        sys.stderr.write(f"Error: Session ID {session_id} is already in use.\n")
        return 1
    agent = Agent(
        script=script,
        session_id=session_id,
        cwd=cwd,
        root=root,
        prompt=args.prompt,
        terminal=Terminal(),
        added=args.add_dir,
    )
    signal.signal(signal.SIGHUP, _stop)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGWINCH, lambda _signum, _frame: agent.wake())
    return agent.run()


if __name__ == "__main__":
    sys.exit(main())
