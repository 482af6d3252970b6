"""What flume keeps: the codec, the journal files, places and the host's registry."""

from __future__ import annotations
