"""The caller's commands on real places: tell, stop, retry, proceed, needs, submit, prompt.

Each command runs through the CLI in this process; a supervisor of the test's own, driven tick
by tick with agents that record what they are sent, follows the places, so the journal line a
command writes is seen doing what the rules say. The host's supervisor is never woken: the
commands' wake-up is recorded instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from flume.core.actions import SendPrompt, SendTell
from flume.core.errors import UsageError
from flume.core.ids import Instant
from flume.core.observations import (
    Activity,
    AgentStateSeen,
    NeedsSaid,
    Observation,
    ProceedAsked,
    RetryAsked,
    StopAsked,
    SubmitAsked,
    Told,
)
from flume.core.place import AwaitingWord, Life, Place, Short, ShortCause, Working
from flume.core.settings import Settings
from flume.shell.commands.verbs import MAX_TEXT_BYTES
from flume.shell.perform import launcher
from flume.shell.perform.performer import Performer
from flume.shell.store import journal, places
from flume.shell.supervisor.loop import Supervisor
from tests.integration.places_kit import (
    Clock,
    EchoAgents,
    GitLander,
    Harness,
    commit,
    flume,
    launch_place,
    repository,
    run_git,
    world_of,
)

BRIEF = "Mend the greeting.\nIt says hullo; make it hello.\n\n  Keep the $dollar and the tabs:\t."


@attrs.define
class RecordingAgents(EchoAgents):
    """Echo agents that keep every prompt and tell they are sent, as sent."""

    sent: list[SendPrompt | SendTell] = attrs.field(factory=list)

    def send(self, place: Place, action: SendPrompt | SendTell, at: Instant) -> list[Observation]:
        """Keep the text, then take it as the echo agent does."""
        self.sent.append(action)
        return super().send(place, action, at)

    def prompts(self, stage: str, attempt: int) -> list[str]:
        """The texts of the prompts sent for a stage attempt."""
        return [
            each.text
            for each in self.sent
            if isinstance(each, SendPrompt) and (each.stage, each.attempt) == (stage, attempt)
        ]

    def tells(self) -> list[str]:
        """The texts of the tells sent."""
        return [each.text for each in self.sent if isinstance(each, SendTell)]


@pytest.fixture
def driven(host: Path, woken: list[str]) -> Iterator[Harness]:
    """A supervisor in this process whose agents record what they are sent."""
    del host, woken
    clock = Clock()
    agents = RecordingAgents(clock)
    lander = GitLander()
    performer = Performer(clock=clock, agents=agents, lander=lander)
    supervisor = Supervisor(Settings(), performer=performer, clock=clock)
    made = Harness(clock=clock, agents=agents, lander=lander, supervisor=supervisor)
    try:
        yield made
    finally:
        made.close()


def agents_of(harness: Harness) -> RecordingAgents:
    """The harness's recording agents."""
    assert isinstance(harness.agents, RecordingAgents)
    return harness.agents


def snapshot(repo: Path, path: Path) -> tuple[dict[str, object], bytes]:
    """Everything a command could change: the repository's world and the journal's bytes."""
    return world_of(repo), path.read_bytes()


def last_line(path: Path) -> Observation:
    """The journal's last observation."""
    return journal.read(path).observations[-1]


def working(
    harness: Harness, repo: Path, name: str, waits: tuple[str, ...] = ()
) -> tuple[Path, Place]:
    """A fix launched and carried to its code stage's agent working; its journal and place."""
    request = launcher.Request(repository=repo, kind="fix", name=name, brief=BRIEF, waits=waits)
    path = launcher.launch(request, Settings(), harness.clock).journal
    harness.settle()
    place = harness.place(path)
    assert isinstance(place.stage.phase, Working)
    return path, place


def agent_does(harness: Harness, path: Path, activity: Activity) -> None:
    """The live agent's hook says what it does now, and the supervisor folds it."""
    place = harness.place(path)
    assert place.agent is not None
    harness.clock.now += 1
    seen = AgentStateSeen(
        at=Instant(harness.clock.now), session=place.agent.session, activity=activity
    )
    journal.append(path, seen)
    harness.settle()


def to_submit(harness: Harness, path: Path) -> Place:
    """Commit the code stage's deliverable and let the agent go quiet: the submit stage is next."""
    place = harness.place(path)
    commit(Path(place.path), "greeting.txt", "hello\n")
    harness.settle()
    harness.pass_time(Settings().quiet_seconds + 1)
    return harness.place(path)


# --- tell ------------------------------------------------------------------------------------


def test_a_tell_is_held_while_the_agent_works_and_sent_once_it_waits(
    host: Path, driven: Harness, woken: list[str]
) -> None:
    """R6: a tell to a working agent is journaled and held; once the agent waits it is sent."""
    repo = repository(host / "repo")
    path, _ = working(driven, repo, "held")
    agent_does(driven, path, Activity.WORKING)
    ran = flume("tell", "fix--held", "Use the other file.")
    assert ran.returncode == 0, ran.stderr
    assert "tell 1 is held while the agent works; it is sent once the agent waits" in ran.stdout
    assert woken == ["wake"]
    told = last_line(path)
    assert isinstance(told, Told)
    assert told.text == "Use the other file."
    driven.settle()
    assert agents_of(driven).tells() == []
    assert len(driven.place(path).held) == 1
    agent_does(driven, path, Activity.WAITING)
    (sent,) = agents_of(driven).tells()
    assert sent == "Use the other file.\n\n[flume:fix--held:tell:1]"
    place = driven.place(path)
    assert not place.held
    assert place.sending is None
    assert place.stage.name == "code"
    assert isinstance(place.stage.phase, Working)


def test_a_tell_to_a_waiting_agent_is_sent_at_once_and_stdin_gives_it_whole(
    host: Path, driven: Harness
) -> None:
    """R6: with the agent waiting, the tell goes out at once; ``-`` reads it from stdin."""
    repo = repository(host / "repo")
    working(driven, repo, "now")
    words = "First line.\nSecond line, with ünïcode and $HOME unexpanded.\n"
    ran = flume("tell", "fix--now", "-", stdin=words)
    assert ran.returncode == 0, ran.stderr
    assert "tell 1 is sent now, as the agent waits" in ran.stdout
    driven.settle()
    (sent,) = agents_of(driven).tells()
    assert sent == f"{words}\n\n[flume:fix--now:tell:1]"


def test_a_tell_is_refused_while_the_agent_asks_a_person(host: Path, driven: Harness) -> None:
    """R6: the agent asks a person: the tell is refused, nothing journaled, nothing typed."""
    repo = repository(host / "repo")
    path, _ = working(driven, repo, "asking")
    agent_does(driven, path, Activity.ASKING)
    before = snapshot(repo, path)
    ran = flume("tell", "fix--asking", "Hello?")
    assert ran.returncode == 1
    assert "is asking a person a question, so nothing was typed" in ran.stderr
    assert snapshot(repo, path) == before
    driven.settle()
    assert agents_of(driven).tells() == []


def test_a_tell_is_refused_when_no_agent_is_live(host: Path, driven: Harness) -> None:
    """R6: before its first agent starts, a place takes no tell."""
    repo = repository(host / "repo")
    path = launch_place(repo, "early")
    before = snapshot(repo, path)
    ran = flume("tell", "fix--early", "Hello?")
    assert ran.returncode == 1
    assert "no agent is live in fix--early, so nothing was typed" in ran.stderr
    assert snapshot(repo, path) == before
    del driven


@pytest.mark.parametrize(
    ("argv", "stdin", "says"),
    [
        (["fix--bad", ""], None, "tell: the tell is empty"),
        (["fix--bad", " \n\t"], None, "tell: the tell is empty"),
        (["fix--bad", "a\0b"], None, "tell: the tell holds a NUL character"),
        (["fix--bad", "ok\x1b[201~\r!rm x"], None, "the control character \\x1b"),
        (["fix--bad", "x" * (MAX_TEXT_BYTES + 1)], None, "over the limit of 1048576 (1 MiB)"),
        (["fix--bad", "-"], "é" * (MAX_TEXT_BYTES // 2 + 1), "1048578 bytes, over the limit"),
        (["fix--bad", "-"], b"caf\xe9", "tell: the tell on stdin is not UTF-8 text"),
        (["fix--bad", "-"], "", "tell: the tell is empty"),
        (["fix--nosuch", "Hello"], None, "place: no place fix--nosuch in"),
        (["fix--bad", "Hello", "--repository", "/nonexistent"], None, "does not exist"),
    ],
)
def test_bad_tells_exit_2_and_journal_nothing(
    host: Path, driven: Harness, argv: list[str], stdin: str | bytes | None, says: str
) -> None:
    """DESIGN §8: empty, NUL, non-UTF-8, over 1 MiB, or no such place: exit 2, nothing journaled."""
    repo = repository(host / "repo")
    path, _ = working(driven, repo, "bad")
    before = snapshot(repo, path)
    if isinstance(stdin, bytes):
        ran = flume("tell", *argv, stdin_bytes=stdin)
    else:
        ran = flume("tell", *argv, stdin=stdin)
    assert ran.returncode == 2, ran.stderr
    assert says in ran.stderr
    assert snapshot(repo, path) == before


# --- stop and retry --------------------------------------------------------------------------


def test_stop_then_retry_with_words_puts_the_words_in_the_next_prompt(
    host: Path, driven: Harness, woken: list[str]
) -> None:
    """R9: stop ends the agent and the stage waits; retry starts a fresh agent with the words."""
    repo = repository(host / "repo")
    path, _ = working(driven, repo, "wrongway")
    ran = flume("stop", "fix--wrongway")
    assert ran.returncode == 0, ran.stderr
    assert "fix--wrongway: the agent of stage code is ended; the stage waits" in ran.stdout
    assert isinstance(last_line(path), StopAsked)
    driven.settle()
    place = driven.place(path)
    assert place.agent is None
    assert place.stage.phase == Short(
        cause=ShortCause.STOPPED, words="stopped by the caller; retry to go on"
    )
    assert agents_of(driven).live == {}
    assert "stopped short (stopped)" in flume("status").stdout
    words = "Go the other way:\nedit greeting.txt, not README.md."
    ran = flume("retry", "fix--wrongway", "--words", words)
    assert ran.returncode == 0, ran.stderr
    assert "stage code starts again (attempt 2) with a fresh agent and your words" in ran.stdout
    retried = last_line(path)
    assert isinstance(retried, RetryAsked)
    assert retried.words == words
    driven.settle()
    assert [(s, a) for _p, s, a in agents_of(driven).started] == [("code", 1), ("code", 2)]
    (first,) = agents_of(driven).prompts("code", 1)
    (second,) = agents_of(driven).prompts("code", 2)
    assert words not in first
    assert f"The caller's words for this attempt:\n\n{words}\n" in second
    assert second.endswith("[flume:fix--wrongway:code:2]")
    assert isinstance(driven.place(path).stage.phase, Working)
    assert woken == ["wake", "wake"]


def test_stop_and_retry_refused_where_the_rules_say(host: Path, driven: Harness) -> None:
    """A working stage takes no retry; a stopped one no second stop: exit 1, nothing journaled."""
    repo = repository(host / "repo")
    path, _ = working(driven, repo, "refused")
    before = snapshot(repo, path)
    ran = flume("retry", "fix--refused")
    assert ran.returncode == 1
    assert "has not stopped short; nothing to retry" in ran.stderr
    assert snapshot(repo, path) == before
    assert flume("stop", "fix--refused").returncode == 0
    driven.settle()
    before = snapshot(repo, path)
    again = flume("stop", "fix--refused")
    assert again.returncode == 1
    assert "no agent of fix--refused is running" in again.stderr
    bad = flume("retry", "fix--refused", "--words", "a\0b")
    assert bad.returncode == 2
    assert "words: the words holds a NUL character" in bad.stderr
    assert snapshot(repo, path) == before


# --- proceed ---------------------------------------------------------------------------------


def test_proceed_releases_a_stage_that_waits_on_the_callers_word(
    host: Path, driven: Harness, woken: list[str]
) -> None:
    """R7: a stage that waits on the caller's word starts only once proceed gives it."""
    repo = repository(host / "repo")
    path, _ = working(driven, repo, "crew", waits=("submit",))
    place = to_submit(driven, path)
    assert place.stage.name == "submit"
    assert isinstance(place.stage.phase, AwaitingWord)
    shown = flume("status").stdout
    assert "fix--crew submit: waits on your word; flume proceed fix--crew releases it" in shown
    (view,) = json.loads(flume("status", "--json").stdout)["places"]
    assert view["waits_on_caller"] is True
    driven.pass_time(60)
    assert [s for _p, s, _a in agents_of(driven).started] == ["code"]
    ran = flume("proceed", "fix--crew")
    assert ran.returncode == 0, ran.stderr
    assert "fix--crew: stage submit is released" in ran.stdout
    assert isinstance(last_line(path), ProceedAsked)
    driven.settle()
    assert [s for _p, s, _a in agents_of(driven).started] == ["code", "submit"]
    assert isinstance(driven.place(path).stage.phase, Working)
    assert "waits on your word" not in flume("status").stdout
    before = snapshot(repo, path)
    again = flume("proceed", "fix--crew")
    assert again.returncode == 1
    assert "does not wait on your word" in again.stderr
    assert snapshot(repo, path) == before
    assert woken == ["wake"]


# --- needs and submit, from inside the place -------------------------------------------------


def test_needs_from_a_folder_inside_the_place_stops_the_stage_short(
    host: Path, driven: Harness, woken: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """R8: the agent's flume needs stops the stage short with its words; no next stage starts."""
    repo = repository(host / "repo")
    path, place = working(driven, repo, "key")
    assert place.agent is not None
    inside = Path(place.path) / "src" / "deep"
    inside.mkdir(parents=True)
    monkeypatch.chdir(inside)
    monkeypatch.setenv("FLUME_SESSION", place.agent.session)
    ran = flume("needs", "the API key")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "flume: fix--key stops short: the API key\n"
    assert woken == ["wake"]
    said = last_line(path)
    assert isinstance(said, NeedsSaid)
    assert (said.words, said.session) == ("the API key", place.agent.session)
    monkeypatch.chdir(host)
    driven.pass_time(Settings().quiet_seconds + 60)
    now = driven.place(path)
    assert now.stage.name == "code"
    assert now.stage.phase == Short(cause=ShortCause.NEEDS, words="the API key")
    assert [s for _p, s, _a in agents_of(driven).started] == ["code"]
    assert "fix--key code: stopped short (needs): the API key" in flume("status").stdout
    (view,) = json.loads(flume("status", "--json").stdout)["places"]
    assert (view["short_cause"], view["needs"]) == ("needs", "the API key")


def test_needs_from_another_session_or_without_words_journals_nothing(
    host: Path, driven: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session not the place's live agent is refused (exit 1); empty words are exit 2."""
    repo = repository(host / "repo")
    path, place = working(driven, repo, "other")
    monkeypatch.chdir(place.path)
    before = snapshot(repo, path)
    monkeypatch.setenv("FLUME_SESSION", "someone-else")
    ran = flume("needs", "the API key")
    assert ran.returncode == 1
    assert "session someone-else is not the live agent of fix--other" in ran.stderr
    monkeypatch.delenv("FLUME_SESSION")
    empty = flume("needs", "  ")
    assert empty.returncode == 2
    assert "words: the words is empty" in empty.stderr
    assert snapshot(repo, path) == before


def test_needs_and_submit_outside_a_place_exit_2_naming_the_folder(
    host: Path, driven: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run outside any place flume made (its repository, no repository, a hand-made worktree)."""
    repo = repository(host / "repo")
    path, _ = working(driven, repo, "real")
    stray = host / "stray"
    stray.mkdir()
    by_hand = repo / "places" / "fix--byhand"
    run_git(repo, "worktree", "add", "-q", "-b", "byhand", str(by_hand))
    before = snapshot(repo, path)
    for folder in (repo, repo / "places", stray, by_hand):
        monkeypatch.chdir(folder)
        for argv in (["needs", "the API key"], ["submit"]):
            ran = flume(*argv)
            assert ran.returncode == 2, (folder, argv, ran.stderr)
            assert f"{folder} is not inside a place flume made" in ran.stderr
            assert "run it inside a place flume made" in ran.stderr
    assert snapshot(repo, path) == before


def test_submit_from_inside_the_place_lands_the_work(
    host: Path, driven: Harness, woken: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The submit stage's agent runs flume submit in its place: the lander lands the branch."""
    repo = repository(host / "repo")
    path, _ = working(driven, repo, "landme")
    place = to_submit(driven, path)
    assert place.stage.name == "submit"
    assert place.agent is not None
    monkeypatch.chdir(place.path)
    monkeypatch.setenv("FLUME_SESSION", place.agent.session)
    ran = flume("submit")
    assert ran.returncode == 0, ran.stderr
    assert "flume: fix--landme submitted: fix/landme is handed to the lander for main" in ran.stdout
    assert woken == ["wake"]
    submitted = last_line(path)
    assert isinstance(submitted, SubmitAsked)
    assert submitted.session == place.agent.session
    monkeypatch.chdir(host)
    driven.settle()
    driven.pass_time(Settings().quiet_seconds + 1)
    driven.pass_time(1)
    assert driven.place(path).life is Life.TIDIED
    assert (repo / "greeting.txt").read_text() == "hello\n"


def test_submit_in_a_stage_that_does_not_land_is_refused(
    host: Path, driven: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code stage's agent runs flume submit: refused with why (exit 1), nothing journaled."""
    repo = repository(host / "repo")
    path, place = working(driven, repo, "early")
    monkeypatch.chdir(place.path)
    before = snapshot(repo, path)
    ran = flume("submit")
    assert ran.returncode == 1
    assert "stage code of fix--early does not land" in ran.stderr
    assert snapshot(repo, path) == before


# --- prompt ----------------------------------------------------------------------------------


def test_prompt_shows_the_exact_prompt_and_writes_nothing(host: Path, woken: list[str]) -> None:
    """The prompt holds the brief whole, place, branch, base, deliverable, marker; no writes."""
    repo = repository(host / "repo")
    run_git(repo, "branch", "release")
    before = world_of(repo)
    ran = flume(
        "prompt", "fix", "code", "--brief", BRIEF, "--name", "typo", "--base", "release",
        "--repository", str(repo),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    text = ran.stdout
    assert BRIEF in text
    assert f"Where: {repo}/places/fix--typo (branch fix/typo, cut from release in {repo})" in text
    assert "a new commit on the place's branch" in text
    assert text.endswith("\n\n[flume:fix--typo:code:1]\n")
    assert world_of(repo) == before
    assert not places.registry_path().exists()
    assert woken == []


def test_prompt_defaults_and_the_repositorys_own_kinds_and_prompts(
    host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From inside a repository its .flume.toml applies; the defaults fill the rest."""
    config = """\
[[kinds]]
name = "review"
[[kinds.stages]]
name = "read"
prompt = "Review $brief in $path on $branch from $base; write $deliverable."
deliverable = "report:review.md"

[prompts.fix]
submit = "Land $branch on $base: $brief"
"""
    repo = repository(host / "repo", files={".flume.toml": config})
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo / "sub")
    before = world_of(repo)
    review = flume("prompt", "review", "read")
    assert review.returncode == 0, review.stderr
    assert review.stdout == (
        f"Review (the brief) in {repo}/places/review--example on review/example from main; "
        "write its report, review.md.\n\n[flume:review--example:read:1]\n"
    )
    submit = flume("prompt", "fix", "submit", "--brief", "Ship it.")
    assert submit.stdout == "Land fix/example on main: Ship it.\n\n[flume:fix--example:submit:1]\n"
    assert world_of(repo) == before


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["nope", "code"], "no kind 'nope' is built in or declared; use one of change, fix"),
        (["fix", "verify"], "kind fix has no stage 'verify'; name one of its stages: code, submit"),
        (["fix", "code", "--name", "a b"], "name: 'a b' holds a space"),
        (["fix", "code", "--brief", ""], "brief: the brief is empty"),
    ],
)
def test_prompt_refuses_what_a_launch_would(
    host: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], says: str
) -> None:
    """An unknown kind or stage, or a bad name or brief: exit 2, naming what there is."""
    monkeypatch.chdir(host)
    ran = flume("prompt", *argv)
    assert ran.returncode == 2
    assert says in ran.stderr
    assert ran.stdout == ""


def test_prompt_outside_a_repository_uses_the_built_in_kinds(
    host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no repository, the built-in prompt with a stand-in path, and a note saying so."""
    monkeypatch.chdir(host)
    ran = flume("prompt", "question", "session")
    assert ran.returncode == 0, ran.stderr
    assert "/path/to/repository/places/question--example (branch sounding/example" in ran.stdout
    assert "conclusion.md" in ran.stdout
    assert "no repository here" in ran.stderr
    assert list(host.iterdir()) == []


def test_status_shows_a_long_stop_short_cut_to_ten_lines(host: Path, driven: Harness) -> None:
    """A failed setup's long output: status shows its first ten lines and says how many are left."""
    setup = '[place]\nsetup = [["sh", "-c", "seq 1 40; exit 3"]]\n'
    repo = repository(host / "repo", files={".flume.toml": setup})
    path = launch_place(repo, "setup")
    driven.settle()
    phase = driven.place(path).stage.phase
    assert isinstance(phase, Short)
    assert phase.cause is ShortCause.SETUP_FAILED
    total = len(phase.words.strip().splitlines())
    lines = flume("status").stdout.splitlines()
    start = lines.index(
        "fix--setup code: stopped short (setup-failed): the repository's setup failed:"
    )
    shown = lines[start + 1 : start + 11]
    assert len(shown) == 10
    assert all(line.startswith("    ") for line in shown[:9])
    assert shown[9] == (
        f"    ... {total - 10} more lines (flume status fix--setup --json shows them all)"
    )
    (view,) = json.loads(flume("status", "--json").stdout)["places"]
    assert view["needs"] == phase.words


def test_a_name_in_several_repositories_is_the_one_of_the_repository_asked_from(
    host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A place's name in two repositories: the one the caller stands in, else --repository asked.

    From inside one of them (or a worktree of it, as a place's own), that one's place; from
    elsewhere, refused naming both and ``--repository``.
    """
    first, second = repository(host / "first"), repository(host / "second")
    launch_place(first, "twin")
    launch_place(second, "twin")
    monkeypatch.chdir(host)
    with pytest.raises(UsageError, match="fix--twin names places in several repositories"):
        places.find("fix--twin", None, Settings())
    ran = flume("resolve", "fix--twin", "--by-hand")
    assert ran.returncode == 2
    assert "say which with --repository" in ran.stderr
    linked = host / "linked"
    run_git(second, "worktree", "add", "-q", "-b", "aside", str(linked))
    for inside, wanted in ((first, first), (linked / "sub", second)):
        inside.mkdir(exist_ok=True)
        monkeypatch.chdir(inside)
        found = places.find("fix--twin", None, Settings())
        assert found.place is not None
        assert Path(found.place.launch.repository).resolve() == wanted.resolve()
        ran = flume("resolve", "fix--twin", "--by-hand")
        assert "--repository" not in ran.stderr
        assert "fix--twin is having its place made; nothing there waits on a resolve" in ran.stderr
