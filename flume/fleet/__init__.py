"""The fleet: places spread over several hosts, carried by Temporal (docs/fleet.md).

A place stays on one host, and everything flume proves holds there; the fleet only chooses which
host carries a place (Temporal's task queues, each host's slots), notices a host that stops
heartbeating, and carries a person's command to the place's host. Code moves between hosts only
through the shared git remote. A workflow's spread block (``spread = true``) makes each of its
lanes a fleet place too, whose workflow carries its words to and from its run. Its modules, top
down: ``client.py`` (what the CLI calls: launch, status, a person's command), ``worker.py``
(``flume fleet worker``), ``host.py`` (the activities a host performs), ``workflow.py`` (the one
workflow, deterministic), ``records.py`` (what they send each other), ``config.py`` (a host's
``[fleet]``), ``server.py`` (Temporal's dev server, for one machine) and ``demo.py``.

Only ``records.py`` and ``config.py`` load without Temporal's SDK (the ``fleet`` extra: ``pip
install 'flume[fleet]'``); nothing of the fleet loads when a command does not use it.
"""

from __future__ import annotations
