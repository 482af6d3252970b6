"""Agents in real tmux panes, driven by the real supervisor: flume's test agent end to end.

Each test launches through the real CLI, which starts the real daemon; the daemon starts the
test agent (``python -m flume.testing.agent``) in a pane of the test's own tmux server, pastes
prompts into it, and reads its transcript. What the tests check is what the journal holds and
what the agent's own transcript says, never what was typed.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from flume.core.actions import ActionName, EndAgent, Event, Report, SendPrompt
from flume.core.ids import BranchName, Instant, KindName, SessionId, WorkName
from flume.core.kinds import BUILTIN_KINDS
from flume.core.launch import Launch
from flume.core.observations import (
    ActionFailed,
    Activity,
    AgentExited,
    AgentReady,
    Launched,
    StopAsked,
)
from flume.core.place import Place, Short, ShortCause, Working
from flume.core.settings import Settings
from flume.core.step import step
from flume.shell import process
from flume.shell.agents import claude, scripted
from flume.shell.agents.runner import Agents
from flume.shell.panes.tmux import Tmux
from flume.shell.process import Ran
from flume.shell.store import journal, places
from flume.shell.supervisor import client
from tests.integration.agents_kit import (
    TIMING,
    agent_doing,
    agent_repository,
    decided,
    journaled_text,
    launch_test_agent,
    observations,
    place_of,
    prompt_sends,
    script,
    sessions_started,
    stopped_short,
    taken_and_waiting,
    tell_sends,
    transcript_lines,
    typed_lines,
    wait_for,
)
from tests.integration.places_kit import flume_process

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

COMMITS = """
[[turn]]
steps = [
  {say = "Mending the greeting."},
  {write = {path = "README.md", text = "hello\\n"}},
  {commit = "Say hello, not hullo"},
  {say = "Done."},
]
"""


def _marker(name: str, stage: str = "code", attempt: int = 1) -> str:
    return f"flume:fix--{name}:{stage}:{attempt}"


def _past_code(journal_path: Path) -> bool:
    place = place_of(journal_path)
    return "code" in place.completed


def test_a_prompt_is_delivered_and_the_commit_ends_the_stage(tmp_path: Path, panes: Tmux) -> None:
    """R5, R7: the prompt is in the transcript once, sent once; the agent's commit ends code."""
    del panes
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "greet", script(tmp_path, COMMITS))
    wait_for(lambda: _past_code(journal_path), 60, "the code stage to end on its commit")
    place = place_of(journal_path)
    (session,) = sessions_started(journal_path)
    assert prompt_sends(journal_path) == 1
    assert len(typed_lines(place, session, _marker("greet"))) == 1
    assert (Path(place.path) / "README.md").read_text() == "hello\n"
    # The test agent's files are in flume's state folder, none in Claude Code's home.
    (transcript,) = scripted.home().glob(f"projects/*/{session}.jsonl")
    assert transcript.is_relative_to(places.state_dir())
    assert list(claude.home().glob(f"**/{session}*")) == []
    # The next stage runs a fresh agent: another session, and the first one ended.
    wait_for(lambda: sessions_started(journal_path, "submit"), 30, "the submit stage's agent")
    assert sessions_started(journal_path, "submit") != {session}
    assert any(
        isinstance(s, AgentExited) and s.session == session for s in observations(journal_path)
    )


def test_a_lost_first_input_is_sent_once_more_and_found(tmp_path: Path, panes: Tmux) -> None:
    """R5: the first send is lost (the transcript lacks it); the second is found, once."""
    del panes
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "lost", script(tmp_path, "lose = 1\n" + COMMITS))
    wait_for(lambda: _past_code(journal_path), 60, "the code stage to end")
    place = place_of(journal_path)
    (session,) = sessions_started(journal_path)
    assert prompt_sends(journal_path) == 2
    assert len(typed_lines(place, session, _marker("lost"))) == 1


def test_lost_twice_never_began_and_no_third_send(tmp_path: Path, panes: Tmux) -> None:
    """R5: both sends missing: "never began", the agent ended, and never a third send."""
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "deaf", script(tmp_path, 'lose = "all"\n'))

    wait_for(
        stopped_short(journal_path, ShortCause.NEVER_BEGAN),
        60,
        "the stage to be reported never begun",
    )
    (session,) = sessions_started(journal_path)
    wait_for(lambda: place_of(journal_path).agent is None, 30, "the agent to be ended")
    assert not any(pane.session == session for pane in (panes.panes() or {}).values())
    # Past another confirmation window, still exactly two sends and nothing recorded.
    settle = place_of(journal_path).now + 5
    wait_for(lambda: _daemon_ticked_past(settle), 30, "the supervisor to go on ticking")
    assert prompt_sends(journal_path) == 2
    assert typed_lines(place_of(journal_path), session, _marker("deaf")) == []


def _ended_fix(tmp_path: Path, name: str) -> tuple[Path, Place]:
    """A fix launched in ``tmp_path`` (its place's folder made): the place whose agents end."""
    folder = tmp_path / "place"
    folder.mkdir()
    launch = Launch(
        repository=str(tmp_path),
        kind=KindName("fix"),
        name=WorkName(name),
        brief="End.",
        base=BranchName("main"),
    )
    kind = BUILTIN_KINDS[KindName("fix")]
    place = step(Settings(), None, Launched(at=Instant(0), launch=launch, kind=kind)).place
    assert place is not None
    return folder, place


def test_ending_the_last_agent_of_a_server_ends_it_every_time(tmp_path: Path, panes: Tmux) -> None:
    """R4: 200 ends of a one-pane server's only agent: each an AgentExited, never a failure.

    The server exits with its last pane, and tmux then answers a listing with "no current
    target" now and then, or a start with "server exited unexpectedly": a server gone is an
    ended agent, and the next start makes a new one. A count, not a timing.
    """
    folder, place = _ended_fix(tmp_path, "ends")
    agents = Agents(tmux=panes)
    failed_starts: list[str] = []
    failed_ends: list[str] = []
    for attempt in range(200):
        session = SessionId(f"end-{attempt:04d}-{'0' * 8}")
        started = panes.start(
            group="ends",
            window="ends",
            cwd=folder,
            argv=["sleep", "600"],
            env={"FLUME_SESSION": session},
        )
        if not started.ok:
            failed_starts.append(started.err.strip())
            continue
        ended = agents.end(place, EndAgent(session=session, reason="ended"), Instant(attempt))
        if ended != [AgentExited(at=Instant(attempt), session=session)]:
            failed_ends.append(repr(ended))
    assert failed_ends == []
    assert failed_starts == []
    assert panes.panes() == {}


class _LateTmux(Tmux):
    """flume's tmux, whose panes close a while after they are asked to (as herdr's may)."""

    def __init__(self, socket: Path, late: float | None) -> None:
        super().__init__(socket=socket)
        #: Seconds until a closed pane is gone; None: it never is (a pane held open).
        self.late = late
        self.timers: list[threading.Timer] = []

    def kill_pane(self, pane: str) -> Ran:
        """Close the pane ``late`` seconds from now, in a thread; or never: tmux says ok."""
        if self.late is not None:
            timer = threading.Timer(self.late, super().kill_pane, args=(pane,))
            timer.start()
            self.timers.append(timer)
        return self.run("display-message", "-p", "")


@pytest.mark.parametrize(("late", "ended"), [(0.3, True), (None, False)])
def test_an_end_looks_again_for_a_pane_that_closes_late_and_says_one_that_stays(
    tmp_path: Path, panes: Tmux, late: float | None, *, ended: bool
) -> None:
    """AGENT-END-FAILED-NAMED's shell side: a pane gone soon after is ended; one held, not.

    A pane that closes a moment after its close was asked is an ended agent, never a failure
    (the core would stop the next stage short on it); one that stays open is said so.
    """
    folder, place = _ended_fix(tmp_path, "late")
    server = _LateTmux(socket=panes.socket, late=late)
    session = SessionId("late-0001-00000000")
    started = server.start(
        group="late",
        window="late",
        cwd=folder,
        argv=["sleep", "600"],
        env={"FLUME_SESSION": session},
    )
    assert started.ok, started.err
    said = Agents(tmux=server).end(place, EndAgent(session=session, reason="ended"), Instant(1))
    for timer in server.timers:
        timer.join()
    if ended:
        assert said == [AgentExited(at=Instant(1), session=session)]
    else:
        assert said == [
            ActionFailed(
                at=Instant(1), action=ActionName.END_AGENT, output="the agent's pane is still open"
            )
        ]
        assert any(pane.session == session for pane in (panes.panes() or {}).values())


def _daemon_ticked_past(instant: float) -> bool:
    status = client.status()
    return status is not None and status.ticks > 0 and _now() > instant


def _ticks() -> int:
    """How many ticks the host's supervisor has run; 0 while none answers."""
    status = client.status()
    return status.ticks if status is not None else 0


def _now() -> float:
    return time.time()


BUSY = """
[[turn]]
steps = [{say = "Reading the code."}, {work = 60}]
"""


def test_stop_then_retry_starts_a_fresh_agent_with_the_callers_words(
    tmp_path: Path, panes: Tmux
) -> None:
    """R9: stop ends the agent, its stage waits; retry runs a new session with the words."""
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "wrongway", script(tmp_path, BUSY))
    wait_for(
        lambda: isinstance(place_of(journal_path).stage.phase, Working), 60, "the prompt delivered"
    )
    (first,) = sessions_started(journal_path)
    stopped = flume_process("stop", "fix--wrongway", "--repository", str(repo))
    assert stopped.returncode == 0, stopped.stderr

    def short_and_gone() -> bool:
        place = place_of(journal_path)
        return isinstance(place.stage.phase, Short) and place.agent is None

    wait_for(short_and_gone, 30, "the stage to stop short and its agent to end")
    assert any(isinstance(s, StopAsked) for s in observations(journal_path))
    assert not any(pane.session == first for pane in (panes.panes() or {}).values())
    words = "Look in README.md, not in the tests."
    retried = flume_process("retry", "fix--wrongway", "--repository", str(repo), "--words", words)
    assert retried.returncode == 0, retried.stderr
    wait_for(lambda: sessions_started(journal_path, "code", 2), 30, "the retry's agent")
    (second,) = sessions_started(journal_path, "code", 2)
    assert second != first
    wait_for(
        lambda: typed_lines(place_of(journal_path), second, _marker("wrongway", attempt=2)),
        30,
        "the retried prompt in the new session's transcript",
    )
    (line,) = typed_lines(place_of(journal_path), second, _marker("wrongway", attempt=2))
    message = line["message"]
    assert isinstance(message, dict)
    assert words in message["content"]


IDLE = """
[[turn]]
steps = [{say = "Ready when you are."}]
"""


def test_text_typed_into_a_pane_and_not_submitted_is_not_state(tmp_path: Path, panes: Tmux) -> None:
    """R6: keys left typed in a pane never reach the journal, the transcript or status."""
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "stray", script(tmp_path, IDLE))

    wait_for(taken_and_waiting(journal_path), 60, "the agent to take the prompt and wait")
    place = place_of(journal_path)
    assert place.agent is not None
    stray = "stray words typed but never submitted"
    assert panes.run("send-keys", "-t", place.agent.pane, "-l", stray).ok
    wait_for(lambda: stray in (panes.capture(place.agent.pane) or ""), 10, "the keys on screen")  # type: ignore[union-attr]
    # Three more ticks of the supervisor: the watch has read the transcript since.
    ticks = _ticks()
    wait_for(lambda: _ticks() >= ticks + 3, 20, "ticks")
    assert stray not in journaled_text(journal_path)
    assert typed_lines(place_of(journal_path), place.agent.session, stray) == []
    shown = flume_process("status", "--json")
    assert stray not in shown.stdout
    assert isinstance(place_of(journal_path).stage.phase, Working)


WORKS_A_WHILE = """
[[turn]]
steps = [{say = "On it."}, {work = 4}, {say = "Thought it through."}]
"""


def test_a_tell_is_held_while_the_agent_works_and_delivered_when_it_waits(
    tmp_path: Path, panes: Tmux
) -> None:
    """R6: a tell given while the agent works is held, then sent once, after its turn ended."""
    del panes
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "held", script(tmp_path, WORKS_A_WHILE))

    wait_for(agent_doing(journal_path, Activity.WORKING), 60, "the agent to work on its prompt")
    told = flume_process("tell", "fix--held", "--repository", str(repo), "Mind the README too.")
    assert told.returncode == 0, told.stderr
    assert tell_sends(journal_path) == 0
    place = place_of(journal_path)
    assert place.held
    assert place.agent is not None
    session = place.agent.session
    wait_for(lambda: typed_lines(place_of(journal_path), session, "Mind the README"), 40, "tell")
    assert tell_sends(journal_path) == 1
    lines = [line.get("type") for line in _lines(journal_path, session)]
    told_at = next(
        i
        for i, line in enumerate(_lines(journal_path, session))
        if line.get("type") == "user" and "Mind the README" in str(line.get("message"))
    )
    # The turn that was running when the tell came ended before the tell was taken.
    assert "system" in lines[:told_at]


def _lines(journal_path: Path, session: str) -> list[dict[str, object]]:
    return transcript_lines(place_of(journal_path), session)


ASKS = """
[[turn]]
steps = [{ask = "Which greeting do you want?"}]
"""


def test_a_tell_is_refused_while_the_agent_asks_a_person(tmp_path: Path, panes: Tmux) -> None:
    """R6: while the agent asks a person, a tell is refused and nothing is typed."""
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "asks", script(tmp_path, ASKS))

    wait_for(agent_doing(journal_path, Activity.ASKING), 60, "the agent to ask a person")
    place = place_of(journal_path)
    assert place.agent is not None
    before = panes.capture(place.agent.pane) or ""
    told = flume_process("tell", "fix--asks", "--repository", str(repo), "Use hello.")
    assert told.returncode == 1  # refused: well formed, not allowed now
    assert "asking a person" in told.stderr
    assert "Use hello." not in (panes.capture(place.agent.pane) or "")
    assert (panes.capture(place.agent.pane) or "") == before
    assert tell_sends(journal_path) == 0


NEEDS = """
[[turn]]
steps = [{say = "I cannot reach staging."}, {run = ["flume", "needs", "the API key for staging"]}]
"""


def test_flume_needs_run_by_the_agent_stops_the_place_short(tmp_path: Path, panes: Tmux) -> None:
    """R8: the agent runs flume needs in its place: the stage stops short with its words."""
    del panes
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "needy", script(tmp_path, NEEDS))

    wait_for(
        stopped_short(journal_path, ShortCause.NEEDS),
        60,
        "the stage to stop short on the agent's needs",
    )
    phase = place_of(journal_path).stage.phase
    assert isinstance(phase, Short)
    assert phase.words == "the API key for staging"
    shown = flume_process("status", "--repository", str(repo))
    assert "the API key for staging" in shown.stdout
    # The prompt arrived, whether its line was read before or after the needs: reported once.
    wait_for(lambda: _delivered(journal_path), 30, "the prompt to be reported delivered")
    assert len(_delivered(journal_path)) == 1


def _delivered(journal_path: Path) -> list[Report]:
    reports = decided(journal_path, Report)
    return [r for r in reports if isinstance(r, Report) and r.event is Event.PROMPT_DELIVERED]


def _kill_daemon() -> None:
    lock = places.state_dir() / "supervisor.lock"
    text = lock.read_text().strip()
    pid = int(text)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not process.alive(pid), 10, "the supervisor to die")


def _check_one_agent_and_at_most_two_sends(journal_path: Path, panes: Tmux, name: str) -> None:
    wait_for(lambda: _past_code(journal_path), 90, "the code stage to end after the restart")
    sessions = sessions_started(journal_path)
    assert len(sessions) == 1, sessions
    (session,) = sessions
    assert prompt_sends(journal_path) <= 2
    assert len(typed_lines(place_of(journal_path), session, _marker(name))) == 1
    listed = panes.panes() or {}
    assert sum(1 for pane in listed.values() if pane.session == session) <= 1


def test_a_supervisor_killed_just_after_the_agent_started_starts_no_second(
    tmp_path: Path, panes: Tmux
) -> None:
    """L1: SIGKILL right after the agent started: one agent for the stage, at most two sends."""
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "killed1", script(tmp_path, COMMITS))
    wait_for(lambda: sessions_started(journal_path), 60, "the agent to start")
    _kill_daemon()
    assert client.ensure(wait=30) is not None
    _check_one_agent_and_at_most_two_sends(journal_path, panes, "killed1")


def test_a_supervisor_killed_between_deciding_send_1_and_typing_it_types_it_once_more(
    tmp_path: Path, panes: Tmux
) -> None:
    """L1: SIGKILL after send 1 was decided and before it was typed, the agent losing its first.

    The kill is put exactly in that window: the supervisor is killed while the agent starts up,
    and the line that decides send 1 (the agent taking input) is journaled as the dead
    supervisor would have, with no paste after it. The restarted supervisor finds the pane never
    marked typed, types send 1 once more (the agent loses it), then sends send 2, which is
    found: the stage goes on, the agent received the prompt exactly twice, and it is recorded once.
    """
    repo = agent_repository(tmp_path)
    inputs = tmp_path / "inputs.jsonl"
    text = f'inputs = "{inputs}"\nlose = 1\nready_after = 4\n' + COMMITS
    journal_path = launch_test_agent(repo, "killed2", script(tmp_path, text))
    wait_for(lambda: sessions_started(journal_path), 60, "the agent to start")
    _kill_daemon()
    assert prompt_sends(journal_path) == 0
    (session,) = sessions_started(journal_path)
    journal.append(journal_path, AgentReady(at=Instant(time.time()), session=SessionId(session)))
    assert prompt_sends(journal_path) == 1  # decided, and never typed
    assert client.ensure(wait=30) is not None
    _check_one_agent_and_at_most_two_sends(journal_path, panes, "killed2")
    received = [json.loads(line) for line in inputs.read_text().splitlines()]
    assert sum(1 for each in received if _marker("killed2") in each) == 2
    retyped = [r for r in decided(journal_path, Report) if r.event is Event.PROMPT_RETYPED]
    assert len(retyped) == 1
    assert [s.send for s in decided(journal_path, SendPrompt)] == [1, 1, 2]


def test_a_supervisor_killed_after_the_first_send_was_typed_sends_once_more(
    tmp_path: Path, panes: Tmux
) -> None:
    """L1: SIGKILL once send 1 reached the pane (and was lost): send 2 is found; no third."""
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "killed3", script(tmp_path, "lose = 1\n" + COMMITS))
    wait_for(lambda: sessions_started(journal_path), 60, "the agent to start")
    place = place_of(journal_path)
    assert place.agent is not None
    pane = place.agent.pane
    # Send 1 is typed (on the screen), then submitted (gone from the composer: lost).
    wait_for(lambda: _marker("killed3") in (panes.capture(pane) or ""), 60, "send 1 in the pane")
    wait_for(lambda: _marker("killed3") not in (panes.capture(pane) or ""), 10, "send 1 submitted")
    _kill_daemon()
    assert client.ensure(wait=30) is not None
    _check_one_agent_and_at_most_two_sends(journal_path, panes, "killed3")
    assert prompt_sends(journal_path) == 2


def test_an_agent_that_exits_stops_its_stage_short(tmp_path: Path, panes: Tmux) -> None:
    """R7: an agent gone before its deliverable stops the stage short; nothing waits forever."""
    del panes
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(
        repo, "quits", script(tmp_path, '[[turn]]\nsteps = [{say = "Bye."}, {exit = 3}]\n')
    )

    wait_for(
        stopped_short(journal_path, ShortCause.AGENT_EXITED),
        60,
        "the stage to stop short on the agent's exit",
    )
    phase = place_of(journal_path).stage.phase
    assert isinstance(phase, Short)
    # Its last words are kept for whoever retries: the pane's last screen.
    assert "Bye." in phase.words


def test_the_print_backend_writes_the_command_and_follows_its_transcript(
    tmp_path: Path, panes: Tmux
) -> None:
    """R4: --panes print starts no pane; the printed command, run by hand, takes the prompt."""
    # A person starts the printed command when they will: the first send's window is long, so a
    # slow start (a busy machine) is not taken for a lost prompt and typed again.
    repo = agent_repository(tmp_path, TIMING.replace("confirm = 4", "confirm = 30"))
    path = script(tmp_path, COMMITS)
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind", "fix", "--name", "printed",
        "--brief", "Mend the greeting.", "--agent", "test", "--panes", "print",
        "--agent-arg=--script", f"--agent-arg={path}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    journal_path = places.journals_dir(repo) / "fix--printed" / places.JOURNAL
    wait_for(lambda: sessions_started(journal_path), 60, "the printed agent to be written down")
    assert panes.panes() in ({}, None) or not any(
        pane.window_name == "fix--printed" for pane in (panes.panes() or {}).values()
    )
    shown = flume_process("attach", "fix--printed", "--repository", str(repo))
    assert shown.returncode == 0, shown.stderr
    command = shlex.split(shown.stdout.strip())
    assert command[1:4] == ["-P", "-m", "flume.shell.panes.printed"]
    told = flume_process("tell", "fix--printed", "--repository", str(repo), "Hurry.")
    assert told.returncode == 1
    assert "--panes print" in told.stderr
    # The person runs the command in a terminal of their own: here, a pane of the test's.
    person = Tmux(panes.socket.with_name("person.sock"))
    try:
        # The person's terminal has the test's environment: tmux's server inherits it.
        made = person.start(group="person", window="t", cwd=tmp_path, argv=command, env={})
        assert made.ok, made.err
        wait_for(lambda: _past_code(journal_path), 60, "the printed agent's stage to end")
    finally:
        person.kill_server()
    (session,) = sessions_started(journal_path)
    assert len(typed_lines(place_of(journal_path), session, _marker("printed"))) == 1
    assert prompt_sends(journal_path) == 1


def test_attach_refuses_a_place_with_no_live_agent(tmp_path: Path, panes: Tmux) -> None:
    """Attach needs a live agent: it is refused, naming how to start one."""
    del panes
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "gone", script(tmp_path, 'lose = "all"\n'))
    wait_for(lambda: sessions_started(journal_path), 60, "the agent to start")
    flume_process("stop", "fix--gone", "--repository", str(repo))
    wait_for(lambda: place_of(journal_path).agent is None, 30, "the agent to end")
    shown = flume_process("attach", "fix--gone", "--repository", str(repo))
    assert shown.returncode == 1
    assert "no live agent" in shown.stderr


def test_attach_shows_the_agents_pane_in_a_terminal(tmp_path: Path, panes: Tmux) -> None:
    """Attach, run in a person's terminal, shows the place's agent there."""
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "shown", script(tmp_path, IDLE))

    wait_for(agent_doing(journal_path, Activity.WAITING), 60, "the agent to wait")
    place = place_of(journal_path)
    assert place.agent is not None
    person = Tmux(panes.socket.with_name("person.sock"))
    try:
        argv = [sys.executable, "-m", "flume", "attach", "fix--shown", "--repository", str(repo)]
        made = person.start(group="person", window="t", cwd=tmp_path, argv=argv, env={})
        assert made.ok, made.err
        terminal = made.out.strip()
        # The person's terminal now shows the agent's own screen: its banner names its session.
        wait_for(
            lambda: (
                place.agent is not None and place.agent.session in (person.capture(terminal) or "")
            ),
            20,
            "the agent's screen in the person's terminal",
        )
    finally:
        person.kill_server()


def test_a_long_unicode_multiline_prompt_and_a_tell_ending_in_a_semicolon_arrive_whole(
    tmp_path: Path, panes: Tmux
) -> None:
    """R5, R6: pasted literally: 100 KB, many lines, unicode, and a tell ending in ';'."""
    del panes
    repo = agent_repository(tmp_path)
    lines = [f"Zeile {n}: größer als ≥ 名前 🙂 — tab\there; $HOME `x` #{{y}}" for n in range(1500)]
    brief = "\n".join(lines)
    assert len(brief.encode()) > 100_000
    journal_path = launch_test_agent(repo, "long", script(tmp_path, IDLE), brief=brief)

    wait_for(taken_and_waiting(journal_path), 90, "the long prompt delivered and the agent waiting")
    place = place_of(journal_path)
    (session,) = sessions_started(journal_path)
    (line,) = typed_lines(place, session, _marker("long"))
    message = line["message"]
    assert isinstance(message, dict)
    assert brief in message["content"]
    assert prompt_sends(journal_path) == 1
    told = flume_process("tell", "fix--long", "--repository", str(repo), "Mind the edge case;")
    assert told.returncode == 0, told.stderr
    wait_for(lambda: typed_lines(place_of(journal_path), session, "edge case;"), 40, "the tell")
    (tell_line,) = typed_lines(place_of(journal_path), session, "edge case;")
    assert isinstance(tell_line["message"], dict)
    assert "Mind the edge case;\n\n[flume:fix--long:tell:1]" in tell_line["message"]["content"]
