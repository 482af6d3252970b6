"""A Sphinx extension: the reference pages, drawn from the code as the build starts.

Before Sphinx reads a page, :func:`flume.cli.reference.pages` makes each reference page from the
declarations flume itself reads and runs (the command-line app, the kind file's tables, the
board, status, the events, the test agent's script), and this writes those that changed into
``docs/reference/``, which git ignores: no one edits them, and they cannot go stale.

It also names Mermaid's fences a lexer Pygments lacks (shown as text; GitHub draws them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pygments.lexers.special import TextLexer
from sphinx.application import Sphinx

from flume.cli import reference

#: Where the pages go, under the manual's source folder.
FOLDER = "reference"


def write_pages(app: Sphinx) -> None:
    """Write each reference page whose text changed (an unchanged one keeps its time)."""
    folder = Path(app.srcdir) / FOLDER
    folder.mkdir(exist_ok=True)
    made = reference.pages()
    for name, text in made.items():
        page = folder / f"{name}.md"
        if not page.exists() or page.read_text(encoding="utf-8") != text:
            page.write_text(text, encoding="utf-8")
    for stale in folder.glob("*.md"):
        if stale.stem not in made:
            stale.unlink()


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the pages' writer, before the pages are read, and the Mermaid lexer."""
    app.connect("builder-inited", write_pages)
    app.add_lexer("mermaid", TextLexer)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
