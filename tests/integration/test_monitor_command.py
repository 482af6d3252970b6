"""``flume monitor`` as a person runs it: the URL it prints, a port taken, Ctrl-C.

Run as its own process, in a host of the test's own; its page is fetched as a browser would
(the URL's token, then the cookie). The pages themselves are test_monitor_browser.py's.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.integration.agents_kit import wait_for
from tests.integration.places_kit import flume, launch_place, repository

#: flume runs here in processes of its own, which coverage does not see.
pytestmark = pytest.mark.processes

PRINTED = re.compile(r"flume monitor: open (http://127\.0\.0\.1:(\d+)/\?token=\S+)")


def test_the_monitor_prints_its_url_serves_every_place_and_ends_on_ctrl_c(
    host: Path, tmp_path: Path
) -> None:
    """One URL on 127.0.0.1 with a token; the page lists the host's place; SIGINT ends it, 0."""
    repo = repository(host / "repo")
    launch_place(repo, "watched")
    output = tmp_path / "monitor.txt"
    with output.open("w") as sink:
        started = subprocess.Popen(
            [sys.executable, "-m", "flume", "monitor"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(os.environ),
        )
    try:
        wait_for(lambda: PRINTED.search(output.read_text()), 30, "the monitor's URL")
        printed = PRINTED.search(output.read_text())
        assert printed is not None
        url = printed.group(1)
        cookies = urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        with urllib.request.build_opener(cookies).open(url, timeout=10) as answer:
            page = answer.read().decode()
        assert ">fix--watched</a>" in page
        started.send_signal(signal.SIGINT)
        status = started.wait(timeout=30)
    finally:
        if started.poll() is None:
            started.kill()
    assert status == 0, output.read_text()
    assert "Traceback" not in output.read_text()
    assert "ERROR" not in output.read_text()


def test_a_port_taken_is_refused_naming_it(host: Path) -> None:
    """--port of a port in use: exit 1, the port and the way out named; a bad one: exit 2."""
    del host
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        ran = flume("monitor", "--port", str(port))
        assert ran.returncode == 1, ran.stdout + ran.stderr
        assert f"port {port} of 127.0.0.1 is in use" in ran.stderr
        assert "--port" in ran.stderr
    finally:
        taken.close()
    bad = flume("monitor", "--port", "70000")
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert "70000 is not a port" in bad.stderr
