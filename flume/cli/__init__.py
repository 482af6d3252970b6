"""flume's command line: typer commands that parse, call the shell and render.

No rule lives here.
"""

from __future__ import annotations
