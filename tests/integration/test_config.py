"""The repository config file: what it declares, and errors that name the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from flume.core.errors import UsageError
from flume.core.kinds import BUILTIN_KINDS, ReportFile, steps
from flume.shell.declared.config import FILE_NAME, Config, load

GOOD = """\
[place]
setup = [["uv", "sync"], ["npm", "ci"]]
copy = [".env", "config/local.toml"]

[land]
checks = [["pytest", "-q"]]

[[kinds]]
name = "review"
[[kinds.stages]]
name = "read"
prompt = "Review $brief in $path."
deliverable = "report:review.md"
waits_on_caller = true

[prompts.fix]
code = "Mend it: $brief ($marker)"
"""


KIND = '[[kinds]]\nname = "r"\n[[kinds.stages]]\nname = "a"\nprompt = "x"\ndeliverable = "commit"\n'


def write(tmp_path: Path, text: str) -> Path:
    """A repository folder whose config file holds ``text``."""
    (tmp_path / FILE_NAME).write_text(text, encoding="utf-8")
    return tmp_path


def test_no_file_is_an_empty_config(tmp_path: Path) -> None:
    """A repository without a config declares nothing: no setup, the built-in kinds."""
    config = load(tmp_path)
    assert config == Config()
    assert config.kind("fix") == BUILTIN_KINDS["fix"]  # type: ignore[index]
    with pytest.raises(UsageError, match="no kind 'nope' is built in or declared"):
        config.kind("nope")


def test_a_full_config_reads_back(tmp_path: Path) -> None:
    """Setup, copies, checks, a declared kind and a prompt override are all read."""
    config = load(write(tmp_path, GOOD))
    assert [list(argv) for argv in config.setup] == [["uv", "sync"], ["npm", "ci"]]
    assert list(config.copy) == [".env", "config/local.toml"]
    assert [list(argv) for argv in config.checks] == [["pytest", "-q"]]
    assert config.submit is None
    review = config.kind("review")
    assert review is not None
    (read,) = steps(review.body)
    assert read.deliverable == ReportFile(path="review.md")
    assert read.waits_on_caller
    fix = config.kind("fix")
    assert fix is not None
    assert steps(fix.body)[0].prompt == "Mend it: $brief ($marker)"
    assert steps(fix.body)[1].prompt == steps(BUILTIN_KINDS["fix"].body)[1].prompt  # type: ignore[index]
    assert config.kind_names() == ("change", "fix", "question", "review")


def test_a_merge_queue_submit_command(tmp_path: Path) -> None:
    """[land] submit names a merge queue's command instead of local checks."""
    config = load(write(tmp_path, '[land]\nsubmit = ["sluice", "submit", "{branch}"]\n'))
    assert config.submit is not None
    assert list(config.submit) == ["sluice", "submit", "{branch}"]


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("[place\n", 1, "not valid TOML"),
        ("[wat]\nx = 1\n", 1, "unknown table or key 'wat'"),
        ('[place]\nsetup = "uv sync"\n', 2, "must be a list of commands"),
        ('[place]\nsetup = [["uv", 3]]\n', 2, "must be a command"),
        ("[place]\nsetup = [[]]\n", 2, "must be a command"),
        ("[place]\nsetp = []\n", 2, "has no key 'setp'"),
        ('[place]\ncopy = ["/etc/passwd"]\n', 2, "paths inside the repository"),
        ('[place]\ncopy = ["../x"]\n', 2, "paths inside the repository"),
        ('\n[land]\nchecks = [["t"]]\nsubmit = ["q"]\n', 4, "both checks and a submit"),
        ("place = 3\n", 1, "must be a table"),
        ('[prompts.nope]\ncode = "x"\n', 1, "does not exist"),
        ('[prompts.fix]\nplan = "x"\n', 1, "has no stage plan"),
        ('[prompts.fix]\ncode = "$nonsense"\n', 1, "unknown field $nonsense"),
        ("[prompts.fix]\ncode = 3\n", 2, "is not text"),
        (KIND.replace("commit", "nope"), 1, 'deliverable = "nope" is not a gate'),
        ("\n" + KIND + KIND, 8, "declared twice"),
    ],
)
def test_a_malformed_config_names_file_and_line(
    tmp_path: Path, text: str, line: int, says: str
) -> None:
    """Each mistake is named with the file, its line and how to mend it, exit status 2."""
    with pytest.raises(UsageError) as caught:
        load(write(tmp_path, text))
    message = str(caught.value)
    assert f"{tmp_path / FILE_NAME}:{line}" in message
    assert says in message
    assert caught.value.exit_status == 2


def test_timing_sets_the_places_settings(tmp_path: Path) -> None:
    """[timing] replaces the thresholds it names and keeps the others."""
    from flume.core.settings import Settings  # noqa: PLC0415 (only this test builds settings)

    config = load(write(tmp_path, "[timing]\nquiet = 0.5\nconfirm = 4\n"))
    settings = config.settings(Settings())
    assert (settings.quiet_seconds, settings.confirm_seconds) == (0.5, 4.0)
    assert settings.ready_seconds == Settings().ready_seconds
    assert load(write(tmp_path, "")).settings(Settings()) == Settings()
    workflow = load(write(tmp_path, "[timing]\nstall = 20\ntests = 90.5\n")).settings(Settings())
    assert (workflow.stall_seconds, workflow.tests_seconds) == (20.0, 90.5)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[timing]\nquiet = "soon"\n', "quiet = 'soon' is not a number of seconds"),
        ("[timing]\nconfirm = 0\n", "confirm = 0 is not a number of seconds"),
        ("[timing]\nready = true\n", "ready = True is not a number of seconds"),
        ("[timing]\nready = 100000\n", "ready = 100000 is not a number of seconds"),
        ("[timing]\nstall = -1\n", "stall = -1 is not a number of seconds"),
        ("[timing]\npatience = 3\n", "[timing] has no key 'patience'"),
    ],
)
def test_bad_timing_names_the_line(tmp_path: Path, text: str, says: str) -> None:
    """A [timing] value that is not a number of seconds is named with its file and line."""
    with pytest.raises(UsageError) as raised:
        load(write(tmp_path, text))
    message = str(raised.value)
    assert says in message
    assert f"{FILE_NAME}:2" in message
