"""The performer: each action the core decides, carried out; the landers; launch."""

from __future__ import annotations
