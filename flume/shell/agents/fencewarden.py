"""The program a sandboxed agent's pane runs outside the fence: the fence's only way out.

Run as ``python -I fencewarden.py [--keep NAME | --keep PREFIX*]... [--set NAME=VALUE]...
[--forward SOCKET=HOST:PORT]... [--proxy SOCKET=HOST:PORT,...] -- BWRAP-ARGV...``
(:mod:`flume.shell.agents.sandbox`). Standard library only. It listens on each Unix socket named
(made ``0600`` in the session's own folder, which the fence shows the agent), starts the fence
(bubblewrap) as its child on the pane's terminal, with an environment of the variables kept of
its own and those set (nothing else: no key of the caller's the agent does not use), and exits
with its status once it ends; its sockets go with it.

- ``--forward SOCKET=HOST:PORT``: every connection to ``SOCKET`` is carried to ``HOST:PORT``
  and nowhere else (the agent's model on the host's loopback, which the fence's own loopback
  cannot reach).
- ``--proxy SOCKET=HOST:PORT,...``: every connection to ``SOCKET`` is an HTTP proxy's: it must
  open with ``CONNECT HOST:PORT``, one of those named, else it is answered ``403`` and closed.
  Nothing is resolved or reached for the agent but what flume named (the agent's model's
  endpoint): "the network limited to what the agent needs, through a proxy that refuses
  everything else".

The fence's inside (:mod:`flume.shell.agents.fenceinit`) listens on the fence's loopback and
carries each connection here.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping

#: Bytes read at once.
_CHUNK = 65536
#: The longest a proxy request's head may be.
_MOST_HEAD = 8192
#: Seconds a connection to an allowed endpoint may take to open.
_CONNECT_SECONDS = 30.0


def _splice(one: socket.socket, other: socket.socket) -> None:
    try:
        while data := one.recv(_CHUNK):
            other.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        other.shutdown(socket.SHUT_WR)


def _both_ways(inward: socket.socket, outward: socket.socket) -> None:
    with outward:
        back = threading.Thread(target=_splice, args=(outward, inward), daemon=True)
        back.start()
        _splice(inward, outward)
        back.join()


def _endpoint(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host.strip("[]").lower(), int(port)


def forward(connection: socket.socket, endpoint: tuple[str, int]) -> None:
    """Carry ``connection`` to ``endpoint``, both ways."""
    with connection:
        try:
            outward = socket.create_connection(endpoint, timeout=_CONNECT_SECONDS)
        except OSError:
            return
        outward.settimeout(None)
        _both_ways(connection, outward)


def requested(head: bytes) -> tuple[str, int] | None:
    """The endpoint a proxy request's head asks to ``CONNECT`` to; None for any other request."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split()
    if len(parts) != 3 or parts[0] != "CONNECT" or not parts[2].startswith("HTTP/"):
        return None
    try:
        return _endpoint(parts[1])
    except ValueError:
        return None


def proxy(connection: socket.socket, allowed: frozenset[tuple[str, int]]) -> None:
    """One proxy connection: a ``CONNECT`` to an allowed endpoint is carried; the rest refused."""
    with connection:
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < _MOST_HEAD:
                data = connection.recv(_CHUNK)
                if not data:
                    return
                head += data
        except OSError:
            return
        asked = requested(head)
        if asked is None or asked not in allowed:
            what = "not a CONNECT" if asked is None else f"{asked[0]}:{asked[1]}"
            said = f"flume's sandbox reaches only its agent's endpoint; refused: {what}\r\n"
            with contextlib.suppress(OSError):
                connection.sendall(
                    b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
                    + f"Content-Length: {len(said)}\r\nConnection: close\r\n\r\n{said}".encode()
                )
            return
        try:
            outward = socket.create_connection(asked, timeout=_CONNECT_SECONDS)
        except OSError as error:
            with contextlib.suppress(OSError):
                connection.sendall(f"HTTP/1.1 502 Bad Gateway\r\n\r\n{error}\r\n".encode())
            return
        outward.settimeout(None)
        rest = head.split(b"\r\n\r\n", 1)[1]
        try:
            connection.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                outward.sendall(rest)
        except OSError:
            outward.close()
            return
        _both_ways(connection, outward)


def serve(address: str, handle: Callable[[socket.socket], None]) -> socket.socket:
    """Listen on the Unix socket ``address`` (this user's alone), each connection handled.

    Bound by its name from its folder: a socket's whole path may hold 107 bytes at most, and a
    session's folder in a deep state folder can be longer. No thread runs yet to mind the
    folder changed meanwhile.
    """
    with contextlib.suppress(FileNotFoundError):
        os.unlink(address)  # noqa: PTH108 (no pathlib: a fast start)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mask = os.umask(0o177)
    here = os.getcwd()  # noqa: PTH109 (no pathlib: a fast start)
    folder, _, name = address.rpartition("/")
    try:
        os.chdir(folder or "/")
        listener.bind(name)
    finally:
        os.chdir(here)
        os.umask(mask)
    listener.listen(64)

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener


def kept_environment(
    given: Mapping[str, str],
    names: Iterable[str],
    prefixes: Iterable[str],
    settings: Mapping[str, str],
) -> dict[str, str]:
    """The variables of ``given`` named (or of a prefix named), and ``settings`` over them."""
    named, starts = frozenset(names), tuple(prefixes)
    kept = {key: value for key, value in given.items() if key in named or key.startswith(starts)}
    return {**kept, **settings}


def main(arguments: list[str]) -> int:  # noqa: C901 (one option at a time)
    """Serve the fence's sockets while the fence runs; its exit status."""
    if "--" not in arguments:
        sys.stderr.write("usage: fencewarden.py [--forward S=H:P]... [--proxy S=H:P,...] -- ...\n")
        return 2
    split = arguments.index("--")
    options, argv = arguments[:split], arguments[split + 1 :]
    # Every socket is bound (each from its folder) before any thread starts.
    listeners: list[tuple[str, socket.socket]] = []
    names: list[str] = []
    prefixes: list[str] = []
    settings: dict[str, str] = {}
    for name, value in zip(options[::2], options[1::2], strict=True):
        address, _, target = value.partition("=")
        handle: Callable[[socket.socket], None]
        if name == "--keep":
            (prefixes if value.endswith("*") else names).append(value.removesuffix("*"))
        elif name == "--set":
            settings[address] = target
        elif name == "--forward":
            handle = functools.partial(forward, endpoint=_endpoint(target))
            listeners.append((address, serve(address, handle)))
        elif name == "--proxy":
            allowed = frozenset(_endpoint(each) for each in target.split(",") if each)
            handle = functools.partial(proxy, allowed=allowed)
            listeners.append((address, serve(address, handle)))
        else:
            sys.stderr.write(f"fencewarden.py: unknown option {name}\n")
            return 2
    try:
        env = kept_environment(os.environ, names, prefixes, settings)
        child = subprocess.Popen(argv, env=env)  # noqa: S603 (flume's own argument list)
    except OSError as error:
        sys.stderr.write(f"flume: cannot start {argv[0]}: {error}\n")
        return 127

    def passed_on(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, passed_on)
    status = child.wait()
    for address, listener in listeners:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(address)  # noqa: PTH108 (no pathlib: a fast start)
    return 128 - status if status < 0 else status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
