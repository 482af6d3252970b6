"""Tools for testing flume and tools built on it.

The scripted model server, the test agent, homes for real agents.
"""

from __future__ import annotations
