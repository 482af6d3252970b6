"""A launch's twelve arguments travel as one record, and over the supervisor's socket as JSON.

The JSON is what a command hands a running supervisor (docs/api.md ``hand_over``): written by
:meth:`LaunchAsked.words`, read back by :meth:`LaunchAsked.from_words`, which refuses anything
worded otherwise.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flume.core.choices import AgentName, Panes
from flume.core.errors import UsageError
from flume.shell.perform.launch_words import LaunchAsked

WHOLE = LaunchAsked(
    repository=Path("/repo"),
    name="x",
    brief="the brief",
    kind="fix",
    base="main",
    mark="m",
    waits=("code", "submit"),
    agent="test",
    model="small",
    agent_args=("--effort", "high"),
    panes="print",
)


def test_a_launch_handed_over_reads_back_as_it_was_asked() -> None:
    """Every field crosses the socket: the JSON read back is the record written."""
    words = WHOLE.words()
    assert words is not None
    assert LaunchAsked.from_words(words) == WHOLE
    assert set(words) == {
        "repository", "name", "brief", "kind", "base", "mark", "waits", "agent", "model",
        "agent_args", "panes",
    }  # fmt: skip


def test_the_json_is_today_s() -> None:
    """The socket's JSON is unchanged: lists for the sequences, the repository absolute text."""
    assert WHOLE.words() == {
        "repository": "/repo", "name": "x", "brief": "the brief", "kind": "fix",
        "base": "main", "mark": "m", "waits": ["code", "submit"], "agent": "test",
        "model": "small", "agent_args": ["--effort", "high"], "panes": "print",
    }  # fmt: skip


def test_a_launch_read_here_is_not_handed_over() -> None:
    """A kind file is read, and a brief function called, where the command runs."""
    assert LaunchAsked(repository="/r", name="x", brief="b", kind_file="k.toml").words() is None
    assert LaunchAsked(repository="/r", name="x", brief=lambda: "b", kind="fix").words() is None


def test_a_lone_string_is_one_stage_or_argument() -> None:
    """Not a sequence of letters."""
    asked = LaunchAsked(repository="/r", name="x", brief="b", waits="code", agent_args="--x")
    assert asked.waits == ("code",)
    assert asked.agent_args == ("--x",)


@pytest.mark.parametrize(
    "changed",
    [
        {"repository": "repo"},
        {"waits": "code"},
        {"waits": [1]},
        {"agent_args": [None]},
        {"kind": 3},
        {"shell": "rm -rf /"},
    ],
)
def test_json_worded_otherwise_is_refused(changed: dict[str, object]) -> None:
    """A relative repository, a wrong type or an unknown key: not a launch flume worded."""
    words = WHOLE.words()
    assert words is not None
    assert LaunchAsked.from_words({**words, **changed}) is None
    assert LaunchAsked.from_words("launch") is None


def test_the_words_checked_before_the_brief_is_read() -> None:
    """The agent and the panes chosen; no kind named and no kind file: a usage error."""
    assert WHOLE.checked() == (AgentName.TEST, Panes.PRINT)
    with pytest.raises(UsageError, match="no kind named"):
        LaunchAsked(repository="/r", name="x", brief="b").checked()
    assert LaunchAsked(repository="/r", name="x", brief="b", kind_file="k.toml").checked()


def test_a_file_the_caller_names_in_the_agent_s_arguments_is_the_caller_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--script`` and ``--kind-file`` in the agent's arguments resolve in the caller's folder.

    The fault (issue 25, 2.8): a relative ``--script`` was read inside the place's worktree, where
    no such file is, and the test agent died at once. Other arguments are left as given.
    """
    monkeypatch.chdir(tmp_path)
    asked = WHOLE.evolve(
        agent_args=(
            "--script", "story.json", "--kind-file=k/kind.toml", "--script=/abs/s.json",
            "--effort", "high", "--script",
        )
    )  # fmt: skip
    assert asked.agent_args == (
        "--script", str(tmp_path / "story.json"), f"--kind-file={tmp_path / 'k/kind.toml'}",
        "--script=/abs/s.json", "--effort", "high", "--script",
    )  # fmt: skip
    words = asked.words()
    assert words is not None
    monkeypatch.chdir("/")
    assert LaunchAsked.from_words(words) == asked
