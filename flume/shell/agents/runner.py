"""Agents in panes: Claude Code, Codex and flume's test agent, started, typed into and ended.

Theory of operation. The core asks for ``StartAgent``, ``SendPrompt``/``SendTell`` and
``EndAgent``; :class:`Agents` performs them in panes (flume's tmux server, or herdr's when the
launch names ``--panes herdr``) and reports what it saw. It decides
nothing: whether a prompt was taken is for the transcript to say (R5), read by
:mod:`flume.shell.observe.watch`.

A stage attempt's agent session id is chosen here, from the place, the stage, the attempt and the
instant the stage started (uuid5): the same start asked for twice (a supervisor killed between
starting the agent and journaling it, then restarted) names the same session, finds the pane
already running it, and reports that pane instead of starting a second agent (R4,
RESTART-PENDING).

What is particular to each agent (its command line, the files it needs written first, where its
registry is) is asked of its module through the agent port (:mod:`~flume.shell.agents.port`,
:func:`flume.shell.agents.of`): nothing here branches on the agent's name.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

from pyrsistent import pvector

from flume.core.actions import ActionName, EndAgent, SendPrompt, SendTell, StartAgent
from flume.core.ids import Instant, SessionId
from flume.core.launch import Panes
from flume.core.observations import (
    ActionFailed,
    AgentExited,
    AgentStarted,
    Observation,
    PromptTyped,
)
from flume.core.place import Place
from flume.shell.agents import KNOWN, of, sandbox
from flume.shell.agents.port import agents_dir
from flume.shell.agents.sandbox import Fence, fence_of
from flume.shell.panes import printed
from flume.shell.panes.herdr import Herdr
from flume.shell.panes.port import PaneServer, typed_mark
from flume.shell.panes.printed import Printed
from flume.shell.panes.tmux import SESSION_VARIABLE, Tmux
from flume.shell.store import inbox
from flume.shell.tools import locate
from flume.shell.tools.notify import SAFETY_SECONDS, Notify

#: Fixed, so that one stage attempt always names the same session.
_NAMESPACE = uuid.UUID("5b7f0c1e-3c8e-4f1a-9a51-6e2d6f6c7a10")
#: How long an agent's end looks again for its pane to be gone before saying it is still open.
_END_SECONDS = 2.0
#: The caller's own multiplexer's variables, which would make an agent think it runs in the
#: caller's pane: tmux's, and herdr's (herdr sets its own in the panes it starts for flume).
_TMUX_VARIABLES = frozenset(
    {"TMUX", "TMUX_PANE", "HERDR_ENV", "HERDR_PANE_ID", "HERDR_TAB_ID", "HERDR_WORKSPACE_ID"}
)
#: What a herdr pane's first program keeps of the environment herdr gave it (agentexec.py).
_HERDR_KEEPS = ("HERDR_ENV", "HERDR_PANE_ID", "HERDR_TAB_ID", "HERDR_WORKSPACE_ID")
#: The pane's first program (:mod:`flume.shell.agents.agentexec`).
_AGENTEXEC = Path(__file__).with_name("agentexec.py")


def session_for(place: Place, stage: str, attempt: int) -> SessionId:
    """The session id of a stage attempt's agent: the same for the same start, every time.

    A step in a loop is hashed with its key too (``review-loop@2/review``): each pass's agent
    is its own. A step in no loop keys by its name, so its id is what it always was.
    """
    current = place.stage.name == stage
    started = place.stage.started_at if current else 0.0
    key = f"{place.path}\0{stage}\0{attempt}\0{started!r}"
    if current and place.stage.key and place.stage.key != stage:
        key += f"\0{place.stage.key}"
    return SessionId(str(uuid.uuid5(_NAMESPACE, key)))


def command(
    place: Place, action: StartAgent, session: SessionId, fence: Fence | None = None
) -> list[str]:
    """The agent's command line, from its module and the launch's flags; never through a shell.

    With a ``fence`` (a sandboxed step's), it runs inside it (:mod:`.sandbox`).
    """
    settings = action.agent
    agent = of(settings.agent)
    argv = [
        *agent.command(place, session, settings.model, fenced=fence is not None),
        *settings.flags,
    ]
    if fence is None:
        return argv
    needs = agent.sandbox_needs(session, settings.flags)
    home = Path(environment(place, session).get("HOME") or Path.home())
    return sandbox.agent_command(argv, fence, needs, home)


def fenced(place: Place, action: StartAgent) -> tuple[Fence | None, str]:
    """A sandboxed step's fence, or why it cannot be held here (then the agent never starts).

    Not sandboxed: no fence, nothing wrong. "A sandboxed step must not silently run
    unsandboxed": what its agent's sandbox lacks (bubblewrap), or an endpoint it cannot name,
    is said, and nothing runs.
    """
    if not action.sandbox:
        return None, ""
    agent = of(action.agent.agent)
    lacking = agent.sandbox_missing()
    if lacking is not None:
        what, mend = lacking
        return None, f"the step is sandboxed, but {what}; {mend}, then retry the stage"
    session = session_for(place, action.stage, action.attempt)
    unnamed = agent.sandbox_needs(session, action.agent.flags).unnamed
    if unnamed:
        return None, f"the step is sandboxed, but {unnamed}; {sandbox.UNNAMED_MEND}"
    fence = fence_of(place, session, inbox.folder(agents_dir(), session))
    if fence is None:
        return None, f"the step is sandboxed, but git cannot say where {place.path}'s git is"
    return fence, ""


def marks(place: Place, session: SessionId) -> dict[str, str]:
    """What an agent's command shows of it: its session id and its place's name.

    A pane is known by its session id after any restart. No secret: ``ps`` shows a command line.
    """
    return {
        SESSION_VARIABLE: session,
        "FLUME_PLACE": place.launch.place,
    }


def search_path() -> str:
    """PATH with the folder of flume's own interpreter first, so agents find ``flume``."""
    return locate.search_path()


def environment(place: Place, session: SessionId) -> dict[str, str]:
    """The agent's whole environment: the supervisor's own, its marks, and flume on PATH."""
    env = {key: value for key, value in os.environ.items() if key not in _TMUX_VARIABLES}
    env.update(marks(place, session))
    env["PATH"] = search_path()
    return env


def write_private(path: Path, data: object) -> None:
    """Write JSON to a file only this user can read (it may hold API keys)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(data, file)


def tmux_group(repository: str) -> str:
    """The tmux session of a repository's places: its folder's name and a short digest."""
    digest = uuid.uuid5(_NAMESPACE, repository).hex[:6]
    return f"{Path(repository).name}-{digest}"


class Agents:
    """The agent port over panes: flume's tmux server, or herdr's, as each place's launch named."""

    def __init__(self, tmux: PaneServer | None = None, herdr: PaneServer | None = None) -> None:
        self.tmux: PaneServer = tmux or Tmux()
        self.herdr: PaneServer = herdr or Herdr()
        self.printed: PaneServer = Printed()

    def server(self, place: Place) -> PaneServer:
        """The pane server the place's launch named (``--panes``)."""
        return server_for(place, tmux=self.tmux, herdr=self.herdr, printed=self.printed)

    def start(self, place: Place, action: StartAgent, at: Instant) -> list[Observation]:  # noqa: PLR0911 (each way out says why)
        """R4: start the stage attempt's agent, or report the pane already running it."""
        session = session_for(place, action.stage, action.attempt)
        if action.agent.panes is Panes.PRINT:
            return self._print(place, action, session, at)
        server = self.server(place)
        panes = server.panes()
        if panes is None:
            return self._failed(at, [], f"{action.agent.panes.value} could not list its panes")
        for pane in panes.values():
            if pane.session == session:
                return [self._started(at, action, session, pane.id)]
        agent = of(action.agent.agent)
        # The launch checked these; the programs may have gone since (or PATH changed).
        if (missing := agent.missing()) is not None:
            what, mend = missing
            return self._failed(at, [agent.program()], f"{what}; {mend}, then retry the stage")
        fence, unfenced = fenced(place, action)
        if unfenced:
            return self._failed(at, [agent.program()], unfenced)
        try:
            argv = command(place, action, session, fence)
        except OSError as error:
            said = f"the step is sandboxed, but its fence could not be drawn: {error}"
            return self._failed(at, [agent.program()], said)
        agent.prepare(session)
        if not Path(place.path).is_dir():
            return self._failed(at, argv, f"the place {place.path} is not there")
        # The command line and environment go in a private file the pane's first program
        # reads and removes: no secret and no caller's argument on a command line.
        exec_file = agents_dir() / f"{session}.exec.json"
        keep = list(_HERDR_KEEPS) if action.agent.panes is Panes.HERDR else []
        env = environment(place, session)
        write_private(exec_file, {"argv": argv, "env": env, "keep": keep})
        ran = server.start(
            group=tmux_group(place.launch.repository),
            window=place.launch.place,
            cwd=Path(place.path),
            argv=[sys.executable, "-I", str(_AGENTEXEC), str(exec_file)],
            env=marks(place, session),
        )
        made = ran.out.strip()
        if not ran.ok or not made or printed.is_printed(made):
            what = ran.err.strip() or f"{action.agent.panes.value} made no pane"
            return self._failed(at, argv, what)
        return [self._started(at, action, session, made)]

    def _print(
        self, place: Place, action: StartAgent, session: SessionId, at: Instant
    ) -> list[Observation]:
        """The print backend: write the agent down for the caller to run (R4).

        Its pane runs the agent's own command, shown to the person who runs it: no first
        program reads a private file there, so the environment holds only marks and PATH.
        A sandboxed step's command holds its sandbox, as in a pane.
        """
        fence, unfenced = fenced(place, action)
        if unfenced:
            return self._failed(at, [of(action.agent.agent).program()], unfenced)
        try:
            argv = command(place, action, session, fence)
        except OSError as error:
            said = f"the step is sandboxed, but its fence could not be drawn: {error}"
            return self._failed(at, [of(action.agent.agent).program()], said)
        shown = marks(place, session) | {"PATH": search_path()}
        ran = self.printed.start(
            group=tmux_group(place.launch.repository),
            window=place.launch.place,
            cwd=Path(place.path),
            argv=argv,
            env=shown,
        )
        return [self._started(at, action, session, ran.out)]

    @staticmethod
    def _started(at: Instant, action: StartAgent, session: SessionId, pane: str) -> AgentStarted:
        return AgentStarted(
            at=at, stage=action.stage, attempt=action.attempt, session=session, pane=pane
        )

    @staticmethod
    def _failed(at: Instant, argv: list[str], output: str) -> list[Observation]:
        shown = [argv[0]] if argv else []
        return [
            ActionFailed(at=at, action=ActionName.START_AGENT, argv=pvector(shown), output=output)
        ]

    def end(self, place: Place, action: EndAgent, at: Instant) -> list[Observation]:
        """End the agent: close every pane running its session, then see that none is left."""
        server = self.server(place)
        if server is self.printed:
            _stop_registered(action.session)
        panes = server.panes()
        if panes is None:
            what = f"{place.launch.agent.panes.value} could not list panes"
            return [ActionFailed(at=at, action=ActionName.END_AGENT, output=what)]
        for pane in panes.values():
            if pane.session == action.session:
                server.kill_pane(pane.id)
        # A backend may close the pane a moment after it answers (herdr's pane.close): look
        # again until it is gone, for a bounded while, before saying it would not end (the core
        # then stops a stage waiting on it short: AGENT-END-FAILED-NAMED).
        deadline = time.monotonic() + _END_SECONDS
        while True:
            left = server.panes()
            open_ = left is None or any(pane.session == action.session for pane in left.values())
            if not open_:
                return [AgentExited(at=at, session=action.session)]
            if time.monotonic() >= deadline:
                return [
                    ActionFailed(
                        at=at, action=ActionName.END_AGENT, output="the agent's pane is still open"
                    )
                ]
            time.sleep(0.05)  # the backend's own state, with no event to wait on: look again

    def send(self, place: Place, action: SendPrompt | SendTell, at: Instant) -> list[Observation]:
        """Paste the text literally into the agent's pane and press Enter.

        A prompt's paste is reported typed (:class:`PromptTyped`); whether the agent took it
        is for its transcript to say (R5).
        """
        typed: list[Observation] = (
            [PromptTyped(at=at, session=action.session, marker=action.marker, send=action.send)]
            if isinstance(action, SendPrompt)
            else []
        )
        server = self.server(place)
        panes = server.panes()
        what = ActionName.of(action)
        if panes is None:
            said = f"{place.launch.agent.panes.value} could not list its panes"
            return [ActionFailed(at=at, action=what, output=said)]
        live = [p for p in panes.values() if p.session == action.session and not p.dead]
        if not live:
            return []  # the watch reports the agent gone; the send is found missing
        mark = typed_mark(action.marker, action.send) if isinstance(action, SendPrompt) else ""
        ran = server.paste(live[0].id, action.text, mark=mark)
        if not ran.ok:
            return [ActionFailed(at=at, action=what, output=ran.err.strip())]
        return typed


def server_for(
    place: Place, *, tmux: PaneServer, herdr: PaneServer, printed: PaneServer
) -> PaneServer:
    """The pane server of the place's launch (``--panes``): flume's tmux, herdr's, or printed."""
    servers = {Panes.TMUX: tmux, Panes.HERDR: herdr, Panes.PRINT: printed}
    return servers[place.launch.agent.panes]


def _stop_registered(session: SessionId) -> None:
    """End a printed agent's process, if it registered: a person's terminal runs it, not a pane.

    Its pane (its file) is closed like any other; the process it became is found by the live
    session registry, and ended only when its command line names the session.
    """
    entry = live_sessions().get(session)
    pid = entry.get("pid") if entry is not None else None
    if isinstance(pid, int) and pid > 1 and _runs_session(pid, session):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)


#: What each registry file held when last read, by path: (its modification time, its entry).
_REGISTRY: dict[str, tuple[int, dict[str, object] | None]] = {}


def _runs_session(pid: int, session: str) -> bool:
    """The process ``pid`` is the agent of ``session`` (its command line names it).

    A registry file a crashed agent left behind may name a pid another process has since.
    """
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return session.encode() in command


def live_sessions(
    fenced: Iterable[str] = (), notify: Notify | None = None
) -> dict[str, dict[str, object]]:
    """The live-session registries, by session id: of each agent that keeps one (§1).

    The sessions ``fenced`` named keep theirs in their fence's stand-in of the agent's home
    (:func:`~flume.shell.agents.sandbox.seen_home`), looked at too when it exists. One folder
    listing each; a file is read again only when it changed since it was last read, so a look
    costs what changed, not how many agents live. With ``notify``, a folder it watches is
    listed again only every :data:`~flume.shell.tools.notify.SAFETY_SECONDS`: between, only
    the files its events name are looked at.
    """
    found: dict[str, dict[str, object]] = {}
    seen: set[str] = set()
    homes = [home for home in (each.registry_home() for each in KNOWN.values()) if home]
    stand_ins = [sandbox.seen_home(session, home) for session in fenced for home in homes]
    clock = time.monotonic()
    folders = [str(home / "sessions") for home in dict.fromkeys([*homes, *stand_ins])]
    for folder in folders:
        entries = _registry_files(folder, notify, clock)
        seen.update(entries)
        for data in entries.values():
            if data is not None:
                found[str(data["sessionId"])] = data
    for gone in [path for path in _REGISTRY if path not in seen]:
        del _REGISTRY[gone]
    for gone in _LISTED.keys() - set(folders):
        del _LISTED[gone]
    return found


#: Each registry folder's files at its last listing, by path, and when it was listed.
_LISTED: dict[str, tuple[float, dict[str, dict[str, object] | None]]] = {}


def _registry_files(
    folder: str, notify: Notify | None, clock: float
) -> dict[str, dict[str, object] | None]:
    """Each registry file of ``folder`` and its entry (None: unreadable), by path."""
    listed = _LISTED.get(folder)
    changed = notify.taken(folder) if notify is not None else None
    if changed is not None and listed is not None and 0 <= clock - listed[0] < SAFETY_SECONDS:
        files = listed[1]
        for name in changed:
            if name.endswith(".json"):
                path = os.path.join(folder, name)  # noqa: PTH118 (a string: asked often)
                entry = _entry(path)
                if entry is _GONE:
                    files.pop(path, None)
                else:
                    files[path] = entry
        return files
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except FileNotFoundError:
        _LISTED.pop(folder, None)
        return {}
    files = {}
    for name in names:
        if name.endswith(".json"):
            path = os.path.join(folder, name)  # noqa: PTH118 (a string: asked often)
            entry = _entry(path)
            if entry is not _GONE:
                files[path] = entry
    _LISTED[folder] = (clock, files)
    return files


#: A registry file gone (or not to be read) since it was listed.
_GONE: dict[str, object] = {}


def _entry(path: str) -> dict[str, object] | None:
    """The registry file's entry, read again only when its modification time moved."""
    try:
        changed = os.stat(path).st_mtime_ns  # noqa: PTH116 (a string: asked often)
    except OSError:
        return _GONE
    cached = _REGISTRY.get(path)
    if cached is None or cached[0] != changed:
        cached = (changed, _read_entry(Path(path)))
        _REGISTRY[path] = cached
    return cached[1]


def _read_entry(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and isinstance(data.get("sessionId"), str):
        return data
    return None
