"""Every command's ``--help`` reads as a well-kept CLI's: plain words, no leaked internals."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
import typer.completion
from typer.testing import CliRunner

from flume.cli.app import app
from tests.integration.places_kit import flume, repository, world_of

#: What typer or rich leak into help when it is not written with care, and why each is wrong.
DEFECTS = {
    r"<(bool|str|path|int|float|file)>|<list\[|<\w+\|": "a type tag where a metavar belongs",
    r"\[\[": "a metavar bracketed twice",
    r"[{}]": "a required argument in braces",
    r"\bR\d+\b": "a rule id a user cannot look up",
    r"DESIGN\.md|STYLE\.md": "a document a user does not have",
    r"Value error": "a validator's words",
    r"--(\w|-)+ / --no-": "a flag with a --no- twin no one needs",
}


def command_paths() -> Iterator[tuple[str, ...]]:
    """The path of every command and group a user can see, the root first."""

    def walk(
        command: typer.core.TyperCommand | typer.core.TyperGroup, path: tuple[str, ...]
    ) -> Iterator[tuple[str, ...]]:
        yield path
        if isinstance(command, typer.core.TyperGroup):
            for name, sub in command.commands.items():
                if not sub.hidden:
                    yield from walk(sub, (*path, name))

    yield from walk(typer.main.get_command(app), ())


def help_of(path: tuple[str, ...]) -> str:
    """What ``flume PATH --help`` prints on an 80-column terminal."""
    ran = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert ran.exit_code == 0, ran.output
    return ran.stdout


PATHS = list(command_paths())


def test_the_walk_finds_every_command() -> None:
    """The test below sees the commands, the groups and their commands, not a few of them."""
    assert {("launch",), ("status",), ("inspect", "transcript"), ("daemon", "stop")} <= set(PATHS)
    assert len(PATHS) > 20


@pytest.mark.parametrize("path", PATHS, ids=lambda path: " ".join(path) or "flume")
def test_help_shows_no_known_defect(path: tuple[str, ...]) -> None:
    """No type tags, doubled brackets, braces, rule ids or validator words; it fits 80 columns."""
    shown = help_of(path)
    for pattern, defect in DEFECTS.items():
        found = re.search(pattern, shown)
        assert found is None, f"flume {' '.join(path)} --help shows {defect}: {found.group()!r}"
    too_wide = [line for line in shown.splitlines() if len(line) > 80]
    assert not too_wide
    commands = shown.partition("\nCommands:\n")[2].splitlines()
    cut = [line for line in commands if line.endswith("...")]
    assert not cut, f"a command's one-line summary is cut short: {cut}"


def test_help_shows_square_brackets_written_in_it() -> None:
    """No markup eats a ``[kind]`` written in an option's help."""
    assert "A TOML file with a [kind] table" in help_of(("launch",))


def test_usage_names_arguments_as_a_man_page_does() -> None:
    """A required argument bare, an optional one in brackets, several with dots."""
    assert "Usage: flume drop [OPTIONS] PLACE\n" in help_of(("drop",))
    assert "Usage: flume status [OPTIONS] [PLACE]\n" in help_of(("status",))
    assert "Usage: flume simulate [OPTIONS] [SCENARIO...]\n" in help_of(("simulate",))
    launch = help_of(("launch",))
    assert re.search(r"--wait STAGE\s", launch)
    assert re.search(r"--brief-file FILE\s", launch)
    assert re.search(r"--json\s+Print", launch)


@pytest.mark.parametrize(
    ("option", "says"),
    [
        ("--agent", "unknown agent 'bogus'; choose claude, codex or test"),
        ("--panes", "unknown panes 'bogus'; choose tmux, print or herdr"),
    ],
)
def test_an_unknown_choice_is_named_with_the_choices(host: Path, option: str, says: str) -> None:
    """``--agent bogus``: the choices in plain words, exit 2, nothing made."""
    repo = repository(host / "repo")
    before = world_of(repo)
    ran = flume(
        "launch", "--repository", str(repo), "--kind", "fix", "--name", "x", "--brief", "b",
        option, "bogus",
    )  # fmt: skip
    assert ran.returncode == 2
    assert says in ran.stderr
    assert "Value error" not in ran.stderr
    assert world_of(repo) == before


def complete(words: str) -> list[str]:
    """What bash completion offers after ``words`` (the last word is the one being typed)."""
    env = {
        "_FLUME_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split(" ")) - 1),
    }
    ran = CliRunner().invoke(app, [], env=env, prog_name="flume")
    assert ran.exit_code == 0, ran.output
    return ran.stdout.split()


def test_shell_completion_is_on_and_knows_commands_and_choices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``flume --install-completion`` is offered; commands, options and choices complete."""
    # typer finds the shell among this process's parents, which a test run may not have (its
    # parent may be no shell at all): the shell is said here, as a person's would be found.
    monkeypatch.setattr(typer.completion, "_get_shell_name", lambda: "bash")
    assert "--install-completion" in help_of(())
    assert complete("flume lau") == ["launch"]
    assert complete("flume launch --agent ") == ["claude", "codex", "test"]
    assert complete("flume launch --panes h") == ["herdr"]
    assert "--brief-file" in complete("flume launch --brief")
    shown = CliRunner().invoke(app, ["--show-completion"], prog_name="flume")
    assert "complete -o default -F _flume_completion flume" in shown.stdout


@pytest.mark.parametrize(
    "command",
    [
        ("tidy", "--timeout"),
        ("watch", "--interval"),
        ("demo", "--seconds"),
        ("herdr", "sidebar", "--every"),
    ],
    ids=" ".join,
)
def test_seconds_that_are_no_number_are_named_in_plain_words(command: tuple[str, ...]) -> None:
    """``--timeout x``: exit 2, "'x' is not a number of seconds", not a validator's words."""
    ran = flume(*command, "x")
    assert ran.returncode == 2
    assert "'x' is not a number of seconds" in ran.stderr
    assert "Input should be" not in ran.stderr
