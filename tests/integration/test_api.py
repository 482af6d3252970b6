"""``flume.api``: what the CLI does, as values, on real repositories.

A supervisor in this process (echo agents, a git lander) follows the places; the host's own is
never woken: the API's wake-ups are recorded instead. Each function is checked against the CLI
command it stands for, on twin places in the same state.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from flume import api
from flume.core.errors import UsageError
from tests.integration.places_kit import Harness, flume, repository, world_of


def test_launch_and_status_give_what_the_cli_prints(
    host: Path, harness: Harness, woken: list[str]
) -> None:
    """A launch's record is ``launch --json``'s; status_dicts is ``status --json``'s places."""
    repo = repository(host / "repo")
    made = api.launch(repository=str(repo), kind="fix", name="alpha", brief="Mend it.", mark="m1")
    assert woken == ["wake"]
    assert (made.place, made.branch, made.base) == ("fix--alpha", "fix/alpha", "main")
    assert made.path == repo / "places" / "fix--alpha"
    assert made.journal.is_file()
    ran = flume("launch", "--repository", str(repo), "--kind", "fix", "--name", "beta",
                "--brief", "Mend it.", "--json")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    printed = json.loads(ran.stdout)
    assert printed.keys() == made.as_dict().keys()
    assert printed["format"] == made.as_dict()["format"] == 1
    assert made.as_dict()["journal"] == str(made.journal)
    harness.settle()
    shown = json.loads(flume("status", "--json").stdout)["places"]
    assert api.status_dicts() == shown
    assert [each["place"] for each in shown] == ["fix--alpha", "fix--beta"]
    assert [view.place for view in api.status(mark="m1")] == ["fix--alpha"]
    (beta,) = api.status(place="fix--beta", repository=repo)
    assert (beta.stage, beta.phase.value) == ("code", "working")
    assert api.survey(place="fix--none").places == ()
    with pytest.raises(UsageError) as raised:
        api.status(place="fix--none")
    cli = flume("status", "fix--none")
    assert cli.returncode == raised.value.exit_status == 2
    assert cli.stderr.strip() == f"flume: {raised.value.problems[0].render()}"


def twins(repo: Path, harness: Harness, *extra: str) -> None:
    """Two places in the same state, alpha for the API and beta for the CLI."""
    for name in ("alpha", "beta"):
        ran = flume("launch", "--repository", str(repo), "--kind", "fix", "--name", name,
                    "--brief", "Mend it.", *extra)  # fmt: skip
        assert ran.returncode == 0, ran.stderr
    harness.settle()


def same(through_api: Callable[[], str], *cli: str, status: int = 0) -> tuple[str, str]:
    """Run a command both ways: the API on alpha, the CLI on beta; what each said."""
    try:
        said = through_api()
    except UsageError as error:
        said = f"exit {error.exit_status}: flume: {error.problems[0].render()}"
    ran = flume(*cli)
    shown = ran.stdout.strip() if ran.returncode == 0 else f"exit {ran.returncode}: {ran.stderr}"
    assert ran.returncode == status, ran.stderr
    return said, shown.strip()


def test_the_callers_commands_say_what_the_cli_says(
    host: Path, harness: Harness, woken: list[str]
) -> None:
    """tell, stop, retry, proceed and drop: the API returns the sentence the CLI prints."""
    repo = repository(host / "repo")
    twins(repo, harness)
    tell = "Mind the tabs.\n\tAnd the $dollar."
    steps: list[tuple[Callable[[], str], tuple[str, ...], int]] = [
        (lambda: api.tell("fix--alpha", tell), ("tell", "fix--beta", tell), 0),
        (lambda: api.stop("fix--alpha"), ("stop", "fix--beta"), 0),
        (lambda: api.retry("fix--alpha", words="Go on."),
         ("retry", "fix--beta", "--words", "Go on."), 0),
        (lambda: api.proceed("fix--alpha"), ("proceed", "fix--beta"), 1),
        (lambda: api.drop("fix--alpha", repository=repo), ("drop", "fix--beta"), 0),
        (lambda: api.retry("fix--alpha"), ("retry", "fix--beta"), 1),
    ]  # fmt: skip
    for through_api, cli, status in steps:
        woken.clear()
        said, shown = same(through_api, *cli, status=status)
        assert said == shown.replace("beta", "alpha"), cli
        assert woken == (["wake", "wake"] if status == 0 else []), cli
        harness.settle()
    assert api.status(place="fix--alpha")[0].life.value == "tidied"


def test_bad_input_raises_usage_errors_and_makes_nothing(
    host: Path, harness: Harness, woken: list[str]
) -> None:
    """Each bad call raises UsageError with the CLI's exit status; nothing made, none woken."""
    repo = repository(host / "repo")
    twins(repo, harness)
    woken.clear()
    before = world_of(repo)
    launch = functools.partial(
        api.launch, repository=repo, kind="fix", name="gamma", brief="Mend it."
    )
    calls: list[tuple[Callable[[], object], str, int]] = [
        (lambda: launch(agent="gpt-9"), "agent", 2),
        (lambda: launch(panes="screen"), "panes", 2),
        (lambda: launch(kind=None), "kind", 2),
        (lambda: launch(brief=" "), "brief", 2),
        (lambda: launch(name="two words"), "name", 2),
        (lambda: launch(repository=host), "repository", 2),
        (lambda: api.tell("fix--alpha", "\x1b[2J"), "tell", 2),
        (lambda: api.tell("fix--nowhere", "Hello."), "place", 2),
        (lambda: api.retry("fix--alpha", words="\0"), "words", 2),
        (lambda: api.proceed("fix--alpha"), "proceed", 1),
        (lambda: api.events(after="nonsense"), "after", 2),
        (lambda: api.events(repository=host / "nowhere"), "repository", 2),
    ]
    for call, field, status in calls:
        with pytest.raises(UsageError) as raised:
            call()
        assert raised.value.problems[0].field == field, raised.value
        assert raised.value.exit_status == status, raised.value
    assert world_of(repo) == before
    assert woken == []
    assert api.UsageError is UsageError
