"""flume's shell: it gathers observations, performs actions and keeps the journal; it decides nothing."""

from __future__ import annotations
