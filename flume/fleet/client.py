"""What a person's commands ask of the fleet: a launch, the fleet's places, a routed command.

Each function connects to the fleet's Temporal with the host's ``[fleet]`` settings and does one
thing; the CLI (``flume launch --fleet``, ``flume status --fleet``, ``flume fleet <command>``)
calls them through :func:`asyncio.run`. A launch is checked here first, whole, as a launch on
this host would be (the same bad-input promises: nothing is started when it is refused), and its
workflow's id is the place's name, so Temporal lets one launch of a name live in the fleet.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from flume import api
from flume.core.errors import UsageError, refused
from flume.fleet.config import Fleet
from flume.fleet.connect import connect
from flume.fleet.host import clone_of
from flume.fleet.records import (
    WORKFLOW,
    Answer,
    Asked,
    FleetLaunch,
    Standing,
    State,
    shared_queue,
)
from flume.fleet.workflow import FleetPlace


@dataclasses.dataclass(frozen=True)
class Launched:
    """A fleet launch started: the place, its workflow's id, and the queue hosts take it from."""

    place: str
    workflow: str
    remote: str
    base: str
    queue: str

    def as_dict(self) -> dict[str, Any]:
        """What ``flume launch --fleet --json`` prints."""
        return {"format": 1, "fleet": True, **dataclasses.asdict(self)}


async def launch(
    asked: api.LaunchAsked,
    fleet: Fleet,
    *,
    host: str,
    relaunch: bool | None = None,
    connected: Client | None = None,
) -> Launched:
    """Check the launch here, whole, then start its workflow; a :class:`UsageError` if refused.

    The place's name is its workflow's id: a second launch of a name the fleet carries is
    refused (exit status 2), from whichever host it comes.
    """
    clone = clone_of(Path(asked.repository))
    seen = await asyncio.to_thread(api.check_launch, asked)
    kind_text = _read(asked.kind_file) if asked.kind_file else ""
    body = FleetLaunch(
        remote=clone.url,
        place=str(seen.launch.place),
        kind=str(seen.launch.kind),
        name=str(seen.launch.name),
        brief=seen.launch.brief,
        base=str(seen.launch.base),
        queue=fleet.queue,
        kind_text=kind_text,
        mark=seen.launch.mark,
        waits=sorted(str(each) for each in seen.launch.waits),
        agent=seen.launch.agent.agent.value,
        model=seen.launch.agent.model,
        agent_args=list(seen.launch.agent.flags),
        relaunch=fleet.relaunch if relaunch is None else relaunch,
        heartbeat=fleet.heartbeat,
        launched_from=host,
    )
    client = connected or await connect(fleet)
    queue = shared_queue(fleet.queue, clone.url)
    standing = Standing(place=body.place, state=State.WAITING, remote=clone.url)
    try:
        await client.start_workflow(
            FleetPlace.run,
            body,
            id=body.place,
            task_queue=queue,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            memo={"standing": dataclasses.asdict(standing)},
        )
    except WorkflowAlreadyStartedError:
        raise UsageError.one(
            "name",
            f"{body.place} is already launched in the fleet at {fleet.address}",
            f"choose another name, or drop it first (flume fleet drop {body.place})",
        ) from None
    return Launched(
        place=body.place, workflow=body.place, remote=clone.url, base=body.base, queue=queue
    )


def _read(path: Path) -> str:
    """A kind file's text, checked already by the launch's checks."""
    return path.read_text(encoding="utf-8")


async def standings(fleet: Fleet, *, closed: bool = True) -> list[dict[str, Any]]:
    """Every fleet place, as Temporal's visibility and its host's last heartbeat say.

    Each is its workflow's :class:`Standing` (its memo) with, while a host carries it, that
    host's last heartbeat: stage, phase, agent, what it waits on, the head pushed, and how many
    seconds ago the host was last heard from. ``closed``: ended places too.
    """
    client = await connect(fleet)
    query = f'WorkflowType = "{WORKFLOW}"'
    if not closed:
        query += ' AND ExecutionStatus = "Running"'
    found: list[dict[str, Any]] = []
    seen: set[str] = set()
    async for execution in client.list_workflows(query):
        if execution.id in seen:
            continue  # an older run of a name launched again: the newest is listed first
        seen.add(execution.id)
        memo = await execution.memo()
        row = dict(memo.get("standing") or {"place": execution.id, "state": "?"})
        row["running"] = execution.status is WorkflowExecutionStatus.RUNNING
        row["status"] = execution.status.name.lower() if execution.status else "?"
        if row["running"]:
            row.update(await _heartbeat(client, execution.id))
            if row.get("unrun") and "carry" not in row and row.get("state") == State.CARRIED:
                row["state"] = State.HOST_LOST
                row["words"] = (
                    f"{row.get('host')}'s carry ended unheard, and no host's worker has run "
                    f"the place since {row['unrun']}: start a host's flume fleet worker"
                )
        found.append(row)
    return sorted(found, key=lambda row: str(row.get("place")))


#: How long a workflow's task may wait for a worker before status says none runs it.
UNRUN_SECONDS = 5.0


async def _heartbeat(client: Client, workflow: str) -> dict[str, Any]:
    """The carry's last heartbeat, and when it was heard, while one is pending.

    With none pending, and the workflow's own task waiting for a worker longer than
    :data:`UNRUN_SECONDS`, ``unrun`` says since when: no worker of the fleet runs it now (every
    host's worker is down), so its memo may be behind (a carry lost and not yet seen lost).
    """
    described = await client.get_workflow_handle(workflow).describe()
    task = described.raw_description.pending_workflow_task
    said: dict[str, Any] = {}
    if task.HasField("scheduled_time"):
        scheduled = task.scheduled_time.ToDatetime(tzinfo=UTC)
        if (datetime.now(UTC) - scheduled).total_seconds() > UNRUN_SECONDS:
            said["unrun"] = scheduled.isoformat()
    for pending in described.raw_description.pending_activities:
        if pending.activity_type.name != "carry":
            continue
        if pending.heartbeat_details.payloads:
            (beat,) = await client.data_converter.decode(pending.heartbeat_details.payloads[:1])
            said["beat"] = beat if isinstance(beat, dict) else {}
        if pending.HasField("last_heartbeat_time"):
            said["heard"] = pending.last_heartbeat_time.ToDatetime().isoformat() + "Z"
        said["carry"] = (
            PendingActivityState.Name(pending.state).removeprefix("PENDING_ACTIVITY_STATE_").lower()
        )
        return said
    return said


async def route(fleet: Fleet, place: str, asked: Asked) -> Answer:
    """A person's command for a fleet place, carried to its host; what the host answered.

    A place the fleet does not know is exit status 2; one that ended says so (exit 1).
    """
    client = await connect(fleet)
    handle = client.get_workflow_handle(place)
    try:
        answer: Answer = await handle.execute_update("command", asked, result_type=Answer)
    except RPCError as error:
        if error.status is RPCStatusCode.NOT_FOUND:
            raise UsageError.one(
                "place",
                f"no fleet place {place} at {fleet.address}",
                "flume status --fleet lists the fleet's places",
            ) from None
        if "completed" not in str(error).lower():
            raise
    except WorkflowUpdateFailedError as error:
        raise refused("place", f"{place}: {error.cause or error}", "try it again") from None
    else:
        return answer
    memo = await (await handle.describe()).memo()
    standing = memo.get("standing") or {}
    state = standing.get("state", "ended")
    return Answer(
        status=1, err=f"flume: {place} is {state} already; the fleet carries it no more\n"
    )
