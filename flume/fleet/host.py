"""A fleet host: the activities it performs for the fleet's workflows, in its own clone.

Theory of operation. A host's worker takes a ``carry`` from its remote's shared task queue when
it has a free slot (Temporal counts them: the worker polls for at most ``slots`` at once), and
carries the place as any place of its own: it fetches the base (and, for a place carried again,
the head the lost host pushed), launches it through :mod:`flume.api` in its clone, and from then
on looks at it once a second, with every other place it carries, in one look: the supervisor's
survey of the host's places and one ``git for-each-ref`` of the clone. Each look heartbeats how
the place goes (:class:`Beat`) and pushes its branch to the remote when its head moved (never
forced: a push git refuses, because the branch was rewritten, is named and left); once the place
has landed, finished or been dropped, the carry returns. The place lands through the remote
itself (the clone's ``flume.fleetRemote``, :mod:`flume.shell.perform.lander`).

A person's command comes as a ``command`` activity on the host's own task queue: it runs ``flume
<command> PLACE ... --repository <clone>`` here, as that person would on this host, and answers
what it printed and its exit status.

A spread block's lane or child (WF-SPREAD, :mod:`flume.shell.commands.spread`) is carried so
too, launched here as its run's host would have launched it; each look also reads its news (a
led child's, signalled to its workflow) and its end, and the carry returns once it ended, its
last head pushed, with its end for its run. Two more activities on the host's own task queue
serve spread lanes: ``run-word`` journals what the fleet brings of a lane in its run's journal
(this host's, where the run is), and ``lane-word`` journals what a run asks of its lane here. A
host also hands its own runs' words for their lanes to the fleet: :meth:`FleetHost.hand_over`
takes them from the outbox (:mod:`flume.shell.store.outbox`), pushes a lane's entry commit to
the remote as its branch, and starts its workflow or signals it.

A host keeps a record of each place it carries (``<state>/fleet/carried/<place>.json``). A host
that comes back after it was lost reads them: a place the fleet carried on elsewhere meanwhile
(or ended) is dropped here, so no second agent works on it, and its branch, with every commit
this host never pushed, is kept by tidy (R10) and named: in the worker's log and to the place's
workflow (``returned``), so ``flume status --fleet`` shows it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from flume import api
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, Sha
from flume.core.observations import LaneEnded, Launched
from flume.fleet.config import Fleet
from flume.fleet.records import (
    ROUTED,
    WORKFLOW,
    Answer,
    Beat,
    CarryAsked,
    CarryEnded,
    FleetLaunch,
    HostCommand,
    HostLaneWord,
    LaneEnd,
    LaneWord,
    News,
    Piece,
    Returned,
    RunWord,
    Standing,
    State,
    Taken,
    shared_queue,
)
from flume.shell import process
from flume.shell.commands import spread
from flume.shell.host import state_dir
from flume.shell.perform import lander
from flume.shell.store import codec, outbox
from flume.shell.supervisor import client as supervisor
from flume.shell.tools import git

_log = logging.getLogger("flume.fleet")

#: Seconds between a host's looks at the places it carries (each look heartbeats each place).
LOOK_SECONDS = 1.0
#: How long a person's command may run on the host before it is ended.
COMMAND_SECONDS = 50.0
#: The error type a carry ends with when its worker stops: the host left; treated as lost.
HOST_LEFT = "HostLeft"
#: What Temporal answers while it is away or busy: a word is handed over again later.
_AWAY = frozenset(
    {
        RPCStatusCode.UNAVAILABLE,
        RPCStatusCode.DEADLINE_EXCEEDED,
        RPCStatusCode.RESOURCE_EXHAUSTED,
        RPCStatusCode.ABORTED,
        RPCStatusCode.CANCELLED,
        RPCStatusCode.UNKNOWN,
        RPCStatusCode.INTERNAL,
    }
)
#: How long a lane's tidy, ordered by its run, may take before its host stops waiting for it.
TIDY_SECONDS = 60.0
#: Lives a place ends in, as ``flume status --json`` words them.
_ENDED_LIVES = {"finished", "dropped", "tidied"}


@dataclasses.dataclass(frozen=True)
class Clone:
    """A host's clone of the fleet's repository: its main worktree and the remote's name."""

    path: Path
    remote: str
    url: str


def clone_of(repository: Path, remote: str = "origin") -> Clone:
    """The clone at ``repository`` and its remote's URL; a :class:`UsageError` if it has none."""
    found = git.where(repository)
    if found is None:
        raise UsageError.one(
            "repository", f"{repository} is no git repository", "name the host's clone"
        )
    main = git.main_worktree(repository)
    ran = git.run(main, "remote", "get-url", "--", remote)
    if not ran.ok or not ran.out.strip():
        raise UsageError.one(
            "repository",
            f"{main} has no remote {remote!r}: a fleet moves code through its shared remote",
            f"clone the fleet's repository here, or add it: git remote add {remote} URL",
        )
    return Clone(path=main.resolve(), remote=remote, url=ran.out.strip())


def carried_dir() -> Path:
    """Where this host records the places it carries for the fleet."""
    return state_dir() / "fleet" / "carried"


@dataclasses.dataclass
class _Look:
    """One look at the host's places: each one's status by name, and the clone's branch heads."""

    at: float = 0.0
    places: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    heads: dict[str, str] = dataclasses.field(default_factory=dict)


class FleetHost:
    """The activities of one host of the fleet, for one clone."""

    def __init__(self, name: str, clone: Clone, client: Client, fleet: Fleet | None = None) -> None:
        self.name = name
        self.clone = clone
        self.client = client
        self.fleet = fleet or Fleet()
        self._look = _Look()
        self._looking = asyncio.Lock()
        #: The places this worker carries now (so the returning-host sweep leaves them be).
        self.carrying: set[str] = set()

    # --- carry ------------------------------------------------------------------------------

    @activity.defn(name="carry")
    async def carry(self, asked: CarryAsked) -> CarryEnded:
        """Launch the place here (or find it launched), and heartbeat it until it ends."""
        info = activity.info()
        launch = asked.launch
        workflow, run = info.workflow_id or "", info.workflow_run_id or ""
        handle = self.client.get_workflow_handle(workflow, run_id=run)
        await handle.signal("taken", Taken(host=self.name, attempt=asked.attempt))
        self.carrying.add(launch.place)
        try:
            try:
                branch = await asyncio.to_thread(self._launch, asked)
            except UsageError as error:
                words = "; ".join(problem.render() for problem in error.problems)
                raise ApplicationError(
                    f"{self.name} could not launch {launch.place}: {words}", non_retryable=True
                ) from None
            self._record(asked, workflow, run, branch)
            pushed = asked.carried
            beat = Beat(host=self.name, attempt=asked.attempt, pushed=pushed, branch=branch)
            heard = _Heard(led=spread.is_led(launch.lane_line)) if launch.lane_line else _Heard()
            while True:
                try:
                    look = await self.look()
                    beat = await asyncio.to_thread(self._beat, launch, look, beat)
                    activity.heartbeat(dataclasses.asdict(beat))
                    if launch.lane_line:
                        ended = await self._lane_looked(handle, asked, beat, heard)
                        if ended is not None:
                            return ended
                    elif beat.life in _ENDED_LIVES:
                        self._forget(launch.place)
                        ended = _ended(self.name, beat, look.places.get(launch.place, {}))
                        if ended.state == State.LANDED:
                            await asyncio.to_thread(self._tidy_pushed, launch, beat)
                        return ended
                    await asyncio.sleep(LOOK_SECONDS)
                except asyncio.CancelledError:
                    if activity.is_worker_shutdown():
                        raise ApplicationError(
                            f"{self.name}'s worker stopped",
                            dataclasses.asdict(beat),
                            type=HOST_LEFT,
                            non_retryable=True,
                        ) from None
                    if launch.lane_line:
                        # Called off by its run (dropped before its host was known): no agent
                        # works on here for nothing.
                        await asyncio.to_thread(self._drop_here, launch.place)
                    raise
        finally:
            self.carrying.discard(launch.place)

    async def _lane_looked(
        self,
        handle: WorkflowHandle[Any, Any],
        asked: CarryAsked,
        beat: Beat,
        heard: _Heard,
    ) -> CarryEnded | None:
        """A spread lane's news told its run, and its end once it ended (its head pushed).

        News not told (Temporal away) is told on the next look, and the end only after it.
        """
        launch, path = asked.launch, self.clone.path
        if heard.led:
            pieces = await asyncio.to_thread(
                spread.news, launch.place, path, frozenset(heard.told), heard.paused
            )
            if pieces:
                said = News(attempt=asked.attempt, pieces=[Piece(id=i, text=t) for i, t in pieces])
                try:
                    await handle.signal("news", said)
                except Exception:  # noqa: BLE001 (Temporal away: told on the next look)
                    _log.warning("%s's news not told its run yet", launch.place, exc_info=True)
                    return None
                for ident, text in pieces:
                    heard.told.add(ident)
                    heard.paused = text if ident.startswith("paused:") else ""
        if beat.life not in _ENDED_LIVES:
            return None
        end = await asyncio.to_thread(spread.ended, launch.place, path, Instant(time.time()))
        if end is None:
            return None
        pushed = await asyncio.to_thread(self._push_end, beat, end)
        self._forget(launch.place)
        state = State.FINISHED if end.finished else State.DROPPED
        return CarryEnded(
            host=self.name,
            state=state,
            pushed=pushed,
            words=f"{state} on {self.name}",
            lane_end=LaneEnd(
                finished=end.finished, head=end.head, turns=end.turns, tokens=end.tokens
            ),
        )

    def _push_end(self, beat: Beat, end: LaneEnded) -> str | None:
        """The head a lane ended at, pushed to the remote if it is not there yet (never forced)."""
        if end.head is None or end.head == beat.pushed or not beat.branch:
            return beat.pushed
        ran = git.push(self.clone.path, self.clone.remote, f"{end.head}:refs/heads/{beat.branch}")
        if not ran.ok:
            _log.warning("%s ended at %s, which the remote refused: %s", beat.branch, end.head,
                         _said(ran))  # fmt: skip
            return beat.pushed
        return end.head

    def _drop_here(self, place: str) -> None:
        with contextlib.suppress(UsageError):
            found = api.status(place=place, repository=self.clone.path)
            if found and found[0].life.value not in {"dropped", "tidied", "finished"}:
                api.drop(place, repository=self.clone.path)

    def _launch(self, asked: CarryAsked) -> str:
        """Fetch what the place starts from and launch it here; its branch. Found: adopted."""
        launch, clone = asked.launch, self.clone
        with contextlib.suppress(UsageError):
            found = api.status(place=launch.place, repository=clone.path)
            if found and found[0].life.value != "tidied":
                return str(found[0].branch)
        if launch.lane_line:
            return self._launch_lane(asked)
        refspecs = [f"+refs/heads/{launch.base}:refs/remotes/{clone.remote}/{launch.base}"]
        fetched = git.fetch(clone.path, clone.remote, *refspecs)
        if not fetched.ok:
            raise UsageError.one(
                "remote",
                f"{clone.url} could not be fetched: {fetched.err.strip() or fetched.out.strip()}",
                "mend the host's access to the remote",
            )
        tracking = git.commit(clone.path, f"refs/remotes/{clone.remote}/{launch.base}")
        if tracking is not None:
            lander.follow_base(clone.path, BranchName(launch.base), tracking)
        if asked.carried:
            # The lost host's head: fetched by its sha (the remote's branch holds it).
            git.fetch(clone.path, clone.remote, asked.carried)
        kind_file = None
        if launch.kind_text:
            kinds = state_dir() / "fleet" / "kinds"
            kinds.mkdir(parents=True, exist_ok=True)
            kind_file = kinds / f"{launch.place}.toml"
            kind_file.write_text(launch.kind_text, encoding="utf-8")
        made = api.launch_asked(
            api.LaunchAsked(
                repository=clone.path,
                name=launch.name,
                brief=launch.brief,
                kind=launch.kind,
                kind_file=kind_file,
                base=launch.base,
                mark=launch.mark,
                waits=launch.waits,
                agent=launch.agent,
                model=launch.model,
                agent_args=launch.agent_args,
                carried=asked.carried,
            )
        )
        return str(made.branch)

    def _launch_lane(self, asked: CarryAsked) -> str:
        """A spread lane, launched here from its branch on the remote (its entry, pushed)."""
        launch, clone = asked.launch, self.clone
        branch = launch.lane_branch
        tracking = f"refs/remotes/{clone.remote}/{branch}"
        fetched = git.fetch(clone.path, clone.remote, f"+refs/heads/{branch}:{tracking}")
        if not fetched.ok:
            raise UsageError.one(
                "remote",
                f"{branch} could not be fetched from {clone.url}: "
                f"{fetched.err.strip() or fetched.out.strip()}",
                "mend the host's access to the remote",
            )
        if asked.carried:
            git.fetch(clone.path, clone.remote, asked.carried)
        carried = Sha(asked.carried) if asked.carried else None
        branch = spread.launch(launch.lane_line, clone.path, carried)
        supervisor.ensure()
        return str(branch)

    async def look(self) -> _Look:
        """The host's places and the clone's heads, looked at once a second for every carry."""
        async with self._looking:
            if time.monotonic() - self._look.at >= LOOK_SECONDS / 2:
                self._look = await asyncio.to_thread(self._looked)
            return self._look

    def _looked(self) -> _Look:
        document = api.status_document()
        places = {
            str(view["place"]): dict(view)
            for view in document.places
            if Path(view["repository"]) == self.clone.path
        }
        ran = git.run(
            self.clone.path, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/"
        )
        heads = {}
        for line in ran.out.splitlines():
            sha, _, ref = line.partition(" ")
            heads[ref.removeprefix("refs/heads/")] = sha
        return _Look(at=time.monotonic(), places=places, heads=heads)

    def _beat(self, launch: FleetLaunch, look: _Look, beat: Beat) -> Beat:
        """How the place goes now; its branch pushed first when its head moved."""
        view = look.places.get(launch.place)
        if view is None:
            return beat
        head = look.heads.get(beat.branch)
        pushed, refused = beat.pushed, beat.refused
        # Once submitted, the lander rebases the branch on the remote's base and pushes that:
        # the rebased branch is no fast-forward of what was pushed, and is not pushed again.
        handed = view.get("submission") in {"submitted", "blocked", "landed"}
        if (
            head is not None
            and not handed
            and head != pushed
            and head != look.heads.get(launch.base)
        ):
            ran = git.push(self.clone.path, self.clone.remote, f"{head}:refs/heads/{beat.branch}")
            if ran.ok:
                pushed, refused = head, ""
            else:
                refused = f"the remote refused {head[:12]} (never forced): {_said(ran)}"
        paused = view.get("paused_words") or view.get("needs") or ""
        way_out = view.get("resolve") or view.get("paused") or ""
        return dataclasses.replace(
            beat,
            life=str(view["life"]),
            stage=str(view.get("key") or view["stage"]),
            phase=str(view["phase"]),
            agent=str(view["agent"]),
            paused=f"{paused} ({way_out})" if paused and way_out else str(paused),
            pushed=pushed,
            refused=refused,
        )

    def _tidy_pushed(self, launch: FleetLaunch, beat: Beat) -> None:
        """A landed place's branch leaves the remote, as tidy removes it here (R10).

        Only while the remote's base holds it and it is still the head this host pushed: the
        name is free for a later launch, and no commit is lost.
        """
        clone = self.clone
        if not beat.pushed or not beat.branch:
            return
        tracking = f"refs/remotes/{clone.remote}/{launch.base}"
        git.fetch(clone.path, clone.remote, f"+refs/heads/{launch.base}:{tracking}")
        base = git.commit(clone.path, tracking)
        if base is not None and git.holds(clone.path, base, Sha(beat.pushed)):
            git.delete_pushed(clone.path, clone.remote, beat.branch, beat.pushed)

    def _record(self, asked: CarryAsked, workflow: str, run: str, branch: str) -> None:
        folder = carried_dir()
        folder.mkdir(parents=True, exist_ok=True)
        record = {
            "place": asked.launch.place,
            "workflow": workflow,
            "run": run,
            "attempt": asked.attempt,
            "repository": str(self.clone.path),
            "remote": self.clone.remote,
            "branch": branch,
            "base": asked.launch.base,
        }
        target = folder / f"{asked.launch.place}.json"
        staged = target.with_suffix(".tmp")
        staged.write_text(json.dumps(record), encoding="utf-8")
        staged.replace(target)

    def _forget(self, place: str) -> None:
        (carried_dir() / f"{place}.json").unlink(missing_ok=True)

    # --- a person's command -----------------------------------------------------------------

    @activity.defn(name="command")
    async def command(self, asked: HostCommand) -> Answer:
        """Run the person's command for the place here, as ``flume`` would; its answer."""
        command, args = asked.asked.command, list(asked.asked.args)
        refused = _refusal(command, args)
        if refused is not None:
            return Answer(status=2, err=f"flume: {refused}\n")
        argv = (
            sys.executable, "-m", "flume", command, asked.place, *args,
            "--repository", str(self.clone.path),
        )  # fmt: skip
        ran = await asyncio.to_thread(
            process.run, argv, stdin=asked.asked.stdin, timeout=COMMAND_SECONDS
        )
        return Answer(status=ran.status, out=ran.out, err=ran.err)

    # --- spread lanes: their runs' words and theirs -----------------------------------------

    @activity.defn(name="run-word")
    async def run_word(self, said: RunWord) -> int:
        """What the fleet brings of a spread lane, journaled in its run's journal here."""
        end = None
        if said.end is not None:
            end = LaneEnded(
                at=Instant(time.time()),
                lane=said.lane,
                finished=said.end.finished,
                head=Sha(said.end.head) if said.end.head else None,
                turns=said.end.turns,
                tokens=said.end.tokens,
            )
        given = await asyncio.to_thread(
            spread.tell_run,
            self.clone.path,
            said.run,
            said.lane,
            said.place,
            Instant(time.time()),
            told=[(piece.id, piece.text) for piece in said.news],
            end=end,
            failed=said.failed,
        )
        if given:
            await asyncio.to_thread(supervisor.ensure)
        return given

    @activity.defn(name="lane-word")
    async def lane_word(self, asked: HostLaneWord) -> Answer:
        """What a run asks of its spread lane here: an order, a note, an answer, journaled.

        Tried again (by Temporal) while the lane has no journal here yet: it is being launched.
        A tidy waits until the lane is tidied, then lets go of what its host kept for it.
        """
        word, place = asked.word, asked.place
        facts = await asyncio.to_thread(spread.lane_facts, place, self.clone.path)
        if facts is None:
            message = f"{place} is not launched on {self.name} yet"
            raise ApplicationError(message)
        answer = await asyncio.to_thread(self._lane_word, asked)
        await asyncio.to_thread(supervisor.ensure)
        if word.kind == "order" and word.order == "tidy":
            said = await self._tidied(place, facts)
            answer = dataclasses.replace(answer, out=answer.out + said)
        return answer

    def _lane_word(self, asked: HostLaneWord) -> Answer:
        """:meth:`lane_word`'s journaling, in a thread of its own."""
        word, place, path = asked.word, asked.place, self.clone.path
        now = Instant(time.time())
        if word.kind == "notify":
            spread.notify(place, path, word.text, word.id, now)
            return Answer(status=0)
        if word.kind == "answer":
            try:
                said = spread.answer(
                    place,
                    path,
                    word.question,
                    word.text,
                    by_lead=word.by_lead,
                    no_lead=word.no_lead,
                    now=now,
                )
            except UsageError as error:
                words = "; ".join(problem.render() for problem in error.problems)
                return Answer(status=error.exit_status, err=words)
            return Answer(status=0, out=said)
        return Answer(status=0, out=spread.order(place, path, word.order, now))

    async def _tidied(self, place: str, found: spread.LaneFacts) -> str:
        """Wait (a while) for the lane's tidy here, then let go of its base copy and its branch."""
        path = self.clone.path
        deadline = time.monotonic() + TIDY_SECONDS
        while not await asyncio.to_thread(spread.is_tidied, place, path):
            if time.monotonic() > deadline:
                return f"; not tidied within {TIDY_SECONDS:.0f} s: its branch stays, named"
            activity.heartbeat()
            await asyncio.sleep(LOOK_SECONDS / 2)
        said = await asyncio.to_thread(spread.let_go, path, found)
        return f"; {said}" if said else ""

    async def hand_over(self) -> int:
        """Hand this host's words for its runs' spread lanes to the fleet, in order; how many.

        A word for another clone is left for its worker. One Temporal cannot take now (it is
        away) stops the round: it is tried again on the next. One for a lane whose workflow
        ended (asked again after a restart of the run's supervisor) is dropped; one that can
        never be handed over is dropped, named, and a lane that can never be launched so is
        told its run as ended unfinished, so the run does not wait on it.
        """
        handed = 0
        for path, word in await asyncio.to_thread(self._words):
            try:
                await self._hand(word)
            except RPCError as error:
                if error.status in _AWAY:
                    _log.warning("the fleet did not take %s's %s: %s", word.place, word.kind, error)
                    return handed
                if error.status is RPCStatusCode.NOT_FOUND:
                    _log.info("%s is no fleet place now: its %s is dropped", word.place, word.kind)
                else:
                    await asyncio.to_thread(self._give_up, word, str(error))
            except (ValueError, TypeError, AssertionError) as error:
                await asyncio.to_thread(self._give_up, word, str(error) or type(error).__name__)
            outbox.done(path)
            handed += 1
        return handed

    def _give_up(self, word: outbox.Word, why: str) -> None:
        """A word the fleet will never take: named, and a launch told its run as failed."""
        _log.warning("%s's %s cannot be handed to the fleet: %s", word.place, word.kind, why)
        if word.kind == "launch":
            spread.tell_run(
                self.clone.path,
                word.run,
                word.lane,
                word.place,
                Instant(time.time()),
                told=[],
                failed=f"the fleet did not take it: {why}",
            )
            supervisor.ensure()

    def _words(self) -> list[tuple[Path, outbox.Word]]:
        """The outbox's words for this clone, in order; one that cannot be read is removed."""
        found: list[tuple[Path, outbox.Word]] = []
        for path, word in outbox.waiting():
            if word is None:
                _log.warning("a word in %s cannot be read: removed", path)
                outbox.done(path)
            elif Path(word.repository).resolve() == self.clone.path:
                found.append((path, word))
        return found

    async def _hand(self, word: outbox.Word) -> None:
        if word.kind != "launch":
            said = LaneWord(
                kind=word.kind,
                order=word.order,
                text=word.text,
                id=word.id,
                question=word.question,
                by_lead=word.by_lead,
                no_lead=word.no_lead,
            )
            await self.client.get_workflow_handle(word.place).signal("word", said)
            return
        failed = await asyncio.to_thread(self._push_entry, word)
        if failed:
            await asyncio.to_thread(
                spread.tell_run,
                self.clone.path,
                word.run,
                word.lane,
                word.place,
                Instant(time.time()),
                told=[],
                failed=failed,
            )
            return
        body = _lane_launch(word, self.fleet, self.name, self.clone.url)
        standing = Standing(place=word.place, state=State.WAITING, remote=self.clone.url)
        with contextlib.suppress(WorkflowAlreadyStartedError):
            await self.client.start_workflow(
                WORKFLOW,
                body,
                id=word.place,
                task_queue=shared_queue(self.fleet.queue, self.clone.url),
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                memo={"standing": dataclasses.asdict(standing)},
            )

    def _push_entry(self, word: outbox.Word) -> str:
        """The lane's entry commit pushed to the remote as its branch; why not, if it cannot be.

        A branch there already that holds the entry (a word handed twice, or the lane carried
        on further) is left as it is.
        """
        clone = self.clone
        ran = git.push(clone.path, clone.remote, f"{word.start}:refs/heads/{word.branch}")
        if ran.ok:
            return ""
        tracking = f"refs/remotes/{clone.remote}/{word.branch}"
        git.fetch(clone.path, clone.remote, f"+refs/heads/{word.branch}:{tracking}")
        there = git.commit(clone.path, tracking)
        if there is not None and git.is_ancestor(clone.path, Sha(word.start), there):
            return ""
        return (
            f"its entry {word.start[:12]} could not be pushed to {clone.url} as {word.branch}: "
            f"{_said(ran)}"
        )

    # --- a host back from the lost ----------------------------------------------------------

    async def sweep(self) -> list[str]:
        """Each place this host carried that the fleet carries elsewhere now: dropped, named."""
        said: list[str] = []
        folder = carried_dir()
        if not folder.is_dir():
            return said
        for path in sorted(folder.glob("*.json")):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if record.get("place") in self.carrying:
                continue
            if Path(record.get("repository", "")) != self.clone.path:
                continue
            words = await self._returned(record)
            if words is not None:
                path.unlink(missing_ok=True)
                said.append(words)
        return said

    async def _returned(self, record: dict[str, Any]) -> str | None:
        """What this host keeps of a place carried on elsewhere; None while it is still ours."""
        handle = self.client.get_workflow_handle(record["workflow"], run_id=record["run"])
        try:
            described = await handle.describe()
        except Exception:  # noqa: BLE001 (Temporal unreachable or the run gone: ask again later)
            _log.warning("cannot ask Temporal of %s: later", record["place"])
            return None
        memo = await described.memo()
        standing = memo.get("standing", {}) if isinstance(memo, dict) else {}
        running = described.status is WorkflowExecutionStatus.RUNNING
        ours = (
            running
            and standing.get("host") == self.name
            and standing.get("attempt") == record["attempt"]
            and standing.get("state") in {State.CARRIED, State.WAITING}
        )
        if ours:
            return None
        words = await asyncio.to_thread(self._keep, record)
        _log.warning("%s", words)
        if running:
            with contextlib.suppress(Exception):
                await handle.signal("returned", Returned(host=self.name, words=words))
        return words

    def _keep(self, record: dict[str, Any]) -> str:
        """Drop the place here (no second agent works on it) and name what its branch keeps."""
        place, branch = record["place"], record["branch"]
        repository, remote = Path(record["repository"]), record["remote"]
        git.fetch(repository, remote, f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}")
        head = git.resolve(repository, branch)
        unpushed: list[str] = []
        if head is not None:
            there = f"refs/remotes/{remote}/{branch}"
            against = [there] if git.commit(repository, there) else []
            base = f"refs/remotes/{remote}/{record['base']}"
            against += [base] if git.commit(repository, base) else []
            ran = git.run(
                repository, "log", "--format=%h %s", head, *(f"^{ref}" for ref in against)
            )
            unpushed = ran.out.splitlines() if ran.ok else []
        with contextlib.suppress(UsageError):
            found = api.status(place=place, repository=repository)
            if found and found[0].life.value not in {"dropped", "tidied", "finished"}:
                api.drop(place, repository=repository)
        if head is None:
            return f"came back; {place} was carried on elsewhere, and its branch here is gone"
        if not unpushed:
            return (
                f"came back; {place} was carried on elsewhere: dropped here, nothing unpushed "
                f"(its branch {branch} was at {head[:12]})"
            )
        count = len(unpushed)
        return (
            f"came back; {place} was carried on elsewhere: dropped here, its branch {branch} "
            f"kept at {head[:12]} with {count} commit{'s' if count != 1 else ''} never pushed: "
            + "; ".join(unpushed)
        )


@dataclasses.dataclass
class _Heard:
    """What a carry told its lane's run so far: the news' ids, and the last pause's words."""

    #: The lane is an orchestrate block's child: its lead hears its news.
    led: bool = False
    told: set[str] = dataclasses.field(default_factory=set)
    paused: str = ""


def _lane_launch(word: outbox.Word, fleet: Fleet, host: str, url: str) -> FleetLaunch:
    """The fleet launch of a spread lane its run's host hands over."""
    seen = codec.decode(word.line)
    if not isinstance(seen, Launched):
        message = f"the outbox's launch of {word.place} holds no launch"
        raise TypeError(message)
    launch = seen.launch
    return FleetLaunch(
        remote=url,
        place=word.place,
        kind=str(launch.kind),
        name=str(launch.name),
        brief=launch.brief,
        base=str(launch.base),
        queue=fleet.queue,
        agent=launch.agent.agent.value,
        model=launch.agent.model,
        relaunch=fleet.relaunch,
        heartbeat=fleet.heartbeat,
        launched_from=host,
        lane_line=word.line,
        lane_name=launch.lane,
        lane_branch=word.branch,
        run=word.run,
        run_host=host,
    )


def _said(ran: process.Ran) -> str:
    return (ran.err.strip() or ran.out.strip() or f"exit {ran.status}").splitlines()[-1]


def _refusal(command: str, args: list[str]) -> str | None:
    """Why a routed command is not run: one flume does not route, or words it must not take."""
    if command not in ROUTED:
        return (
            f"{command!r} is no command the fleet carries to a place's host ({', '.join(ROUTED)})"
        )
    if any(arg == "--repository" or arg.startswith("--repository=") for arg in args):
        return "--repository is the host's own: leave it out"
    if command == "events" and any(arg in {"--follow", "-f"} for arg in args):
        return "flume events --follow does not travel: run flume fleet events again for more"
    return None


def _ended(host: str, beat: Beat, view: dict[str, Any]) -> CarryEnded:
    """How the carry ended: the place landed, finished (no landing) or was dropped."""
    finished = beat.life == "finished" or (
        beat.life == "tidied" and view.get("stage") in view.get("completed", [])
    )
    if view.get("submission") == "landed":
        state = State.LANDED
    elif finished:
        state = State.FINISHED
    else:
        state = State.DROPPED
    return CarryEnded(host=host, state=state, pushed=beat.pushed, words=f"{state} on {host}")
