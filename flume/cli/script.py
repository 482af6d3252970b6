"""The ``flume`` console script (and ``python -m flume``): the app, loaded and run in one process.

A command is over in tens of milliseconds, and Python's cyclic garbage collector would spend a
good part of them looking through what the imports made (typer, the commands), which lives as
long as the process does: on loading the app, then again at exit. So the collector is off while
the app loads, and what loading made is frozen out of its sight (:func:`gc.freeze`): every
object made after (by the command itself) is collected as usual. bench/cli.py shows the gain.
"""

from __future__ import annotations

import gc
from typing import NoReturn


def main() -> NoReturn:
    """Load the app with the collector off, put what it loaded out of its sight, and run."""
    gc.disable()
    try:
        from flume.cli import app
    finally:
        gc.freeze()
        gc.enable()
    app.main()
