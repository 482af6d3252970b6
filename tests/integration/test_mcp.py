"""``flume mcp``: flume's commands as MCP tools, driven by the MCP SDK's own client over stdio.

The server runs as its own process (``python -m flume mcp``) in a repository's folder, as Claude
Code starts it; the client is the SDK's ``stdio_client`` and ``ClientSession``. Launched places run
flume's test agent in the test's own tmux server, and the supervisor stops with the test. The
reading of ``/flume:launch`` words and the names made from a brief are checked here too.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from flume.cli.mcp import SETTINGS, do_launch, read_words
from flume.core.errors import UsageError
from flume.core.ids import Instant, SessionId
from flume.core.launch import name_problems
from flume.core.naming import NAME_LENGTH, name_from
from flume.core.observations import (
    ApproveAsked,
    BudgetRaised,
    DropAsked,
    ResolveAsked,
    ResumeAsked,
    TranscriptFound,
)
from flume.shell.panes.tmux import Tmux
from tests.integration.agents_kit import agent_repository, observations, place_of
from tests.integration.places_kit import flume_process, run_git, world_of
from tests.integration.test_status import append, place, repository

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

TOOLS = {
    "status", "launch", "tell", "stop", "retry", "drop", "proceed", "approve", "pass_gate",
    "resume", "raise_budgets", "resolve", "answer", "transcript",
}  # fmt: skip

#: The tools that let a paused run go on, each with what it is given besides the place.
PAUSE_TOOLS: dict[str, dict[str, object]] = {
    "approve": {},
    "pass_gate": {"why": "the review misread it"},
    "resume": {},
    "raise_budgets": {"turns": 5},
    "resolve": {"agent": True},
}


# --- the words of /flume:launch -------------------------------------------------------------


def test_words_are_all_brief_without_settings() -> None:
    """Words with no leading setting are the brief, stripped, with their inner spacing kept."""
    read = read_words("  The greeting says hullo;\n  make it  hello.  ")
    assert read.settings == {}
    assert read.waits == ()
    assert read.brief == "The greeting says hullo;\n  make it  hello."


def test_leading_settings_are_read_and_the_rest_is_the_brief() -> None:
    """kind=, name=, base=, mark=, agent=, model= and repeated wait= lead; the brief follows."""
    read = read_words(
        "kind=change name=greet base=dev mark=t1 wait=code wait=submit agent=test model=m "
        "Greet people, name=x stays in the brief"
    )
    assert read.settings == {
        "kind": "change",
        "name": "greet",
        "base": "dev",
        "mark": "t1",
        "agent": "test",
        "model": "m",
    }
    assert read.waits == ("code", "submit")
    assert read.brief == "Greet people, name=x stays in the brief"


def test_an_unknown_setting_starts_the_brief_and_double_dash_ends_the_settings() -> None:
    """``x=1`` is not a setting, so the brief starts there; ``--`` lets a brief start name=."""
    assert read_words("x=1 is wrong in parse()").brief == "x=1 is wrong in parse()"
    read = read_words("kind=fix -- name=foo is printed twice")
    assert read.settings == {"kind": "fix"}
    assert read.brief == "name=foo is printed twice"


@pytest.mark.parametrize(
    ("words", "said"),
    [("kind=fix kind=change mend it", "kind= is given twice"), ("name= mend it", "name= has no")],
)
def test_a_setting_given_twice_or_empty_is_bad_input(words: str, said: str) -> None:
    """A setting given twice, or with nothing after '=', is a usage error naming it."""
    with pytest.raises(UsageError) as raised:
        read_words(words)
    (problem,) = raised.value.problems
    assert problem.field == "words"
    assert said in problem.what


_values = st.from_regex(r"[A-Za-z0-9._/-]{1,12}", fullmatch=True)


@given(
    settings=st.dictionaries(st.sampled_from([s for s in SETTINGS if s != "wait"]), _values),
    waits=st.lists(_values, max_size=3),
    brief=st.text(min_size=1).filter(lambda text: text.strip() != ""),
)
def test_settings_and_a_brief_read_back_as_written(
    settings: dict[str, str], waits: list[str], brief: str
) -> None:
    """Any settings, then ``--`` and any brief, read back as the settings and the brief."""
    words = " ".join([*(f"{key}={value}" for key, value in settings.items())])
    words += "".join(f" wait={value}" for value in waits)
    read = read_words(f"{words} -- {brief}")
    assert read.settings == settings
    assert read.waits == tuple(waits)
    assert read.brief == brief.strip()


@pytest.mark.parametrize(
    ("brief", "name"),
    [
        ("The greeting says hullo; make it hello.", "greeting-says-hullo-hello"),
        ("Größer ≥ 名前: Zeile zählen", "grosser-zeile-zahlen"),
        ("Fix it", "fix"),
        ("!!! ???", "work"),
        ("a" * 80, "a" * NAME_LENGTH),
    ],
)
def test_a_name_is_made_from_the_brief(brief: str, name: str) -> None:
    """The made name is the brief's first telling words, in ASCII kebab-case, and short."""
    assert name_from(brief) == name


@given(st.text())
def test_a_made_name_is_always_one_flume_accepts(brief: str) -> None:
    """Whatever the brief, the name made from it passes flume's own name checks, and is short."""
    name = name_from(brief)
    assert name_problems(name) == []
    assert len(name) <= NAME_LENGTH


def test_a_made_name_that_stays_taken_is_refused_naming_why(
    tmp_path: Path, host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each numbered name taken (here by branches): bad input naming the clash, nothing made."""
    del host
    repo = agent_repository(tmp_path)
    for branch in ("fix/mend-greeting", "fix/mend-greeting-2"):
        run_git(repo, "branch", branch)
    monkeypatch.setattr("flume.cli.mcp.NAME_TRIES", 2)
    before = world_of(repo)
    words = "agent=test Mend the greeting."
    with pytest.raises(UsageError) as raised:
        do_launch(**{**NO_SETTINGS, "words": words, "repository": str(repo)})
    *why, last = raised.value.problems
    assert [problem.field for problem in why] == ["name"]
    assert "fix/mend-greeting-2 already exists" in why[0].what
    assert (
        last.what
        == "the names made from the brief, mend-greeting to mend-greeting-2, are all taken"
    )
    assert last.mend == "name the work: name=<name>"
    assert world_of(repo) == before


#: Every parameter of :func:`flume.cli.mcp.do_launch` left to its default.
NO_SETTINGS: dict[str, Any] = {
    "brief": None,
    "words": None,
    "kind": None,
    "name": None,
    "repository": None,
    "base": None,
    "mark": None,
    "waits": None,
    "kind_file": None,
    "agent": None,
    "model": None,
    "panes": "tmux",
}


# --- the server, over stdio, through the SDK's client ---------------------------------------


@contextlib.asynccontextmanager
async def connected(folder: Path) -> AsyncIterator[ClientSession]:
    """A client session with ``flume mcp`` started in ``folder``, as Claude Code starts it."""
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "flume", "mcp"], cwd=folder, env=dict(os.environ)
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def over_stdio(folder: Path, talk: Callable[[ClientSession], Awaitable[None]]) -> None:
    """Run ``talk`` with a session of a fresh server in ``folder``, within a minute."""

    async def main() -> None:
        with anyio.fail_after(60):
            async with connected(folder) as session:
                await talk(session)

    anyio.run(main)


def text_of(result: CallToolResult) -> str:
    """The text a tool answered."""
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def answered(result: CallToolResult) -> dict[str, Any]:
    """A tool's JSON answer; the test fails with the tool's error text if it failed."""
    assert not result.is_error, text_of(result)
    found = result.structured_content
    assert isinstance(found, dict)
    return found


def status_json(repo: Path) -> dict[str, Any]:
    """``flume status --json`` for the repository, run as a user would."""
    ran = flume_process("status", "--json", "--repository", str(repo))
    assert ran.returncode == 0, ran.stderr
    found: dict[str, Any] = json.loads(ran.stdout)
    return found


def test_the_tools_are_listed_and_a_launch_by_words_makes_places(  # noqa: PLR0915 (one session, every tool)
    tmp_path: Path, panes: Tmux
) -> None:
    """Its tools; launch from the server's folder by words: kind fix, a name made unique."""
    del panes
    repo = agent_repository(tmp_path)
    brief = "The greeting says hullo; make it hello."
    seen: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        listed = await session.list_tools()
        seen["tools"] = {tool.name: tool for tool in listed.tools}
        seen["before"] = answered(await session.call_tool("status", {"repository": str(repo)}))
        words = {"words": f"agent=test {brief}"}
        seen["first"] = answered(await session.call_tool("launch", words))
        seen["second"] = answered(await session.call_tool("launch", words))
        seen["after"] = answered(await session.call_tool("status", {"repository": str(repo)}))
        second = seen["second"]["place"]
        seen["retry"] = await session.call_tool("retry", {"place": second, "words": "again"})
        for word, arguments in PAUSE_TOOLS.items():
            seen[word] = await session.call_tool(word, {"place": second, **arguments})
        seen["answer"] = await session.call_tool(
            "answer", {"place": second, "question": "q1", "text": "yes"}
        )
        seen["drop"] = answered(await session.call_tool("drop", {"place": second}))
        seen["dropped"] = answered(await session.call_tool("status", {"place": second}))

    over_stdio(repo, talk)

    tools = seen["tools"]
    assert set(tools) == TOOLS
    assert all(tool.description for tool in tools.values())
    launch_schema = tools["launch"].input_schema["properties"]
    assert {"brief", "words", "kind", "name", "repository", "base", "mark"} <= set(launch_schema)
    assert tools["tell"].input_schema["required"] == ["place", "text"]
    assert seen["before"] == {"places": []}
    assert seen["first"]["place"] == "fix--greeting-says-hullo-hello"
    assert seen["second"]["place"] == "fix--greeting-says-hullo-hello-2"
    assert Path(seen["first"]["path"]) == repo / "places" / "fix--greeting-says-hullo-hello"
    listed = {each["place"]: each for each in seen["after"]["places"]}
    assert set(listed) == {seen["first"]["place"], seen["second"]["place"]}
    by_cli = {each["place"]: each for each in status_json(repo)["places"]}
    assert set(by_cli) == set(listed)
    assert all(each["kind"] == "fix" for each in by_cli.values())
    for each in (seen["first"], seen["second"]):
        assert place_of(Path(each["journal"])).launch.brief == brief
    # A retry of a stage that did not stop short is refused; a drop is taken.
    assert seen["retry"].is_error
    assert text_of(seen["retry"]).startswith(
        "Error executing tool retry: flume refused this in the place's present state"
    )
    # Nothing is paused: approve, pass_gate, resume, raise_budgets and resolve are refused,
    # naming what the place waits on instead, and journal nothing.
    for word in PAUSE_TOOLS:
        assert seen[word].is_error, word
        assert "; nothing there waits on " in text_of(seen[word]), text_of(seen[word])
    assert "nothing there waits on a resolve: no merge conflict" in text_of(seen["resolve"])
    # No question was asked: an answer is refused, naming what the place asked (nothing), or,
    # its step not running yet (queued, starting), saying nothing waits on one.
    assert seen["answer"].is_error
    said = text_of(seen["answer"])
    assert "has no question 'q1' (its questions: none)" in said or "waits on an answer" in said

    assert tools["resolve"].input_schema["required"] == ["place", "agent"]
    assert tools["transcript"].input_schema["required"] == ["place"]
    assert seen["drop"]["place"] == seen["second"]["place"]
    assert "dropped" in seen["drop"]["said"]
    (dropped,) = seen["dropped"]["places"]
    assert dropped["life"] in {"dropped", "tidied"}  # the supervisor tidies a drop at once
    journal = Path(seen["second"]["journal"])
    assert sum(isinstance(each, DropAsked) for each in observations(journal)) == 1
    refused = (ApproveAsked, ResumeAsked, BudgetRaised, ResolveAsked)
    assert not any(isinstance(each, refused) for each in observations(journal))


def test_bad_input_is_a_tool_error_that_says_how_to_mend_it_and_creates_nothing(
    tmp_path: Path, panes: Tmux
) -> None:
    """A bad launch or a command for no place is a tool error; the server serves on."""
    del panes
    repo = agent_repository(tmp_path)
    before = world_of(repo)
    errors: dict[str, CallToolResult] = {}
    seen: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        errors["bad name"] = await session.call_tool(
            "launch", {"brief": "Mend it.", "name": "../up", "agent": "test"}
        )
        errors["no brief"] = await session.call_tool("launch", {"words": "kind=fix   "})
        errors["twice"] = await session.call_tool(
            "launch", {"words": "name=a mend it", "name": "b", "agent": "test"}
        )
        errors["not a repository"] = await session.call_tool(
            "launch", {"brief": "Mend it.", "repository": str(tmp_path / "nowhere")}
        )
        errors["no place"] = await session.call_tool("tell", {"place": "fix--none", "text": "hi"})
        errors["typed wrong"] = await session.call_tool("launch", {"brief": 3})
        errors["raise nothing"] = await session.call_tool("raise_budgets", {"place": "fix--none"})
        errors["raise by 0"] = await session.call_tool(
            "raise_budgets", {"place": "fix--none", "turns": 0}
        )
        seen["status"] = answered(await session.call_tool("status", {"repository": str(repo)}))

    over_stdio(repo, talk)

    said = {what: text_of(result) for what, result in errors.items()}
    assert all(result.is_error for result in errors.values()), said
    assert "bad input; nothing was created" in said["bad name"]
    assert "- name: " in said["bad name"]
    assert "letters, digits" in said["bad name"]
    assert "- brief: the brief is empty; say what the work is" in said["no brief"]
    twice = "- name: name is given both as a parameter and in words; give name once"
    assert twice in said["twice"]
    assert "- repository: " in said["not a repository"]
    assert "fix--none" in said["no place"]
    assert "brief" in said["typed wrong"]
    assert "no budget is named to raise" in said["raise nothing"]
    assert "--turns is 0, not a whole number of at least 1" in said["raise by 0"]
    assert seen["status"] == {"places": []}
    assert world_of(repo) == before


def test_the_transcript_tool_replays_an_attempt_and_names_bad_input(host: Path) -> None:
    """The transcript tool answers each attempt as flume transcript --json; a bad step is named."""
    tmp_path = host
    repo = repository(tmp_path / "repo")
    path = place(repo, "fix", "a")
    chat = tmp_path / "s1.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "Mend it."}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "Mended."}]}},
    ]
    chat.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    append(path, TranscriptFound(at=Instant(4), session=SessionId("s1"), path=str(chat)))
    seen: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        seen["read"] = answered(await session.call_tool("transcript", {"place": "fix--a"}))
        seen["bad"] = await session.call_tool("transcript", {"place": "fix--a", "step": "nope"})

    over_stdio(repo, talk)
    (attempt,) = seen["read"]["attempts"]
    assert (attempt["key"], attempt["attempt"], attempt["transcript"]) == ("code", 1, str(chat))
    assert [(line["part"], line["text"]) for line in attempt["lines"]] == [
        ("prompt", "Mend it."),
        ("text", "Mended."),
    ]
    assert seen["bad"].is_error
    assert "flume found bad input" in text_of(seen["bad"])
    assert "has no step nope; name one of its steps (code, submit)" in text_of(seen["bad"])
