"""Tools for testing flume and tools built on it.

The scripted model server, the test agent, homes for real agents, a fake herdr, and scenario
builders (a host of a test's own, sample repositories, test agent scripts; docs/testing.md).
"""

from __future__ import annotations
