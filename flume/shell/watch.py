"""Watching agents: panes, transcripts, hooks and the live-session registry, each tick, in batches.

Theory of operation. :class:`Watch` is one of the supervisor's observers. Each tick it lists
every pane with one tmux call, reads the live-session registry's folder once, and for each place
with a live agent reads only what was appended to the agent's transcript and hook file since the
offsets it stored: the cost of a tick grows with the bytes that changed, not with the number of
places or the size of transcripts (P3, P4). It reports facts and decides nothing:

- every new transcript line (a torn last line waits for the next tick), and lines it could not
  read, counted (R5: only the transcript proves a prompt was taken);
- what the agent is doing, from whichever of its hooks and the registry spoke last, reported when
  it differs from what the place holds; the transcript's hints are the core's fallback;
- a workspace trust dialog on Claude Code's screen before it registers (a person is asked;
  anything typed would answer it, and its default answer ends the agent);
- the pane showing output (it moves the quiet clock, never a stage: R7);
- the agent gone: its pane dead or closed. A listing tmux could not give says nothing.

Offsets move on only after the lines they cover are journaled: the supervisor journals each
observation as it is yielded, so the offsets are saved once a place's observations are all
yielded. A supervisor killed before that reads the lines again, and the rules take a line seen
twice as they take it once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from flume.core.ids import Instant, SessionId
from flume.core.launch import AgentName
from flume.core.observations import (
    Activity,
    AgentExited,
    AgentStateSeen,
    Observation,
    PaneOutput,
    TranscriptUnreadable,
)
from flume.core.place import Agent, AwaitingInput, Place
from flume.shell import rollout, transcript
from flume.shell.agents import (
    PRINTED,
    agents_dir,
    codex_home,
    hooks_path,
    live_sessions,
    registry_status,
    transcript_path,
)
from flume.shell.tmux import Pane, Tmux

if TYPE_CHECKING:
    from flume.shell.supervisor import Followed

_log = logging.getLogger("flume.watch")
#: Words of Claude Code's workspace trust dialog (reference/claude-code.md §5, §8).
_TRUST_WORDS = ("trust the files in this folder", "Do you trust", "trust this folder")
#: Codex's composer prompt, drawn once it takes input (reference/codex.md §5).
_CODEX_COMPOSER = "\u203a"


def hook_activity(record: dict[str, Any]) -> Activity | None:
    """What one hook call says the main agent is doing; None when it says nothing of it."""
    if record.get("agent_id"):
        return None  # a subagent spoke, not the agent flume follows
    event = record.get("hook_event_name")
    tool = record.get("tool_name")
    if event == "PreToolUse" and tool == "AskUserQuestion":
        return Activity.ASKING
    if event == "PermissionRequest":
        return Activity.ASKING
    if event == "Notification":
        kind = record.get("notification_type")
        if kind in {"elicitation_dialog", "agent_needs_input"}:
            return Activity.ASKING
        return Activity.WAITING if kind == "idle_prompt" else None
    return {
        "UserPromptSubmit": Activity.WORKING,
        "PreToolUse": Activity.WORKING,
        "PostToolUse": Activity.WORKING,
        "Stop": Activity.WAITING,
        "StopFailure": Activity.WAITING,
        "SessionEnd": Activity.STOPPED,
    }.get(str(event))


def registry_activity(entry: dict[str, object]) -> Activity | None:
    """What a live-session registry entry says the agent is doing."""
    status, _waiting_for = registry_status(entry)
    return {
        "idle": Activity.WAITING,
        "busy": Activity.WORKING,
        "waiting": Activity.ASKING,
    }.get(status)


@attrs.define
class Seen:
    """What the watch keeps of one agent session: offsets, and what its sources said last."""

    transcript: int = 0
    hooks: int = 0
    #: Codex: the rollout found for the session.
    rollout: str | None = None
    #: The latest state a hook reported, and when (epoch seconds).
    hook_state: Activity | None = None
    hook_at: float = 0.0
    #: A printed agent was seen in the live-session registry (it was run).
    registered: bool = False

    def save(self, session: str) -> None:
        """Write the offsets whole (a new file renamed over the old)."""
        path = agents_dir() / f"{session}.watch.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(attrs.asdict(self, filter=_saved)), encoding="utf-8")
        temporary.replace(path)

    @classmethod
    def load(cls, session: str) -> Seen:
        """The offsets saved for the session; from the start when none were."""
        path = agents_dir() / f"{session}.watch.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                transcript=int(data.get("transcript", 0)),
                hooks=int(data.get("hooks", 0)),
                rollout=data.get("rollout"),
                registered=data.get("registered") is True,
            )
        except (OSError, ValueError, AttributeError):
            return cls()


def _saved(attribute: attrs.Attribute[Any], _value: object) -> bool:
    return attribute.name in {"transcript", "hooks", "rollout", "registered"}


class Watch:
    """The supervisor's observer of agents."""

    def __init__(self, tmux: Tmux | None = None) -> None:
        self.tmux = tmux or Tmux()
        self.seen: dict[str, Seen] = {}

    def observe(
        self, followed: Sequence[Followed], now: Instant
    ) -> Iterator[tuple[Followed, Observation]]:
        """What changed for every live agent since the last tick."""
        live = [
            each for each in followed if each.place is not None and each.place.agent is not None
        ]
        # One listing a tick while agents live (and once more after, to close dead panes).
        panes = self.tmux.panes() if live or self.seen else None
        registry = live_sessions() if live else {}
        current: set[str] = set()
        for each in live:
            place = each.place
            assert place is not None  # noqa: S101 (filtered above)
            agent = place.agent
            assert agent is not None  # noqa: S101 (filtered above)
            current.add(agent.session)
            try:
                for seen in self._agent(place, agent, panes, registry, now):
                    yield each, seen
            except OSError:
                _log.exception("watching %s failed", agent.session)
                continue
            # Everything yielded is journaled: the offsets may move past it now.
            self._state(agent.session).save(agent.session)
        self._close_dead(panes, current)
        for session in [s for s in self.seen if s not in current]:
            del self.seen[session]

    def _state(self, session: str) -> Seen:
        state = self.seen.get(session)
        if state is None:
            state = self.seen[session] = Seen.load(session)
        return state

    def _agent(
        self,
        place: Place,
        agent: Agent,
        panes: dict[str, Pane] | None,
        registry: dict[str, dict[str, object]],
        now: Instant,
    ) -> Iterator[Observation]:
        session = agent.session
        state = self._state(session)
        kind = place.launch.agent.agent
        yield from self._transcript(place, agent, state, kind, now)
        entry = registry.get(session)
        spoken = self._spoken(state, session, entry, kind)
        if agent.pane.startswith(PRINTED):
            yield from self._printed(place, agent, state, entry, spoken, now)
            return
        pane = _pane_of(panes, agent)
        if spoken is None and isinstance(place.stage.phase, AwaitingInput) and pane is not None:
            spoken = self._screen(kind, pane)
        if spoken is not None and spoken is not agent.activity and not agent.ending:
            yield AgentStateSeen(at=now, session=session, activity=spoken)
        if pane is not None and pane.activity > agent.last_output_at + 0.5:
            yield PaneOutput(at=now, session=session, last_output_at=Instant(pane.activity))
        if panes is not None and (pane is None or pane.dead):
            yield AgentExited(at=now, session=session)

    @staticmethod
    def _printed(  # noqa: PLR0913, PLR0917 (what one printed agent is judged on)
        place: Place,
        agent: Agent,
        state: Seen,
        entry: dict[str, object] | None,
        spoken: Activity | None,
        now: Instant,
    ) -> Iterator[Observation]:
        """A printed agent: ready for its prompt at once, which goes into its command.

        It is gone once it registered (it was run) and its registry entry went away.
        """
        if spoken is None and isinstance(place.stage.phase, AwaitingInput):
            spoken = Activity.WAITING
        if spoken is not None and spoken is not agent.activity and not agent.ending:
            yield AgentStateSeen(at=now, session=agent.session, activity=spoken)
        if entry is not None:
            state.registered = True
        elif state.registered:
            yield AgentExited(at=now, session=agent.session)

    def _transcript(
        self, place: Place, agent: Agent, state: Seen, kind: AgentName, now: Instant
    ) -> Iterator[Observation]:
        session = agent.session
        if kind is AgentName.CODEX:
            if state.rollout is None:
                state.rollout = _find_rollout(place, {s.rollout for s in self.seen.values()})
            if state.rollout is None:
                return
            tail = rollout.read_from(Path(state.rollout), state.transcript, session=session, at=now)
        else:
            path = transcript_path(os.path.realpath(place.path), session)
            tail = transcript.read_from(path, state.transcript, session=session, at=now)
        yield from tail.entries
        if tail.unreadable:
            yield TranscriptUnreadable(at=now, session=session, count=tail.unreadable)
        state.transcript = tail.offset

    def _spoken(
        self,
        state: Seen,
        session: SessionId,
        entry: dict[str, object] | None,
        kind: AgentName,
    ) -> Activity | None:
        """The state of whichever of the hooks and the registry spoke last."""
        if kind is AgentName.CLAUDE:
            self._read_hooks(state, session)
        registry_state = registry_activity(entry) if entry is not None else None
        registry_at = 0.0
        if entry is not None:
            stamp = entry.get("statusUpdatedAt") or entry.get("updatedAt") or 0
            registry_at = float(stamp) / 1000 if isinstance(stamp, int | float) else 0.0
        if state.hook_state is not None and (registry_state is None or state.hook_at > registry_at):
            return state.hook_state
        return registry_state

    @staticmethod
    def _read_hooks(state: Seen, session: str) -> None:
        path = hooks_path(session)
        try:
            with path.open("rb") as file:
                file.seek(state.hooks)
                data = file.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        for line in data[:end].splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                activity = hook_activity(record) if isinstance(record, dict) else None
                if activity is not None:
                    state.hook_state = activity
                    state.hook_at = float(record.get("at", 0.0))
        state.hooks += end

    def _screen(self, kind: AgentName, pane: Pane) -> Activity | None:
        """Before an agent registers: a trust dialog asks a person; Codex's composer waits."""
        if kind is AgentName.TEST or pane.dead:
            return None
        screen = self.tmux.capture(pane.id) or ""
        if kind is AgentName.CLAUDE and any(words in screen for words in _TRUST_WORDS):
            return Activity.ASKING
        if kind is AgentName.CODEX and any(
            line.lstrip().startswith(_CODEX_COMPOSER) for line in screen.splitlines()
        ):
            return Activity.WAITING
        return None

    def _close_dead(self, panes: dict[str, Pane] | None, current: set[str]) -> None:
        """Close the dead panes of agents no place follows any more, so tmux can end."""
        for pane in (panes or {}).values():
            if pane.dead and pane.session not in current:
                self.tmux.kill_pane(pane.id)


def _pane_of(panes: dict[str, Pane] | None, agent: Agent) -> Pane | None:
    if panes is None:
        return None
    pane = panes.get(agent.pane)
    if pane is not None and pane.session == agent.session:
        return pane
    return next((p for p in panes.values() if p.session == agent.session), None)


def _find_rollout(place: Place, claimed: set[str | None]) -> str | None:
    """Codex's rollout for the place: the first begun since the stage started, in the place."""
    folder = codex_home() / "sessions"
    started = place.stage.started_at
    days = {
        (datetime.fromtimestamp(started, tz) + timedelta(days=delta)).strftime("%Y/%m/%d")
        for tz in (UTC, None)
        for delta in (-1, 0, 1)
    }
    cwd = os.path.realpath(place.path)
    candidates: list[tuple[float, str]] = []
    for day in days:
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(folder / day):
                stat = entry.stat()
                if entry.name.endswith(".jsonl") and stat.st_mtime >= started - 1:
                    candidates.append((stat.st_mtime, entry.path))
    for _mtime, path in sorted(candidates):
        if path in claimed:
            continue
        with contextlib.suppress(OSError), Path(path).open(encoding="utf-8") as file:
            first = file.readline()
            if rollout.session_meta_cwd(first) in {cwd, place.path}:
                return path
    return None
