"""``flume monitor``: the monitor served on this machine's loopback address, until interrupted.

The socket is bound here, to 127.0.0.1 alone, before anything is served, so the port is known
(a port of 0 lets the system choose one) and no other address is ever listened on. The journals
are read once before the URL is said, so the first page shows every place at once. uvicorn
serves the app; an interrupt (Ctrl-C) ends it, and open pages' feeds are let go within a second.
"""

from __future__ import annotations

import errno
import socket
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import uvicorn

from flume import api
from flume.core.errors import UsageError, refused
from flume.web import security
from flume.web.app import app
from flume.web.monitor import Monitor

#: The address the monitor listens on, and nothing else.
LOOPBACK = "127.0.0.1"
#: The highest port there is.
_PORTS = 65535


def bound(port: int) -> socket.socket:
    """A socket listening on the loopback address at ``port`` (0: one the system chooses).

    A port taken, or not this user's to take, is refused (exit status 1) naming it.
    """
    made = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    made.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        made.bind((LOOPBACK, port))
    except OSError as error:
        made.close()
        why = "is in use" if error.errno == errno.EADDRINUSE else f"cannot be taken ({error})"
        raise refused(
            "port",
            f"port {port} of {LOOPBACK} {why}",
            "give another with --port, or leave it out and the system chooses one",
        ) from error
    made.listen(128)
    return made


class _Server(uvicorn.Server):
    """uvicorn's server, which ends the open pages' feeds first when it is asked to exit."""

    def __init__(self, config: uvicorn.Config, monitor: Monitor) -> None:
        super().__init__(config)
        self.monitor = monitor

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Ctrl-C or SIGTERM: the feeds end, then the server as uvicorn ends it."""
        self.monitor.close()
        super().handle_exit(sig, frame)


class Served:
    """The monitor ready to serve: its URL (with its token), and the server that serves it."""

    def __init__(
        self, *, port: int = 0, repository: str | Path | None = None, interval: float = 0.25
    ) -> None:
        if not 0 <= port <= _PORTS:
            raise UsageError.one("--port", f"{port} is not a port", "give one from 1 to 65535")
        follower = api.follower(repository=repository)
        self.socket = bound(port)
        self.port: int = self.socket.getsockname()[1]
        self.token = security.new_token()
        self.monitor = Monitor(follower, interval=interval)
        self.monitor.known = api.supervised()
        self.monitor.poll()
        config = uvicorn.Config(
            app(self.monitor, self.token, lambda: self.port),
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=1,
            server_header=False,
        )
        self.server = _Server(config, self.monitor)
        self.url = f"http://{LOOPBACK}:{self.port}/?token={self.token}"
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        """Serve here until interrupted."""
        self.server.run(sockets=[self.socket])

    def start(self) -> None:
        """Serve in a thread of its own (:meth:`stop` ends it)."""
        self._thread = threading.Thread(target=self.run, name="flume-monitor", daemon=True)
        self._thread.start()

    def stop(self, within: float = 5.0) -> None:
        """End the server started by :meth:`start`, waiting up to ``within`` seconds."""
        self.monitor.close()
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(within)
        self.socket.close()


def serve(
    *,
    port: int = 0,
    repository: str | Path | None = None,
    open_browser: bool = False,
    say: Callable[[str], None] = print,
    interval: float = 0.25,
) -> None:
    """Serve the monitor until interrupted; ``say`` hears the URL to open, with its token."""
    served = Served(port=port, repository=repository, interval=interval)
    say(served.url)
    if open_browser:
        webbrowser.open(served.url)
    served.run()
