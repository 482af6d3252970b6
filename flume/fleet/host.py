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
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError

from flume import api
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Sha
from flume.fleet.records import (
    ROUTED,
    Answer,
    Beat,
    CarryAsked,
    CarryEnded,
    FleetLaunch,
    HostCommand,
    Returned,
    State,
    Taken,
)
from flume.shell import process
from flume.shell.host import state_dir
from flume.shell.perform import lander
from flume.shell.tools import git

_log = logging.getLogger("flume.fleet")

#: Seconds between a host's looks at the places it carries (each look heartbeats each place).
LOOK_SECONDS = 1.0
#: How long a person's command may run on the host before it is ended.
COMMAND_SECONDS = 50.0
#: The error type a carry ends with when its worker stops: the host left; treated as lost.
HOST_LEFT = "HostLeft"
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

    def __init__(self, name: str, clone: Clone, client: Client) -> None:
        self.name = name
        self.clone = clone
        self.client = client
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
            while True:
                try:
                    look = await self.look()
                    beat = await asyncio.to_thread(self._beat, launch, look, beat)
                    activity.heartbeat(dataclasses.asdict(beat))
                    if beat.life in _ENDED_LIVES:
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
                    raise
        finally:
            self.carrying.discard(launch.place)

    def _launch(self, asked: CarryAsked) -> str:
        """Fetch what the place starts from and launch it here; its branch. Found: adopted."""
        launch, clone = asked.launch, self.clone
        with contextlib.suppress(UsageError):
            found = api.status(place=launch.place, repository=clone.path)
            if found and found[0].life.value != "tidied":
                return str(found[0].branch)
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
