"""Who may use the monitor: the token, the page's own origin, the loopback Host; on every route.

The monitor is served for real on a loopback port (no browser here: raw HTTP requests, each
header as the test writes it). Every route of the app, with every method it takes, is asked
without the token, with a wrong one, from another origin and under a Host that is not the
loopback address: each is refused, 403, and nothing is journaled.
"""

from __future__ import annotations

import http.client
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Mount, Route

from flume.web import security
from flume.web.monitor import key_of
from tests.integration.agents_kit import wait_for
from tests.integration.places_kit import launch_place, repository

PLACE = "fix--guarded"


def ask(
    served: Any,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    body: str = "",
) -> http.client.HTTPResponse:
    """One request to the served monitor, its headers exactly these (Host too); the answer."""
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
    given = {"Host": f"127.0.0.1:{served.port}", **(headers or {})}
    connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for name, value in given.items():
        connection.putheader(name, value)
    data = body.encode()
    if method == "POST":
        connection.putheader("Content-Type", "application/x-www-form-urlencoded")
        connection.putheader("Content-Length", str(len(data)))
    connection.endheaders(data if method == "POST" else None)
    answer = connection.getresponse()
    answer.read() if path != "/stream" or answer.status != 200 else None
    connection.close()
    return answer


def routes(served: Any, address: str) -> list[tuple[str, str]]:
    """Every route of the app, each as (method, a path it answers), ``address`` for a place's."""
    found: list[tuple[str, str]] = []
    for route in served.server.config.app.app.routes:
        if isinstance(route, Mount):
            found.append(("GET", f"{route.path}/monitor.js"))
            continue
        assert isinstance(route, Route)
        digest, place = address.split("/")
        path = (
            route.path.replace("{digest}", digest)
            .replace("{place}", place)
            .replace("{verb}", "approve")
        )
        found.extend(
            (method, path) for method in sorted(route.methods or {"GET"}) if method != "HEAD"
        )
    return found


def cookie(served: Any) -> dict[str, str]:
    """The header a browser sends once it opened the token's URL."""
    return {"Cookie": f"{security.COOKIE}={served.token}"}


@pytest.fixture
def address(host: Path, monitored: Any) -> str:
    """A place on the monitored host (launched, not carried: no supervisor runs)."""
    repo = repository(host / "repo")
    launch_place(repo, "guarded")
    found = key_of(str(repo.resolve()), PLACE)
    wait_for(lambda: monitored.monitor.find(found) is not None, 15, "the monitor to follow it")
    return found


def test_every_route_refuses_a_request_without_the_token(monitored: Any, address: str) -> None:
    """No token, a wrong token in the URL or the cookie: 403 on every route and method."""
    every = routes(monitored, address)
    assert len(every) >= 9
    for method, path in every:
        for headers, query in (
            ({}, ""),
            ({"Cookie": f"{security.COOKIE}=not-the-token"}, ""),
            ({}, "?token=not-the-token"),
        ):
            answer = ask(monitored, method, path + query, headers=headers)
            assert answer.status == 403, (method, path, headers, query)


def test_the_token_s_url_sets_a_strict_cookie_and_every_route_then_answers(
    monitored: Any, address: str
) -> None:
    """The URL printed: a cookie HttpOnly and SameSite=Strict, and the page again without it."""
    entered = ask(monitored, "GET", f"/?token={monitored.token}")
    assert entered.status == 303
    assert entered.getheader("location") == "/"
    set_cookie = entered.getheader("set-cookie") or ""
    assert set_cookie.startswith(f"{security.COOKIE}={monitored.token};")
    assert "HttpOnly" in set_cookie
    assert "SameSite=Strict" in set_cookie
    for method, path in routes(monitored, address):
        if method == "POST" or path == "/stream":
            continue
        answer = ask(monitored, method, path, headers=cookie(monitored))
        assert answer.status == 200, (method, path, answer.status)
        assert (
            answer.getheader("content-security-policy")
            == security.HEADERS["content-security-policy"]
        )
        assert answer.getheader("x-frame-options") == "DENY"


def test_a_post_from_another_origin_or_none_is_refused(monitored: Any, address: str) -> None:
    """With the token's cookie: another Origin, none at all, or no token in the form: 403."""
    path = f"/p/{address}/do/approve"
    form = f"{security.FIELD}={monitored.token}"
    own = f"http://127.0.0.1:{monitored.port}"
    refused = [
        ({"Origin": "http://evil.example"}, form),
        ({"Origin": f"http://127.0.0.1:{monitored.port + 1}"}, form),
        ({"Origin": "null"}, form),
        ({"Referer": "http://evil.example/page"}, form),
        ({}, form),
        ({"Origin": own}, ""),
        ({"Origin": own}, f"{security.FIELD}=not-the-token"),
    ]
    for headers, body in refused:
        answer = ask(monitored, "POST", path, headers={**cookie(monitored), **headers}, body=body)
        assert answer.status == 403, (headers, body)
    taken = ask(monitored, "POST", path, headers={**cookie(monitored), "Origin": own}, body=form)
    assert taken.status == 303  # refused by the rules (nothing waits on approve), said on the page
    by_referer = {**cookie(monitored), "Referer": f"{own}/p/{address}"}
    assert ask(monitored, "POST", path, headers=by_referer, body=form).status == 303


@pytest.mark.parametrize(
    "named",
    [
        "evil.example",
        "evil.example:{port}",
        "127.0.0.1.nip.io:{port}",
        "localhost.evil.example:{port}",
        "127.0.0.2:{port}",
        "127.0.0.1:{other}",
        "",
    ],
)
def test_a_host_header_not_the_loopback_is_refused(
    monitored: Any, address: str, named: str
) -> None:
    """DNS rebinding: another name (or port) in Host is refused, the token's cookie or not."""
    host = named.format(port=monitored.port, other=monitored.port + 1)
    for method, path in routes(monitored, address):
        headers = {**cookie(monitored), "Host": host, "Origin": f"http://{host}"}
        body = f"{security.FIELD}={monitored.token}"
        answer = ask(monitored, method, path, headers=headers, body=body)
        assert answer.status == 403, (host, method, path)


def test_the_loopback_names_are_each_taken(monitored: Any) -> None:
    """127.0.0.1, localhost and [::1], on the monitor's port, are its own."""
    for name in ("127.0.0.1", "localhost", "[::1]"):
        host = {"Host": f"{name}:{monitored.port}"}
        answer = ask(monitored, "GET", "/", headers={**cookie(monitored), **host})
        assert answer.status == 200, name


def test_the_host_check_by_itself() -> None:
    """security.host_refused: a loopback name on its port passes; anything else says why."""
    assert security.host_refused("127.0.0.1:8000", 8000) is None
    assert security.host_refused("localhost", 8000) is None
    assert security.host_refused("[::1]:8000", 8000) is None
    assert "loopback" in (security.host_refused("evil.example:8000", 8000) or "")
    assert "another port" in (security.host_refused("127.0.0.1:9", 8000) or "")
    assert "no Host" in (security.host_refused(None, 8000) or "")
