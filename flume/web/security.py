"""Who may use the monitor: this machine's loopback, carrying the token, same origin for changes.

Theory of operation. ``flume monitor`` binds the loopback address only and prints one URL with a
random token (as Jupyter does). Every request must carry that token: in the URL the first time
(the page then sets it as a cookie, ``HttpOnly`` and ``SameSite=Strict``, and sends the browser
on without it in the address bar) and in the cookie after. What changes anything is a POST, and
a POST must also carry the token in its form (a page of another site cannot read it) and come
from the monitor's own origin (``Origin``, or else ``Referer``): no cross-site request forgery.
A ``Host`` header that is not the loopback address the monitor listens on is refused, whatever
else the request carries: a name of another site resolved to 127.0.0.1 (DNS rebinding) reaches
nothing. Every refusal is a 403 that says which of these it failed, and nothing is done.

The page's own defences go with every answer (:data:`HEADERS`): a content security policy that
runs only the monitor's own script and style (so text shown from a brief, a tell or an agent's
transcript can never run as code, even if it were ever written out unescaped), no framing, no
sniffing, and nothing cached.
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import urlsplit

#: The cookie the token is kept in once the URL with it was opened.
COOKIE = "flume_monitor"
#: The form field a POST carries the token in.
FIELD = "token"
#: The names of this machine's loopback address a Host header may use.
LOOPBACK = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
#: What every answer carries.
HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def new_token() -> str:
    """A token no one can guess: 32 random bytes, URL-safe."""
    return secrets.token_urlsafe(32)


def is_token(given: str | None, token: str) -> bool:
    """``given`` is the token, compared in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def host_refused(host: str | None, port: int) -> str | None:
    """Why a request's ``Host`` header is refused: not the loopback address and port; None: not.

    DNS rebinding: a page of another site whose name was made to resolve to 127.0.0.1 sends its
    own name in the Host header, and is refused here.
    """
    if not host:
        return "the request names no Host"
    name, _, given = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    if not name:
        name, given = host, ""
    if name not in LOOPBACK:
        return f"the Host {host!r} is not this machine's loopback address"
    if given and given != str(port):
        return f"the Host {host!r} names another port than {port}"
    return None


def origins(port: int) -> frozenset[str]:
    """The monitor's own origins: its loopback names on its port."""
    return frozenset(f"http://{name}:{port}" for name in ("127.0.0.1", "localhost", "[::1]"))


def origin_refused(origin: str | None, referer: str | None, port: int) -> str | None:
    """Why a POST's origin is refused: another site's, or none said; None: the monitor's own."""
    own = origins(port)
    if origin is not None and origin != "null":
        return None if origin in own else f"it comes from {origin!r}, not the monitor's page"
    if referer:
        parts = urlsplit(referer)
        said = f"{parts.scheme}://{parts.netloc}"
        return None if said in own else f"it comes from {said!r}, not the monitor's page"
    return "it says no origin: a change is taken only from the monitor's own page"
