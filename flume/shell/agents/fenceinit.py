"""The first program inside a sandboxed step's fence: it checks the fence, then runs the agent.

Run by bubblewrap as ``python -I fenceinit.py [--forward PORT=SOCKET]... [--proxy
PORT=SOCKET] -- ARGV...`` (:mod:`flume.shell.agents.sandbox`). Standard library only, and it
imports nothing of flume's: it runs under the agent's own privileges, inside.

1. **No capability.** It reads its own ``CapEff`` and refuses to run anything unless it is 0:
   a fence whose program keeps a capability (bubblewrap run as root without ``--cap-drop``)
   could remount what it was shown read-only.
2. **Its own network.** The fence has a network of its own, loopback alone. For each
   ``--forward PORT=SOCKET`` it listens on ``127.0.0.1:PORT`` and carries each connection to the
   Unix socket ``SOCKET``, where flume's warden outside connects it to the one endpoint it names
   for that port (an agent's model on the host's loopback). ``--proxy`` is the same for the
   port the agent's ``HTTPS_PROXY`` names: the warden there takes only a ``CONNECT`` to the
   hosts it allows.
3. **A terminal of its own.** bubblewrap's ``--new-session`` leaves the pane's terminal no
   longer the fence's controlling one, so nothing inside can push keys into it (``TIOCSTI``).
   A terminal program still wants one: the agent gets a new pseudo-terminal as its controlling
   terminal, and this program carries bytes between it and the pane's, raw, and the pane's size
   to it (looked at every quarter second: no ``SIGWINCH`` reaches a program in another
   session). With no terminal (a gate's test command), the program runs on the streams given.

It exits with the agent's status (128 + the signal's number when a signal ended it).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import socket
import struct
import sys
import termios
import threading
import tty

#: How often the pane's size is looked at, in seconds.
_SIZE_SECONDS = 0.25
#: Bytes read at once.
_CHUNK = 65536


def capabilities() -> int | None:
    """This process's effective capabilities (``CapEff``), or None when they cannot be read."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:  # noqa: PTH123 (a fast start)
            for line in status:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        return None
    return None


def _splice(one: socket.socket, other: socket.socket) -> None:
    """Carry bytes from ``one`` to ``other`` until ``one`` ends; then end ``other``'s writing."""
    try:
        while data := one.recv(_CHUNK):
            other.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        other.shutdown(socket.SHUT_WR)


def _carry(connection: socket.socket, address: str) -> None:
    """One connection carried to the Unix socket ``address``, both ways."""
    with connection:
        try:
            outward = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            outward.connect(address)
        except OSError:
            return
        with outward:
            back = threading.Thread(target=_splice, args=(outward, connection), daemon=True)
            back.start()
            _splice(connection, outward)
            back.join()


def _listen(port: int, address: str) -> None:
    """Listen on ``127.0.0.1:port`` for good, each connection carried to ``address``."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_carry, args=(connection, address), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()


def _size(descriptor: int) -> bytes | None:
    try:
        return fcntl.ioctl(descriptor, termios.TIOCGWINSZ, struct.pack("HHHH", 0, 0, 0, 0))
    except OSError:
        return None


def _status(waited: int) -> int:
    if os.WIFSIGNALED(waited):
        return 128 + os.WTERMSIG(waited)
    return os.WEXITSTATUS(waited)


def _exec(argv: list[str]) -> None:
    try:
        os.execvp(argv[0], argv)  # noqa: S606 (an argument list, no shell)
    except OSError as error:
        sys.stderr.write(f"flume: cannot start {argv[0]}: {error}\n")
    os._exit(127)


def _start(argv: list[str], terminal: bool) -> tuple[int, int | None]:
    """Start ``argv``: on a pseudo-terminal of its own (its main end returned) or on our streams.

    Forked before any thread of this program runs.
    """
    if not terminal:
        pid = os.fork()
        if pid == 0:
            _exec(argv)
        return pid, None
    main, inner = os.openpty()
    size = _size(0)
    if size is not None:
        fcntl.ioctl(main, termios.TIOCSWINSZ, size)
    pid = os.fork()
    if pid == 0:
        os.close(main)
        os.setsid()
        fcntl.ioctl(inner, termios.TIOCSCTTY, 0)
        for stream in (0, 1, 2):
            os.dup2(inner, stream)
        if inner > 2:
            os.close(inner)
        _exec(argv)
    os.close(inner)
    return pid, main


def _carry_terminal(main: int, pid: int) -> int | None:
    """The pane's terminal raw while bytes are carried to and from the agent's; its wait status.

    None when the agent's terminal ended before the agent was seen to end.
    """
    saved = termios.tcgetattr(0)
    tty.setraw(0)
    try:
        return _relay(0, main, pid)
    finally:
        termios.tcsetattr(0, termios.TCSAFLUSH, saved)
        os.close(main)


def _relay(outer: int, main: int, pid: int) -> int | None:  # noqa: C901 (one loop, both ways)
    """Bytes both ways until the agent or its terminal ends; the pane's size carried as it changes.

    The agent's wait status once it ended (what it wrote last carried first), else None.
    """
    size = _size(outer)
    while True:
        ended, waited = os.waitpid(pid, os.WNOHANG)
        if ended:
            _drain(main)
            return waited
        try:
            ready, _, _ = select.select([outer, main], [], [], _SIZE_SECONDS)
        except InterruptedError:
            continue
        now = _size(outer)
        if now is not None and now != size:
            size = now
            with contextlib.suppress(OSError):
                fcntl.ioctl(main, termios.TIOCSWINSZ, size)
        if main in ready:
            try:
                data = os.read(main, _CHUNK)
            except OSError:
                return None  # the agent's terminal ended: it exited
            if not data:
                return None
            _write(1, data)
        if outer in ready:
            try:
                data = os.read(outer, _CHUNK)
            except OSError:
                return None  # the pane went
            if not data:
                return None
            _write(main, data)


def _drain(main: int) -> None:
    """What the agent's terminal still holds, to the pane."""
    while select.select([main], [], [], 0)[0]:
        try:
            data = os.read(main, _CHUNK)
        except OSError:
            return
        if not data:
            return
        _write(1, data)


def _write(descriptor: int, data: bytes) -> None:
    while data:
        try:
            data = data[os.write(descriptor, data) :]
        except OSError:
            return


def main(arguments: list[str]) -> int:
    """Check the fence, open its ports, run the agent; its exit status."""
    if "--" not in arguments:
        sys.stderr.write("usage: fenceinit.py [--forward PORT=SOCKET]... -- ARGV...\n")
        return 2
    split = arguments.index("--")
    options, argv = arguments[:split], arguments[split + 1 :]
    held = capabilities()
    if held != 0:
        said = "cannot be read" if held is None else f"are {held:016x}"
        sys.stderr.write(
            f"flume: this sandbox's capabilities {said}, not none: the agent is not started\n"
        )
        return 126
    ports: list[tuple[int, str]] = []
    for name, value in zip(options[::2], options[1::2], strict=True):
        if name not in {"--forward", "--proxy"}:
            sys.stderr.write(f"fenceinit.py: unknown option {name}\n")
            return 2
        number, _, address = value.partition("=")
        ports.append((int(number), address))
    if not argv:
        return 0
    pid, main = _start(argv, os.isatty(0))
    for port, address in ports:
        _listen(port, address)
    waited = _carry_terminal(main, pid) if main is not None else None
    if waited is None:
        _, waited = os.waitpid(pid, 0)
    return _status(waited)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
