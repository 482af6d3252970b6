"""The supervisor's socket: each answer a typed record, sent as the very bytes flume always sent.

The lines below were written by the supervisor before its answers were records (flume's
``_answer`` and ``_launch`` building dicts by hand): a record written must give the same line,
byte for byte, and that line read back must give the same record, so an older supervisor and a
newer command (or the reverse) still understand each other.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from flume.core.errors import Problem
from flume.core.settings import Settings
from flume.shell.perform.performer import Performer
from flume.shell.supervisor import daemon
from flume.shell.supervisor.handover import (
    LaunchCrashed,
    LaunchMade,
    LaunchOutcome,
    LaunchRefused,
    Taken,
    decode_outcome,
    decode_taken,
    wire_outcome,
    wire_taken,
)
from flume.shell.supervisor.loop import Supervisor
from flume.shell.supervisor.protocol import (
    Answered,
    DaemonReport,
    Declined,
    FollowsAnswer,
    Op,
    Reply,
    SurveyAnswer,
    Unreadable,
    decode_answered,
    decode_follows,
    decode_report,
    decode_survey,
    wire,
)

PID = 4242

REPORT = DaemonReport(
    pid=PID,
    started_at=1764547200.123456,
    ticks=17,
    places=3,
    other_hosts_places=1,
    lives={"active": 2, "tidied": 1},
    repositories=2,
    busy=1,
    actions=9,
    last_tick_subprocesses=2,
    last_tick_herdr_requests=0,
    last_tick_seconds=0.012345,
    unreadable={"/r/places/.flume/journals/fix--a/journal.jsonl": "line 3 is not JSON"},
    unwritable={},
    watching="inotify",
    last_tick_deadlines_checked=1,
    last_tick_agents_looked=2,
)
SURVEY = SurveyAnswer(
    format=1,
    places=({"place": "fix--a", "mark": None, "stage": {"name": "fix"}},),
    unreadable=(Unreadable("/r/j.jsonl", "line 1 is not JSON"),),
    torn=("/r/t.jsonl",),
    repositories=("/r",),
)

#: (the record, the line the supervisor sent for it before it had records).
SENT: list[tuple[Reply, str]] = [
    (Answered(PID), '{"ok": true, "pid": 4242}'),
    (
        REPORT,
        (
            '{"ok": true, "pid": 4242, "started_at": 1764547200.123456, "ticks": 17, "places": 3, '
            '"other_hosts_places": 1, "lives": {"active": 2, "tidied": 1}, "repositories": 2, '
            '"busy": 1, "actions": 9, "last_tick_subprocesses": 2, "last_tick_herdr_requests": 0, '
            '"last_tick_seconds": 0.012345, "unreadable": '
            '{"/r/places/.flume/journals/fix--a/journal.jsonl": "line 3 is not JSON"}, '
            '"unwritable": {}, "watching": "inotify", "last_tick_deadlines_checked": 1, '
            '"last_tick_agents_looked": 2}'
        ),
    ),
    (
        SURVEY,
        (
            '{"ok": true, "pid": 4242, "format": 1, "places": [{"place": "fix--a", "mark": null, '
            '"stage": {"name": "fix"}}], "unreadable": [{"journal": "/r/j.jsonl", "problem": '
            '"line 1 is not JSON"}], "torn": ["/r/t.jsonl"], "repositories": ["/r"]}'
        ),
    ),
    (FollowsAnswer(PID, None), '{"ok": true, "pid": 4242, "problem": null}'),
    (
        FollowsAnswer(PID, "line 2 is torn"),
        '{"ok": true, "pid": 4242, "problem": "line 2 is torn"}',
    ),
    (Declined("another user asks"), '{"ok": false, "error": "another user asks"}'),
]

OUTCOMES: list[tuple[LaunchOutcome, str]] = [
    (
        LaunchMade({"place": "fix--a", "journal": "/r/j.jsonl"}),
        (
            '{"ok": true, "pid": 4242, "launch": {"made": {"place": "fix--a", '
            '"journal": "/r/j.jsonl"}}}'
        ),
    ),
    (
        LaunchRefused((Problem(field="name", what="is taken", mend="choose another"),), 2),
        (
            '{"ok": true, "pid": 4242, "launch": {"problems": [{"field": "name", '
            '"what": "is taken", "mend": "choose another"}], "exit_status": 2}}'
        ),
    ),
    (
        LaunchCrashed("Traceback ..."),
        '{"ok": true, "pid": 4242, "launch": {"failed": "Traceback ..."}}',
    ),
]


def _named(each: object) -> str:
    """A case's id: the record's name."""
    return type(each).__name__ if not isinstance(each, str) else "line"


def _decoded(reply: Reply, line: str) -> Reply | None:
    """``line`` read back as the client reads the answer of the op ``reply`` answers."""
    said = json.loads(line)
    match reply:
        case Answered():
            return decode_answered(said)
        case DaemonReport():
            return decode_report(said)
        case SurveyAnswer():
            return decode_survey(said)
        case FollowsAnswer():
            return decode_follows(said)
        case Declined():
            return decode_taken(said)


@pytest.mark.parametrize(("reply", "line"), SENT, ids=_named)
def test_each_answer_goes_as_the_line_it_always_was_and_reads_back_whole(
    reply: Reply, line: str
) -> None:
    """Written, the record is the old line; the old line read, the record."""
    assert json.dumps(wire(reply, PID)) == line
    assert _decoded(reply, line) == reply


@pytest.mark.parametrize(("outcome", "line"), OUTCOMES, ids=_named)
def test_a_launch_s_outcome_goes_as_it_always_did_and_reads_back_whole(
    outcome: LaunchOutcome, line: str
) -> None:
    """A launch's second line, written and read as :func:`test_each_answer...` checks."""
    assert json.dumps(wire_outcome(outcome, PID)) == line
    assert decode_outcome(json.loads(line)) == outcome


def test_a_launch_taken_says_so_as_it_always_did() -> None:
    """The first line of a launch taken, and reading it back."""
    line = json.dumps(wire_taken())
    assert line == '{"ok": true, "taken": true}'
    assert decode_taken(json.loads(line)) == Taken()


def test_an_answer_that_does_not_fit_reads_as_none() -> None:
    """A refusal, a missing field, a field of the wrong type: no record, as no answer."""
    unknown = {"ok": False, "error": "unknown op 'survey'"}
    assert decode_survey(unknown) is None
    assert decode_report(unknown) is None
    assert decode_answered(unknown) is None
    assert decode_follows({"ok": True, "pid": PID, "problem": 3}) is None
    report = json.loads(json.dumps(wire(REPORT, PID)))
    assert decode_report({**report, "ticks": "17"}) is None
    assert decode_report({**report, "lives": {"active": "2"}}) is None
    survey = json.loads(json.dumps(wire(SURVEY, PID)))
    assert decode_survey({**survey, "unreadable": [{"journal": "/r/j.jsonl"}]}) is None
    assert decode_survey({**survey, "pid": True}) is None
    assert decode_outcome({"ok": True, "pid": PID, "launch": {"problems": [{"field": 1}]}}) is None
    assert decode_outcome({"ok": True, "pid": PID}) is None
    assert decode_taken({"ok": True}) is None


def test_every_op_is_answered_and_an_unknown_one_is_declined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon answers each :class:`Op` with its record; one it does not know, as it did."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    supervisor = Supervisor(Settings(), performer=Performer(clock=time.time), observers=())
    try:
        answers = {
            op: daemon._reply(op, op.value, {"journal": str(tmp_path)}, supervisor)
            for op in Op
            if op is not Op.LAUNCH
        }
        unknown = daemon._reply(None, "dance", {}, supervisor)
    finally:
        supervisor.close()
    assert {op: type(answer) for op, answer in answers.items()} == {
        Op.PING: Answered,
        Op.WAKE: Answered,
        Op.STOP: Answered,
        Op.STATUS: DaemonReport,
        Op.SURVEY: SurveyAnswer,
        Op.FOLLOWS: FollowsAnswer,
    }
    assert json.dumps(wire(unknown, PID)) == '{"ok": false, "error": "unknown op \'dance\'"}'


def test_an_older_supervisor_s_report_reads_back_without_what_it_did_not_say() -> None:
    """A report without how changes are found (an older supervisor's) reads, ``unknown``."""
    said = wire(REPORT, PID)
    for name in ("watching", "last_tick_deadlines_checked", "last_tick_agents_looked"):
        del said[name]
    old = decode_report(said)
    assert old is not None
    assert (old.watching, old.last_tick_deadlines_checked, old.last_tick_agents_looked) == (
        "unknown",
        0,
        0,
    )
