"""What a repository declares: .flume.toml, its kinds, its commands, scenarios."""

from __future__ import annotations
