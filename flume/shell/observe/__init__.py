"""The batch observers the supervisor runs each tick."""

from __future__ import annotations
