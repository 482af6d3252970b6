"""The watch's parts: one tmux call a tick, hooks and the registry read as agent states, tmux names.

The end-to-end behaviour (agents in real panes) is in test_agents.py and test_claude.py; these
pin the pieces those rely on, with a real tmux server on a private socket.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from pyrsistent import pvector

from flume.core.actions import SendPrompt, StartAgent
from flume.core.ids import BranchName, Instant, KindName, SessionId, Sha, StageName, WorkName
from flume.core.kinds import BUILTIN_KINDS
from flume.core.launch import AgentName, AgentSettings, Launch
from flume.core.observations import (
    Activity,
    AgentExited,
    AgentReady,
    AgentStarted,
    AgentStateSeen,
    Launched,
    Observation,
    PromptTyped,
    TranscriptEntry,
    TurnEnded,
    Usage,
    WorktreeMade,
)
from flume.core.place import Place
from flume.core.settings import Settings
from flume.core.step import replay, step
from flume.shell import process
from flume.shell.agents import claude, runner, scripted
from flume.shell.agents.claude import hook_activity, registry_activity
from flume.shell.agents.port import agents_dir
from flume.shell.observe.watch import Watch
from flume.shell.panes import port, tmux
from flume.shell.panes.tmux import Tmux, escape_argument, tidy_name
from flume.shell.store.follower import Followed
from tests.integration.agents_kit import wait_for


def _followed(folder: Path, number: int, agent: AgentName = AgentName.TEST) -> Followed:
    """A place whose code stage's agent was started (as its journal would say)."""
    repository = folder / "repo"
    name = f"w{number}"
    path = f"{repository}/places/fix--{name}"
    launch = Launch(
        repository=str(repository),
        kind=KindName("fix"),
        name=WorkName(name),
        brief="Watch me.",
        base=BranchName("main"),
        agent=AgentSettings(agent=agent, flags=pvector()),
    )
    place = replay(
        Settings(),
        [
            Launched(at=Instant(1), launch=launch, kind=BUILTIN_KINDS[KindName("fix")]),
            WorktreeMade(at=Instant(2), path=path, branch=BranchName(f"fix/{name}"), head=Sha("a")),
            AgentStarted(
                at=Instant(3),
                stage=StageName("code"),
                attempt=1,
                session=SessionId(f"00000000-0000-4000-8000-{number:012d}"),
                pane=f"%{number}",
            ),
        ],
    )
    assert place.agent is not None
    return Followed(journal=folder / f"{name}.jsonl", place=place, fresh=False)


def journal_prefix(place: Place) -> list[Observation]:
    """The journal of ``place`` up to its code stage asking for an agent."""
    path = place.path
    return [
        Launched(at=Instant(1), launch=place.launch, kind=place.kind),
        WorktreeMade(at=Instant(2), path=path, branch=place.branch, head=Sha("a")),
    ]


@pytest.mark.parametrize("count", [1, 25])
def test_one_tmux_call_a_tick_whatever_the_number_of_agents(
    tmp_path: Path, panes: Tmux, count: int
) -> None:
    """P3: every agent's pane is observed by one list-panes, not one call per place."""
    followed = [_followed(tmp_path, number) for number in range(count)]
    watch = Watch(panes)
    before = process.count.runs["tmux"]
    seen = list(watch.observe(followed, Instant(10)))
    assert process.count.runs["tmux"] - before == 1
    # No pane runs any of these sessions on this (empty) server: each agent is reported gone.
    exited = [obs for _each, obs in seen if isinstance(obs, AgentExited)]
    assert len(exited) == count


def test_a_failed_pane_listing_is_never_read_as_every_agent_gone(tmp_path: Path) -> None:
    """A listing tmux could not give (None) says nothing about the agents."""

    class Broken(Tmux):
        def panes(self) -> None:  # type: ignore[override]
            return None

    followed = [_followed(tmp_path, number) for number in range(3)]
    seen = list(Watch(Broken(tmp_path / "none.sock")).observe(followed, Instant(10)))
    assert not any(isinstance(obs, AgentExited) for _each, obs in seen)


def test_one_place_s_fault_does_not_blind_the_watch_to_the_others(
    tmp_path: Path, panes: Tmux, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A place whose watching raises is logged and passed over; the next is watched the same.

    (A KeyError from one place's kind once stopped every live agent on the host being watched,
    tick after tick.)
    """
    followed = [_followed(tmp_path, number) for number in range(3)]
    broken = followed[1].place
    assert broken is not None
    assert broken.agent is not None
    watch = Watch(panes)
    own = Watch._agent

    def failing(self: Watch, place: Place, *args: object) -> object:
        if place is broken:
            message = "kind fix has no stage nowhere"
            raise KeyError(message)
        return own(self, place, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Watch, "_agent", failing)
    seen = list(watch.observe(followed, Instant(10)))
    exited = {obs.session for _each, obs in seen if isinstance(obs, AgentExited)}
    others = {each.place.agent.session for each in followed if each.place and each.place.agent}
    assert exited == others - {broken.agent.session}


def test_no_server_lists_no_panes(tmp_path: Path) -> None:
    """A socket with no server behind it is an empty listing, not a failure."""
    assert Tmux(tmp_path / "absent.sock").panes() == {}


def test_transcript_lines_and_registry_state_are_reported(tmp_path: Path, panes: Tmux) -> None:
    """The watch reads the transcript from its offset and the registry's word on the agent."""
    each = _followed(tmp_path, 7)
    place = each.place
    assert place is not None
    assert place.agent is not None
    session = place.agent.session
    transcript = claude.transcript_path(os.path.realpath(place.path), session, scripted.home())
    transcript.parent.mkdir(parents=True)
    line = {"type": "user", "message": {"role": "user", "content": "hello [marker]"}}
    transcript.write_text(json.dumps(line) + "\n" + '{"type": "assista', encoding="utf-8")
    registry = scripted.home() / "sessions" / "4242.json"
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text(json.dumps({"sessionId": session, "status": "idle", "updatedAt": 5}))
    watch = Watch(panes)
    first = [obs for _each, obs in watch.observe([each], Instant(10))]
    entries = [obs for obs in first if isinstance(obs, TranscriptEntry)]
    assert [entry.text for entry in entries] == ["hello [marker]"]
    states = [obs.activity for obs in first if isinstance(obs, AgentStateSeen)]
    assert states == [Activity.WAITING]
    # The torn last line is read once it is whole, and the first line is not read again.
    with transcript.open("a", encoding="utf-8") as file:
        file.write('nt", "message": {"content": [{"type": "text", "text": "hi"}]}}\n')
    again = [obs for _each, obs in Watch(panes).observe([each], Instant(11))]
    texts = [obs.text for obs in again if isinstance(obs, TranscriptEntry)]
    assert texts == ["hi"]
    registry.unlink()


def test_a_turns_usage_is_summed_across_ticks_and_a_restart(tmp_path: Path, panes: Tmux) -> None:
    """A message begun in one tick and finished after a restart is counted once, in its turn.

    The watch saves the turn's sums with the transcript's offset; a new watch (a supervisor
    restarted) reads on from both, so the turn's first message, read before the restart, counts
    too, and reports the turn's end after the line that closed it.
    """
    each = _followed(tmp_path, 8)
    place = each.place
    assert place is not None
    assert place.agent is not None
    session = place.agent.session
    transcript = claude.transcript_path(os.path.realpath(place.path), session, scripted.home())
    transcript.parent.mkdir(parents=True)

    def block(message_id: str, text: str, output: int) -> str:
        usage = {"input_tokens": 4, "output_tokens": output, "cache_read_input_tokens": 50}
        content = [{"type": "text", "text": text}]
        message = {"id": message_id, "content": content, "usage": usage}
        return json.dumps({"type": "assistant", "message": message}) + "\n"

    prompt = {"type": "user", "message": {"role": "user", "content": "hello [marker]"}}
    lines = json.dumps(prompt) + "\n" + block("msg_1", "first", 3) + block("msg_2", "one", 2)
    transcript.write_text(lines, encoding="utf-8")
    first = [obs for _each, obs in Watch(panes).observe([each], Instant(10))]
    assert not any(isinstance(obs, TurnEnded) for obs in first)
    with transcript.open("a", encoding="utf-8") as file:
        file.write(
            block("msg_2", "two", 9) + json.dumps({"type": "system", "subtype": "turn_duration"})
        )
        file.write("\n")
    again = [obs for _each, obs in Watch(panes).observe([each], Instant(11))]
    read = [obs for obs in again if isinstance(obs, TranscriptEntry | TurnEnded)]
    assert [type(obs).__name__ for obs in read] == [
        "TranscriptEntry",
        "TranscriptEntry",
        "TurnEnded",
    ]
    assert read[-1] == TurnEnded(
        at=Instant(11), session=session, usage=Usage(input=8, output=12, cache_read=100)
    )


@pytest.mark.parametrize(
    ("record", "activity"),
    [
        ({"hook_event_name": "UserPromptSubmit"}, Activity.WORKING),
        ({"hook_event_name": "PreToolUse", "tool_name": "Bash"}, Activity.WORKING),
        ({"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion"}, Activity.ASKING),
        ({"hook_event_name": "PermissionRequest", "tool_name": "Bash"}, Activity.ASKING),
        ({"hook_event_name": "Notification", "notification_type": "idle_prompt"}, Activity.WAITING),
        (
            {"hook_event_name": "Notification", "notification_type": "elicitation_dialog"},
            Activity.ASKING,
        ),
        ({"hook_event_name": "Notification", "notification_type": "permission_prompt"}, None),
        ({"hook_event_name": "Stop"}, Activity.WAITING),
        ({"hook_event_name": "SessionEnd", "reason": "other"}, Activity.STOPPED),
        ({"hook_event_name": "SessionStart", "source": "startup"}, None),
        ({"hook_event_name": "Stop", "agent_id": "sub-1"}, None),
    ],
)
def test_hooks_say_what_the_main_agent_does(
    record: dict[str, object], activity: Activity | None
) -> None:
    """Each hook maps to a state; a subagent's hooks and SessionStart say nothing (not ready)."""
    assert hook_activity(record) is activity


@pytest.mark.parametrize(
    ("entry", "activity"),
    [
        ({"status": "idle"}, Activity.WAITING),
        ({"status": "busy"}, Activity.WORKING),
        ({"status": "waiting", "waitingFor": "permission prompt"}, Activity.ASKING),
        ({"status": "waiting", "waitingFor": "input needed"}, Activity.ASKING),
        ({"status": "mystery"}, None),
    ],
)
def test_the_registry_says_what_the_agent_does(
    entry: dict[str, object], activity: Activity | None
) -> None:
    """The live-session registry's status, in R11's words."""
    assert registry_activity(entry) is activity


def test_tmux_reads_no_separator_or_format_in_what_flume_passes() -> None:
    """A trailing ';' is escaped; names keep only characters tmux takes as given."""
    assert escape_argument("echo one;") == "echo one\\;"
    assert escape_argument("a;b") == "a;b"
    assert tidy_name("fix--a.b:c") == "fix--a_b_c"
    assert tidy_name("") == "_"


def test_an_agent_pane_runs_no_shell_and_keeps_a_trailing_semicolon(
    tmp_path: Path, panes: Tmux
) -> None:
    """The pane's command is an argv: a ';' or '$(...)' in an argument reaches it as written."""
    out = tmp_path / "argv.json"
    program = "import json,sys; json.dump(sys.argv[1:], open(sys.argv[1], 'w'))"
    argv = [sys.executable, "-c", program, str(out), "$(touch pwned);", "#{pane_id}"]
    made = panes.start(group="g", window="w", cwd=tmp_path, argv=argv, env={"A": "1"})
    assert made.ok, made.err
    wait_for(out.exists, 10, "the pane's program to write its arguments")
    assert json.loads(out.read_text()) == [str(out), "$(touch pwned);", "#{pane_id}"]
    assert not (tmp_path / "pwned").exists()


def test_a_start_asked_twice_finds_the_agent_it_started(tmp_path: Path, panes: Tmux) -> None:
    """R4, RESTART-PENDING: a start asked for again finds the pane already running its session.

    That is what a restarted supervisor does with the start its predecessor asked for.
    """
    each = _followed(tmp_path, 3)
    place = each.place
    assert place is not None
    Path(place.path).mkdir(parents=True)
    # The place as it was when the start was asked for: its code stage starting.
    starting = replay(Settings(), journal_prefix(place))
    action = StartAgent(
        path=starting.path,
        stage=StageName("code"),
        attempt=1,
        agent=starting.launch.agent,
    )
    port = runner.Agents(panes)
    first = port.start(starting, action, Instant(20))
    second = port.start(starting, action, Instant(21))
    (one,) = [seen for seen in first if isinstance(seen, AgentStarted)]
    (two,) = [seen for seen in second if isinstance(seen, AgentStarted)]
    assert (one.session, one.pane) == (two.session, two.pane)
    listed = panes.panes() or {}
    assert [pane.id for pane in listed.values() if pane.session == one.session] == [one.pane]
    # The pane's first program read its private file of command line and environment, and
    # removed it.
    wait_for(lambda: not list(agents_dir().glob("*.exec.json")), 10, "the exec file gone")


def test_a_paste_marks_its_pane_and_the_watch_reports_it_typed(tmp_path: Path, panes: Tmux) -> None:
    """DELIVERY-RETYPE-UNTYPED's evidence: the pane, not the supervisor, remembers a paste.

    A prompt pasted with a mark leaves that mark on its pane (set by the same tmux command). A
    supervisor killed before journaling the paste finds it there: the watch reports the send
    typed, once, so it is never typed again. A pane never pasted into reports nothing.
    """
    each = _followed(tmp_path, 5)
    place = each.place
    assert place is not None
    assert place.agent is not None
    session = place.agent.session
    # The session id in its start command, as flume starts agents.
    argv = ["env", f"{tmux.SESSION_VARIABLE}={session}", sys.executable, "-c", "input()"]
    made = panes.start(group="g", window="w", cwd=tmp_path, argv=argv, env={})
    assert made.ok, made.err
    pane = made.out.strip()
    # Send 1 decided: the agent took input (as a restarted supervisor reads its journal).
    decided = step(Settings(), place, AgentReady(at=Instant(4), session=session))
    (send,) = [a for a in decided.actions if isinstance(a, SendPrompt)]
    each.place = decided.place
    assert place.agent.pane != pane  # the watch finds the pane by session, as after a restart
    watch = Watch(panes)
    assert not [
        obs for _e, obs in watch.observe([each], Instant(5)) if isinstance(obs, PromptTyped)
    ]
    assert panes.paste(pane, send.text, mark=port.typed_mark(send.marker, send.send)).ok
    assert (panes.panes() or {})[pane].typed == f"{send.marker}#1"
    seen = [obs for _e, obs in watch.observe([each], Instant(6)) if isinstance(obs, PromptTyped)]
    assert seen == [PromptTyped(at=Instant(6), session=session, marker=send.marker, send=1)]
    each.place = step(Settings(), each.place, seen[0]).place
    assert not [
        obs for _e, obs in watch.observe([each], Instant(7)) if isinstance(obs, PromptTyped)
    ]
