"""A fake herdr server for tests: herdr's socket API over a private tmux server, schema-checked.

Theory of operation. herdr cannot be installed where flume is tested, so this stands in for it
on a Unix socket of the test's own, speaking herdr's wire format (reference/herdr.md §2):
newline-delimited JSON, one request per connection, answered with one line and closed. Its
panes are real: each herdr workspace is a session of a private tmux server, each tab a window,
each pane a tmux pane, so a program started in a pane runs, draws and reads its keys as it would
in herdr. A pane whose process exits is gone, as in herdr (no dead panes are kept).

Every request is checked against herdr's own published JSON schema, read at run time from the
path the test gives (it is not copied into flume): the whole request against the schema's
``request`` definition, its params against the method's own, and, more strictly than the schema
(which lets unknown keys pass, as herdr would silently ignore them), every params key against the
names the method's schema declares. The documented rules the schema does not hold are checked
too: a metadata ``source`` of at most 80 characters of ``[A-Za-z0-9:._-]``, texts that herdr
would cut at 80 characters, state label keys, and at most 32 tokens kept per pane or workspace.
A request that breaks any of them is answered ``invalid_request`` or ``invalid_params`` (a text
herdr would cut is cut, and answered as herdr would) and recorded in :attr:`FakeHerdr.violations`,
so a test fails on it (:meth:`FakeHerdr.assert_clean`). Every answer the fake gives is checked
against the schema's ``success_response`` or ``error_response`` too, and a method the fake does
not implement is recorded, never answered as if it worked.

What is modelled is what flume and its plugin use: ``ping``; ``workspace.create|list|get|close|
focus|report_metadata``; ``tab.create|list|get|rename|close|focus``; ``layout.apply`` (one pane
node, with or without an argv ``command``) and ``layout.export``; ``pane.list|get|read|split|
rename|focus|close|send_text|send_keys|send_input|report_metadata``; ``notification.show``; and
``plugin.pane.open`` for a plugin the test linked (:meth:`FakeHerdr.link_plugin`, as ``herdr plugin
link`` does) in the ``popup`` placement: the pane's manifest command runs for real, in the
plugin's folder, with the environment herdr gives a plugin pane (reference/herdr.md §6), and is
recorded in :attr:`FakeHerdr.popups`. A popup is no herdr pane (herdr lists it nowhere and answers
its opening with a bare ``ok``): a test reads and types into it with :meth:`FakeHerdr.popup_screen`
and :meth:`FakeHerdr.popup_type`, as a person would in herdr.
Where herdr's behaviour is not documented the fake follows herdr's server source as read for
reference/herdr.md; each such choice is named where it is made.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socketserver
import sys
import tempfile
import threading
import tomllib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

# jsonschema ships no type stubs.
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from flume.shell.panes.tmux import Tmux, escape_argument
from flume.shell.tools import sockets

#: What a source identifier may be (reference §4).
_SOURCE = re.compile(r"[A-Za-z0-9:._-]{1,80}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TEXT_LIMIT = 80
_TOKENS_KEPT = 32
_STATE_LABELS = frozenset({"idle", "working", "blocked", "done", "unknown"})
#: What a plugin id, and a plugin's entrypoint id, may be (herdr's ``invalid_plugin_id``).
_PLUGIN_ID = re.compile(r"[A-Za-z0-9:._-]{1,120}")
#: The variables herdr sets for a plugin pane itself; a request's ``env`` never overrides them.
_PLUGIN_VARIABLES = frozenset(
    {
        "HERDR_SOCKET_PATH", "HERDR_ENV", "HERDR_PLUGIN_ID", "HERDR_PLUGIN_ROOT",
        "HERDR_PLUGIN_CONFIG_DIR", "HERDR_PLUGIN_STATE_DIR", "HERDR_PLUGIN_ENTRYPOINT_ID",
        "HERDR_PLUGIN_CONTEXT_JSON", "HERDR_BIN_PATH",
    }
)  # fmt: skip
#: The terminal the fake's client is, in cells: what a popup's percentage sizes are of.
_CLIENT_SIZE = (200, 50)
#: herdr's name for the platform the fake runs on (a plugin's ``platforms``).
_PLATFORM = {"linux": "linux", "darwin": "macos"}.get(sys.platform, "windows")
#: herdr's key names (its key-combo syntax) as tmux names them.
_KEYS = {
    "enter": "Enter",
    "return": "Enter",
    "esc": "Escape",
    "escape": "Escape",
    "tab": "Tab",
    "backspace": "BSpace",
    "space": "Space",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "home": "Home",
    "end": "End",
    "pageup": "PPage",
    "pagedown": "NPage",
    "delete": "DC",
    "insert": "IC",
    "minus": "-",
    "plus": "+",
    "dot": ".",
    "slash": "/",
    "backslash": "\\",
    "backtick": "`",
    "grave": "`",
    "shift+tab": "BTab",
}
_MODIFIERS = {"ctrl": "C-", "control": "C-", "alt": "M-", "shift": "S-"}


@attrs.frozen
class Violation:
    """One thing herdr's schema or documented rules say was wrong, and the request it was in."""

    #: ``request`` (the schema), ``rule`` (a documented rule), ``response`` (the fake's own
    #: answer), or ``unimplemented`` (a method the fake does not model).
    kind: str
    method: str
    message: str
    request: str


class Schema:
    """herdr's published JSON schema, with a validator for each definition asked for."""

    def __init__(self, path: Path) -> None:
        self.document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        self._validators: dict[str, Draft202012Validator] = {}
        request = self.document["schemas"]["request"]
        #: Each method's params definition (its ``$ref``), from the request's ``oneOf``.
        self.params: dict[str, str] = {}
        for branch in request["oneOf"]:
            method = branch["properties"]["method"]["const"]
            self.params[method] = branch["properties"]["params"]["$ref"]
        #: Each result ``type``'s definition, from the success response's ``oneOf``.
        self.results: dict[str, dict[str, Any]] = {}
        results = self.document["schemas"]["success_response"]["$defs"]["ResponseResult"]
        for branch in results["oneOf"]:
            self.results[branch["properties"]["type"]["const"]] = branch

    @property
    def protocol(self) -> int:
        """The socket protocol the schema describes."""
        return int(self.document["protocol"])

    def validator(self, reference: str) -> Draft202012Validator:
        """A validator for the definition at ``reference`` (``#/schemas/...``)."""
        found = self._validators.get(reference)
        if found is None:
            found = Draft202012Validator({**self.document, "$ref": reference})
            self._validators[reference] = found
        return found

    def problems(self, reference: str, instance: object) -> list[str]:
        """What is wrong with ``instance`` by the definition at ``reference``; [] if nothing."""
        return [
            f"{'/'.join(str(part) for part in error.absolute_path) or '(top)'}: {error.message}"
            for error in self.validator(reference).iter_errors(instance)
        ]

    def declared(self, reference: str) -> set[str] | None:
        """The property names the object definition at ``reference`` declares; None if open."""
        node: Any = self.document
        for part in reference.removeprefix("#/").split("/"):
            node = node[part]
        properties = node.get("properties") if isinstance(node, dict) else None
        return set(properties) if isinstance(properties, dict) else None


class HerdrAnswerError(Exception):
    """An error answer: herdr's code and message."""

    def __init__(self, code: str, message: str) -> None:
        """Keep the code and message to answer with."""
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


@attrs.define
class _Workspace:
    workspace_id: str
    number: int
    label: str
    session: str
    tokens: dict[str, str] = attrs.field(factory=dict)
    tab_count: int = 0
    pane_count: int = 0


@attrs.define
class _Tab:
    tab_id: str
    workspace_id: str
    number: int
    label: str
    window: str


@attrs.define
class _Pane:
    pane_id: str
    terminal_id: str
    workspace_id: str
    tab_id: str
    tmux_id: str
    cwd: str
    label: str | None = None
    command: list[str] | None = None
    tokens: dict[str, str] = attrs.field(factory=dict)
    revision: int = 0
    drawn: str = ""


@attrs.frozen
class _Plugin:
    plugin_id: str
    root: Path
    #: Its ``[[panes]]``, by id, as the manifest has them.
    panes: dict[str, dict[str, Any]]
    platforms: list[str] | None
    #: The PATH its commands run with; None: the fake's process's own when each starts.
    path: str | None


@attrs.frozen
class PluginPopup:
    """A plugin pane herdr opened as a popup: what runs in it, where, with which environment."""

    plugin_id: str
    entrypoint: str
    #: The argv the manifest's pane names, run without a shell.
    command: list[str]
    cwd: str
    #: What herdr set for the popup's program (the request's ``env`` under herdr's own).
    env: dict[str, str]
    #: ``HERDR_PLUGIN_CONTEXT_JSON``, parsed: the workspace, tab and pane focused at opening.
    context: dict[str, Any]
    #: The popup's size in cells, border included.
    size: tuple[int, int]
    tmux_id: str


class FakeHerdr:
    """A herdr server on ``socket_path`` whose panes are a private tmux server's.

    ``schema_path`` is herdr's published schema; ``protocol`` and ``version`` are what ``ping``
    says (protocol 22 is herdr 0.9's; the schema itself describes 20, a subset of it). Start it
    with :meth:`start` (or ``with``), stop it with :meth:`stop`; read :attr:`requests` and
    :attr:`violations`, or call :meth:`assert_clean`.
    """

    def __init__(
        self,
        socket_path: Path,
        schema_path: Path,
        *,
        protocol: int = 22,
        version: str = "0.9.0",
        shell: str = "/bin/sh",
    ) -> None:
        self.socket_path = socket_path
        self.schema = Schema(schema_path)
        self.protocol = protocol
        self.version = version
        self.shell = shell
        self._folder = Path(tempfile.mkdtemp(prefix="fhd-", dir="/tmp"))
        self.tmux = Tmux(self._folder / "tmux.sock")
        #: Every request received, as parsed (or as the line, when it was not JSON).
        self.requests: list[Any] = []
        self.violations: list[Violation] = []
        #: Every plugin popup opened, in order (open or closed since).
        self.popups: list[PluginPopup] = []
        self._plugins: dict[str, _Plugin] = {}
        self._lock = threading.RLock()
        self._workspaces: dict[str, _Workspace] = {}
        self._tabs: dict[str, _Tab] = {}
        self._panes: dict[str, _Pane] = {}
        self._numbers = {"workspace": 0, "terminal": 0}
        self._focused: str | None = None
        self._server: socketserver.ThreadingUnixStreamServer | None = None
        self._thread: threading.Thread | None = None
        self._handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "ping": self._ping,
            "workspace.create": self._workspace_create,
            "workspace.list": self._workspace_list,
            "workspace.get": self._workspace_get,
            "workspace.focus": self._workspace_focus,
            "workspace.close": self._workspace_close,
            "workspace.report_metadata": self._workspace_report,
            "tab.create": self._tab_create,
            "tab.list": self._tab_list,
            "tab.get": self._tab_get,
            "tab.rename": self._tab_rename,
            "tab.focus": self._tab_focus,
            "tab.close": self._tab_close,
            "layout.apply": self._layout_apply,
            "layout.export": self._layout_export,
            "pane.list": self._pane_list,
            "pane.get": self._pane_get,
            "pane.read": self._pane_read,
            "pane.split": self._pane_split,
            "pane.rename": self._pane_rename,
            "pane.focus": self._pane_focus,
            "pane.close": self._pane_close,
            "pane.send_text": self._pane_send_text,
            "pane.send_keys": self._pane_send_keys,
            "pane.send_input": self._pane_send_input,
            "pane.report_metadata": self._pane_report,
            "notification.show": self._notification_show,
            "plugin.pane.open": self._plugin_pane_open,
        }

    # --- life ------------------------------------------------------------------------------

    def start(self) -> FakeHerdr:
        """Listen on the socket, answering on a thread of its own."""
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        fake = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                line = self.rfile.readline(64 * 1024 * 1024)
                answer = fake.answer(line.decode("utf-8", "replace"))
                with contextlib.suppress(OSError):
                    self.wfile.write(answer.encode() + b"\n")

        self._server_options()
        server = socketserver.ThreadingUnixStreamServer(str(self.socket_path), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop answering, end every pane (the tmux server) and remove what the fake made."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.tmux.kill_server()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        shutil.rmtree(self._folder, ignore_errors=True)

    def __enter__(self) -> FakeHerdr:  # noqa: PYI034 (a plain class, never subclassed)
        """Start."""
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        """Stop."""
        self.stop()

    def assert_clean(self) -> None:
        """Fail, naming each, if any request or answer broke herdr's schema or rules."""
        if self.violations:
            shown = "\n".join(
                f"  {each.kind} {each.method}: {each.message}\n    in {each.request}"
                for each in self.violations
            )
            message = f"{len(self.violations)} violations of herdr's schema or rules:\n{shown}"
            raise AssertionError(message)

    def methods(self) -> list[str]:
        """The method of every request received, in order."""
        return [r.get("method", "") if isinstance(r, dict) else "" for r in list(self.requests)]

    # --- plugins ---------------------------------------------------------------------------

    def link_plugin(self, root: Path, *, path: str | None = None) -> str:
        """Link the plugin in ``root`` (``herdr plugin link``), enabled; its id.

        Its ``herdr-plugin.toml`` is checked as herdr checks one: the required keys, the id's
        characters, and each ``[[panes]]`` entry against the schema's ``PluginManifestPane``; a
        manifest herdr would refuse raises ``ValueError``. ``path`` is the PATH herdr runs the
        plugin's commands with (herdr's own); by default the fake's process's, as each starts.
        """
        manifest = tomllib.loads((root / "herdr-plugin.toml").read_text(encoding="utf-8"))
        problems = [
            f"{key} is required"
            for key in ("id", "name", "version", "min_herdr_version")
            if not isinstance(manifest.get(key), str)
        ]
        plugin_id = str(manifest.get("id", "")).strip()
        if not _PLUGIN_ID.fullmatch(plugin_id):
            problems.append(f"id {plugin_id!r} is no plugin id")
        panes = manifest.get("panes", [])
        panes = panes if isinstance(panes, list) else [panes]
        reference = "#/schemas/success_response/$defs/PluginManifestPane"
        for pane in panes:
            problems += [f"[[panes]] {said}" for said in self.schema.problems(reference, pane)]
        if problems:
            raise ValueError(f"herdr would not link {root}: {'; '.join(problems)}")
        platforms = manifest.get("platforms")
        self._plugins[plugin_id] = _Plugin(
            plugin_id=plugin_id,
            root=root.resolve(),
            panes={str(pane["id"]).strip(): pane for pane in panes},
            platforms=list(platforms) if isinstance(platforms, list) else None,
            path=path,
        )
        return plugin_id

    def is_popup_open(self, popup: PluginPopup) -> bool:
        """Whether the popup's program still runs (herdr closes a popup when it ends)."""
        listed = self.tmux.run("list-panes", "-a", "-F", "#{pane_id}")
        return listed.ok and popup.tmux_id in listed.out.split()

    def popup_screen(self, popup: PluginPopup) -> str | None:
        """What the popup shows, its scrolled-off lines too; None once it has closed."""
        if not self.is_popup_open(popup):
            return None
        ran = self.tmux.run("capture-pane", "-p", "-J", "-S", "-", "-t", popup.tmux_id)
        return ran.out if ran.ok else None

    def popup_type(self, popup: PluginPopup, line: str) -> None:
        """Type ``line`` into the popup, then Enter, as a person at herdr's keyboard would."""
        if line:
            self._tmux("send-keys", "-t", popup.tmux_id, "-l", line)
        self._tmux("send-keys", "-t", popup.tmux_id, "Enter")

    # --- one request -----------------------------------------------------------------------

    def answer(self, line: str) -> str:
        """The answer line to one request line, every check made and recorded."""
        try:
            request = json.loads(line)
        except ValueError:
            self.requests.append(line)
            self._violate("request", "", f"not JSON: {line[:200]!r}", line)
            return self._reply({"id": "", "error": _error("invalid_request", "invalid JSON")})
        self.requests.append(request)
        request_id = request.get("id") if isinstance(request, dict) else None
        shown = json.dumps(request)[:2000]
        problems = self.schema.problems("#/schemas/request", request)
        method = request.get("method") if isinstance(request, dict) else None
        known = isinstance(method, str) and method in self.schema.params
        if problems or not isinstance(request, dict) or not known:
            said = "; ".join(problems) or "not a request object"
            detail = self._params_problems(request) if known else []
            self._violate("request", str(method), "; ".join(detail) or said, shown)
            code = "invalid_params" if known else "invalid_request"
            reply_id = request_id if isinstance(request_id, str) else ""
            return self._reply({"id": reply_id, "error": _error(code, said)})
        assert isinstance(method, str)  # noqa: S101 (known above)
        params = request["params"]
        unknown = self._unknown_keys(method, params)
        if unknown:
            said = f"params keys herdr's schema does not name: {', '.join(sorted(unknown))}"
            self._violate("request", method, said, shown)
            return self._reply({"id": request_id, "error": _error("invalid_params", said)})
        handler = self._handlers.get(method)
        if handler is None:
            said = f"the fake herdr does not implement {method}"
            self._violate("unimplemented", method, said, shown)
            return self._reply({"id": request_id, "error": _error("internal_error", said)})
        try:
            with self._lock:
                result = handler(params)
        except HerdrAnswerError as failure:
            if failure.code in {"invalid_params", "invalid_request"}:
                self._violate("rule", method, failure.message, shown)
            return self._reply({"id": request_id, "error": _error(failure.code, failure.message)})
        reply = {"id": request_id, "result": result}
        for problem in self.schema.problems("#/schemas/success_response", reply):
            self._violate("response", method, problem, json.dumps(reply)[:2000])
        kind = result.get("type")
        if isinstance(kind, str) and kind in self.schema.results:
            for problem in self._result_problems(kind, result):
                self._violate("response", method, problem, json.dumps(reply)[:2000])
        return self._reply(reply)

    def _reply(self, reply: dict[str, Any]) -> str:
        if "error" in reply:
            for problem in self.schema.problems("#/schemas/error_response", reply):
                self._violate("response", "", problem, json.dumps(reply))
        return json.dumps(reply)

    def _result_problems(self, kind: str, result: dict[str, Any]) -> list[str]:
        """The result against its own type's branch (a oneOf names no branch when it fails)."""
        index = list(self.schema.results).index(kind)
        reference = f"#/schemas/success_response/$defs/ResponseResult/oneOf/{index}"
        return self.schema.problems(reference, result)

    def _params_problems(self, request: dict[str, Any]) -> list[str]:
        params = request.get("params")
        return self.schema.problems(self.schema.params[request["method"]], params)

    def _unknown_keys(self, method: str, params: Mapping[str, Any]) -> set[str]:
        declared = self.schema.declared(self.schema.params[method])
        if declared is None:
            return set()
        return set(params) - declared

    def _violate(self, kind: str, method: str, message: str, request: str) -> None:
        self.violations.append(
            Violation(kind=kind, method=method, message=message, request=request)
        )

    # --- the tmux underneath ---------------------------------------------------------------

    def _tmux(self, *args: str, stdin: str | None = None) -> str:
        ran = self.tmux.run(*args, stdin=stdin)
        if not ran.ok:
            raise HerdrAnswerError(
                "internal_error", f"tmux {' '.join(args[:2])}: {ran.err.strip()}"
            )
        return ran.out

    def _sync(self) -> None:
        """Forget panes whose process ended (tmux closed them), and tabs and workspaces left empty.

        Each pane's ``revision`` moves on when what tmux says of its screen changed.
        """
        ran = self.tmux.run(
            "list-panes", "-a", "-F",
            "#{pane_id}\t#{window_activity}\t#{history_size}\t#{cursor_x}\t#{cursor_y}",
        )  # fmt: skip
        lines = ran.out.splitlines() if ran.ok else []
        live = {line.partition("\t")[0]: line.partition("\t")[2] for line in lines}
        for pane in list(self._panes.values()):
            now = live.get(pane.tmux_id)
            if now is None:
                del self._panes[pane.pane_id]
                continue
            if now != pane.drawn:
                pane.revision += 1
                pane.drawn = now
        if self._focused not in self._panes:
            self._focused = None
        for tab in list(self._tabs.values()):
            if not any(p.tab_id == tab.tab_id for p in self._panes.values()):
                del self._tabs[tab.tab_id]
        for workspace in list(self._workspaces.values()):
            if not any(t.workspace_id == workspace.workspace_id for t in self._tabs.values()):
                del self._workspaces[workspace.workspace_id]

    def _new_pane(  # noqa: PLR0913 (what herdr's pane-making requests carry)
        self,
        workspace: _Workspace,
        *,
        where: tuple[str, ...],
        cwd: str | None,
        env: Mapping[str, str],
        command: list[str] | None,
        tab: _Tab,
        label: str | None = None,
    ) -> _Pane:
        """Start a tmux pane (a new session, window or split, as ``where`` says) for a herdr one.

        Its environment is ``env`` under herdr's own variables, which win (reference §1).
        """
        workspace.pane_count += 1
        pane_id = f"{workspace.workspace_id}:p{workspace.pane_count}"
        tab_id = tab.tab_id
        folder = cwd or str(Path.home())
        if not Path(folder).is_absolute():
            raise HerdrAnswerError("invalid_params", f"cwd must be absolute: {folder}")
        given = {**env, **self._herdr_env(workspace.workspace_id, tab_id, pane_id)}
        flags = [part for key, value in given.items() for part in ("-e", f"{key}={value}")]
        argv = [escape_argument(part) for part in (command or [self.shell])]
        made = self._tmux(*where, "-P", "-F", "#{pane_id}", "-c", folder, *flags, *argv).strip()
        self._numbers["terminal"] += 1
        pane = _Pane(
            pane_id=pane_id,
            terminal_id=f"term_{self._numbers['terminal']}",
            workspace_id=workspace.workspace_id,
            tab_id=tab_id,
            tmux_id=made,
            cwd=folder,
            label=label,
            command=list(command) if command else None,
        )
        self._panes[pane_id] = pane
        return pane

    def _herdr_env(self, workspace: str, tab: str, pane: str) -> dict[str, str]:
        return {
            "HERDR_SOCKET_PATH": str(self.socket_path),
            "HERDR_ENV": "1",
            "HERDR_WORKSPACE_ID": workspace,
            "HERDR_TAB_ID": tab,
            "HERDR_PANE_ID": pane,
        }

    def _new_workspace(self, label: str | None) -> _Workspace:
        self._numbers["workspace"] += 1
        number = self._numbers["workspace"]
        workspace = _Workspace(
            workspace_id=f"w{number}",
            number=number,
            label=label or f"{number}",
            session=f"w{number}",
        )
        self._workspaces[workspace.workspace_id] = workspace
        return workspace

    def _new_tab(self, workspace: _Workspace, label: str | None) -> _Tab:
        workspace.tab_count += 1
        number = workspace.tab_count
        tab = _Tab(
            tab_id=f"{workspace.workspace_id}:t{number}",
            workspace_id=workspace.workspace_id,
            number=number,
            label=label or str(number),
            window=f"t{number}",
        )
        self._tabs[tab.tab_id] = tab
        return tab

    def _start_tab(  # noqa: PLR0913 (what herdr's tab-making requests carry)
        self,
        workspace: _Workspace,
        label: str | None,
        *,
        cwd: str | None,
        env: Mapping[str, str],
        command: list[str] | None = None,
        pane_label: str | None = None,
    ) -> tuple[_Tab, _Pane]:
        """A new tab of ``workspace`` (its first is the tmux session) with one pane."""
        first = not any(t.workspace_id == workspace.workspace_id for t in self._tabs.values())
        tab = self._new_tab(workspace, label)
        if first and not self._session_exists(workspace.session):
            where: tuple[str, ...] = (
                "new-session", "-d", "-s", workspace.session, "-n", tab.window, "-x", "200",
                "-y", "50",
            )  # fmt: skip
        elif self._session_exists(workspace.session):
            where = ("new-window", "-d", "-t", f"={workspace.session}:", "-n", tab.window)
        else:
            # Its last pane ended since the model was read: the workspace is gone, as in herdr.
            self._sync()
            raise HerdrAnswerError(
                "workspace_not_found", f"workspace {workspace.workspace_id} not found"
            )
        pane = self._new_pane(
            workspace, where=where, cwd=cwd, env=env, command=command, tab=tab, label=pane_label
        )
        return tab, pane

    def _session_exists(self, session: str) -> bool:
        return self.tmux.run("has-session", "-t", f"={session}").ok

    def _server_options(self) -> None:
        """Start the tmux server with herdr's pane behaviour: a pane goes when its process does.

        A session no workspace is keeps the server up while herdr has no panes: a tmux server
        exits with its last session, and one exiting refuses the next workspace's.
        """
        ran = self.tmux.run(
            "start-server", ";", "set-option", "-g", "remain-on-exit", "off", ";",
            "set-option", "-s", "escape-time", "0", ";", "set-option", "-g", "history-limit",
            "50000", ";", "set-option", "-g", "default-size", "200x50", ";",
            "new-session", "-d", "-s", "fake-herdr-keep", "tail", "-f", "/dev/null",
        )  # fmt: skip
        if not ran.ok:
            message = f"the fake herdr's tmux server did not start: {ran.err.strip()}"
            raise RuntimeError(message)

    # --- lookups and records ---------------------------------------------------------------

    def _workspace(self, workspace_id: object) -> _Workspace:
        found = self._workspaces.get(str(workspace_id))
        if found is None:
            raise HerdrAnswerError("workspace_not_found", f"workspace {workspace_id} not found")
        return found

    def _tab(self, tab_id: object) -> _Tab:
        found = self._tabs.get(str(tab_id))
        if found is None:
            raise HerdrAnswerError("tab_not_found", f"tab {tab_id} not found")
        return found

    def _pane(self, pane_id: object) -> _Pane:
        found = self._panes.get(str(pane_id))
        if found is None:
            raise HerdrAnswerError("pane_not_found", f"pane {pane_id} not found")
        return found

    def _pane_info(self, pane: _Pane) -> dict[str, Any]:
        info: dict[str, Any] = {
            "pane_id": pane.pane_id,
            "terminal_id": pane.terminal_id,
            "workspace_id": pane.workspace_id,
            "tab_id": pane.tab_id,
            "focused": self._focused == pane.pane_id,
            # Nothing here detects agents on the screen, as herdr's manifests would.
            "agent_status": "unknown",
            "revision": pane.revision,
            "cwd": pane.cwd,
            "tokens": dict(pane.tokens),
        }
        if pane.label is not None:
            info["label"] = pane.label
        return info

    def _tab_info(self, tab: _Tab) -> dict[str, Any]:
        focused = self._focused is not None and self._panes[self._focused].tab_id == tab.tab_id
        return {
            "tab_id": tab.tab_id,
            "workspace_id": tab.workspace_id,
            "number": tab.number,
            "label": tab.label,
            "focused": focused,
            "pane_count": sum(1 for p in self._panes.values() if p.tab_id == tab.tab_id),
            "agent_status": "unknown",
        }

    def _workspace_info(self, workspace: _Workspace) -> dict[str, Any]:
        tabs = [t for t in self._tabs.values() if t.workspace_id == workspace.workspace_id]
        focused = self._focused is not None and (
            self._panes[self._focused].workspace_id == workspace.workspace_id
        )
        focused_tab = self._panes[self._focused].tab_id if self._focused else None
        active = next(
            (t.tab_id for t in tabs if t.tab_id == focused_tab),
            tabs[0].tab_id if tabs else f"{workspace.workspace_id}:t1",
        )
        return {
            "workspace_id": workspace.workspace_id,
            "number": workspace.number,
            "label": workspace.label,
            "focused": focused,
            "pane_count": sum(
                1 for p in self._panes.values() if p.workspace_id == workspace.workspace_id
            ),
            "tab_count": len(tabs),
            "active_tab_id": active,
            "agent_status": "unknown",
            "tokens": dict(workspace.tokens),
        }

    def _layout(self, pane: _Pane) -> dict[str, Any]:
        node: dict[str, Any] = {"type": "pane", "pane_id": pane.pane_id, "cwd": pane.cwd}
        if pane.label is not None:
            node["label"] = pane.label
        if pane.command is not None:
            node["command"] = list(pane.command)
        return {
            "workspace_id": pane.workspace_id,
            "tab_id": pane.tab_id,
            "zoomed": False,
            "focused_pane_id": pane.pane_id,
            "root": node,
        }

    # --- handlers --------------------------------------------------------------------------

    def _ping(self, _params: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "pong",
            "version": self.version,
            "protocol": self.protocol,
            "capabilities": {"live_handoff": False},
        }

    def _workspace_create(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        workspace = self._new_workspace(params.get("label"))
        tab, pane = self._start_tab(
            workspace, None, cwd=params.get("cwd"), env=params.get("env") or {}
        )
        if params.get("focus"):
            self._focused = pane.pane_id
        return {
            "type": "workspace_created",
            "workspace": self._workspace_info(workspace),
            "tab": self._tab_info(tab),
            "root_pane": self._pane_info(pane),
        }

    def _workspace_list(self, _params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        workspaces = [self._workspace_info(each) for each in self._workspaces.values()]
        return {"type": "workspace_list", "workspaces": workspaces}

    def _workspace_get(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        workspace = self._workspace(params["workspace_id"])
        return {"type": "workspace_info", "workspace": self._workspace_info(workspace)}

    def _workspace_focus(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        workspace = self._workspace(params["workspace_id"])
        first = next(p for p in self._panes.values() if p.workspace_id == workspace.workspace_id)
        self._focused = first.pane_id
        return {"type": "workspace_info", "workspace": self._workspace_info(workspace)}

    def _workspace_close(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        workspace = self._workspace(params["workspace_id"])
        self.tmux.run("kill-session", "-t", f"={workspace.session}")
        self._sync()
        return {"type": "ok"}

    def _workspace_report(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        workspace = self._workspace(params["workspace_id"])
        _check_source(params.get("source"))
        self._patch(workspace.tokens, params.get("tokens") or {}, params)
        return {"type": "ok"}

    def _tab_create(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        workspace = self._workspace(params["workspace_id"]) if params.get("workspace_id") else None
        if workspace is None:
            if self._focused is None:
                raise HerdrAnswerError("workspace_not_found", "no active workspace")
            workspace = self._workspaces[self._panes[self._focused].workspace_id]
        tab, pane = self._start_tab(
            workspace, params.get("label"), cwd=params.get("cwd"), env=params.get("env") or {}
        )
        if params.get("focus"):
            self._focused = pane.pane_id
        return {
            "type": "tab_created",
            "tab": self._tab_info(tab),
            "root_pane": self._pane_info(pane),
        }

    def _tab_list(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        wanted = params.get("workspace_id")
        if wanted is not None:
            self._workspace(wanted)
        tabs = [
            self._tab_info(t)
            for t in self._tabs.values()
            if wanted is None or t.workspace_id == wanted
        ]
        return {"type": "tab_list", "tabs": tabs}

    def _tab_get(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        return {"type": "tab_info", "tab": self._tab_info(self._tab(params["tab_id"]))}

    def _tab_rename(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        tab = self._tab(params["tab_id"])
        tab.label = params["label"]
        return {"type": "tab_info", "tab": self._tab_info(tab)}

    def _tab_focus(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        tab = self._tab(params["tab_id"])
        self._focused = next(p.pane_id for p in self._panes.values() if p.tab_id == tab.tab_id)
        return {"type": "tab_info", "tab": self._tab_info(tab)}

    def _tab_close(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        tab = self._tab(params["tab_id"])
        for pane in [p for p in self._panes.values() if p.tab_id == tab.tab_id]:
            self.tmux.run("kill-pane", "-t", pane.tmux_id)
        self._sync()
        return {"type": "ok"}

    def _layout_apply(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        if params.get("tab_id") is not None:
            self._violate("unimplemented", "layout.apply", "replacing a tab", json.dumps(params))
            raise HerdrAnswerError("internal_error", "the fake herdr does not replace tabs")
        if params.get("workspace_id") is not None:
            workspace = self._workspace(params["workspace_id"])
        elif self._focused is not None:
            workspace = self._workspaces[self._panes[self._focused].workspace_id]
        else:
            raise HerdrAnswerError("workspace_not_found", "no active workspace")
        root = params["root"]
        if root.get("type") != "pane":
            self._violate("unimplemented", "layout.apply", "split layouts", json.dumps(params))
            raise HerdrAnswerError("internal_error", "the fake herdr applies one-pane layouts only")
        command = root.get("command")
        if command is not None and not command:
            raise HerdrAnswerError("invalid_layout", "command must not be empty")
        _tab, pane = self._start_tab(
            workspace,
            params.get("tab_label"),
            cwd=root.get("cwd"),
            env=root.get("env") or {},
            command=command,
            pane_label=root.get("label"),
        )
        if params.get("focus"):
            self._focused = pane.pane_id
        return {"type": "layout_apply", "layout": self._layout(pane)}

    def _layout_export(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        if params.get("pane_id") is not None and params.get("tab_id") is not None:
            raise HerdrAnswerError("layout_not_found", "layout target not found")
        if params.get("pane_id") is not None:
            pane = self._panes.get(str(params["pane_id"]))
        elif params.get("tab_id") is not None:
            pane = next((p for p in self._panes.values() if p.tab_id == params["tab_id"]), None)
        else:
            pane = self._panes.get(self._focused or "")
        if pane is None:
            raise HerdrAnswerError("layout_not_found", "layout target not found")
        if sum(1 for p in self._panes.values() if p.tab_id == pane.tab_id) > 1:
            self._violate("unimplemented", "layout.export", "split layouts", json.dumps(params))
            raise HerdrAnswerError("internal_error", "the fake herdr exports one-pane layouts only")
        return {"type": "layout_export", "layout": self._layout(pane)}

    def _pane_list(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        wanted = params.get("workspace_id")
        if wanted is not None:
            self._workspace(wanted)
        panes = [
            self._pane_info(p)
            for p in self._panes.values()
            if wanted is None or p.workspace_id == wanted
        ]
        return {"type": "pane_list", "panes": panes}

    def _pane_get(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        return {"type": "pane_info", "pane": self._pane_info(self._pane(params["pane_id"]))}

    def _pane_read(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        pane = self._pane(params["pane_id"])
        source = params["source"]
        lines = params.get("lines")
        fmt = params.get("format") or "text"
        args = ["capture-pane", "-p", "-t", pane.tmux_id]
        if source in {"recent", "recent_unwrapped"}:
            args[2:2] = ["-S", f"-{lines if lines is not None else 80}"]
        if source != "recent":
            args.insert(2, "-J")
        if fmt == "ansi" or params.get("strip_ansi") is False:
            args.insert(2, "-e")
        text = self._tmux(*args)
        if source in {"visible", "detection"} and lines is not None:
            text = "\n".join(text.splitlines()[-lines:])
        read = {
            "pane_id": pane.pane_id,
            "workspace_id": pane.workspace_id,
            "tab_id": pane.tab_id,
            "source": source,
            "format": fmt,
            "text": text,
            "revision": pane.revision,
            "truncated": False,
        }
        return {"type": "pane_read", "read": read}

    def _pane_split(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        target = self._pane(params.get("target_pane_id") or self._focused or "")
        workspace = self._workspaces[target.workspace_id]
        flag = "-h" if params["direction"] == "right" else "-v"
        pane = self._new_pane(
            workspace,
            where=("split-window", "-d", flag, "-t", target.tmux_id),
            cwd=params.get("cwd") or target.cwd,
            env=params.get("env") or {},
            command=None,
            tab=self._tabs[target.tab_id],
        )
        if params.get("focus"):
            self._focused = pane.pane_id
        return {"type": "pane_info", "pane": self._pane_info(pane)}

    def _pane_rename(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        pane = self._pane(params["pane_id"])
        pane.label = params.get("label")
        return {"type": "pane_info", "pane": self._pane_info(pane)}

    def _pane_focus(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        pane = self._pane(params["pane_id"])
        self._focused = pane.pane_id
        return {"type": "pane_info", "pane": self._pane_info(pane)}

    def _pane_close(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        pane = self._pane(params["pane_id"])
        self.tmux.run("kill-pane", "-t", pane.tmux_id)
        self._sync()
        return {"type": "ok"}

    def _pane_send_text(self, params: dict[str, Any]) -> dict[str, Any]:
        """The text's bytes as they are: herdr's send_text wraps nothing around them."""
        self._sync()
        pane = self._pane(params["pane_id"])
        self._paste(pane, params["text"], bracketed=False)
        return {"type": "ok"}

    def _pane_send_keys(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        pane = self._pane(params["pane_id"])
        keys = [_tmux_key(key) for key in params["keys"]]
        self._send_keys(pane, keys)
        return {"type": "ok"}

    def _pane_send_input(self, params: dict[str, Any]) -> dict[str, Any]:
        """Text as a bracketed paste when the program asked for that mode, then the keys.

        As herdr's server does: every key is checked before anything is sent.
        """
        self._sync()
        pane = self._pane(params["pane_id"])
        keys = [_tmux_key(key) for key in params.get("keys") or []]
        if params.get("text"):
            self._paste(pane, params["text"], bracketed=True)
        self._send_keys(pane, keys)
        return {"type": "ok"}

    def _paste(self, pane: _Pane, text: str, *, bracketed: bool) -> None:
        buffer = f"fake-herdr-{pane.terminal_id}"
        self._tmux("load-buffer", "-b", buffer, "-", stdin=text)
        flags = ["-p"] if bracketed else []
        self._tmux("paste-buffer", *flags, "-r", "-d", "-b", buffer, "-t", pane.tmux_id)

    def _send_keys(self, pane: _Pane, keys: list[tuple[bool, str]]) -> None:
        for literal, key in keys:
            if literal:
                self._tmux("send-keys", "-t", pane.tmux_id, "-l", key)
            else:
                self._tmux("send-keys", "-t", pane.tmux_id, key)

    def _pane_report(self, params: dict[str, Any]) -> dict[str, Any]:
        self._sync()
        pane = self._pane(params["pane_id"])
        _check_source(params.get("source"))
        if params.get("applies_to_source") is not None:
            _check_source(params["applies_to_source"])
        labels = params.get("state_labels") or {}
        wrong = sorted(set(labels) - _STATE_LABELS)
        if wrong:
            raise HerdrAnswerError("invalid_params", f"state_labels keys must be statuses: {wrong}")
        for field in ("title", "display_agent"):
            if isinstance(params.get(field), str):
                self._text(params[field], field, params)
        for status, text in labels.items():
            self._text(text, f"state_labels.{status}", params)
        self._patch(pane.tokens, params.get("tokens") or {}, params)
        return {"type": "ok"}

    def _notification_show(self, params: dict[str, Any]) -> dict[str, Any]:
        title = _CONTROL.sub("", params["title"]).strip()
        if not title:
            raise HerdrAnswerError("invalid_params", "title must contain visible text")
        return {"type": "notification_show", "shown": False, "reason": "no_foreground_client"}

    def _plugin_pane_open(self, params: dict[str, Any]) -> dict[str, Any]:
        """Open a linked plugin's pane, as herdr's server does; the popup placement only.

        The refusals and their order are herdr's (``handle_plugin_pane_open``): the plugin, its
        entrypoint, the platform, sizes only for a popup, one popup at a time (herdr answers
        ``ui_busy`` outside its normal workspace view, which an open popup is not), and no
        target for a popup or an overlay. The popup runs in the plugin's folder (or the
        request's ``cwd``), and herdr answers its opening with ``ok``, naming no pane.
        """
        self._sync()
        plugin, pane = self._plugin_pane(params)
        placement = params.get("placement") or pane.get("placement") or "overlay"
        sized = params.get("width") is not None or params.get("height") is not None
        if placement != "popup" and sized:
            raise HerdrAnswerError(
                "invalid_params", "width and height are only supported when placement is popup"
            )
        if placement == "popup" and any(self.is_popup_open(each) for each in self.popups):
            raise HerdrAnswerError(
                "ui_busy", "popup panes can only open from the normal workspace view"
            )
        targets = ("workspace_id", "target_pane_id", "direction")
        if placement in {"overlay", "popup"} and any(params.get(k) is not None for k in targets):
            raise HerdrAnswerError(
                "invalid_params", "overlay and popup plugin panes target the active pane"
            )
        if placement != "popup":
            self._violate("unimplemented", "plugin.pane.open", placement, json.dumps(params))
            raise HerdrAnswerError("internal_error", "the fake herdr opens popup plugin panes only")
        if self._focused is None:
            raise HerdrAnswerError("no_active_workspace", "no active workspace")
        context = self._plugin_context(self._panes[self._focused])
        reference = "#/schemas/success_response/$defs/PluginInvocationContext"
        for problem in self.schema.problems(reference, context):
            self._violate("response", "plugin.pane.open", f"context {problem}", json.dumps(context))
        self.popups.append(self._start_popup(plugin, pane, params, context))
        return {"type": "ok"}

    def _plugin_pane(self, params: Mapping[str, Any]) -> tuple[_Plugin, dict[str, Any]]:
        """The linked plugin and the manifest pane a request names, or herdr's refusal."""
        plugin_id = str(params["plugin_id"]).strip()
        if not _PLUGIN_ID.fullmatch(plugin_id):
            raise HerdrAnswerError(
                "invalid_plugin_id",
                "plugin id must be non-empty, <= 120 characters, and contain only ASCII letters, "
                "digits, colon, dot, underscore, or hyphen",
            )
        plugin = self._plugins.get(plugin_id)
        if plugin is None:
            raise HerdrAnswerError("plugin_not_found", "plugin not found")
        entrypoint = str(params["entrypoint"]).strip()
        if not _PLUGIN_ID.fullmatch(entrypoint):
            raise HerdrAnswerError("invalid_plugin_entrypoint", "invalid entrypoint id")
        pane = plugin.panes.get(entrypoint)
        if pane is None:
            raise HerdrAnswerError(
                "plugin_pane_not_found", f"plugin pane entrypoint '{entrypoint}' not found"
            )
        platforms = pane.get("platforms") or plugin.platforms
        if platforms is not None and _PLATFORM not in platforms:
            raise HerdrAnswerError("platform_unsupported", f"plugin pane is not for {_PLATFORM}")
        return plugin, pane

    def _start_popup(
        self,
        plugin: _Plugin,
        pane: Mapping[str, Any],
        params: Mapping[str, Any],
        context: dict[str, Any],
    ) -> PluginPopup:
        """Run the pane's command in a tmux session of its own (a popup is no workspace's pane).

        Its environment: herdr's PATH, the request's ``env``, then herdr's plugin variables,
        which win (reference §6). The fake has no herdr binary, so ``HERDR_BIN_PATH`` is unset.
        """
        entrypoint = str(pane["id"]).strip()
        folders = self._folder / "plugins" / plugin.plugin_id
        for name in ("config", "state"):
            (folders / name).mkdir(parents=True, exist_ok=True)
        given = {k: v for k, v in (params.get("env") or {}).items() if k not in _PLUGIN_VARIABLES}
        env = {
            "PATH": plugin.path if plugin.path is not None else os.environ.get("PATH", ""),
            **given,
            "HERDR_SOCKET_PATH": str(self.socket_path),
            "HERDR_ENV": "1",
            "HERDR_PLUGIN_ID": plugin.plugin_id,
            "HERDR_PLUGIN_ROOT": str(plugin.root),
            "HERDR_PLUGIN_CONFIG_DIR": str(folders / "config"),
            "HERDR_PLUGIN_STATE_DIR": str(folders / "state"),
            "HERDR_PLUGIN_ENTRYPOINT_ID": entrypoint,
            "HERDR_PLUGIN_CONTEXT_JSON": json.dumps(context),
        }
        cwd = str(params.get("cwd") or plugin.root)
        width = _cells(params.get("width") or pane.get("width"), _CLIENT_SIZE[0])
        height = _cells(params.get("height") or pane.get("height"), _CLIENT_SIZE[1])
        command = [str(part) for part in pane["command"]]
        flags = [part for key, value in env.items() for part in ("-e", f"{key}={value}")]
        # tmux gives a new session the PATH of the client that asked for it, over any -e: env(1)
        # sets herdr's before the command is looked up on it.
        argv = ["env", f"PATH={env['PATH']}", *command]
        # The terminal inside the popup is its size less the border.
        made = self._tmux(
            "new-session", "-d", "-s", f"fake-herdr-popup-{len(self.popups) + 1}",
            "-x", str(max(width - 2, 10)), "-y", str(max(height - 2, 4)), "-P", "-F",
            "#{pane_id}", "-c", cwd, *flags, *(escape_argument(part) for part in argv),
        ).strip()  # fmt: skip
        return PluginPopup(
            plugin_id=plugin.plugin_id,
            entrypoint=entrypoint,
            command=command,
            cwd=cwd,
            env=env,
            context=context,
            size=(width, height),
            tmux_id=made,
        )

    def _plugin_context(self, focused: _Pane) -> dict[str, Any]:
        """The invocation context herdr gives a plugin pane: what is focused when it opens.

        ``workspace_cwd`` is the folder of the workspace's first pane (the fake's choice: herdr's
        source names a workspace's folder without saying how it is kept).
        """
        workspace = self._workspaces[focused.workspace_id]
        tab = self._tabs[focused.tab_id]
        first = next(p for p in self._panes.values() if p.workspace_id == workspace.workspace_id)
        return {
            "workspace_id": workspace.workspace_id,
            "workspace_label": workspace.label,
            "workspace_cwd": first.cwd,
            "tab_id": tab.tab_id,
            "tab_label": tab.label,
            "focused_pane_id": focused.pane_id,
            "focused_pane_cwd": focused.cwd,
            "focused_pane_status": "unknown",
            "invocation_source": "plugin-pane",
        }

    def _text(self, text: str, field: str, params: Mapping[str, Any]) -> str:
        """A text as herdr stores it; one it would cut is recorded (its end would be lost)."""
        kept = _CONTROL.sub("", text).strip()
        if len(kept) > _TEXT_LIMIT:
            said = f"{field} is {len(kept)} characters: herdr keeps {_TEXT_LIMIT}"
            self._violate("rule", "report_metadata", said, json.dumps(params)[:2000])
            kept = kept[:_TEXT_LIMIT]
        return kept

    def _patch(
        self, tokens: dict[str, str], patch: Mapping[str, str | None], params: Mapping[str, Any]
    ) -> None:
        """Apply a token patch: a string sets, null or an empty text clears, the rest stay."""
        for name, value in patch.items():
            kept = self._text(value, f"tokens.{name}", params) if value is not None else ""
            if kept:
                tokens[name] = kept
            else:
                tokens.pop(name, None)
        if len(tokens) > _TOKENS_KEPT:
            said = f"{len(tokens)} tokens kept: herdr keeps at most {_TOKENS_KEPT}"
            self._violate("rule", "report_metadata", said, json.dumps(params)[:2000])


def _cells(size: object, whole: int) -> int:
    """A popup size (cells, or a percentage of the client's terminal) in cells; all if unset."""
    if isinstance(size, int) and not isinstance(size, bool):
        return min(size, whole)
    if isinstance(size, str) and size.endswith("%") and size[:-1].isdigit():
        return max(whole * int(size[:-1]) // 100, 1)
    return whole


def _error(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


def _check_source(source: object) -> None:
    if not isinstance(source, str) or not _SOURCE.fullmatch(source):
        said = f"source must be 1-80 characters of [A-Za-z0-9:._-], not {source!r}"
        raise HerdrAnswerError("invalid_params", said)


def _tmux_key(key: str) -> tuple[bool, str]:
    """A herdr key-combo as tmux sends it: (literal, key); ``invalid_key`` when herdr has none."""
    name = key.strip()
    lowered = name.lower()
    if lowered in {"c-c", "ctrl+c"}:
        return False, "C-c"
    if lowered in _KEYS:
        return False, _KEYS[lowered]
    if re.fullmatch(r"f([1-9]|1[0-9]|20)", lowered):
        return False, lowered.upper()
    if "+" in lowered and len(lowered) > 1:
        *mods, base = lowered.split("+")
        prefix = ""
        for mod in mods:
            if mod not in _MODIFIERS:
                raise HerdrAnswerError("invalid_key", f"unsupported key {key}")
            prefix += _MODIFIERS[mod]
        literal, tmux_base = _tmux_key(base)
        if literal and len(tmux_base) != 1:
            raise HerdrAnswerError("invalid_key", f"unsupported key {key}")
        return False, prefix + tmux_base
    if len(name) == 1:
        return True, name
    raise HerdrAnswerError("invalid_key", f"unsupported key {key}")


@contextlib.contextmanager
def running(
    schema_path: Path, *, protocol: int = 22, version: str = "0.9.0"
) -> Iterator[FakeHerdr]:
    """A fake herdr on a socket of its own (a short path under /tmp), stopped afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="fh-", dir="/tmp"))
    fake = FakeHerdr(folder / "herdr.sock", schema_path, protocol=protocol, version=version)
    try:
        yield fake.start()
    finally:
        fake.stop()
        shutil.rmtree(folder, ignore_errors=True)


def schema_path() -> Path | None:
    """The schema where flume's checkout has it beside itself (``../shared/reference``), if there.

    ``$FLUME_HERDR_SCHEMA`` names another.
    """
    given = os.environ.get("FLUME_HERDR_SCHEMA")
    if given:
        return Path(given)
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent.parent / "shared" / "reference" / "herdr-api.schema.json"
        if candidate.exists():
            return candidate
    return None


def connect_line(path: Path, request: Mapping[str, Any]) -> dict[str, Any]:
    """Send one request to a herdr socket and return its parsed answer (a test's raw client)."""
    answer = json.loads(sockets.exchange(path, json.dumps(request).encode(), connect=10, answer=10))
    assert isinstance(answer, dict)  # noqa: S101 (herdr answers objects)
    return answer
