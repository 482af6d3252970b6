"""Watching agents: panes, transcripts, hooks and the live-session registry, each tick, in batches.

Theory of operation. :class:`Watch` is one of the supervisor's observers. Each tick it lists
every pane with one tmux call (and one herdr request while places run their agents in herdr),
reads the live-session registry's folder once, and for each place with a live agent reads only
what was appended to the agent's transcript and hook file since the offsets it stored: the
cost of a tick grows with the bytes that changed, not with the number of places or the size of
transcripts (P3, P4). It reports facts and decides nothing:

- where the agent's transcript is, once found, while the place does not hold it yet (its
  attempt keeps it: TRANSCRIPT-KEPT);
- every new transcript line (a torn last line waits for the next tick), and lines it could not
  read, counted (R5: only the transcript proves a prompt was taken);
- each turn's end, with the usage its lines reported, summed across ticks by the session's
  :class:`~flume.shell.agents.turns.Turn`, saved with the offsets;
- what the agent is doing, from whichever of its hooks and the registry spoke last, reported when
  it differs from what the place holds; the transcript's hints are the core's fallback;
- what the agent's screen says before it registers (its module reads it: a trust dialog on
  Claude Code's or Codex's asks a person, anything typed would answer it; Codex's composer waits);
- the pane showing output (it moves the quiet clock, never a stage: R7);
- the agent gone: its pane dead or closed. A listing tmux could not give says nothing.

Offsets move on only after the lines they cover are journaled: the supervisor journals each
observation as it is yielded, so the offsets are saved once a place's observations are all
yielded. A supervisor killed before that reads the lines again, and the rules take a line seen
twice as they take it once.

An agent at rest is not looked at again until something of its changed: a tick passes it over
while its place is the one last looked at, settled and not mid-delivery (no prompt or tell
awaiting its proof, no end asked), its pane and registry entry as they were, and its transcript,
hook file and fence ref not changed (:class:`~flume.shell.tools.notify.Notify`: inotify's
events, or, where it cannot watch, every tick as before); and every
:data:`~flume.shell.tools.notify.SAFETY_SECONDS`, whatever the events said, its files' sizes and
times are compared with those taken before its last look, and it is looked at whole if one moved
(the safety net: an event missed is found within seconds, at the cost of a ``stat`` a file).
What it would have reported is then what it reports when next looked at: the same facts.

What is particular to each agent (where its transcript is and how its lines read, its hooks, its
registry entries, its screen) is asked of its module through the agent port
(:mod:`flume.shell.agents.port`): nothing here branches on the agent's name.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from flume.core.delivery import prompt_marker
from flume.core.ids import Instant, SessionId
from flume.core.judging import Said, latest_said, program_of, shows_output, unregistered_asks
from flume.core.launch import Panes
from flume.core.observations import (
    Activity,
    AgentExited,
    AgentStateSeen,
    BranchHead,
    Observation,
    PaneOutput,
    PromptTyped,
    PromptUnwritten,
    TranscriptEntry,
    TranscriptFound,
    TranscriptUnreadable,
)
from flume.core.place import Agent, AwaitingInput, Delivering, Place
from flume.core.transcripts import wants_transcript
from flume.shell.agents import of, sandbox
from flume.shell.agents.port import AgentPort, agents_dir
from flume.shell.agents.runner import live_sessions
from flume.shell.agents.turns import Turn
from flume.shell.panes import printed
from flume.shell.panes.herdr import Herdr
from flume.shell.panes.port import PaneServer, typed_mark
from flume.shell.panes.tmux import Pane, Tmux
from flume.shell.store.follower import Followed
from flume.shell.store.transcript_words import in_conversation
from flume.shell.tools.notify import SAFETY_SECONDS, Notify

_log = logging.getLogger("flume.watch")
#: How many lines of a dead agent's screen are kept as its last words.
_LAST_LINES = 15
#: Ticks a dead pane no place's agent holds is kept before it is closed.
_DEAD_TICKS = 3


@attrs.define
class Seen:
    """What the watch keeps of one agent session: offsets, and what its sources said last."""

    transcript: int = 0
    hooks: int = 0
    #: The transcript (Claude Code, the test agent) or rollout (Codex) found for the session.
    rollout: str | None = None
    #: The latest state a hook reported, and when (epoch seconds).
    hook_state: Activity | None = None
    hook_at: float = 0.0
    #: A printed agent was seen in the live-session registry (it was run).
    registered: bool = False
    #: The turn open at the transcript's offset: its usage so far, saved with the offset.
    turn: Turn = attrs.field(factory=Turn)
    #: What was last written to disk.
    saved: tuple[int, int, str | None, bool, str] | None = None

    def save(self, session: str) -> None:
        """Write the offsets whole (a new file renamed over the old), when they changed."""
        data = attrs.asdict(self, filter=_saved)
        data["turn"] = self.turn.saved()
        turn = json.dumps(data["turn"], sort_keys=True)
        kept = (self.transcript, self.hooks, self.rollout, self.registered, turn)
        if kept == self.saved:
            return
        self.saved = kept
        path = agents_dir() / f"{session}.watch.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(data), encoding="utf-8")
        temporary.replace(path)

    @classmethod
    def load(cls, session: str) -> Seen:
        """The offsets saved for the session; from the start when none were."""
        path = agents_dir() / f"{session}.watch.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            loaded = cls(
                transcript=int(data.get("transcript", 0)),
                hooks=int(data.get("hooks", 0)),
                rollout=data.get("rollout"),
                registered=data.get("registered") is True,
                turn=Turn.load(data.get("turn")),
            )
        except (OSError, ValueError, AttributeError):
            return cls()
        turn = json.dumps(loaded.turn.saved(), sort_keys=True)
        loaded.saved = (loaded.transcript, loaded.hooks, loaded.rollout, loaded.registered, turn)
        return loaded


@attrs.frozen
class Looked:
    """What a session's last whole look saw: the place, its pane and registry entry, when."""

    place: Place
    pane: Pane | None
    entry: dict[str, object] | None
    at: float
    #: The files its look reads (its transcript, hook file, fence ref), each (folder, name);
    #: None: one cannot be named (a fence without its mirror), so it is looked at every tick.
    files: tuple[tuple[str, str], ...] | None
    #: Those files' sizes and modification times, taken just before the look read them: the
    #: safety net compares them, and looks whole only when one moved. None: not taken.
    marks: tuple[tuple[int, int], ...] | None = None


def _saved(attribute: attrs.Attribute[Any], _value: object) -> bool:
    return attribute.name in {"transcript", "hooks", "rollout", "registered"}


class Watch:
    """The supervisor's observer of agents."""

    def __init__(
        self,
        tmux: PaneServer | None = None,
        herdr: PaneServer | None = None,
        notify: Notify | None = None,
    ) -> None:
        self.tmux: PaneServer = tmux or Tmux()
        self.herdr: PaneServer = herdr or Herdr()
        #: Which files changed; without one, every agent is looked at every tick.
        self.notify = notify
        self.seen: dict[str, Seen] = {}
        #: What each session's last whole look saw (an agent at rest is passed over).
        self.looked: dict[str, Looked] = {}
        #: Each session's fence: found (its mirror), or not, and when last looked for.
        self._fences: dict[str, tuple[bool, float]] = {}
        #: Where each session's fence would be, as a string (built once).
        self._fence_folders: dict[str, str] = {}
        #: How many agents the last tick looked at whole (the rest were at rest).
        self.last_looked = 0
        #: Dead panes no agent of a place holds, and for how many ticks they have been seen so.
        self.dead_ticks: dict[str, int] = {}

    def observe(
        self, followed: Sequence[Followed], now: Instant
    ) -> Iterator[tuple[Followed, Observation]]:
        """What changed for every live agent since the last tick."""
        live = [
            each for each in followed if each.place is not None and each.place.agent is not None
        ]
        # One listing a tick of each pane server while its agents live (and of tmux once more
        # after, to close dead panes); each place's agent is looked for on its launch's server.
        in_herdr = [each for each in live if _in_herdr(each.place)]
        herdr_sessions = {
            each.place.agent.session for each in in_herdr if each.place and each.place.agent
        }
        wants_tmux = (
            len(in_herdr) < len(live)
            or bool(self.dead_ticks)
            or any(session not in herdr_sessions for session in self.seen)
        )
        panes = self.tmux.panes() if wants_tmux else None
        herdr_panes = self.herdr.panes() if in_herdr else None
        registry = live_sessions(self._fenced(live, now), self.notify) if live else {}
        current: set[str] = set()
        self.last_looked = 0
        for each in live:
            place = each.place
            assert place is not None  # noqa: S101 (filtered above)
            agent = place.agent
            assert agent is not None  # noqa: S101 (filtered above)
            current.add(agent.session)
            server, listed = (self.herdr, herdr_panes) if _in_herdr(place) else (self.tmux, panes)
            # A place whose actions are queued or being performed may have a send decided and
            # not yet made: only a settled place's pane can say a send was never made.
            settled = not each.busy and not each.batches
            pane = _pane_of(listed, agent)
            entry = registry.get(agent.session)
            if settled and self._at_rest(place, agent, (pane, entry), now):
                continue
            self.last_looked += 1
            kept = self.looked.get(agent.session)
            marks = _marks(kept.files) if kept is not None and kept.files is not None else None
            try:
                for seen in self._agent(place, agent, (server, listed), registry, now):
                    yield each, seen
                if settled and printed.is_printed(agent.pane):
                    for seen in self._printed_send(place, agent, now):
                        yield each, seen
            except Exception:  # noqa: BLE001 (one place's fault must not blind the others)
                # Logged and passed over: the next place's agent is watched this tick all the
                # same (a fault raised here once stopped every live agent on the host being
                # watched, tick after tick).
                _log.exception("watching %s failed", agent.session)
                continue
            # Everything yielded is journaled: the offsets may move past it now.
            self._state(agent.session).save(agent.session)
            files = self._files(place, agent)
            # Files watched only now may have changed since the look read them: one more look,
            # the next tick, reads what came in between.
            at = now if files is not None and self._watched(files) else -math.inf
            self.looked[agent.session] = Looked(
                place=place,
                pane=pane,
                entry=entry,
                at=at,
                files=files,
                marks=marks if kept is not None and files == kept.files else None,
            )
        self._close_dead(panes, current)
        for session in [s for s in self.seen if s not in current]:
            del self.seen[session]
        for session in [s for s in self.looked if s not in current]:
            del self.looked[session]
        for session in [s for s in self._fences if s not in current]:
            del self._fences[session]
            self._fence_folders.pop(session, None)

    def _at_rest(
        self,
        place: Place,
        agent: Agent,
        shown: tuple[Pane | None, dict[str, object] | None],
        now: Instant,
    ) -> bool:
        """Nothing the agent's look reads changed since it was last looked at whole, lately.

        Looked at whole, always: a place that changed since, one mid-delivery (a prompt or a
        tell not yet proven, an end asked), a printed agent, a transcript not yet found or not
        yet held by the place, and every file of its that no event says is unchanged.
        """
        kept = self.looked.get(agent.session)
        if (
            self.notify is None
            or kept is None
            or kept.files is None
            or kept.place is not place
            or (kept.pane, kept.entry) != shown
            or not self._safe(agent.session, kept, now)
            or agent.ending
            or place.sending is not None
            or isinstance(place.stage.phase, AwaitingInput | Delivering)
        ):
            return False
        notify = self.notify
        if all(notify.quiet(folder) for folder, _name in kept.files):
            return True  # no event in any of their folders: nothing to take
        changed = [notify.changed_in(*file) for file in kept.files]  # each asked: taken
        return not any(changed)

    def _safe(self, session: str, kept: Looked, now: Instant) -> bool:
        """The safety net finds nothing: looked at lately, or its files' marks have not moved.

        Every :data:`~flume.shell.tools.notify.SAFETY_SECONDS` an agent at rest has its files'
        sizes and times compared with those taken before its last look (a ``stat`` each, not
        a look): an event missed is found within seconds, and 1,000 agents at rest cost 1,000
        ``stat`` calls a window, not 1,000 looks.
        """
        if 0 <= now - kept.at < SAFETY_SECONDS:
            return True
        if kept.at == -math.inf or kept.files is None or kept.marks is None:
            return False
        if _marks(kept.files) != kept.marks:
            return False
        self.looked[session] = attrs.evolve(kept, at=now)
        return True

    def _watched(self, files: tuple[tuple[str, str], ...]) -> bool:
        """Every file's folder was watched already (those not yet are watched from now on)."""
        assert self.notify is not None  # noqa: S101 (asked only with one)
        fresh = [folder for folder, _name in files if not self.notify.watching(folder)]
        for folder in fresh:
            self.notify.watch(folder)
        return not fresh

    def _files(self, place: Place, agent: Agent) -> tuple[tuple[str, str], ...] | None:
        """The files a look at the agent reads, each (folder, name); None: not all are known.

        None as well without events to ask. Not known: a transcript not found yet (or not yet
        held by the place), a printed agent (its file is its pane), a fence whose mirror cannot
        be read.
        """
        state = self.seen.get(agent.session)
        if (
            self.notify is None
            or state is None
            or state.rollout is None
            or printed.is_printed(agent.pane)
            or wants_transcript(place, agent.session)
        ):
            return None
        files = [state.rollout]
        hooks = of(program_of(place)).hooks_file(agent.session)
        if hooks is not None:
            files.append(str(hooks))
        if self._fences.get(agent.session, (False, 0.0))[0]:
            mirror = sandbox.mirror_of(agent.session)
            if mirror is None:
                return None
            files.append(str(mirror.ref))
        return tuple(os.path.split(file) for file in files)

    @staticmethod
    def _carried(place: Place, session: SessionId, now: Instant) -> Iterator[Observation]:
        """A fenced agent's new commit, carried to its real branch now and seen (a BranchHead)."""
        carried = sandbox.carried_now(session, Path(place.launch.repository), place.branch)
        if carried is not None and carried != place.head:
            yield BranchHead(at=now, branch=place.branch, sha=carried)

    def _fenced(self, live: Sequence[Followed], now: Instant) -> list[str]:
        """The live agents that run fenced (their registry is in their fence's stand-in).

        A session's fence is made before its agent starts: once found, it is kept; one not
        found is looked for again every :data:`SAFETY_SECONDS`.
        """
        fenced: list[str] = []
        for each in live:
            if each.place is None or each.place.agent is None:
                continue
            session = each.place.agent.session
            found, at = self._fences.get(session, (False, -math.inf))
            if not found and not 0 <= now - at < SAFETY_SECONDS:
                found = os.path.isdir(self._fence_folder(session))  # noqa: PTH112 (a string)
                self._fences[session] = (found, now)
            if found:
                fenced.append(session)
        return fenced

    def _fence_folder(self, session: str) -> str:
        """Where the session's fence would be (its path built once a session)."""
        folder = self._fence_folders.get(session)
        if folder is None:
            folder = self._fence_folders[session] = str(sandbox.folder_of(session))
        return folder

    def _state(self, session: str) -> Seen:
        state = self.seen.get(session)
        if state is None:
            state = self.seen[session] = Seen.load(session)
        return state

    def _agent(
        self,
        place: Place,
        agent: Agent,
        listing: tuple[PaneServer, dict[str, Pane] | None],
        registry: dict[str, dict[str, object]],
        now: Instant,
    ) -> Iterator[Observation]:
        server, panes = listing
        session = agent.session
        state = self._state(session)
        kind = of(program_of(place))
        # A fenced agent's commit reaches its real branch, and is seen, before its turn's end.
        yield from self._carried(place, session, now)
        yield from self._transcript(place, agent, state, kind, now)
        entry = registry.get(session)
        spoken = self._spoken(state, session, entry, kind)
        if printed.is_printed(agent.pane):
            yield from self._printed(place, agent, state, entry, spoken, now)
            return
        pane = _pane_of(panes, agent)
        phase = place.stage.phase
        if spoken is None and isinstance(phase, AwaitingInput) and pane is not None:
            spoken = self._screen(kind, pane, server)
            if spoken is None and unregistered_asks(place, registered=entry is not None, now=now):
                spoken = Activity.ASKING  # a start-up dialog asks a person (the core's rule)
        if spoken is not None and spoken is not agent.activity and not agent.ending:
            yield AgentStateSeen(at=now, session=session, activity=spoken)
        if (
            pane is not None
            and isinstance(phase, Delivering)
            and not phase.typed
            and pane.typed == typed_mark(prompt_marker(place), place.stage.sends)
        ):
            # The paste was done (the pane says so) but never journaled: a supervisor killed
            # in between. The send was made; it must not be typed again (R5).
            marker = prompt_marker(place)
            yield PromptTyped(at=now, session=session, marker=marker, send=place.stage.sends)
        if pane is not None and shows_output(agent, pane.activity):
            yield PaneOutput(at=now, session=session, last_output_at=Instant(pane.activity))
        if panes is not None and (pane is None or pane.dead):
            status = pane.dead_status if pane is not None else None
            words = self._last_words(pane, server) if pane is not None else ""
            # A fenced agent's last commits reach its real branch, and are seen, before its end.
            yield from self._carried(place, session, now)
            yield AgentExited(at=now, session=session, status=status, last_words=words)

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

    @staticmethod
    def _printed_send(place: Place, agent: Agent, now: Instant) -> Iterator[Observation]:
        """What a printed agent's file says of the current send: made, or never made.

        The file is the pane's own mark: it holds the prompt, and which send wrote it, once it
        is written. A supervisor killed after deciding a send and before writing it leaves the
        file without it; the core then has it written at once (DELIVERY-UNWRITTEN-NOW).
        """
        phase = place.stage.phase
        if not isinstance(phase, Delivering) or phase.typed or phase.retyped:
            return
        written = printed.prompt_written(printed.file_of(agent.pane), agent.session)
        if written is None:
            return  # no file of the session's to read: it says nothing
        marker, send = prompt_marker(place), place.stage.sends
        if written == send:
            yield PromptTyped(at=now, session=agent.session, marker=marker, send=send)
        else:
            yield PromptUnwritten(at=now, session=agent.session, marker=marker, send=send)

    def _transcript(
        self, place: Place, agent: Agent, state: Seen, kind: AgentPort, now: Instant
    ) -> Iterator[Observation]:
        session = agent.session
        if state.rollout is None:
            claimed = {s.rollout for s in self.seen.values()}
            state.rollout = kind.find_transcript(place, session, claimed)
        if state.rollout is None:
            return  # not written yet: the agent writes it on its first prompt
        if wants_transcript(place, session):
            # Journaled while the place lacks it (TRANSCRIPT-KEPT): once, and again only if a
            # supervisor died before its line was written, which the rules take as once.
            yield TranscriptFound(at=now, session=session, path=state.rollout)
        # The turn is read on from a copy: the session's own is replaced only once the lines are
        # read, and saved with their offset once what they made is journaled.
        turn = Turn(open=state.turn.open, usages=dict(state.turn.usages))
        tail = kind.read_from(
            Path(state.rollout), state.transcript, session=session, at=now, turn=turn
        )
        # Only the conversation is journaled: Claude Code's bookkeeping lines (api requests,
        # snapshots, attachments) can be large and say nothing the rules read.
        yield from (
            seen
            for seen in tail.observations()
            if not isinstance(seen, TranscriptEntry) or in_conversation(seen)
        )
        if tail.unreadable:
            yield TranscriptUnreadable(at=now, session=session, count=tail.unreadable)
        state.transcript, state.turn = tail.offset, turn

    @staticmethod
    def _spoken(
        state: Seen,
        session: SessionId,
        entry: dict[str, object] | None,
        kind: AgentPort,
    ) -> Activity | None:
        """What the hooks and the registry said last; the core says which of them speaks."""
        state.hooks, said = kind.hooks_said(session, state.hooks)
        if said is not None:
            state.hook_state, state.hook_at = said.activity, said.at
        hooks = (
            Said(activity=state.hook_state, at=state.hook_at)
            if state.hook_state is not None
            else None
        )
        return latest_said(hooks, kind.registry_said(entry) if entry is not None else None)

    @staticmethod
    def _screen(kind: AgentPort, pane: Pane, server: PaneServer) -> Activity | None:
        """Before an agent registers, its screen may say what it does (its module reads it)."""
        if pane.dead:
            return None
        return kind.screen(lambda: server.capture(pane.id))

    @staticmethod
    def _last_words(pane: Pane, server: PaneServer) -> str:
        """The last lines a dead agent's pane shows (why it went, often)."""
        screen = server.capture(pane.id) or ""
        lines = [line.rstrip() for line in screen.splitlines() if line.strip()]
        lines = [line for line in lines if not line.startswith("Pane is dead")]
        return "\n".join(lines[-_LAST_LINES:])

    def _close_dead(self, panes: dict[str, Pane] | None, current: set[str]) -> None:
        """Close the dead panes of agents no place follows any more, so tmux can end.

        A pane is closed only once it has been dead for a few ticks: one that died as it
        started may belong to an agent whose start is not yet read from its journal, and its
        last words are read before it goes.
        """
        dead = {
            pane.id for pane in (panes or {}).values() if pane.dead and pane.session not in current
        }
        for pane_id in dead:
            self.dead_ticks[pane_id] = self.dead_ticks.get(pane_id, 0) + 1
            if self.dead_ticks[pane_id] >= _DEAD_TICKS:
                self.tmux.kill_pane(pane_id)
        self.dead_ticks = {key: value for key, value in self.dead_ticks.items() if key in dead}


def _marks(files: tuple[tuple[str, str], ...]) -> tuple[tuple[int, int], ...]:
    """Each file's size and modification time (-1, -1: not there)."""
    marks: list[tuple[int, int]] = []
    for folder, name in files:
        try:
            found = os.stat(os.path.join(folder, name))  # noqa: PTH116, PTH118 (strings: asked often)
        except OSError:
            marks.append((-1, -1))
        else:
            marks.append((found.st_size, found.st_mtime_ns))
    return tuple(marks)


def _in_herdr(place: Place | None) -> bool:
    """The place's agent runs in a pane of herdr's (``--panes herdr``)."""
    return place is not None and place.launch.agent.panes is Panes.HERDR


def _pane_of(panes: dict[str, Pane] | None, agent: Agent) -> Pane | None:
    if panes is None:
        return None
    pane = panes.get(agent.pane)
    if pane is not None and pane.session == agent.session:
        return pane
    return next((p for p in panes.values() if p.session == agent.session), None)
