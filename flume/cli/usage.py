"""How flume's commands show their usage and arguments in ``--help``: as a man page does.

typer writes a required argument as ``{PLACE}`` and tags each argument with its Python type
(``PLACE <str>``). A flume command names its arguments bare when required (``PLACE``), in
brackets when optional (``[PLACE]``), with dots when repeatable (``SCENARIO...``), and says what
each holds in words. Options name their value with a metavar (``--brief-file FILE``); flags name
none. Every command of flume's apps is made with :class:`Command` (``cls=Command``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from typer.core import TyperArgument, TyperCommand

if TYPE_CHECKING:
    from typer._click import Context, HelpFormatter


def _shown(argument: TyperArgument) -> str:
    """The argument's name as its usage line shows it."""
    name = argument.metavar or (argument.name or "").upper()
    return f"{name}..." if argument.nargs != 1 else name


class Command(TyperCommand):
    """A typer command whose help names its arguments bare, with no type tags."""

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        """``[OPTIONS]``, then each argument: bare when required, bracketed when not."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                shown = _shown(param)
                pieces.append(shown if param.required else f"[{shown}]")
        return pieces

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
        """The arguments with what each holds, then the options as typer writes them."""
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                arguments.append((_shown(param), param.help or ""))
            else:
                record = param.get_help_record(ctx)
                if record is not None:
                    options.append(record)
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        if options:
            with formatter.section("Options"):
                formatter.write_dl(options)


def parse_seconds(text: str) -> float:
    """Seconds given on the command line (``parser=parse_seconds``); plain words if no number.

    typer would say "Input should be a valid number, unable to parse string as a number".
    """
    try:
        return float(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a number of seconds") from None
