"""flume's shell: it gathers observations, performs actions and keeps the journal.

It decides nothing: every rule is in flume.core.
"""

from __future__ import annotations
