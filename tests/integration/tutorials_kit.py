"""Reading a tutorial page as the test runs it: its files and its commands, in order.

A tutorial's code blocks are its test's input, doctest-style:

- a file: a ``code-block`` directive whose ``:caption:`` is the file's path (relative to the
  folder the tutorial is in at that point), its body the file's text;
- commands: a ``console`` block, each ``$ `` line a command, the lines after it (to the next
  ``$ ``) what it prints, stdout and stderr as a terminal shows them. A shown line is a pattern:
  ``...`` stands for anything, a date and time (``2026-01-02 03:04:05``) for any, and a run of
  seven or more hexadecimal digits (a commit) for any as long. The shown lines must be printed
  in their order; lines printed between them are allowed. A command exits 0, unless its comment
  says ``# exit N``. ``cd DIR`` changes the folder the next ones run in.

Every other block (``sh``, ``text``, ``toml`` without a caption) is for the reader alone.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import attrs

#: A fenced block: its info string and its body (MyST: ``{code-block} toml`` and options).
_BLOCK = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
_OPTION = re.compile(r"^:(?P<name>[a-z-]+):\s*(?P<value>.*)$")
_EXIT = re.compile(r"#.*\bexit (\d+)")
_DATETIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
_HEX = re.compile(r"[0-9a-f]{7,}")
#: What varies from run to run in a shown line, split out of it.
_VARIES = re.compile(r"(\.\.\.|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|\b[0-9a-f]{7,}\b)")


@attrs.frozen
class File:
    """A file the tutorial has the reader write."""

    path: str
    text: str


@attrs.frozen
class Command:
    """A command the tutorial has the reader run, what it shows, and how it exits."""

    line: str
    shown: tuple[str, ...]
    status: int = 0

    def argv(self) -> list[str]:
        """The command's words, as a shell splits them (no shell runs it)."""
        return shlex.split(self.line, comments=True)


Step = File | Command


def steps(text: str) -> list[Step]:
    """A tutorial page's files and commands, in the order the reader meets them."""
    found: list[Step] = []
    for block in _BLOCK.finditer(text):
        info, body = block.group("info").strip(), block.group("body")
        if info.startswith("{code-block}"):
            lines = body.splitlines(keepends=True)
            options: dict[str, str] = {}
            while lines and (option := _OPTION.match(lines[0].rstrip("\n"))):
                options[option.group("name")] = option.group("value")
                lines.pop(0)
            if lines and not lines[0].strip():
                lines.pop(0)
            if "caption" in options:
                found.append(File(path=options["caption"], text="".join(lines)))
        elif info == "console":
            found.extend(_commands(body))
    return found


def _commands(body: str) -> list[Command]:
    commands: list[Command] = []
    line: str | None = None
    shown: list[str] = []
    for each in [*body.splitlines(), "$ "]:
        if each.startswith("$ "):
            if line is not None:
                said = _EXIT.search(line)
                status = int(said.group(1)) if said else 0
                commands.append(Command(line=line, shown=tuple(shown), status=status))
            line, shown = each[2:], []
        elif line is not None:
            shown.append(each)
    return [command for command in commands if command.line.strip()]


def pattern(shown: str) -> re.Pattern[str]:
    """A shown line as a pattern: ``...`` anything, a date and time any, a commit any as long."""
    made: list[str] = []
    for piece in _VARIES.split(shown):
        if piece == "...":
            made.append(".*")
        elif _DATETIME.fullmatch(piece):
            made.append(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
        elif _HEX.fullmatch(piece):
            made.append(f"[0-9a-f]{{{len(piece)}}}")
        else:
            made.append(re.escape(piece))
    return re.compile("".join(made))


def missing(shown: tuple[str, ...], printed: list[str]) -> list[str]:
    """The shown lines not printed in their order (other lines may come between)."""
    lines = iter(line.rstrip() for line in printed)
    return [line for line in shown if not any(pattern(line).fullmatch(out) for out in lines)]


def write(folder: Path, file: File) -> Path:
    """Write the tutorial's file in ``folder``; its path."""
    path = folder / file.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(file.text, encoding="utf-8")
    return path
