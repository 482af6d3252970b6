"""The CLI builds only the command it runs, and that command behaves as in the whole app."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from flume.cli.app import app, narrowed

runner = CliRunner()

NAMES = [
    *(info.name or info.callback.__name__.replace("_", "-") for info in app.registered_commands),
    *(info.name for info in app.registered_groups),
]


def _said(target: typer.Typer, args: list[str]) -> tuple[int, str, str]:
    """What ``args`` make ``target`` exit with and print."""
    result = runner.invoke(target, args)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("name", NAMES)
def test_each_command_s_help_and_errors_are_the_whole_app_s(name: str) -> None:
    """``flume NAME --help``, and a bad option, read the same narrowed as whole."""
    assert narrowed([name]) is not app
    assert len(narrowed([name]).registered_commands + narrowed([name]).registered_groups) == 1
    for args in ([name, "--help"], [name, "--no-such-option"]):
        assert _said(app, args) == _said(narrowed(args), args), args


def test_what_names_no_one_command_is_the_whole_app() -> None:
    """No arguments, an option, an unknown name: the whole app answers."""
    for args in ([], ["--help"], ["--version"], ["nope"], ["stat"]):
        assert narrowed(args) is app
