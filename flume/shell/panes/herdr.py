"""herdr, through its socket API: panes of the user's running herdr server (reference/herdr.md).

Theory of operation. herdr is a terminal multiplexer with a local socket: newline-delimited JSON,
one request per connection (the server reads one line, answers one line and closes). Every
request here opens its own connection; the first one a :class:`Client` makes is a ``ping``, and
a server whose socket protocol flume does not know (20 and 22 are known) is refused with a
message that says so, before anything else is asked of it. The socket is
``$HERDR_SOCKET_PATH``, else the named session's (``$HERDR_SESSION``), else the default one under
herdr's config folder (§1).

:class:`Herdr` implements the pane port (:class:`flume.shell.panes.port.PaneServer`) as the tmux
adapter does, mapping its calls onto herdr's:

- a repository's places share one herdr workspace, labelled as flume's tmux session would be;
  each agent runs in a tab of its own, made by ``layout.apply`` with a pane node whose
  ``command`` is the agent's argument list: herdr starts it with no shell (its server code
  spawns a layout pane's argv directly), in ``cwd``, with ``env`` given as data. Nothing is
  typed into a shell, so nothing a caller wrote is ever read by one;
- a pane is known by the agent session it was started for through a pane token,
  ``flume_session``, reported (``pane.report_metadata``) right after the tab is made and read
  back with every ``pane.list``. A supervisor killed between the two finds the pane again when
  it asks for the same start: the tab's launch argument list (``layout.export``) names the
  session's private exec file, and the token is reported then;
- a paste is ``pane.send_input`` with text only (herdr wraps it in a bracketed paste when the
  agent asked for that mode), then ``enter`` by ``pane.send_keys`` once the screen settled;
- a pane's screen is ``pane.read`` of its visible text; ``pane.close`` ends it.

Typed marks (DELIVERY-RETYPE-UNTYPED). tmux sets a pane option in the same command as the paste;
herdr has no request that does two things, so the mark is a pane token, ``flume_typed``,
reported *before* the paste and cleared again if the paste fails. The guarantee: the pane never
holds a paste without its mark, so a prompt whose mark the pane lacks was never pasted, and a
retype can never be a paste's second copy (no prompt reaches a pane more than twice). Where it is
weaker than tmux: a supervisor killed between the report and the paste leaves a mark for a paste
that never happened, so that send counts as typed though it was not; the core then finds it
missing and resends it once, as for a prompt the agent lost, and a stage whose agent also loses
that resend is reported never begun after one real paste rather than two. Tokens are not kept
across a restart of herdr itself, but neither are the panes' processes.

What herdr does not give that tmux does: a pane's process exiting closes the pane, so there are
no dead panes to read an exit status or last words from (the agent is reported gone, status
unknown); and a pane has no time of its last output, only a ``revision`` that changes with it,
so :attr:`Pane.activity` is the time this process first saw the revision it holds now.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flume.core.errors import UsageError
from flume.shell import environment, process
from flume.shell.panes.tmux import SESSION_VARIABLE, Pane, tidy_name
from flume.shell.process import Ran
from flume.shell.tools import sockets

#: The socket protocols flume speaks: herdr 0.8.x (20) and 0.9.x (22) (reference §2).
PROTOCOLS = frozenset({20, 22})
#: The pane token (a metadata key, no secret) that names the agent session a pane runs.
SESSION_TOKEN = "flume_session"  # noqa: S105 (herdr's word for a display value)
#: The pane token that holds the mark of the last prompt pasted into a pane.
TYPED_TOKEN = "flume_typed"  # noqa: S105 (herdr's word for a display value)
#: The metadata source flume's own reports use (``source`` rules: reference §4).
SOURCE = "flume"
#: Seconds to connect, and to wait for an answer (no method flume calls is a waiting one).
CONNECT_SECONDS = 5.0
ANSWER_SECONDS = 15.0
#: How long herdr may be unreachable before its panes count as gone: a herdr restarting, or
#: handing off to a new binary, is away for moments, and its agents are not gone with it.
GONE_AFTER_SECONDS = 30.0
#: herdr caps token values at this many characters (reference §4).
TOKEN_TEXT = 80
#: Bracketed paste's start and end sequences.
_PASTE_MARKS = re.compile("\x1b\\[20[01]~")
#: Control characters other than tab, newline and carriage return.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class HerdrError(Exception):
    """herdr could not be reached, answered with an error, or speaks another protocol."""

    def __init__(self, code: str, message: str) -> None:
        """Keep herdr's error code (or flume's own word for a transport fault) and message."""
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


def config_dir() -> Path:
    """Herdr's config folder: ``$XDG_CONFIG_HOME/herdr``, else ``~/.config/herdr``."""
    base = environment.current().get("XDG_CONFIG_HOME") or str(environment.home() / ".config")
    return Path(base) / "herdr"


def socket_path() -> Path:
    """The socket: ``$HERDR_SOCKET_PATH``, else a named session's, else the default (§1)."""
    given = environment.current().get("HERDR_SOCKET_PATH")
    if given:
        return Path(given)
    session = environment.current().get("HERDR_SESSION")
    if session:
        return config_dir() / "sessions" / session / "herdr.sock"
    return config_dir() / "herdr.sock"


class Client:
    """One herdr server's socket: a request per connection, the protocol checked first."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or socket_path()
        self.version: str | None = None
        self.protocol: int | None = None
        self._checked = threading.Lock()

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The ``result`` of one request, after a ``ping`` has shown a known protocol.

        Raises :class:`HerdrError` for an error answer, a refused protocol, or a socket fault;
        a socket fault makes the next call ``ping`` again (herdr may have been restarted).
        """
        self.check()
        try:
            return self.send(method, params)
        except HerdrError as error:
            if error.code in {"unreachable", "no_answer"}:
                self.protocol = None
            raise

    def check(self) -> None:
        """Ping once, and refuse a server whose protocol flume does not know."""
        with self._checked:
            if self.protocol is not None:
                return
            pong = self.send("ping", {})
            protocol = pong.get("protocol")
            if pong.get("type") != "pong" or not isinstance(protocol, int):
                said = f"herdr at {self.path} answered ping with {pong}"
                raise HerdrError("protocol_unknown", said)
            if protocol not in PROTOCOLS:
                known = " and ".join(str(each) for each in sorted(PROTOCOLS))
                message = (
                    f"herdr {pong.get('version', '?')} at {self.path} speaks socket protocol "
                    f"{protocol}; flume speaks protocols {known}: run a herdr that speaks one of "
                    "them, or a flume that knows this one"
                )
                raise HerdrError("protocol_mismatch", message)
            self.version = str(pong.get("version", ""))
            self.protocol = protocol

    def send(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send one request on a new connection and read its one answer (no protocol check)."""
        request_id = f"flume-{uuid.uuid4().hex[:12]}"
        line = json.dumps({"id": request_id, "method": method, "params": dict(params or {})})
        try:
            said = sockets.exchange(
                self.path, line.encode(), connect=CONNECT_SECONDS, answer=ANSWER_SECONDS
            )
            answer = said.decode("utf-8", "replace").strip()
        except (FileNotFoundError, ConnectionRefusedError) as error:
            message = f"no herdr server listens at {self.path} ({error.strerror})"
            raise HerdrError("unreachable", message) from error
        except OSError as error:
            raise HerdrError("no_answer", f"herdr at {self.path}: {error}") from error
        try:
            reply = json.loads(answer)
        except ValueError as error:
            raise HerdrError("no_answer", f"herdr at {self.path} answered {answer!r}") from error
        if not isinstance(reply, dict):
            raise HerdrError("no_answer", f"herdr at {self.path} answered {answer!r}")
        failed = reply.get("error")
        if isinstance(failed, dict):
            raise HerdrError(str(failed.get("code", "error")), str(failed.get("message", "")))
        result = reply.get("result")
        if not isinstance(result, dict):
            raise HerdrError("no_answer", f"herdr at {self.path} answered {answer!r}")
        return result


def check_server(path: Path | None = None) -> str:
    """The version of the herdr at ``path`` (default: :func:`socket_path`); a usage error if none.

    A launch with ``--panes herdr`` asks first, so that a place is never made for a herdr that
    is not there or speaks a protocol flume does not know.
    """
    client = Client(path)
    try:
        client.check()
    except HerdrError as error:
        mend = (
            "start herdr (or set HERDR_SOCKET_PATH to its socket), or launch with --panes tmux"
            if error.code in {"unreachable", "no_answer"}
            else "launch with --panes tmux, or run a herdr flume knows"
        )
        raise UsageError.one("panes", error.message, mend) from None
    return client.version or ""


def _ran(method: str, *, out: str = "", error: HerdrError | None = None) -> Ran:
    argv = ("herdr", method)
    if error is None:
        return Ran(argv=argv, status=0, out=out, err="")
    return Ran(argv=argv, status=1, out="", err=f"herdr {method}: {error.message} ({error.code})")


def _exec_file_of(argv: Sequence[str], session: str) -> bool:
    """The argument list starts an agent from the session's private exec file (agents.py)."""
    return any(part.endswith(f"{session}.exec.json") for part in argv)


class Herdr:
    """The pane port over one herdr server."""

    def __init__(self, path: Path | None = None) -> None:
        self.client = Client(path)
        self._creating = threading.Lock()
        #: Each pane's revision when last listed, and when it was first seen holding it.
        self._revisions: dict[str, tuple[int, float]] = {}
        #: When herdr was first found unreachable, in this run of unanswered listings.
        self._unreachable_since: float | None = None

    # --- starting --------------------------------------------------------------------------

    def start(
        self,
        *,
        group: str,
        window: str,
        cwd: Path,
        argv: Sequence[str],
        env: Mapping[str, str],
    ) -> Ran:
        """Start ``argv`` in ``cwd`` in a new tab of workspace ``group``; prints its pane id.

        The argument list is the pane's command: herdr runs it without a shell. ``env`` goes to
        herdr as data (it is no secret: agents get theirs from a private file). A pane already
        started for the same session (its token never reported) is reported instead.
        """
        session = env.get(SESSION_VARIABLE, "")
        group, window = tidy_name(group), tidy_name(window)
        node: dict[str, object] = {
            "type": "pane",
            "label": window,
            "cwd": str(cwd),
            "command": list(argv),
            "env": dict(env),
        }
        with self._creating:
            try:
                # A workspace whose last tab closes goes with it: one listed a moment ago may be
                # gone by the time the tab is asked for, and is then made anew, once.
                try:
                    spare, applied = self._apply(group, window, cwd, session, node)
                except HerdrError as error:
                    if error.code != "workspace_not_found":
                        raise
                    spare, applied = self._apply(group, window, cwd, session, node)
            except HerdrError as error:
                return _ran("layout.apply", error=error)
            if isinstance(applied, str):
                return _ran("layout.apply", out=f"{applied}\n")
            pane = _pane_of_layout(applied.get("layout"))
            if pane is None:
                failed = HerdrError("no_answer", f"layout.apply named no pane: {applied}")
                return _ran("layout.apply", error=failed)
            if spare is not None:
                # A new workspace comes with a shell tab of its own: the agent's tab replaces it.
                with contextlib.suppress(HerdrError):
                    self.client.call("pane.close", {"pane_id": spare})
            if session:
                try:
                    self._report(pane, {SESSION_TOKEN: session})
                except HerdrError as error:
                    with contextlib.suppress(HerdrError):
                        self.client.call("pane.close", {"pane_id": pane})
                    return _ran("pane.report_metadata", error=error)
            return _ran("layout.apply", out=f"{pane}\n")

    def _apply(
        self, group: str, window: str, cwd: Path, session: str, node: Mapping[str, object]
    ) -> tuple[str | None, dict[str, Any] | str]:
        """A new workspace's spare pane, and ``layout.apply``'s result (or the pane adopted)."""
        workspace, spare = self._workspace(group, cwd)
        adopted = self._adopt(workspace, window, session) if session else None
        if adopted is not None:
            return spare, adopted
        params = {"workspace_id": workspace, "tab_label": window, "focus": False, "root": node}
        return spare, self.client.call("layout.apply", params)

    def _workspace(self, group: str, cwd: Path) -> tuple[str, str | None]:
        """The id of the workspace labelled ``group``, made when there is none.

        A new workspace's own root pane is returned as spare, to close once the agent's tab is
        there (a workspace without a tab would close at once).
        """
        listed = self.client.call("workspace.list", {})
        for workspace in listed.get("workspaces", []):
            if isinstance(workspace, dict) and workspace.get("label") == group:
                return str(workspace["workspace_id"]), None
        made = self.client.call(
            "workspace.create", {"cwd": str(cwd), "label": group, "focus": False}
        )
        workspace_id = str(made["workspace"]["workspace_id"])
        return workspace_id, str(made["root_pane"]["pane_id"])

    def _adopt(self, workspace: str, window: str, session: str) -> str | None:
        """A pane of ``workspace`` already running ``session`` whose token was never reported.

        Only untokened panes labelled ``window`` are looked into (one ``layout.export`` each):
        they are left only by a start cut short, so this costs nothing in the usual case.
        """
        listed = self.client.call("pane.list", {"workspace_id": workspace})
        for info in listed.get("panes", []):
            if not isinstance(info, dict) or info.get("label") != window:
                continue
            if SESSION_TOKEN in (info.get("tokens") or {}):
                continue
            pane = str(info["pane_id"])
            exported = self.client.call("layout.export", {"pane_id": pane})
            command = _command_of(exported.get("layout"), pane)
            if command is not None and _exec_file_of(command, session):
                self._report(pane, {SESSION_TOKEN: session})
                return pane
        return None

    def _report(self, pane: str, tokens: Mapping[str, str | None]) -> None:
        """Set (or, with None, clear) flume's own tokens on a pane."""
        self.client.call(
            "pane.report_metadata", {"pane_id": pane, "source": SOURCE, "tokens": dict(tokens)}
        )

    # --- observing -------------------------------------------------------------------------

    def panes(self) -> dict[str, Pane] | None:
        """Every pane flume started (it has a session token), by pane id; None when unknown.

        A herdr unreachable for :data:`GONE_AFTER_SECONDS` on end has no panes of flume's ({}):
        its agents went with it. Before that, and for any other failure, the panes are unknown.
        """
        process.count.asked("herdr")
        now = time.time()
        try:
            listed = self.client.call("pane.list", {})
        except HerdrError as error:
            if error.code != "unreachable":
                return None
            if self._unreachable_since is None:
                self._unreachable_since = now
            return {} if now - self._unreachable_since >= GONE_AFTER_SECONDS else None
        self._unreachable_since = None
        found: dict[str, Pane] = {}
        seen: dict[str, tuple[int, float]] = {}
        for info in listed.get("panes", []):
            if not isinstance(info, dict):
                continue
            tokens = info.get("tokens") or {}
            session = tokens.get(SESSION_TOKEN)
            if not isinstance(session, str) or not session:
                continue
            pane_id = str(info.get("pane_id"))
            revision = info.get("revision")
            revision = revision if isinstance(revision, int) else 0
            before = self._revisions.get(pane_id)
            # The first sight says nothing of when it last drew: only a change is output seen.
            if before is None:
                seen[pane_id] = (revision, 0.0)
            elif before[0] != revision:
                seen[pane_id] = (revision, now)
            else:
                seen[pane_id] = before
            typed = tokens.get(TYPED_TOKEN)
            found[pane_id] = Pane(
                id=pane_id,
                dead=False,
                dead_status=None,
                activity=seen[pane_id][1],
                pid=0,
                session_name=str(info.get("workspace_id", "")),
                window_name=str(info.get("label") or ""),
                session=session,
                typed=typed if isinstance(typed, str) else "",
            )
        self._revisions = seen
        return found

    def capture(self, pane: str) -> str | None:
        """The pane's visible screen as text; None when herdr could not read it."""
        process.count.asked("herdr")
        try:
            read = self.client.call(
                "pane.read", {"pane_id": pane, "source": "visible", "format": "text"}
            )
        except HerdrError:
            return None
        text = (read.get("read") or {}).get("text")
        return text if isinstance(text, str) else None

    # --- acting ----------------------------------------------------------------------------

    def paste(self, pane: str, text: str, *, mark: str = "", settle: float = 5.0) -> Ran:
        """Paste ``text`` into ``pane`` (bracketed if the agent asked for it), then press Enter.

        A ``mark`` is reported on the pane before the paste and cleared if the paste fails (see
        the module's note for what that guarantees, and where it is weaker than tmux).
        """
        if len(mark) > TOKEN_TEXT or _CONTROL.search(mark):
            failed = HerdrError("invalid_params", f"a typed mark herdr cannot keep whole: {mark!r}")
            return _ran("pane.report_metadata", error=failed)
        before = self.capture(pane)
        text = _PASTE_MARKS.sub("", text)
        try:
            if mark:
                self._report(pane, {TYPED_TOKEN: mark})
            try:
                self.client.call("pane.send_input", {"pane_id": pane, "text": text})
            except HerdrError:
                if mark:
                    with contextlib.suppress(HerdrError):
                        self._report(pane, {TYPED_TOKEN: None})
                raise
        except HerdrError as error:
            return _ran("pane.send_input", error=error)
        # Enter goes once the screen shows the paste and has stopped changing: the agent has
        # drawn it and left paste mode. Each look is a read; the wait is on what it shows.
        deadline = time.monotonic() + settle
        last, changed = before, False
        while time.monotonic() < deadline:
            time.sleep(0.03)
            now = self.capture(pane)
            if now is None:
                break
            if changed and now == last:
                break
            changed = changed or now != before
            last = now
        try:
            self.client.call("pane.send_keys", {"pane_id": pane, "keys": ["enter"]})
        except HerdrError as error:
            return _ran("pane.send_keys", error=error)
        return _ran("pane.send_keys")

    def kill_pane(self, pane: str) -> Ran:
        """Close the pane (herdr ends its process); a pane already gone is no failure."""
        process.count.asked("herdr")
        try:
            self.client.call("pane.close", {"pane_id": pane})
        except HerdrError as error:
            if error.code in {"pane_not_found", "not_found"}:
                return _ran("pane.close")
            return _ran("pane.close", error=error)
        return _ran("pane.close")

    def attach_argv(self, pane: str) -> list[str]:
        """The command that shows ``pane`` in this terminal: herdr's own attach."""
        program = os.environ.get("HERDR_BIN_PATH") or "herdr"
        return [program, "agent", "attach", pane]


def _pane_of_layout(layout: object) -> str | None:
    """The pane a one-pane layout describes (its root's ``pane_id``, else its focused pane)."""
    if not isinstance(layout, dict):
        return None
    root = layout.get("root")
    if isinstance(root, dict) and isinstance(root.get("pane_id"), str):
        return str(root["pane_id"])
    focused = layout.get("focused_pane_id")
    return focused if isinstance(focused, str) else None


def _command_of(node: object, pane: str) -> list[str] | None:
    """The launch argument list of ``pane`` in an exported layout tree."""
    if not isinstance(node, dict):
        return None
    if "root" in node:
        return _command_of(node["root"], pane)
    if node.get("type") == "pane":
        command = node.get("command")
        if node.get("pane_id") == pane and isinstance(command, list):
            return [str(part) for part in command]
        return None
    for child in (node.get("first"), node.get("second")):
        found = _command_of(child, pane)
        if found is not None:
            return found
    return None
