"""tmux, through plumbum, bound once: flume's own server, never the user's.

Theory of operation. flume runs every agent in a pane of a tmux server of its own, on the socket
``$FLUME_TMUX_SOCKET`` or ``$XDG_STATE_HOME/flume/tmux.sock``, started with no config file. One
tmux session per repository, one window per place, named after it; everything after creation is
addressed by pane id (``%12``), never by name (reference/tmux.md §3).

Nothing a caller writes reaches a shell or tmux's command parser: agents start from an argument
list run through ``env -C PLACE K=V... argv`` (tmux runs a multi-argument command without a
shell; ``env -C`` fails loudly on a missing folder, where tmux's ``-c`` would expand formats in
the path), a trailing ``;`` in any argument is escaped (tmux would read it as a separator), and
text for an agent goes through ``load-buffer`` from standard input and ``paste-buffer -p``
(bracketed paste), never on a command line.

All panes are observed with one ``list-panes -a`` call (:meth:`Tmux.panes`); a listing tmux
could not give is ``None``, never "no panes", so that a failed call is never read as every agent
having exited. A server with no session left exits: a call that reaches it then, or as it goes,
is told so in one of a few ways (:data:`_SERVER_GONE`), and that is a server with no panes, not
a failure; a start that met a server on its way out starts a new one.
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from flume.shell import process
from flume.shell.process import Ran
from flume.shell.store.places import state_dir

#: The variable that names the agent session a pane runs; it is part of the pane's command.
SESSION_VARIABLE = "FLUME_SESSION"
_SESSION_IN_COMMAND = re.compile(SESSION_VARIABLE + r"=([0-9A-Za-z-]{8,64})")
_FIELDS = (
    "#{pane_id}",
    "#{pane_dead}",
    "#{pane_dead_status}",
    "#{window_activity}",
    "#{pane_pid}",
    "#{session_name}",
    "#{window_name}",
    "#{@flume_typed}",
    # The pane's session as :meth:`Tmux.start` marked it; a pane not marked (started by an
    # older flume, or listed between its start and its mark) gives its whole command, which
    # names it. The command is hundreds of bytes a pane, and the listing is taken every tick
    # (issue 29: 370 KB a listing at 1,000 panes); tmux cutting it with a regular expression
    # cost its server 13 ms a listing of 150 panes, a conditional costs it nothing.
    "#{?@flume_session,#{@flume_session},#{pane_start_command}}",
)

#: What the server is set to when flume starts it (reference/tmux.md §1, §8).
_SERVER_OPTIONS = (
    ("set-option", "-g", "remain-on-exit", "on"),
    ("set-option", "-g", "history-limit", "50000"),
    ("set-option", "-s", "escape-time", "0"),
    ("set-option", "-g", "default-size", "200x50"),
    ("set-option", "-g", "focus-events", "on"),
)
WIDTH, HEIGHT = "200", "50"
#: Seconds a tmux command may take before it counts as failed: a hung server must not hang
#: the supervisor's tick.
_TIMEOUT = 15.0
#: What tmux says when the server is gone, or went as the call reached it: a server whose last
#: session closed exits. ``no current target`` is a server still answering with no session left
#: (tmux 3.3a said it to ``list-panes -a`` about once in a hundred ends of a last pane).
_SERVER_GONE = (
    "no server running",
    "error connecting",
    "server exited unexpectedly",
    "lost server",
    "no current target",
)
#: How many times a start is tried against a server that was on its way out.
_START_TRIES = 5
#: Bracketed paste's start and end sequences.
_PASTE_MARKS = re.compile("\x1b\\[20[01]~")


def server_gone(ran: Ran) -> bool:
    """The call failed because the server had gone, or was going as the call reached it."""
    said = ran.err.lower()
    return not ran.ok and any(words in said for words in _SERVER_GONE)


def socket_path() -> Path:
    """The socket of flume's tmux server: ``$FLUME_TMUX_SOCKET``, or in its state folder."""
    given = os.environ.get("FLUME_TMUX_SOCKET")
    return Path(given) if given else state_dir() / "tmux.sock"


@attrs.frozen(kw_only=True)
class Pane:
    """One pane, as one line of ``list-panes -a`` tells it."""

    id: str
    dead: bool
    dead_status: int | None
    #: The last time (epoch seconds) the pane's window showed output.
    activity: float
    pid: int
    session_name: str
    window_name: str
    #: The agent session the pane was started for: read from its start command.
    session: str | None
    #: The mark of the last prompt submitted in the pane (see :meth:`Tmux.paste`); "" if none.
    typed: str = ""


def escape_argument(argument: str) -> str:
    r"""An argument tmux passes on as given: a trailing ``;`` would end the command (§5)."""
    return argument[:-1] + "\\;" if argument.endswith(";") else argument


def tidy_name(name: str) -> str:
    """A session or window name tmux keeps as given: ``.`` and ``:`` become ``_`` (§3)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name) or "_"


class Tmux:
    """One tmux server, on one socket."""

    def __init__(self, socket: Path | None = None) -> None:
        self.socket = socket or socket_path()
        self._creating = threading.Lock()
        #: Each line of the last listing, and the pane it was read as.
        self._parsed: dict[str, Pane] = {}

    def run(self, *args: str, stdin: str | None = None) -> Ran:
        """Run ``tmux -S SOCKET -f /dev/null args``; never raises on a non-zero exit."""
        argv = ("tmux", "-S", str(self.socket), "-f", "/dev/null", *args)
        # The environment as it is now (plumbum's own is a copy taken when it was imported): a
        # server this call starts hands it to the panes it makes. TMUX is unset so that flume's
        # server is never mistaken for the caller's own.
        env = {**os.environ, "TMUX": ""}
        return process.run(argv, env=env, stdin=stdin, timeout=_TIMEOUT)

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
        """Start ``argv`` in ``cwd`` in a new window of session ``group``; prints its pane id.

        ``env`` goes into the pane's command (``env K=V``): a start command is visible to
        ``ps``, so only values that are no secret (agents get theirs from a private file).
        """
        self.socket.parent.mkdir(parents=True, exist_ok=True)
        command = ["env", "-C", str(cwd), *(f"{key}={value}" for key, value in env.items())]
        command.extend(argv)
        escaped = [escape_argument(part) for part in command]
        group, window = tidy_name(group), tidy_name(window)
        with self._creating:
            # A server whose last pane was just closed may still answer, then exit under the
            # call: it made no pane, and the next try starts a server of its own.
            for _ in range(_START_TRIES):
                ran = self._start(group, window, escaped)
                if not server_gone(ran):
                    break
        session = env.get(SESSION_VARIABLE)
        if ran.ok and session:
            # Its session marked on the pane, as its command sets it, for the listing: read
            # without the rest of the command.
            mark = f"{SESSION_VARIABLE}={session}"
            self.run("set-option", "-p", "-t", ran.out.strip(), "@flume_session", mark)
        return ran

    def _start(self, group: str, window: str, escaped: Sequence[str]) -> Ran:
        if self.run("has-session", "-t", f"={group}").ok:
            return self.run(
                "new-window", "-d", "-P", "-F", "#{pane_id}", "-t", f"={group}:", "-n",
                window, *escaped,
            )  # fmt: skip
        # Options go in the same call as the first session: a server with no session
        # exits at once, and remain-on-exit must hold before any agent can exit.
        sequence: list[str] = []
        for option in _SERVER_OPTIONS:
            sequence.extend([*option, ";"])
        sequence.extend([
            "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", group, "-n", window,
            "-x", WIDTH, "-y", HEIGHT, *escaped,
        ])  # fmt: skip
        return self.run("start-server", ";", *sequence)

    # --- observing -------------------------------------------------------------------------

    def panes(self) -> dict[str, Pane] | None:
        """Every pane of the server, by pane id; {} with no server; None when tmux failed."""
        ran = self.run("list-panes", "-a", "-F", "\t".join(_FIELDS))
        if not ran.ok:
            # The server is gone, or went as the call reached it (its last pane was closed).
            return {} if server_gone(ran) else None
        found: dict[str, Pane] = {}
        # A pane listed as it was last time is the same Pane (most are, tick after tick).
        parsed: dict[str, Pane] = {}
        for line in ran.out.splitlines():
            same = self._parsed.get(line)
            if same is not None:
                found[same.id] = parsed[line] = same
                continue
            parts = line.split("\t", len(_FIELDS) - 1)
            if len(parts) != len(_FIELDS):
                continue
            pane_id, dead, dead_status, activity, pid, session_name, window_name = parts[:7]
            typed, command = parts[7:]
            match = _SESSION_IN_COMMAND.search(command)
            found[pane_id] = Pane(
                id=pane_id,
                dead=dead == "1",
                dead_status=int(dead_status) if dead_status.lstrip("-").isdigit() else None,
                activity=float(activity) if activity.isdigit() else 0.0,
                pid=int(pid) if pid.isdigit() else 0,
                session_name=session_name,
                window_name=window_name,
                session=match.group(1) if match else None,
                typed=typed,
            )
            parsed[line] = found[pane_id]
        self._parsed = parsed
        return found

    def capture(self, pane: str) -> str | None:
        """The pane's screen as text; None when tmux could not read it."""
        ran = self.run("capture-pane", "-p", "-J", "-t", pane)
        return ran.out if ran.ok else None

    # --- acting ----------------------------------------------------------------------------

    def paste(self, pane: str, text: str, *, mark: str = "", settle: float = 5.0) -> Ran:
        """Paste ``text`` literally (bracketed paste) into ``pane``, then press Enter.

        Enter goes separately, once the screen shows the paste (or after ``settle`` seconds),
        so the agent has left paste mode (reference/tmux.md §5). Whether the agent took the text
        is for its transcript to say, never for this.

        A ``mark`` is set on the pane (its ``@flume_typed`` option) by the same tmux command as
        the Enter that submits the paste: tmux runs the two together, so the pane says what was
        submitted in it even when the caller is killed before it could note it. A caller killed
        between the paste and the Enter leaves the text unsubmitted and the pane unmarked: typed
        again, it is submitted with the first copy, as one message.
        """
        before = self.capture(pane)
        buffer = f"flume-{uuid.uuid4().hex}"
        # The paste's own end marker inside it would end the paste early (callers' words are
        # checked for control characters; this holds whatever reaches here).
        text = _PASTE_MARKS.sub("", text)
        loaded = self.run("load-buffer", "-b", buffer, "-", stdin=text)
        if not loaded.ok:
            return loaded
        pasted = self.run("paste-buffer", "-p", "-r", "-d", "-b", buffer, "-t", pane)
        if not pasted.ok:
            self.run("delete-buffer", "-b", buffer)
            return pasted
        # Enter goes once the screen shows the paste and has stopped changing: the agent has
        # drawn it and left paste mode. Each look is a capture; the wait is on what it shows.
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
        marking = (";", "set-option", "-p", "-t", pane, "@flume_typed", mark) if mark else ()
        return self.run("send-keys", "-t", pane, "Enter", *marking)

    def kill_pane(self, pane: str) -> Ran:
        """End the pane's process and close the pane."""
        return self.run("kill-pane", "-t", pane)

    def kill_server(self) -> Ran:
        """End the server and every pane in it."""
        return self.run("kill-server")

    def attach_argv(self, pane: str) -> list[str]:
        """The command that shows ``pane`` in this terminal."""
        base = ["tmux", "-S", str(self.socket)]
        return [*base, "select-window", "-t", pane, ";", "attach-session", "-t", pane]
