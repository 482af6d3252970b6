"""One adapter per outside program: git, sockets, where installed programs are."""

from __future__ import annotations
