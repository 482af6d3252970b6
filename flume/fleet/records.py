"""What the fleet's workflow, its activities and its callers send each other, as plain records.

Temporal's data converter carries dataclasses as JSON, so these are frozen dataclasses of plain
values (strings, numbers, lists), nothing of flume's core: the workflow code that reads them
runs in Temporal's sandbox, and a record recorded in a history must read back the same on every
host, whatever version of flume it runs. A field added later needs a default, or a history
recorded before it stops replaying (tests/integration/test_fleet_replay.py).

This module imports nothing but the standard library: the CLI loads it to name a fleet's
states and commands without loading Temporal's SDK.
"""

from __future__ import annotations

import dataclasses
import hashlib

from flume.fleet import routed

#: The workflow type every fleet place runs as.
WORKFLOW = "FleetPlace"

# The person's commands routed to a place's host: flume/fleet/routed.py (ROUTED).
ROUTED = routed.ROUTED


class State:
    """The fleet's word for where a place stands (``flume status --fleet``'s STATE column)."""

    #: Launched in the fleet; no host has taken it yet (every slot is busy, or none polls).
    WAITING = "waiting"
    #: A host took it and carries it: its heartbeats say how it goes.
    CARRIED = "carried"
    #: Its host stopped heartbeating: named with the host and the last head it pushed.
    HOST_LOST = "host-lost"
    #: The host could not launch it (its words say why): a person drops it or moves it.
    FAILED = "failed"
    LANDED = "landed"
    FINISHED = "finished"
    DROPPED = "dropped"

    ENDED = frozenset({LANDED, FINISHED, DROPPED})
    #: States that wait for a person: ``flume fleet retry`` moves it, ``flume fleet drop`` ends it.
    STRANDED = frozenset({HOST_LOST, FAILED})


def digest(text: str) -> str:
    """A short, stable name for ``text`` (a remote's URL) fit for a task queue's name."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def shared_queue(prefix: str, remote: str) -> str:
    """The task queue every host with a clone of ``remote`` takes places from."""
    return f"{prefix}.places.{digest(remote)}"


def host_queue(prefix: str, host: str) -> str:
    """The task queue of one host's own: the person's commands for the places it carries."""
    return f"{prefix}.host.{host}"


@dataclasses.dataclass(frozen=True)
class FleetLaunch:
    """A fleet launch: what any host needs to launch the place in its own clone."""

    #: The repository's remote, by its URL: each host serves its clone of it.
    remote: str
    place: str
    kind: str
    name: str
    brief: str
    base: str
    #: The task queues' prefix (``[fleet] queue``).
    queue: str
    #: A kind file's text the launch carries (``--kind-file``); empty: ``kind`` is a known one.
    kind_text: str = ""
    mark: str | None = None
    waits: list[str] = dataclasses.field(default_factory=list)
    agent: str = "claude"
    model: str | None = None
    agent_args: list[str] = dataclasses.field(default_factory=list)
    #: Carry it again on another host when its host is lost (``relaunch``).
    relaunch: bool = False
    #: Seconds without a heartbeat after which its host is taken as lost.
    heartbeat: float = 10.0
    #: The host the launch was made from.
    launched_from: str = ""
    #: A spread block's lane or child (WF-SPREAD): its launch as its run's host would journal
    #: it (a journal line), its name in its run's block, and its branch; empty: a caller's
    #: launch of ``kind``.
    lane_line: str = ""
    lane_name: str = ""
    lane_branch: str = ""
    #: The lane's run (its place), and the fleet host the run is on: it hears of the lane.
    run: str = ""
    run_host: str = ""


@dataclasses.dataclass(frozen=True)
class CarryAsked:
    """One carry of a place: the launch, which try this is, and the head to start from."""

    launch: FleetLaunch
    attempt: int
    #: The head the last host pushed, to go on from (FLEET-CARRIED-HEAD); None: the base.
    carried: str | None = None


@dataclasses.dataclass(frozen=True)
class Beat:
    """A carrying host's heartbeat: how the place goes there."""

    host: str
    attempt: int
    life: str = ""
    stage: str = ""
    phase: str = ""
    agent: str = ""
    #: Why it is paused or stopped short, and the command that leads out, when it is.
    paused: str = ""
    #: The last head of the place's branch pushed to the remote.
    pushed: str | None = None
    branch: str = ""
    #: A push the remote refused (the branch was rewritten): never forced, named here.
    refused: str = ""


@dataclasses.dataclass(frozen=True)
class Taken:
    """A host took a carry of the place (the activity's first word to its workflow)."""

    host: str
    attempt: int


@dataclasses.dataclass(frozen=True)
class LaneEnd:
    """How a spread lane ended, as its run is to be told (``LaneEnded``)."""

    finished: bool
    head: str | None = None
    turns: int = 0
    tokens: int = 0


@dataclasses.dataclass(frozen=True)
class CarryEnded:
    """A carry that ended with the place: landed, finished or dropped, on ``host``."""

    host: str
    state: str
    pushed: str | None = None
    words: str = ""
    #: A spread lane's end, for its run.
    lane_end: LaneEnd | None = None


@dataclasses.dataclass(frozen=True)
class Piece:
    """One piece of a led child's news for its lead: its id (told once) and its words."""

    id: str
    text: str


@dataclasses.dataclass(frozen=True)
class News:
    """A led child's news, from the host that carries it (carry ``attempt``), for its run."""

    attempt: int
    pieces: list[Piece] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class RunWord:
    """What the fleet brings the run's host of its spread lane: news, its end, or a failure."""

    run: str
    lane: str
    #: The lane's place: only the lane the run named now takes it.
    place: str
    news: list[Piece] = dataclasses.field(default_factory=list)
    end: LaneEnd | None = None
    #: The lane could not be launched: why (it ended unfinished).
    failed: str = ""


@dataclasses.dataclass(frozen=True)
class LaneWord:
    """What a spread lane's run asks of it, through the fleet: an order, a note, an answer."""

    #: ``order``, ``notify`` or ``answer``.
    kind: str
    #: ``order``: ``drop`` or ``tidy``.
    order: str = ""
    #: ``notify``: the lead's words; ``answer``: the answer.
    text: str = ""
    #: ``notify``: the note's id (told once); ``answer``: the answer's own.
    id: str = ""
    #: ``answer``: the question, and who gave the answer, as the run's host judged it.
    question: str = ""
    by_lead: bool = False
    no_lead: bool = False


@dataclasses.dataclass(frozen=True)
class HostLaneWord:
    """A spread lane's word, carried to the host that carries (or carried) it."""

    place: str
    word: LaneWord


@dataclasses.dataclass(frozen=True)
class Returned:
    """A lost host came back and found the place carried elsewhere: what it kept, named."""

    host: str
    words: str


@dataclasses.dataclass(frozen=True)
class Asked:
    """A person's command for a fleet place, from any host: ``flume <command> PLACE args``."""

    command: str
    args: list[str] = dataclasses.field(default_factory=list)
    #: What the command reads on stdin (``-`` for its words), if anything.
    stdin: str | None = None


@dataclasses.dataclass(frozen=True)
class HostCommand:
    """A person's command carried to the host of the place, on that host's own task queue."""

    place: str
    remote: str
    asked: Asked


@dataclasses.dataclass(frozen=True)
class Answer:
    """What the command printed on the host, and its exit status."""

    status: int
    out: str = ""
    err: str = ""


@dataclasses.dataclass(frozen=True)
class Standing:
    """Where a fleet place stands, as its workflow keeps it (its memo, and its query)."""

    place: str
    state: str
    remote: str = ""
    host: str = ""
    attempt: int = 0
    #: The last head pushed that the workflow knows of (from a lost host's last heartbeat).
    pushed: str | None = None
    #: Hosts lost while carrying it, in order.
    lost: list[str] = dataclasses.field(default_factory=list)
    #: What the place's state means for a person, and the way out when it waits on one.
    words: str = ""
    #: What returning hosts kept of the place, each named.
    kept: list[str] = dataclasses.field(default_factory=list)
