"""A scripted model: a loopback server speaking the parts of two model APIs coding agents use.

Theory of operation. Claude Code, pointed at :attr:`ScriptedModel.url` through
``ANTHROPIC_BASE_URL``, sends ``POST /v1/messages`` (Anthropic's Messages API). Codex, given
``{url}/v1`` as a custom model provider's ``base_url`` (:mod:`flume.testing.codex`), sends
``POST /v1/responses`` (OpenAI's Responses API). The server answers each from one script, a
sequence of :class:`Reply` rules, matched against the request's latest user turn: the text
typed by the person, or the text of the tool results in it (Messages: the last ``user``
message's ``tool_result`` blocks or text; Responses: the ``function_call_output`` items after
the last ``user`` message, or its ``input_text``). The first rule whose ``when`` occurs there
answers; ``when=""`` matches anything; a ``once`` rule answers once. A rule with a :class:`Tool`
answers only a request that offers a tool of that name: side requests (Claude Code's titles and
summaries, Codex's thread title) offer none and must never get a tool call, so they fall through
to the next rule. With no rule left the answer is the text ``"ok"``.

A tool call comes back as a tool result in the next request, which the script answers in turn:
``Reply("MARKER", tool=Tool("Bash", {"command": "git commit ..."}))`` then
``Reply("committed", text="done")``.

Streamed Messages requests get the server-sent events ``message_start``,
``content_block_start``, ``content_block_delta``, ``content_block_stop``, ``message_delta`` and
``message_stop``; others get the whole message as JSON. See reference/claude-code.md §8.

Streamed Responses requests (Codex streams every one) get ``response.created``; for each output
item ``response.output_item.added``, its text (``response.content_part.added``,
``response.output_text.delta``/``.done``, ``response.content_part.done``) or its arguments
(``response.function_call_arguments.delta``/``.done``), and ``response.output_item.done``; then
``response.completed``. A tool call is a ``function_call`` item whose ``arguments`` is the
tool's input as a JSON string: for Codex 0.171, ``Tool("exec_command", {"cmd": "..."})``.
Codex 0.171 needs no more: it reads the items from ``output_item.done`` and ends the turn on
``response.completed`` (reference/codex.md). Other requests get the whole response as JSON.

Other POSTs (token counting) get ``{"input_tokens": 10}``, and GET or HEAD of anything gets
``{}``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, cast

import attrs

JSON = dict[str, Any]
"""A JSON object as ``json`` reads it."""

FALLBACK_TEXT = "ok"
"""The answer when no rule matches."""


@attrs.frozen(kw_only=True)
class Answered:
    """The usage one answer reported, and whether its request offered tools.

    A request offering none is a side request (Claude Code's titles and summaries, Codex's
    thread title), which an agent keeps out of its turn's token counts.
    """

    tools: bool
    usage: JSON


@attrs.frozen
class Tool:
    """A tool call the model makes: the tool's name and its input."""

    name: str
    input: Mapping[str, object] = attrs.field(factory=dict, hash=False)
    #: Call it even where the request does not offer it: a model trying a tool it was not
    #: given (the agent answers that there is no such tool). Otherwise a rule naming a tool
    #: answers only a request that offers it.
    unoffered: bool = False


@attrs.frozen
class Reply:
    """One rule of a script: when ``when`` occurs in the latest user turn, answer so."""

    when: str
    text: str = ""
    tool: Tool | None = None
    #: Seconds to wait before answering, to keep the agent busy.
    delay: float = 0.0
    #: Answer one request only.
    once: bool = False


def latest_user_text(body: Mapping[str, object]) -> str:
    """The text of the latest user turn: its tool results' text if it has any, else its text."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    turns = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not turns:
        return ""
    content = turns[-1].get("content")
    if isinstance(content, str):
        return content
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if results:
        return "\n".join(_text_of(b.get("content")) for b in results)
    return "\n".join(_text_of([b]) for b in blocks)


def _text_of(content: object) -> str:
    """The text in a content value: a string, or the ``text`` of its text blocks."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = (b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return "\n".join(text for text in texts if isinstance(text, str))


def latest_input_text(body: Mapping[str, object]) -> str:
    """A Responses request's latest user turn: its tool outputs, else its typed text.

    The tool outputs are the ``function_call_output`` items after the last ``user`` message;
    without any, the text is that message's ``input_text`` (``input`` may be a bare string).
    """
    given = body.get("input")
    if isinstance(given, str):
        return given
    items = [i for i in given if isinstance(i, dict)] if isinstance(given, list) else []
    users = [n for n, i in enumerate(items) if i.get("role") == "user"]
    after = items[users[-1] + 1 :] if users else items
    outputs = [i for i in after if i.get("type") in _OUTPUT_ITEMS]
    if outputs:
        return "\n".join(_input_text(i.get("output")) for i in outputs)
    return _input_text(items[users[-1]].get("content")) if users else ""


#: The Responses items that carry a tool's output back to the model.
_OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})


def _input_text(content: object) -> str:
    """The text in a Responses content value: a string, or the ``text`` of its text parts."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = (
        part.get("text")
        for part in content
        if isinstance(part, dict) and part.get("type") in {"input_text", "output_text", "text"}
    )
    return "\n".join(text for text in texts if isinstance(text, str))


def offered_tools(body: Mapping[str, object]) -> frozenset[str]:
    """The names of the tools a request offers the model (Messages and Responses alike)."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return frozenset()
    names = (tool.get("name") for tool in tools if isinstance(tool, dict))
    return frozenset(name for name in names if isinstance(name, str))


class ScriptedModel:
    """A loopback Messages API server answering from a script; a context manager.

    ``url`` is its base URL (``http://127.0.0.1:PORT``); ``requests`` lists the JSON bodies of
    the POSTs it received, oldest first; ``usages`` the usage it answered each with.
    """

    def __init__(self, script: Iterable[Reply] = ()) -> None:
        self.script: tuple[Reply, ...] = tuple(script)
        self._lock = threading.Lock()
        self._used: set[int] = set()
        self._requests: list[JSON] = []
        self._usages: list[Answered] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.model = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="scripted-model", daemon=True
        )

    @property
    def url(self) -> str:
        """The base URL (Claude Code's ``ANTHROPIC_BASE_URL``; Codex's provider takes ``/v1``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[JSON]:
        """A copy of the JSON bodies received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def usages(self) -> list[Answered]:
        """The usage each answer reported, oldest first: what an agent's token counts sum."""
        with self._lock:
            return list(self._usages)

    def answered(self, body: Mapping[str, object], usage: JSON) -> None:
        """Keep the usage an answer to ``body`` reported."""
        with self._lock:
            self._usages.append(Answered(tools=bool(offered_tools(body)), usage=dict(usage)))

    def start(self) -> None:
        """Start serving in a daemon thread."""
        self._thread.start()

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def record(self, body: JSON) -> None:
        """Keep a received body."""
        with self._lock:
            self._requests.append(body)

    def choose(self, body: Mapping[str, object]) -> Reply:
        """The rule answering a request (spending it if it is ``once``), or the fallback.

        A Responses request (one with ``input``) is matched on :func:`latest_input_text`, a
        Messages request on :func:`latest_user_text`.
        """
        said = latest_input_text(body) if "input" in body else latest_user_text(body)
        tools = offered_tools(body)
        with self._lock:
            for index, rule in enumerate(self.script):
                if index in self._used or rule.when not in said:
                    continue
                if (
                    rule.tool is not None
                    and rule.tool.name not in tools
                    and not rule.tool.unoffered
                ):
                    continue
                if rule.once:
                    self._used.add(index)
                return rule
        return Reply("", text=FALLBACK_TEXT)

    @staticmethod
    def new_id(prefix: str) -> str:
        """A fresh id such as ``toolu_0f3c…``: unique across servers, as a resumed session needs."""
        return f"{prefix}_{uuid.uuid4().hex}"

    def message(self, body: Mapping[str, object], reply: Reply) -> JSON:
        """The whole assistant message answering ``body`` with ``reply``."""
        content: list[JSON] = []
        if reply.text or reply.tool is None:
            content.append({"type": "text", "text": reply.text})
        if reply.tool is not None:
            content.append(
                {
                    "type": "tool_use",
                    "id": self.new_id("toolu"),
                    "name": reply.tool.name,
                    "input": dict(reply.tool.input),
                }
            )
        usage = _usage(output_tokens=len(content))
        self.answered(body, usage)
        return {
            "id": self.new_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "scripted"),
            "content": content,
            "stop_reason": "end_turn" if reply.tool is None else "tool_use",
            "stop_sequence": None,
            "usage": usage,
        }

    def response(self, body: Mapping[str, object], reply: Reply) -> JSON:
        """The whole Responses API response answering ``body`` with ``reply``."""
        output: list[JSON] = []
        if reply.text or reply.tool is None:
            text = {"type": "output_text", "text": reply.text, "annotations": []}
            output.append(
                {
                    "type": "message",
                    "id": self.new_id("msg"),
                    "role": "assistant",
                    "status": "completed",
                    "content": [text],
                }
            )
        if reply.tool is not None:
            output.append(
                {
                    "type": "function_call",
                    "id": self.new_id("fc"),
                    "call_id": self.new_id("call"),
                    "name": reply.tool.name,
                    "arguments": json.dumps(dict(reply.tool.input)),
                    "status": "completed",
                }
            )
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": len(output),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 10 + len(output),
        }
        self.answered(body, usage)
        return {
            "id": self.new_id("resp"),
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body.get("model", "scripted"),
            "output": output,
            "usage": usage,
        }


def _usage(*, output_tokens: int) -> JSON:
    """A small, plausible usage record."""
    return {
        "input_tokens": 10,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def events(message: Mapping[str, Any]) -> list[tuple[str, JSON]]:
    """The server-sent events that stream ``message``, as ``(event, data)`` pairs."""
    blocks: Sequence[JSON] = message["content"]
    start = {**message, "content": [], "stop_reason": None, "usage": _usage(output_tokens=0)}
    out: list[tuple[str, JSON]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        out += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    out += [
        ("message_delta", {"type": "message_delta", "delta": stop, "usage": message["usage"]}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return out


def response_events(response: Mapping[str, Any]) -> list[tuple[str, JSON]]:
    """The server-sent events that stream a Responses API ``response``, as ``(event, data)``."""
    items: Sequence[JSON] = response["output"]
    out: list[JSON] = [
        {
            "type": "response.created",
            "response": {**response, "status": "in_progress", "output": []},
        }
    ]
    for index, item in enumerate(items):
        where = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "function_call":
            opening = {**item, "status": "in_progress", "arguments": ""}
            body = [
                {"type": "response.function_call_arguments.delta", **where,
                 "delta": item["arguments"]},
                {"type": "response.function_call_arguments.done", **where,
                 "arguments": item["arguments"]},
            ]  # fmt: skip
        else:
            opening = {**item, "status": "in_progress", "content": []}
            part = item["content"][0]
            at = {**where, "content_index": 0}
            body = [
                {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
                {"type": "response.output_text.delta", **at, "delta": part["text"]},
                {"type": "response.output_text.done", **at, "text": part["text"]},
                {"type": "response.content_part.done", **at, "part": part},
            ]
        out += [
            {"type": "response.output_item.added", "output_index": index, "item": opening},
            *body,
            {"type": "response.output_item.done", "output_index": index, "item": item},
        ]
    out.append({"type": "response.completed", "response": dict(response)})
    return [(data["type"], {**data, "sequence_number": n}) for n, data in enumerate(out)]


class _Server(ThreadingHTTPServer):
    """The HTTP server, knowing its model."""

    daemon_threads = True
    model: ScriptedModel


class _Handler(BaseHTTPRequestHandler):
    """Answers one HTTP request from the server's model."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib's name)
        """Stay quiet: tests read the model's ``requests`` instead."""

    def do_GET(self) -> None:
        """Any GET: an empty JSON object."""
        self._send(HTTPStatus.OK, "application/json", b"{}")

    def do_HEAD(self) -> None:
        """Any HEAD: the headers of an empty JSON object."""
        self._send(HTTPStatus.OK, "application/json", b"{}", head=True)

    def do_POST(self) -> None:
        """``/v1/messages`` and ``/v1/responses`` answered from the script; others a token count."""
        model = cast("_Server", self.server).model
        length = int(self.headers.get("Content-Length") or 0)
        try:
            parsed = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            parsed = None
        body: JSON = parsed if isinstance(parsed, dict) else {}
        model.record(body)
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/responses":
            self._respond(model, body)
            return
        if path != "/v1/messages":
            self._send(HTTPStatus.OK, "application/json", b'{"input_tokens": 10}')
            return
        reply = model.choose(body)
        if reply.delay > 0:
            time.sleep(reply.delay)
        message = model.message(body, reply)
        if body.get("stream") is True:
            stream = "".join(
                f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events(message)
            )
            self._send(HTTPStatus.OK, "text/event-stream", stream.encode())
        else:
            self._send(HTTPStatus.OK, "application/json", json.dumps(message).encode())

    def _respond(self, model: ScriptedModel, body: JSON) -> None:
        """A Responses API request: the reply streamed as events, or whole as JSON."""
        reply = model.choose(body)
        if reply.delay > 0:
            time.sleep(reply.delay)
        response = model.response(body, reply)
        if body.get("stream") is True:
            stream = "".join(
                f"event: {name}\ndata: {json.dumps(data)}\n\n"
                for name, data in response_events(response)
            )
            self._send(HTTPStatus.OK, "text/event-stream", stream.encode())
        else:
            self._send(HTTPStatus.OK, "application/json", json.dumps(response).encode())

    def _send(self, status: HTTPStatus, kind: str, payload: bytes, *, head: bool = False) -> None:
        """Write a whole response."""
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if not head:
            self.wfile.write(payload)
