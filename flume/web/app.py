"""The monitor's ASGI app: its pages, its live feed, and its forms, behind the token.

Theory of operation. Pages are drawn on the server from the view model (:mod:`flume.views`,
which ``flume status`` and ``flume watch`` render too) with Jinja2 templates that escape every
value, and a small script of the monitor's own keeps an open page live: it listens to the
server-sent events of :func:`stream` (one poll of the journals for every page, :mod:`.monitor`)
and fetches the page's live parts again when its place moved. A form posts one of a person's
commands, carried out by :func:`flume.web.controls.perform` through ``flume.api``, as the CLI's
is; its answer, or its refusal word for word, is shown on the page it came from.

Every request passes :class:`Guard` first (:mod:`.security`): the loopback Host, the token,
and for a POST the monitor's own origin and the token in its form.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from flume import api, views
from flume.core.errors import UsageError
from flume.web import controls, security
from flume.web.monitor import Monitor, key_of

_HERE = Path(__file__).resolve().parent
#: How many answers to forms are kept for the page they return to.
_SAID_KEPT = 200
#: Seconds between a live feed's keep-alive comments.
_KEEPALIVE = 15.0

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Guard:
    """Refuse, 403, every request not from this machine's loopback with the monitor's token.

    The first visit carries the token in its URL: the answer sets it as a cookie and sends the
    browser on to the same page without it. A POST must come from the monitor's own origin and
    carry the token in its form too (checked where the form is read, :func:`_form`).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        port: Callable[[], int],
        entered: Callable[[], None] = lambda: None,
    ) -> None:
        self.app = app
        self.token = token
        self.port = port
        #: Told each time the URL with the token is opened.
        self.entered = entered

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request, then pass it on with the monitor's headers on its answer."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]
        }
        port = self.port()
        refused = security.host_refused(headers.get("host"), port)
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = query.get("token", [None])[0]
        cookie = _cookie(headers.get("cookie", ""))
        if refused is None and not (
            security.is_token(given, self.token) or security.is_token(cookie, self.token)
        ):
            refused = (
                "the request carries no token of this monitor: open the URL flume monitor "
                "printed, with its token"
            )
        if refused is None and scope["method"] == "POST":
            refused = security.origin_refused(headers.get("origin"), headers.get("referer"), port)
        if refused is not None:
            await _refuse(refused, send)
            return
        if security.is_token(given, self.token) and scope["method"] == "GET":
            self.entered()
            await _enter(scope, query, self.token, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    *message.get("headers", []),
                    *((key.encode(), value.encode()) for key, value in security.HEADERS.items()),
                ]
            await send(message)

        await self.app(scope, receive, with_headers)


def _cookie(header: str) -> str | None:
    """The token's cookie among the request's cookies."""
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == security.COOKIE:
            return value
    return None


async def _refuse(why: str, send: Send) -> None:
    """A 403 saying why, as plain text: nothing of the monitor is shown."""
    body = f"flume monitor: refused: {why}\n".encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *((key.encode(), value.encode()) for key, value in security.HEADERS.items()),
    ]
    await send({"type": "http.response.start", "status": 403, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _enter(scope: Scope, query: dict[str, list[str]], token: str, send: Send) -> None:
    """The URL with the token opened: keep it as a cookie, and go on to the page without it."""
    rest = {key: values for key, values in query.items() if key != "token"}
    path = scope.get("path") or "/"
    target = path + (f"?{urlencode(rest, doseq=True)}" if rest else "")
    cookie = f"{security.COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
    headers = [
        (b"location", target.encode()),
        (b"set-cookie", cookie.encode()),
        (b"content-length", b"0"),
        *((key.encode(), value.encode()) for key, value in security.HEADERS.items()),
    ]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def templates() -> jinja2.Environment:
    """The pages' templates: every value escaped.

    A field a status leaves out (the form ``status --json`` prints omits what says nothing) is
    undefined there, and reads as nothing.
    """
    made = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    made.filters["duration"] = views.duration
    made.filters["when"] = lambda at: time.strftime("%H:%M:%S", time.localtime(at))
    made.globals["stage_cell"] = views.stage_cell
    made.globals["phase_cell"] = views.phase_cell
    made.globals["deliverable_cell"] = views.deliverable_cell
    made.globals["tasks_cell"] = views.tasks_cell
    return made


class Pages:
    """The monitor's routes, over one :class:`Monitor`."""

    def __init__(self, monitor: Monitor, token: str) -> None:
        self.monitor = monitor
        self.token = token
        self.env = templates()
        self.said: OrderedDict[str, tuple[bool, str]] = OrderedDict()

    def page(self, name: str, **values: Any) -> str:  # noqa: ANN401 (a template's values)
        """The template ``name`` drawn with ``values``, the token, the time and the events read.

        ``seen``: how many events the monitor had read when the page was drawn; its live feed
        starts after them.
        """
        template = self.env.get_template(name)
        return template.render(token=self.token, now=time.time(), seen=self.monitor.seen, **values)

    # --- the list of places -------------------------------------------------------------

    def _index_values(self) -> dict[str, Any]:
        found = self.monitor.views()
        now = time.time()
        groups = [
            (standing, [view for view in found if views.standing(view) is standing])
            for standing in views.ORDER
        ]
        return {
            "groups": groups,
            "notes": {view["address"]: views.notes(view, now) for view in found},
            "supervised": self.monitor.known,
        }

    async def index(self, request: Request) -> Response:
        """Every place on the host: those that need you, those at work, those done (folded)."""
        del request
        return HTMLResponse(self.page("index.html", **self._index_values()))

    async def index_live(self, request: Request) -> Response:
        """The index's live part, for the page's script to put in place."""
        del request
        values = self._index_values()
        html = self.env.get_template("_places.html").render(token=self.token, **values)
        return JSONResponse({"regions": {"places": html}})

    # --- a place ------------------------------------------------------------------------

    def _place(self, request: Request) -> Any:  # noqa: ANN401 (a Place, loaded with the rules)
        address = f"{request.path_params['digest']}/{request.path_params['place']}"
        found = self.monitor.find(address)
        if found is None:
            raise _NotFound(address)
        return found

    def _place_values(self, place: Any) -> dict[str, Any]:  # noqa: ANN401 (a Place)
        view = self.monitor.view(place)
        now = time.time()
        lanes = [self.monitor.view(each) for each in self.monitor.lanes_of(place)]
        by_place = {each["place"]: each["address"] for each in lanes}
        return {
            "view": view,
            "notes": views.notes(view, now),
            "controls": controls.controls_of(view),
            "lanes": lanes,
            "lane_addresses": by_place,
            "parent": key_of(place.launch.repository, place.launch.parent)
            if place.launch.parent
            else None,
        }

    async def place(self, request: Request) -> Response:
        """A place's page: its tree, budgets, pause and controls, events, board, chats, commits."""
        place = self._place(request)
        said = self.said.get(request.query_params.get("said", ""))
        events = self.monitor.events_of(place)
        board, commits = await asyncio.to_thread(_slow_facts, place)
        return HTMLResponse(
            self.page(
                "place.html",
                said=said,
                events=events,
                board=board,
                commits=commits,
                **self._place_values(place),
            )
        )

    async def place_live(self, request: Request) -> Response:
        """A place's live parts, for the page's script to put in place."""
        place = self._place(request)
        values = self._place_values(place)
        regions = {
            name: self.env.get_template(f"_{name}.html").render(token=self.token, **values)
            for name in ("ways", "state", "more")
        }
        return JSONResponse({"regions": regions})

    async def chat(self, request: Request) -> Response:
        """Each attempt's chat, as ``flume transcript`` reads it from the agent's own file."""
        place = self._place(request)
        view = self.monitor.view(place)
        try:
            chats = await asyncio.to_thread(
                api.transcript, place.launch.place, repository=place.launch.repository
            )
        except UsageError as error:
            chats, refusal = [], "; ".join(problem.render() for problem in error.problems)
        else:
            refusal = ""
        return HTMLResponse(self.page("chat.html", view=view, chats=chats, refusal=refusal))

    async def drop_page(self, request: Request) -> Response:
        """What dropping the place would keep and remove, to be confirmed."""
        place = self._place(request)
        view = self.monitor.view(place)
        outcome = await asyncio.to_thread(api.if_dropped, place)
        lanes = [self.monitor.view(each) for each in self.monitor.lanes_of(place)]
        running = [each for each in lanes if each["life"] in views.RUNNING]
        return HTMLResponse(self.page("drop.html", view=view, outcome=outcome, running=running))

    async def do(self, request: Request) -> Response:
        """Carry out a person's command through flume.api; back to the page with what it said."""
        place = self._place(request)
        form = await _form(request, self.token)
        if form is None:
            return PlainRefusal("the form carries no token of this monitor")
        verb = request.path_params["verb"]
        try:
            said = await asyncio.to_thread(
                controls.perform,
                verb,
                place.launch.place,
                Path(place.launch.repository),
                form,
            )
        except UsageError as error:
            words = "\n".join(f"flume: {problem.render()}" for problem in error.problems)
            kept = (False, f"{words}\n(exit status {error.exit_status})")
        else:
            kept = (True, said)
        number = secrets.token_urlsafe(8)
        self.said[number] = kept
        while len(self.said) > _SAID_KEPT:
            self.said.popitem(last=False)
        address = key_of(place.launch.repository, place.launch.place)
        return RedirectResponse(f"/p/{address}?said={number}#said", status_code=303)

    # --- the live feed ------------------------------------------------------------------

    async def stream(self, request: Request) -> Response:
        """Server-sent events: each event of every place (or of ``?place=``) as it is read.

        A ``supervisor`` event says the host's supervisor started or stopped answering.

        ``?after=N``: from the events after the first N the monitor read (the count the page
        was drawn at), so that none that came between the page and its feed is missed.
        """
        wanted = request.query_params.get("place", "")
        monitor = self.monitor
        after = request.query_params.get("after", "")
        start = int(after) if after.isascii() and after.isdigit() else monitor.seen

        async def feed() -> AsyncIterator[str]:
            seen = min(start, monitor.seen)
            known = monitor.known
            yield "retry: 1000\n\n"
            while not monitor.closing:
                now = await monitor.wait(seen, _KEEPALIVE)
                if monitor.known != known:
                    known = monitor.known
                    yield f"event: supervisor\ndata: {json.dumps({'answers': known})}\n\n"
                if now == seen:
                    yield ": alive\n\n"
                    continue
                for event in monitor.since(seen):
                    address = key_of(event.repository, event.place)
                    if wanted and address != wanted:
                        continue
                    said = {
                        "address": address,
                        "place": event.place,
                        "at": event.at,
                        "when": time.strftime("%H:%M:%S", time.localtime(event.at)),
                        "stage": event.key or event.stage,
                        "attempt": event.attempt,
                        "event": event.event.value,
                        "text": event.text,
                    }
                    yield f"event: flume\ndata: {json.dumps(said)}\n\n"
                seen = now

        return StreamingResponse(
            feed(), media_type="text/event-stream", headers={"x-accel-buffering": "no"}
        )


class _NotFound(Exception):  # noqa: N818 (what happened)
    """No place followed at this address."""


class PlainRefusal(Response):
    """A 403 saying why a form was refused, as plain text."""

    def __init__(self, why: str) -> None:
        super().__init__(
            f"flume monitor: refused: {why}\n", status_code=403, media_type="text/plain"
        )


def _slow_facts(place: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]] | None]:  # noqa: ANN401 (a Place)
    """What a place's page reads from disk and git: its board, its branch's commits."""
    return api.board_of(place), api.commits_of(place)


async def _form(request: Request, token: str) -> dict[str, str] | None:
    """A POST's form, its values as text; None unless it carries the monitor's token."""
    form = await request.form()
    values = {key: value for key, value in form.items() if isinstance(value, str)}
    if not security.is_token(values.get(security.FIELD), token):
        return None
    return values


def app(monitor: Monitor, token: str, port: Callable[[], int]) -> ASGIApp:
    """The monitor's app over ``monitor``, guarded by ``token`` on the loopback ``port``."""
    pages = Pages(monitor, token)

    async def missing(request: Request, error: Exception) -> Response:
        del request
        return HTMLResponse(pages.page("missing.html", what=str(error)), status_code=404)

    routes = [
        Route("/", pages.index),
        Route("/live", pages.index_live),
        Route("/stream", pages.stream),
        Route("/p/{digest}/{place}", pages.place),
        Route("/p/{digest}/{place}/live", pages.place_live),
        Route("/p/{digest}/{place}/chat", pages.chat),
        Route("/p/{digest}/{place}/drop", pages.drop_page),
        Route("/p/{digest}/{place}/do/{verb}", pages.do, methods=["POST"]),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        following = asyncio.create_task(monitor.follow())
        try:
            yield
        finally:
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await following

    made = Starlette(routes=routes, exception_handlers={_NotFound: missing}, lifespan=lifespan)
    return Guard(made, token=token, port=port, entered=monitor.opened.set)
