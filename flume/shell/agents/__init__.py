"""The agents: their command lines and files, and their transcripts read."""

from __future__ import annotations
