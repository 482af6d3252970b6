"""The run monitor (``flume monitor``): a local web page of every place and run on this host.

Loaded only by ``flume monitor``: its dependencies are the ``monitor`` extra's.
"""

from __future__ import annotations
