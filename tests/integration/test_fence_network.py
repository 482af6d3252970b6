"""A fence's network: its agent's endpoint reached through flume's warden, and nothing else.

The fence runs in a network namespace of its own (loopback alone). An endpoint on the host's
loopback is forwarded at the same port inside; any other is reached through the warden's HTTP
``CONNECT`` proxy (``HTTPS_PROXY`` inside), which takes only the endpoint's host and port. Here a
real fence (bubblewrap, the warden, the check inside) runs a Python client against echo servers
on the host: the endpoints answer, and every other host, port or request is refused, with the
servers outside counting what reached them.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from flume.core.ids import SessionId
from flume.shell.agents import fencewarden, sandbox
from flume.shell.agents.sandbox import Endpoint, Needs
from flume.shell.store import places
from tests import shared
from tests.integration.places_kit import repository, run_git

#: flume runs here in processes of its own (the warden, bubblewrap): the second pass.
pytestmark = pytest.mark.processes


class Echo:
    """A server on the host that answers each line with ``echo: <line>`` and counts connections."""

    def __init__(self, host: str) -> None:
        self.hits = 0
        self.socket = socket.create_server((host, 0))
        self.port = self.socket.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.hits += 1
            with connection:
                data = connection.recv(1024)
                connection.sendall(b"echo: " + data)

    def close(self) -> None:
        """Stop serving."""
        self.socket.close()


def _outside_address() -> str | None:
    """An address of this host that is not loopback (the proxy's case), if it has one."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: it only picks a route
        found = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if found.startswith("127.") else found


CLIENT = """\
import socket, sys
def ask(port, line):
    try:
        s = socket.create_connection(("127.0.0.1", port), 5)
        s.sendall(line)
        return s.recv(1024).decode(errors="replace").strip()
    except OSError as error:
        return f"refused: {error}"
for each in sys.argv[1:]:
    port, _, line = each.partition(":")
    print(repr(ask(int(port), line.encode().decode("unicode_escape").encode())))
"""


def _fenced_run(tmp_path: Path, needs: Needs, asks: list[str]) -> list[str]:
    """Run the client in a real fence with ``needs``; what it printed for each ask."""
    repo = repository(tmp_path / "repo")
    worktree = repo / "places" / "sb--net"
    run_git(repo, "worktree", "add", "-q", "-b", "sb/net", str(worktree))
    place = SimpleNamespace(
        path=str(worktree), board="", branch="sb/net", launch=SimpleNamespace(base="main")
    )
    session = SessionId("fence-network-test")
    fence = sandbox.fence_of(place, session, places.state_dir() / "agents" / "net.inbox")  # type: ignore[arg-type]
    assert fence is not None
    client = worktree / "client.py"
    client.write_text(CLIENT, encoding="utf-8")
    argv = sandbox.agent_command(
        [sys.executable, str(client), *asks], fence, needs, tmp_path / "home"
    )
    ran = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)  # noqa: S603
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.splitlines()


def test_a_loopback_endpoint_is_forwarded_and_no_other_port_is_reached(
    tmp_path: Path, host: Path
) -> None:
    """The endpoint's port answers inside; another server on the host's loopback is not reached."""
    del host
    shared.sandbox_programs()
    model, other = Echo("127.0.0.1"), Echo("127.0.0.1")
    try:
        needs = Needs(endpoints=(Endpoint(host="127.0.0.1", port=model.port),))
        said = _fenced_run(tmp_path, needs, [f"{model.port}:hello", f"{other.port}:hello"])
        assert said[0] == repr("echo: hello")
        assert said[1].startswith("'refused")
        assert (model.hits, other.hits) == (1, 0)
    finally:
        model.close()
        other.close()


def test_an_endpoint_elsewhere_is_reached_only_through_connect_to_it(
    tmp_path: Path, host: Path
) -> None:
    """Through the proxy: CONNECT to the endpoint tunnels; to anything else, or a GET, is 403."""
    del host
    shared.sandbox_programs()
    address = _outside_address()
    if address is None:
        pytest.skip("this host has no address but loopback: no endpoint elsewhere to reach")
    model, other = Echo(address), Echo(address)
    try:
        needs = Needs(endpoints=(Endpoint(host=address, port=model.port),))
        port = sandbox.PROXY_PORT
        said = _fenced_run(
            tmp_path,
            needs,
            [
                f"{port}:CONNECT {address}:{model.port} HTTP/1.1\\r\\n\\r\\nhello",
                f"{port}:CONNECT {address}:{other.port} HTTP/1.1\\r\\n\\r\\n",
                f"{port}:GET http://{address}:{model.port}/ HTTP/1.1\\r\\n\\r\\n",
                f"{model.port}:hello",
            ],
        )
        assert "200 Connection established" in said[0], said
        assert "403 Forbidden" in said[1], said
        assert "403 Forbidden" in said[2], said
        assert said[3].startswith("'refused"), said
        assert (model.hits, other.hits) == (1, 0)
    finally:
        model.close()
        other.close()


def test_the_proxy_reads_only_a_connect_to_an_allowed_endpoint() -> None:
    """The warden's request reading: a CONNECT's host and port, nothing else taken as one."""
    assert fencewarden.requested(b"CONNECT api.example.com:443 HTTP/1.1\r\n\r\n") == (
        "api.example.com",
        443,
    )
    assert fencewarden.requested(b"CONNECT [::1]:8080 HTTP/1.1\r\n\r\n") == ("::1", 8080)
    assert fencewarden.requested(b"GET http://api.example.com/ HTTP/1.1\r\n\r\n") is None
    assert fencewarden.requested(b"CONNECT api.example.com HTTP/1.1\r\n\r\n") is None
    assert fencewarden.requested(b"CONNECT a:b:c HTTP/1.1\r\n\r\n") is None
