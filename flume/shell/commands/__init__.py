"""The caller's verbs on the shell side, which flume.api calls."""

from __future__ import annotations
