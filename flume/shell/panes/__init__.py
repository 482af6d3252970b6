"""The pane port and its backends: tmux, herdr, printed; attaching to a pane."""

from __future__ import annotations
