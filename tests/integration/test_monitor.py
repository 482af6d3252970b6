"""The monitor's workings without a browser: its controls, its words, its one view model.

Its controls are read off the rules' own table; each is carried out through flume.api and is
refused in the CLI's words; its page lists the places in the order ``flume status`` does; a
place's view is made again only when its journal grew.
"""

from __future__ import annotations

import http.client
import re
from pathlib import Path
from typing import Any

import pytest

from flume.core.errors import UsageError
from flume.core.observations import (
    ApproveAsked,
    BudgetRaised,
    PassAsked,
    ResolveAsked,
    ResumeAsked,
    RetryAsked,
)
from flume.core.place import PAUSE_ACCEPTS, PauseCause
from flume.web import controls
from flume.web.monitor import key_of
from tests.integration.agents_kit import wait_for
from tests.integration.places_kit import flume, launch_place, repository
from tests.integration.test_monitor_security import ask, cookie
from tests.integration.test_views import _STATES, view

#: The verb each command a pause takes is given by.
VERBS = {
    ApproveAsked: "approve",
    ResumeAsked: "resume",
    BudgetRaised: "raise",
    RetryAsked: "retry",
    ResolveAsked: "resolve",
    PassAsked: "pass",
}


@pytest.mark.parametrize("cause", list(PauseCause), ids=lambda cause: cause.value)
def test_a_pause_offers_exactly_the_ways_out_its_cause_takes(cause: PauseCause) -> None:
    """The rules' own table, not a copy: each cause's controls are the commands it takes."""
    caps = [{"name": "turns", "spent": 1, "cap": 1}]
    paused = view("x", _STATES[4], paused=cause.value, caps=caps)
    offered = controls.ways_out(paused)
    assert set(offered) == {VERBS[command] for command in PAUSE_ACCEPTS[cause]}
    shown = [control.verb for control in controls.controls_of(paused) if control.way_out]
    assert shown == offered


def test_the_other_waits_offer_their_one_way_out() -> None:
    """A question, a stop short, a stage waiting on the word; a done place offers nothing."""
    asked = view(
        "x",
        _STATES[0],
        paused="question",
        question={"id": "q1", "text": "Which?", "options": ["a", "b"]},
    )
    assert controls.ways_out(asked) == ["answer"]
    (answer,) = [c for c in controls.controls_of(asked) if c.verb == "answer"]
    assert [field.name for field in answer.fields] == ["question", "choice", "text"]
    assert controls.ways_out(view("x", _STATES[3])) == ["retry"]
    assert controls.ways_out(view("x", _STATES[5])) == ["proceed"]
    assert controls.controls_of(view("x", _STATES[8])) == []
    live = [control.verb for control in controls.controls_of(view("x", _STATES[0]))]
    assert live == ["tell", "stop", "drop"]


def test_a_raise_offers_only_the_budgets_the_kind_sets() -> None:
    """One field for each budget the run sets, saying what was spent of it."""
    paused = view(
        "x",
        _STATES[4],
        paused="budget",
        caps=[{"name": "turns", "spent": 8, "cap": 8}, {"name": "retries", "spent": 0, "cap": 2}],
    )
    (raised,) = [c for c in controls.controls_of(paused) if c.verb == "raise"]
    assert [(field.name, field.label) for field in raised.fields] == [
        ("turns", "More turns (spent 8 of 8)"),
        ("retries", "More retries (spent 0 of 2)"),
    ]


def test_a_control_is_refused_in_the_cli_s_words(host: Path, woken: list[str]) -> None:
    """Approve of a fix at work: the monitor's refusal is the CLI's, word for word, exit 1."""
    repo = repository(host / "repo")
    launch_place(repo, "words")
    with pytest.raises(UsageError) as caught:
        controls.perform("approve", "fix--words", repo, {"token": "t"})
    assert caught.value.exit_status == 1
    cli = flume("approve", "fix--words", "--repository", str(repo))
    assert cli.returncode == 1
    assert cli.stderr.strip() == "flume: " + caught.value.problems[0].render()
    with pytest.raises(UsageError) as unknown:
        controls.perform("launch", "fix--words", repo, {})
    assert unknown.value.exit_status == 2
    with pytest.raises(UsageError) as bad:
        controls.perform("raise", "fix--words", repo, {"turns": "many"})
    assert "--turns is 'many', not a whole number of at least 1" in str(bad.value)
    assert woken == []


def test_the_page_lists_the_places_in_the_order_status_does(
    host: Path, monitored: Any, woken: list[str]
) -> None:
    """One view model: the page's order of places is ``flume status``'s."""
    del woken
    repo = repository(host / "repo")
    for name in ("alpha", "beta", "gamma"):
        launch_place(repo, name)
    flume("drop", "fix--beta", "--repository", str(repo))
    wait_for(lambda: len(monitored.monitor.places()) == 3, 15, "the monitor to follow them")
    assert ask(monitored, "GET", "/", headers=cookie(monitored)).status == 200
    listed = flume("status", "--repository", str(repo)).stdout
    order = [line.split()[0] for line in listed.splitlines() if line.startswith("fix--")]
    assert order[-1] == "fix--beta"  # dropped: done, after those at work
    html = _page(monitored, "/")
    assert re.findall(r">(fix--\w+)</a>", html) == order


def test_a_place_s_view_is_made_again_only_when_its_journal_grew(
    host: Path, monitored: Any, woken: list[str]
) -> None:
    """The same place read twice gives the same view, not a new one; a new line, a new one."""
    del woken
    repo = repository(host / "repo")
    launch_place(repo, "cached")
    wait_for(monitored.monitor.places, 15, "the monitor to follow it")
    (place,) = monitored.monitor.places()
    first = monitored.monitor.view(place)
    assert monitored.monitor.view(place) is first
    assert first["address"] == key_of(str(repo.resolve()), "fix--cached")
    flume("drop", "fix--cached", "--repository", str(repo))
    wait_for(
        lambda: monitored.monitor.view(monitored.monitor.places()[0]) is not first,
        15,
        "the view made again",
    )


def _page(served: Any, path: str) -> str:
    """The page at ``path``, its HTML."""
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
    connection.request("GET", path, headers=cookie(served))
    text = connection.getresponse().read().decode()
    connection.close()
    return text
