"""The supervisor: its loop and daemon, and the client that talks to it."""

from __future__ import annotations
