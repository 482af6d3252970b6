"""A spread lane's workflow as its run's line to it, on a real Temporal, its hosts stood in for.

The fleet's workflow runs on the session's dev server in a worker of this process; the hosts'
activities (``carry``, ``run-word``, ``lane-word``) are small stand-ins that record what the
workflow asks of them, so the workflow's own decisions are checked one by one: what a lane's
run asks waits for a host to carry it, news and the lane's end reach the run's host in order, a
finished lane waits, its slot freed, for its run's order and takes it on the host it finished
on, an answer the lane's host refused comes back to the run as news, and a lane its run drops
before any host took it is never carried. (tests/integration/test_fleet_spread.py carries
lanes on real hosts.)
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip(
    "temporalio", reason="the fleet's tests need flume's fleet extra: pip install '.[fleet]'"
)

from temporalio import activity
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from flume.fleet.records import (
    Answer,
    CarryAsked,
    CarryEnded,
    FleetLaunch,
    HostLaneWord,
    LaneEnd,
    LaneWord,
    News,
    Piece,
    RunWord,
    Standing,
    State,
    Taken,
    host_queue,
    shared_queue,
)
from flume.fleet.workflow import FleetPlace

REMOTE = "/srv/remote.git"


class Hosts:
    """Stand-ins for the run's host and the lane's: what each was asked, and when to go on."""

    def __init__(self, queue: str) -> None:
        self.queue = queue
        self.told: list[RunWord] = []
        self.given: list[tuple[str, LaneWord]] = []
        self.carried = 0
        self.finish = asyncio.Event()
        self.carrying = asyncio.Event()
        self.answered = asyncio.Event()
        self.refused = asyncio.Event()

    @activity.defn(name="carry")
    async def carry(self, asked: CarryAsked) -> CarryEnded:
        """Take the lane on host ``hx``, say so, tell one piece of news, and end once told."""
        self.carried += 1
        info = activity.info()
        client = activity.client()
        handle = client.get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
        await handle.signal("taken", Taken(host="hx", attempt=asked.attempt))
        self.carrying.set()
        news = News(attempt=asked.attempt, pieces=[Piece(id="started", text="started")])
        await handle.signal("news", news)
        await self.finish.wait()
        end = LaneEnd(finished=True, head="c0ffee", turns=2, tokens=30)
        return CarryEnded(host="hx", state=State.FINISHED, pushed="c0ffee", lane_end=end)

    @activity.defn(name="run-word")
    async def run_word(self, said: RunWord) -> int:
        """The run's host: what the fleet brings of its lane, recorded."""
        self.told.append(said)
        if any(piece.id.startswith("refused:") for piece in said.news):
            self.refused.set()
        return 1

    @activity.defn(name="lane-word")
    async def lane_word(self, asked: HostLaneWord) -> Answer:
        """The lane's host: what its run asks, recorded; an answer refused, as answered already."""
        self.given.append((activity.info().task_queue, asked.word))
        if asked.word.kind == "answer":
            self.answered.set()
            return Answer(status=1, err="question q1 is answered already")
        return Answer(status=0, out="done")


def _launch(queue: str, place: str) -> FleetLaunch:
    return FleetLaunch(
        remote=REMOTE,
        place=place,
        kind="slices",
        name=place.removeprefix("slices--"),
        brief="Greet.",
        base="slices/x",
        queue=queue,
        heartbeat=30.0,
        lane_line='{"type": "Launched"}',
        lane_name="slice-a",
        lane_branch=f"slices/{place.removeprefix('slices--')}",
        run="slices--x",
        run_host="hr",
    )


def _serve(
    address: str, body: Callable[[Client, Hosts, str], Awaitable[None]], *, carry: bool
) -> Hosts:
    """Run ``body`` with a worker for the workflow (and, if ``carry``, hosts that carry)."""
    queue = f"t{secrets.token_hex(4)}"
    hosts = Hosts(queue)

    async def main() -> None:
        client = await Client.connect(address)
        shared = Worker(
            client,
            task_queue=shared_queue(queue, REMOTE),
            workflows=[FleetPlace],
            workflow_runner=UnsandboxedWorkflowRunner(),
            activities=[hosts.carry] if carry else [],
        )
        run_host = Worker(client, task_queue=host_queue(queue, "hr"), activities=[hosts.run_word])
        lane_host = Worker(client, task_queue=host_queue(queue, "hx"), activities=[hosts.lane_word])
        async with shared, run_host, lane_host:
            await asyncio.wait_for(body(client, hosts, queue), timeout=60)

    asyncio.run(main())
    return hosts


async def _started(client: Client, queue: str) -> WorkflowHandle[Any, Any]:
    place = f"slices--x{secrets.token_hex(3)}+slice-a"
    return await client.start_workflow(
        FleetPlace.run,
        _launch(queue, place),
        id=place,
        task_queue=shared_queue(queue, REMOTE),
        execution_timeout=timedelta(minutes=2),
    )


async def _until(handle: WorkflowHandle[Any, Any], wanted: Callable[[Standing], bool]) -> None:
    """Wait (a deadline above) until the workflow's standing is as ``wanted``."""
    while not wanted(await handle.query("where", result_type=Standing)):  # noqa: ASYNC110 (Temporal's answer, asked again)
        await asyncio.sleep(0.05)


def test_a_lane_s_words_wait_for_its_host_and_its_news_and_end_reach_its_run_in_order(
    temporal: Any,
) -> None:
    """A note waits until a host carries the lane; news, then its end, reach the run's host.

    Finished, the lane waits for its run's order; the tidy is given on the host it finished
    on, and the workflow ends. An answer that host refused comes back to the run as news.
    """

    async def body(client: Client, hosts: Hosts, queue: str) -> None:
        handle = await _started(client, queue)
        await handle.signal("word", LaneWord(kind="notify", text="Keep it short.", id="n1"))
        await hosts.carrying.wait()
        await _until(handle, lambda standing: standing.state == State.CARRIED)
        await handle.signal("word", LaneWord(kind="answer", question="q1", text="Hello", id="a1"))
        await hosts.answered.wait()
        await hosts.refused.wait()
        hosts.finish.set()
        await _until(handle, lambda standing: "waits for its run" in standing.words)
        assert [word.kind for _queue, word in hosts.given] == ["notify", "answer"]
        await handle.signal("word", LaneWord(kind="order", order="tidy"))
        standing = await handle.result()
        assert standing.state == State.FINISHED
        assert "tidy ordered by its run slices--x" in standing.words

    hosts = _serve(temporal.address, body, carry=True)
    assert hosts.carried == 1
    assert [(word.kind, word.order) for _queue, word in hosts.given] == [
        ("notify", ""),
        ("answer", ""),
        ("order", "tidy"),
    ]
    assert {queue for queue, _word in hosts.given} == {host_queue(hosts.queue, "hx")}
    news = [(piece.id, piece.text) for said in hosts.told for piece in said.news]
    assert news[0] == ("started", "started")
    assert news[1][0] == "refused:a1"
    assert "question q1 is answered already" in news[1][1]
    ends = [said.end for said in hosts.told if said.end is not None]
    assert ends == [LaneEnd(finished=True, head="c0ffee", turns=2, tokens=30)]
    assert hosts.told[-1].end is not None
    assert {(said.run, said.lane) for said in hosts.told} == {("slices--x", "slice-a")}


def test_a_lane_its_run_drops_before_any_host_took_it_is_never_carried(temporal: Any) -> None:
    """No host has a free slot; the run drops the lane: it ends dropped, its run told so."""

    async def body(client: Client, hosts: Hosts, queue: str) -> None:
        handle = await _started(client, queue)
        await _until(handle, lambda standing: standing.state == State.WAITING)
        await handle.signal("word", LaneWord(kind="order", order="drop"))
        standing = await handle.result()
        assert standing.state == State.DROPPED
        assert "dropped by its run slices--x before a host carried it" in standing.words
        del hosts

    hosts = _serve(temporal.address, body, carry=False)
    assert hosts.carried == 0
    assert hosts.given == []
    assert [said.end for said in hosts.told] == [LaneEnd(finished=False)]
