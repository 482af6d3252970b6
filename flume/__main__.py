"""``python -m flume``: the same as the ``flume`` command."""

from __future__ import annotations

from flume.cli.script import main

main()
