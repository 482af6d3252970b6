"""``flume status`` answered by the running supervisor is the status read from the journals.

The supervisor answers from the places it follows (``survey``), with their journals read to
their ends; the command then reads no journal. Both ways must print the same bytes, for every
form and filter, damaged and torn journals included.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flume.cli.app import app
from flume.core.ids import Instant
from flume.core.observations import ChecksFailed, NeedsSaid
from flume.core.settings import Settings
from flume.shell.perform.performer import Performer
from flume.shell.store import places
from flume.shell.store.journal import append
from flume.shell.supervisor import client
from flume.shell.supervisor.loop import Supervisor
from flume.shell.supervisor.protocol import Answered, Op, wire
from tests.integration.test_status import place, repository

runner = CliRunner()

ASKED = [
    [],
    ["--json"],
    ["--mark", "night"],
    ["--mark", "night", "--json"],
    ["fix--typo"],
    ["fix--typo", "--json"],
    ["fix--nowhere"],
    ["fix--nowhere", "--json"],
]


def host_with_places(tmp_path: Path) -> None:
    """Two repositories: live, waiting, short and failed places, a damaged and a torn journal."""
    one = repository(tmp_path / "one")
    two = repository(tmp_path / "two")
    place(one, "fix", "typo", mark="night")
    place(one, "change", "rate-limit", started=False)
    short = place(two, "fix", "stuck")
    append(short, NeedsSaid(at=Instant(5), words="Which file?\nThe one in docs?", session=None))
    failed = place(two, "question", "why", mark="night")
    append(failed, ChecksFailed(at=Instant(6), reason="pytest failed", output="1 failed"))
    bad = place(two, "fix", "bad")
    lines = bad.read_text(encoding="utf-8").splitlines()
    bad.write_text("\n".join(["garbage", *lines[1:]]) + "\n", encoding="utf-8")
    torn = place(one, "fix", "torn")
    with torn.open("ab") as file:
        file.write(b'{"at":9.0,"type":"Tick"')


def ran(args: list[str]) -> tuple[int, str, str]:
    """``flume status args``: its exit status, stdout and stderr."""
    result = runner.invoke(app, ["status", *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_supervisor_s_answer_prints_what_the_journals_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every form and filter prints the same, answered or read; only the answer reads nothing."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    host_with_places(tmp_path)
    supervisor = Supervisor(Settings(), performer=Performer(clock=time.time), observers=())
    asked: list[str] = []
    answering = True

    def ask(op: Op, timeout: float = 5.0, **fields: str) -> dict[str, Any] | None:
        del timeout, fields
        asked.append(op)
        if op is Op.SURVEY and answering:
            # Through JSON, as over the socket.
            return json.loads(json.dumps(wire(supervisor.survey(), 1)))
        if op is Op.STATUS:
            # A command reading the journals itself asks whether the supervisor runs, and what
            # keeps it from carrying a place on (docs/status.md's ``fault``).
            return json.loads(json.dumps(wire(supervisor.report(), 1)))
        return wire(Answered(1), 1) if op is Op.PING else None

    monkeypatch.setattr(client, "_ask", ask)
    read_journals = places.places_of
    for args in ASKED:
        answering = True

        def no_reading(*_args: object, **_kwargs: object) -> list[places.Found]:
            message = "the command read a journal itself"
            raise AssertionError(message)

        # The command itself reads no journal: only the supervisor does (whose reads are
        # let through while it answers).
        answered = _answered(args, monkeypatch, read_journals, no_reading)
        answering = False
        monkeypatch.setattr(places, "places_of", read_journals)
        read = ran(args)
        assert answered == read, args
    assert Op.SURVEY in asked
    assert ran([])[1].count("\n") > 5  # the table, its words, the damaged journal


def _answered(
    args: list[str],
    monkeypatch: pytest.MonkeyPatch,
    read_journals: Any,
    no_reading: Any,
) -> tuple[int, str, str]:
    """``flume status args`` with the command's own journal reads forbidden."""
    original = client._ask

    def ask(op: Op, timeout: float = 5.0, **fields: str) -> dict[str, Any] | None:
        if op is not Op.SURVEY:
            return original(op, timeout, **fields)
        monkeypatch.setattr(places, "places_of", read_journals)
        try:
            return original(op, timeout, **fields)
        finally:
            monkeypatch.setattr(places, "places_of", no_reading)

    monkeypatch.setattr(client, "_ask", ask)
    monkeypatch.setattr(places, "places_of", no_reading)
    try:
        return ran(args)
    finally:
        monkeypatch.setattr(client, "_ask", original)
        monkeypatch.setattr(places, "places_of", read_journals)


def test_a_running_supervisor_answers_status(host: Path) -> None:
    """The daemon's answer over its socket: a damaged journal named, as the journals say."""
    repo = repository(host / "repo")
    bad = place(repo, "fix", "bad", started=False)
    bad.write_text("garbage\n", encoding="utf-8")
    read, read_text = ran(["--json"]), ran([])
    assert client.ensure(wait=30.0) is not None
    reply = client.survey()
    assert reply is not None
    assert [each.journal for each in reply.unreadable] == [str(bad)]
    answered = ran(["--json"])
    assert answered[0] == read[0]
    before, after = json.loads(read[1]), json.loads(answered[1])
    # The same, but that the supervisor now runs (issue 25, 2.6: status says whether it does).
    assert (before.pop("supervisor")["running"], after.pop("supervisor")["running"]) == (
        False,
        True,
    )
    assert after == before
    assert ran([]) == read_text
    assert f"unreadable journal {bad}: " in read_text[1]


def test_the_supervisor_remakes_only_the_status_of_a_place_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A survey keeps each unchanged place's status from the last; one journaled since is new."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    repo = repository(tmp_path / "one")
    place(repo, "fix", "typo")
    stuck = place(repo, "fix", "stuck")
    supervisor = Supervisor(Settings(), performer=Performer(clock=time.time), observers=())
    first = {view["place"]: view for view in supervisor.survey().places}
    again = {view["place"]: view for view in supervisor.survey().places}
    assert all(again[name] is first[name] for name in first)  # kept, not remade
    append(stuck, NeedsSaid(at=Instant(5), words="Which file?", session=None))
    after = {view["place"]: view for view in supervisor.survey().places}
    assert after["fix--typo"] is first["fix--typo"]
    assert after["fix--stuck"]["needs"] == "Which file?"
    fresh = Supervisor(Settings(), performer=Performer(clock=time.time), observers=())
    assert list(supervisor.survey().places) == list(fresh.survey().places)
