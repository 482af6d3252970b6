"""The manual's Sphinx configuration: Markdown pages (MyST), the furo theme, nothing unchecked.

``scripts/docs`` builds it with warnings as errors: every internal link, every heading anchor a
link names and every cross-reference must resolve. The reference pages are drawn from the code
by ``_ext/flume_reference.py`` as the build starts (``docs/reference/``, never committed).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "flume"
author = "flume's authors"
copyright = "flume's authors, MIT licence"  # noqa: A001 (the name Sphinx reads)

extensions = ["myst_parser", "flume_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md"]

# A link to a heading (page.md#a-heading) is checked, as GitHub's anchors name them.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

# Text is shown as written: "--json" stays two hyphens, not a dash; quotes stay straight.
smartquotes = False

html_theme = "furo"
html_title = "flume"
html_static_path = ["_static"]
html_show_sourcelink = False

# Every warning fails the build (scripts/docs runs sphinx-build -W --keep-going).
nitpicky = True
