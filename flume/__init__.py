"""flume carries work for AI coding agents from launch to landing."""

from __future__ import annotations

__version__ = "0.1.0"
