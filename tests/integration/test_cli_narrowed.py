"""The CLI builds only the command it runs, and that command behaves as in the whole app."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer import _click as click
from typer.testing import CliRunner

from flume.cli.app import app, narrowed, resolved

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


# Each parameter of every command as click holds it, printed by a process that evaluates no
# annotation ahead of typer (it never calls narrowed): typer's own reading of the strings.
_PARAMETERS = """
import json
import typer
from flume.cli.app import app
from tests.integration.test_cli_narrowed import parameters
print(json.dumps(parameters(typer.main.get_command(app))))
"""


def parameters(command: click.Command, path: str = "flume") -> dict[str, list[str]]:
    """Every command's parameters, as click holds them: names, types, defaults and help."""
    found = {
        path: [
            # What an object's repr says but its address, which differs between processes.
            re.sub(
                r" at 0x[0-9a-f]+",
                "",
                repr(
                    (
                        param.name,
                        param.opts,
                        param.secondary_opts,
                        type(param.type).__name__,
                        sorted((key, repr(value)) for key, value in vars(param.type).items()),
                        repr(param.default),
                        param.required,
                        param.multiple,
                        param.nargs,
                        param.metavar,
                        getattr(param, "help", None),
                        getattr(param, "is_flag", None),
                    )
                ),
            )
            for param in command.params
        ]
    }
    for name, sub in getattr(command, "commands", {}).items():
        found.update(parameters(sub, f"{path} {name}"))
    return found


def test_annotations_evaluated_once_are_read_as_typer_reads_the_strings() -> None:
    """Every command's parameters are the same built from :func:`resolved` annotations."""
    ran = subprocess.run(  # noqa: S603 (our own interpreter and probe)
        [sys.executable, "-c", _PARAMETERS],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=True,
    )
    from_strings = json.loads(ran.stdout)
    assert len(from_strings) > len(NAMES)  # every command, the groups' own included
    assert parameters(typer.main.get_command(resolved(app))) == from_strings
