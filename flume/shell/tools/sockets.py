"""One JSON line each way over a Unix socket: how flume's supervisor and herdr are asked.

Both speak the same way: a client connects, writes one request line, reads one answer line, and
the connection ends. These are the two halves every such exchange shares.
"""

from __future__ import annotations

import socket
from pathlib import Path

#: The longest line read: a request or answer longer than this is cut there (and fails to parse).
LONGEST = 1 << 24


def read_line(connection: socket.socket, *, longest: int = LONGEST) -> bytes:
    """One line from the connection (its newline kept), or what came before the peer closed."""
    data = bytearray()
    while len(data) < longest:
        chunk = connection.recv(65536)
        if not chunk:
            break
        data += chunk
        if data.endswith(b"\n"):
            break
    return bytes(data)


class Reader:
    """Lines from a connection one at a time: what came after a line is kept for the next."""

    def __init__(self, connection: socket.socket) -> None:
        self._connection = connection
        self._data = bytearray()

    def line(self, *, longest: int = LONGEST) -> bytes:
        """The next line (its newline kept), or what came before the peer closed."""
        while b"\n" not in self._data and len(self._data) < longest:
            chunk = self._connection.recv(65536)
            if not chunk:
                break
            self._data += chunk
        end = self._data.find(b"\n") + 1 or len(self._data)
        line = bytes(self._data[:end])
        del self._data[:end]
        return line


def exchange(path: Path, line: bytes, *, connect: float, answer: float) -> bytes:
    """Connect to ``path``, write ``line`` and read the one answer line; raises :class:`OSError`.

    ``connect`` and ``answer`` are the seconds allowed to connect and then to be answered.
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(connect)
        connection.connect(str(path))
        connection.settimeout(answer)
        connection.sendall(line if line.endswith(b"\n") else line + b"\n")
        return read_line(connection)
