"""The fleet's workflow against histories recorded from real runs: Temporal's determinism check.

Temporal runs a workflow's code again, against its history, each time a worker picks it up (a
worker restarted, a host lost, a cache evicted): code that would now decide differently breaks
every fleet place in flight. So each history in tests/data/fleet/ (recorded from the fleet's
tests, ``FLUME_RECORD_FLEET=1``: a landing, a host lost and its place carried on, a stranded
place dropped, a paused run raised from another host, a spread run's lane and an orchestrate
child on another host that asked its lead) is replayed with the SDK's ``Replayer`` against the
workflow code as it is now. A change that fails this must be versioned (``workflow.patched``),
not shipped. The last tests show the check can fail: a workflow that asks for its carry
differently does not replay, nor one that tells a spread lane's run otherwise.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta
from pathlib import Path

import pytest

pytest.importorskip(
    "temporalio", reason="the fleet's tests need flume's fleet extra: pip install '.[fleet]'"
)

from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from flume.fleet.records import WORKFLOW, CarryAsked, CarryEnded, FleetLaunch
from flume.fleet.workflow import ONCE, FleetPlace

HISTORIES = Path(__file__).resolve().parents[1] / "data" / "fleet"
#: The runs whose histories must be there: each a way a fleet place goes.
RECORDED = ("landing", "host-loss", "drop", "pause-raise", "spread-lanes", "spread-child")


def history(name: str) -> WorkflowHistory:
    """A recorded history, by its file's name."""
    path = HISTORIES / f"{name}.json"
    return WorkflowHistory.from_json(name, path.read_text(encoding="utf-8"))


def test_every_recorded_history_is_there() -> None:
    """The histories the replay promises are recorded: landing, host lost, drop, raise, spread."""
    found = {path.stem for path in HISTORIES.glob("*.json")}
    assert set(RECORDED) <= found, sorted(found)


@pytest.mark.parametrize("name", RECORDED)
def test_a_recorded_history_replays_against_the_workflow_as_it_is(name: str) -> None:
    """The workflow code decides each recorded run exactly as it was decided then."""
    replayer = Replayer(workflows=[FleetPlace])
    result = asyncio.run(replayer.replay_workflow(history(name), raise_on_replay_failure=False))
    assert result.replay_failure is None, result.replay_failure


@workflow.defn(name=WORKFLOW, sandboxed=False)
class CarriedTwice(FleetPlace):
    """A deliberately changed workflow: it asks for a carry with a shorter heartbeat first."""

    @workflow.run
    async def run(self, launch: FleetLaunch) -> object:
        """A first carry scheduled differently from the one the histories hold."""
        await workflow.execute_activity(
            "carry",
            CarryAsked(launch=dataclasses.replace(launch, heartbeat=1.0), attempt=0),
            task_queue="elsewhere",
            start_to_close_timeout=timedelta(seconds=5),
            retry_policy=ONCE,
            result_type=CarryEnded,
        )
        return await super().run(launch)


def test_a_non_deterministic_change_fails_the_replay() -> None:
    """The check can fail: a workflow that schedules its carry elsewhere does not replay."""
    replayer = Replayer(workflows=[CarriedTwice])
    result = asyncio.run(
        replayer.replay_workflow(history("landing"), raise_on_replay_failure=False)
    )
    assert isinstance(result.replay_failure, NondeterminismError), result.replay_failure


@workflow.defn(name=WORKFLOW, sandboxed=False)
class ToldElsewhere(FleetPlace):
    """A deliberately changed workflow: it tells a spread lane's run through another activity."""

    @workflow.run
    async def run(self, launch: FleetLaunch) -> object:
        """The workflow's own run, its line to the run changed below."""
        return await super().run(launch)

    async def _to_run(self, launch: FleetLaunch) -> None:
        """Each word for the run as an activity of another name than the histories hold."""
        del launch
        while True:
            await workflow.wait_condition(lambda: bool(self.to_run) or self.closing)
            if not self.to_run:
                return
            await workflow.execute_activity(
                "run-told",
                self.to_run.pop(0),
                task_queue="elsewhere",
                start_to_close_timeout=timedelta(seconds=5),
                retry_policy=ONCE,
            )


def test_a_non_deterministic_change_to_a_spread_lane_s_line_fails_the_replay() -> None:
    """The check holds the lane's line to its run too: told otherwise, its history fails."""
    replayer = Replayer(workflows=[ToldElsewhere])
    result = asyncio.run(
        replayer.replay_workflow(history("spread-lanes"), raise_on_replay_failure=False)
    )
    assert isinstance(result.replay_failure, NondeterminismError), result.replay_failure
