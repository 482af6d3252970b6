"""``flume events`` and ``flume.api.events``: the places' reports, read back from their journals.

The whole life of a fix is followed by a real ``flume events --follow`` process while the test
agent carries the fix to its landing in tmux. The rest drive places with a supervisor in this
process (echo agents, a git lander) and read their events through the API and the CLI.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flume import api
from flume.core.actions import Event
from flume.core.ids import Instant
from flume.core.observations import DropAsked
from flume.core.settings import Settings
from flume.shell.panes.tmux import Tmux
from flume.shell.perform import launcher
from flume.shell.store import events, journal, places
from flume.testing import scenario
from tests.integration.agents_kit import wait_for
from tests.integration.places_kit import Harness, flume, flume_process, launch_place, repository
from tests.integration.test_supervisor import carry_to_landing

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

#: A fix's whole life, as its events say it: (event, stage).
FIX_LIFE = [
    ("launched", None),
    ("place-made", None),
    ("stage-started", "code"),
    ("prompt-delivered", "code"),
    ("deliverable", "code"),
    ("stage-ended", "code"),
    ("stage-started", "submit"),
    ("prompt-delivered", "submit"),
    ("submitted", "submit"),
    ("landed", "submit"),
    ("deliverable", "submit"),
    ("stage-ended", "submit"),
    ("finished", "submit"),
    ("tidied", None),
]
#: What else a loaded machine may add to a good run: a prompt found missing and sent again.
TOLERATED = {"prompt-missing", "prompt-retyped"}
#: Events besides the life's order: an agent's turn ends with its tokens, and a stage's agent
#: may be ended before its turn's end is read (test_turns.py holds them to the tokens).
TURNS = {"turn-ended"}
#: Once a stage attempt, when flume finds its agent's transcript: before or after its prompt's
#: delivery, as the agent writes its file (held to once an attempt below).
TRANSCRIPTS = {"transcript"}


def tolerated(event: dict[str, object]) -> bool:
    """An event a good run may hold besides its life's: a prompt found missing and sent again.

    Never a failed EndAgent: ending the last agent of a tmux server is an ended agent, whatever
    tmux answers as the server exits.
    """
    return event["event"] in TOLERATED | TURNS | TRANSCRIPTS


def test_events_follow_shows_a_fixs_whole_life_in_order(tmp_path: Path, panes: Tmux) -> None:
    """A real ``flume events --follow --json``, started first, shows the fix from launch to tidy."""
    del panes
    sample = scenario.fix_that_lands(tmp_path)
    output = tmp_path / "events.jsonl"
    argv = [sys.executable, "-m", "flume", "events", "--follow", "--json",
            "--repository", str(sample.repository)]  # fmt: skip
    with output.open("wb") as sink:
        # Ctrl-C as a person's terminal sends it: a test run in the background of a shell
        # inherits SIGINT ignored, and Python then never turns it into KeyboardInterrupt.
        following = subprocess.Popen(  # noqa: S603 (our own interpreter and module)
            argv,
            stdout=sink,
            stderr=subprocess.PIPE,
            env=os.environ.copy(),
            preexec_fn=_interruptible,  # noqa: PLW1509 (it only resets one signal)
        )
    try:
        launched = flume_process(*sample.argv())
        assert launched.returncode == 0, launched.stderr
        wait_for(lambda: '"event": "tidied"' in output.read_text(), 90, "the tidied event")
    finally:
        following.send_signal(signal.SIGINT)
        _, errors = following.communicate(timeout=20)
    assert following.returncode == 0, errors
    followed = [json.loads(line) for line in output.read_text().splitlines()]
    life = [(each["event"], each["stage"]) for each in followed if not tolerated(each)]
    # The submit stage's agent may run flume submit before flume reads its prompt in the
    # transcript: the prompt's delivery comes after the stage starts, before the landing.
    delivered = ("prompt-delivered", "submit")
    assert life.count(delivered) == 1, life
    assert life.index(("stage-started", "submit")) < life.index(delivered), life
    assert life.index(delivered) < life.index(("landed", "submit")), life
    assert [each for each in life if each != delivered] == [
        each for each in FIX_LIFE if each != delivered
    ], followed
    assert [each["stage"] for each in followed if each["event"] == "transcript"] == [
        "code",
        "submit",
    ]
    assert {each["place"] for each in followed} == {"fix--greet"}
    turns = [each for each in followed if each["event"] in TURNS]
    assert any(each["stage"] == "code" for each in turns), followed
    assert all(re.fullmatch(r"turn ended: [0-9]+ tokens \(.*\)", each["text"]) for each in turns)
    assert {each["format"] for each in followed} == {1}
    cursors = [events.Cursor.parse(each["cursor"]) for each in followed]
    assert cursors == sorted(cursors)
    assert len(set(cursors)) == len(cursors)
    # Read whole afterwards, the journal gives what the follower read from its offsets.
    whole = flume("events", "--json", "--repository", str(sample.repository))
    assert whole.returncode == 0, whole.stderr
    assert [json.loads(line) for line in whole.stdout.splitlines()][: len(followed)] == followed
    # For a person: one line an event.
    text = flume("events", "fix--greet", "--repository", str(sample.repository))
    lines = text.stdout.splitlines()
    assert len(lines) == len(followed)
    assert lines[0].endswith("fix--greet - launched: fix--greet launched on fix/greet")
    assert "fix--greet code#1 stage-started: stage code starts (attempt 1)" in text.stdout
    assert "fix--greet submit#1 landed: fix/greet landed on main at " in text.stdout


def _interruptible() -> None:
    """In the child, before exec: SIGINT back to its default, so Python makes it Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def launched(repo: Path, name: str, mark: str | None = None) -> Path:
    """Launch a fix without waking a supervisor (the test drives its own); its journal."""
    request = launcher.Request(repository=repo, kind="fix", name=name, brief="Mend it.", mark=mark)
    return launcher.launch(request, Settings(), time.time).journal


def test_a_landed_fix_has_its_lifes_events_and_cursors_resume_after_each(
    host: Path, harness: Harness
) -> None:
    """The API's events of a fix carried to its tidy; ``after`` any cursor gives the rest."""
    repo = repository(host / "repo")
    path = launched(repo, "alpha")
    carry_to_landing(harness, path)
    every = list(api.events(repository=repo))
    assert [(each.event.value, each.stage) for each in every] == FIX_LIFE
    assert {each.journal for each in every} == {str(path)}
    assert [each.attempt for each in every if each.stage == "code"] == [1] * 4
    for number, event in enumerate(every):
        rest = list(api.events(repository=repo, after=str(event.cursor)))
        assert rest == every[number + 1 :]
    assert every[0].as_dict() == {
        "format": 1,
        "cursor": str(every[0].cursor),
        "at": every[0].at,
        "place": "fix--alpha",
        "repository": str(repo),
        "kind": "fix",
        "name": "alpha",
        "mark": None,
        "stage": None,
        "attempt": None,
        "event": "launched",
        "text": "fix--alpha launched on fix/alpha",
        "journal": str(path),
    }


def test_events_of_several_places_come_in_time_order_and_filter_by_place_and_mark(
    host: Path, harness: Harness
) -> None:
    """Across places by time, each place in journal order; PLACE and --mark keep theirs."""
    repo = repository(host / "repo")
    first = launched(repo, "alpha")
    harness.settle()
    harness.pass_time(1)
    second = launched(repo, "beta", mark="release-7")
    harness.settle()
    every = list(api.events(repository=repo))
    assert [each.at for each in every] == sorted(each.at for each in every)
    assert every[0].place == "fix--alpha"
    assert {each.journal for each in every} == {str(first), str(second)}
    for place in ("fix--alpha", "fix--beta"):
        own = [each for each in every if each.place == place]
        assert [each.event.value for each in own][:4] == [
            "launched",
            "place-made",
            "stage-started",
            "prompt-delivered",
        ]
        assert [each.cursor.line for each in own] == sorted(each.cursor.line for each in own)
        assert list(api.events(repository=repo, place=place)) == own
    marked = list(api.events(repository=repo, mark="release-7"))
    assert marked == [each for each in every if each.place == "fix--beta"]
    shown = flume("events", "--mark", "release-7", "--json")
    assert [json.loads(line)["place"] for line in shown.stdout.splitlines()] == ["fix--beta"] * len(
        marked
    )


def test_following_reads_only_what_was_appended_and_finds_places_launched_later(
    host: Path, harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each look reads a journal from its stored offset; a place launched meanwhile is followed."""
    repo = repository(host / "repo")
    path = launched(repo, "alpha")
    harness.settle()
    reads: list[tuple[Path, int]] = []
    real_read_from = journal.read_from

    def read_from(where: Path, offset: int) -> journal.JournalTail:
        reads.append((where, offset))
        return real_read_from(where, offset)

    monkeypatch.setattr(journal, "read_from", read_from)
    seen: list[api.PlaceEvent] = []
    size_before: list[int] = []

    def until() -> bool:
        """Between the first two looks a caller drops alpha and gamma is launched."""
        if not size_before:
            size_before.append(path.stat().st_size)
            places.command(path, DropAsked(at=Instant(time.time())), Settings())
            launch_place(repo, "gamma")
        return any(each.event is Event.LAUNCHED and each.place == "fix--gamma" for each in seen)

    for event in api.events(repository=repo, follow=True, poll=0.01, until=until):
        seen.append(event)  # noqa: PERF402 (until() reads it between looks)
    gamma = places.journals_dir(repo) / "fix--gamma" / places.JOURNAL
    # alpha read whole once, then from where that read ended; gamma from its start.
    assert [offset for where, offset in reads if where == path] == [0, size_before[0]]
    assert [offset for where, offset in reads if where == gamma] == [0]
    assert [each.event for each in seen if each.place == "fix--alpha"][-1] is Event.DROPPED
    assert [each.event for each in seen if each.place == "fix--gamma"] == [Event.LAUNCHED]
    assert len({each.cursor for each in seen}) == len(seen)


def test_a_name_launched_again_is_read_anew_and_nothing_repeats(
    host: Path, harness: Harness
) -> None:
    """A tidied name launched again is another journal: its events follow, none of the old."""
    repo = repository(host / "repo")
    path = launched(repo, "alpha")
    carry_to_landing(harness, path)
    follower = events.EventStream(Settings(), repository=repo)
    old = follower.poll()
    assert old[-1].event is Event.TIDIED
    assert follower.poll() == []
    again = launched(repo, "alpha")
    assert again == path
    new = follower.poll()
    assert [each.event for each in new] == [Event.LAUNCHED]
    assert new[0].cursor.journal != old[0].cursor.journal
    assert new[0].cursor.line == 1


def test_a_journal_that_cannot_be_read_is_named_and_the_others_still_come(
    host: Path, harness: Harness
) -> None:
    """A damaged journal is left out with a warning; the events of the others are shown."""
    repo = repository(host / "repo")
    launched(repo, "alpha")
    harness.settle()
    broken = places.journals_dir(repo) / "fix--broken" / places.JOURNAL
    broken.parent.mkdir()
    broken.write_text('{"not": "a journal line"}\n{}\n', encoding="utf-8")
    problems: list[tuple[Path, str]] = []
    every = list(api.events(repository=repo, on_problem=lambda *said: problems.append(said)))
    assert {each.place for each in every} == {"fix--alpha"}
    assert [where for where, _problem in problems] == [broken]
    shown = flume("events", "--repository", str(repo))
    assert shown.returncode == 0
    assert f"flume: warning: {broken} cannot be read" in shown.stderr
    assert "fix--alpha code#1 stage-started" in shown.stdout


def test_a_journal_mended_after_it_was_given_up_goes_on_and_tells_nothing_twice(
    host: Path, harness: Harness
) -> None:
    """A journal given up and then mended in place is followed again, telling nothing twice."""
    repo = repository(host / "repo")
    path = launched(repo, "alpha")
    harness.settle()
    problems: list[tuple[Path, str]] = []
    stream = events.EventStream(
        Settings(), repository=repo, on_problem=lambda *said: problems.append(said)
    )
    told = stream.poll()
    assert told
    whole = path.stat().st_size
    with path.open("ab") as file:
        file.write(b'{"type": "Nothing"}\n')
    assert stream.poll() == []
    assert [where for where, _problem in problems] == [path]
    # Mended in place: the damaged line cut away; then the caller drops the place.
    os.truncate(path, whole)
    places.command(path, DropAsked(at=Instant(time.time())), Settings())
    more = stream.poll()
    assert Event.DROPPED in {each.event for each in more}
    assert min(each.cursor for each in more) > max(each.cursor for each in told)
    # What the two polls told is what a new reading tells, each event once.
    assert told + more == list(api.events(repository=repo))
    assert len(problems) == 1


def test_bad_arguments_are_named_and_exit_2(host: Path) -> None:
    """A cursor flume never gave, a folder that is no repository, a place found nowhere."""
    repo = repository(host / "repo")
    bad = ("yesterday", "1:2:3", "2:1:abc:1:0", "1:x:abc:1:0", "1:5:ab/c:1:0", "1:²:abc:1:0")
    for cursor in bad:
        ran = flume("events", "--after", cursor, "--repository", str(repo))
        assert ran.returncode == 2, cursor
        assert "flume: after: " in ran.stderr
        assert "is not a cursor flume events gave" in ran.stderr
    ran = flume("events", "--repository", str(host / "nowhere"))
    assert ran.returncode == 2
    assert "repository" in ran.stderr
    ran = flume("events", "fix--nothing", "--repository", str(repo))
    assert ran.returncode == 2
    assert "no place fix--nothing" in ran.stderr
    with pytest.raises(api.UsageError) as raised:
        api.events(poll=0)
    assert raised.value.exit_status == 2


def test_until_ends_on_the_event_named_even_one_already_journaled(
    host: Path, harness: Harness
) -> None:
    """``--until`` follows to the named event and exits 0; one in the journal already ends it."""
    repo = repository(host / "repo")
    path = launched(repo, "alpha")
    carry_to_landing(harness, path)
    ran = flume("events", "fix--alpha", "--repository", str(repo), "--until", "landed")
    assert ran.returncode == 0, ran.stderr
    shown = [line.split()[4].rstrip(":") for line in ran.stdout.splitlines()]
    assert shown[-1] == "landed"
    assert "tidied" not in shown
    either = flume("events", "fix--alpha", "--repository", str(repo), "--until", "paused",
                   "--until", "place-made", "--json")  # fmt: skip
    assert [json.loads(line)["event"] for line in either.stdout.splitlines()] == [
        "launched",
        "place-made",
    ]


def test_until_a_name_that_is_no_event_is_bad_input(host: Path) -> None:
    """A misspelt event: exit 2, the nearest event named, nothing followed."""
    repo = repository(host / "repo")
    ran = flume("events", "--repository", str(repo), "--until", "landd")
    assert ran.returncode == 2
    assert ran.stderr.startswith(
        "flume: --until: 'landd' is not an event flume reports (did you mean 'landed'?); name one "
        "of launched, place-made,"
    )
    assert ran.stdout == ""
