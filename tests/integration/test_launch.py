"""``flume launch`` on real repositories: what it makes, and bad input that makes nothing."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from flume.core.place import Life, Short, ShortCause
from flume.shell.store import places
from flume.shell.tools import git
from tests.integration.places_kit import (
    Harness,
    commit,
    flume,
    launch_argv,
    launch_place,
    repository,
    run_git,
    world_of,
)

BRIEF = "Mend the greeting."
PRINTED = ("--agent", "test", "--panes", "print")


def launch(repo: Path, *args: str, brief: str | None = BRIEF) -> subprocess.CompletedProcess[str]:
    """``flume launch`` of a fix in ``repo`` with ``args`` (the name among them)."""
    extra = ("--brief", brief) if brief is not None else ()
    return flume("launch", "--repository", str(repo), "--kind", "fix", *extra, *args)


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("a/b", "holds '/'"),
        ("a..b", "holds '..'"),
        ("-x", "starts with '-'"),
        ("a b", "holds a space"),
        ("a\tb", "control character"),
        ("a\x07b", "control character"),
        ("x.lock", "ends in '.lock'"),
        ("x" * 65, "over 64"),
        ("", "empty"),
        ("é", "outside letters"),
    ],
)
def test_a_bad_name_makes_nothing(host: Path, name: str, says: str) -> None:
    """Names unsafe as a path segment or a ref component: exit 2, the reason, nothing made."""
    repo = repository(host / "repo")
    before = world_of(repo)
    ran = launch(repo, "--name", name)
    assert ran.returncode == 2, ran.stderr
    assert says in ran.stderr
    assert "use 1-64 letters" in ran.stderr
    assert ran.stdout == ""
    assert world_of(repo) == before


def test_bad_repositories_make_nothing(host: Path) -> None:
    """A missing path, a folder outside git, a repository without commits: exit 2, each named."""
    missing = host / "nowhere"
    ran = flume(
        "launch", "--repository", str(missing), "--kind", "fix", "--name", "x", "--brief", "b"
    )
    assert ran.returncode == 2
    assert f"{missing} does not exist" in ran.stderr
    plain = host / "plain"
    plain.mkdir()
    ran = flume(
        "launch", "--repository", str(plain), "--kind", "fix", "--name", "x", "--brief", "b"
    )
    assert ran.returncode == 2
    assert "is not in a git repository" in ran.stderr
    assert list(plain.iterdir()) == []
    empty = host / "empty"
    empty.mkdir()
    run_git(empty, "init", "-q", "-b", "main")
    ran = flume(
        "launch", "--repository", str(empty), "--kind", "fix", "--name", "x", "--brief", "b"
    )
    assert ran.returncode == 2
    assert "has no commits" in ran.stderr
    assert "make a first commit" in ran.stderr
    assert sorted(p.name for p in empty.iterdir()) == [".git"]
    assert not (empty / ".git" / "flume").exists()
    assert not places.registry_path().exists()


@pytest.mark.parametrize(
    ("args", "brief", "says"),
    [
        (("--base", "nosuch"), BRIEF, "the base branch 'nosuch' does not exist"),
        (("--base", "bad..base"), BRIEF, "base: 'bad..base' holds '..'"),
        (("--kind", "review"), BRIEF, "no kind 'review' is built in or declared"),
        ((), "", "the brief is empty"),
        ((), "   \n", "the brief is empty"),
        ((), "x" * (1024 * 1024 + 1), "over the limit of 1048576 (1 MiB)"),
        (("--wait", "nosuch"), BRIEF, "kind fix has no stage nosuch"),
        (("--mark", "bad mark"), BRIEF, "is not a mark"),
    ],
)
def test_bad_launches_make_nothing(
    host: Path, args: tuple[str, ...], brief: str, says: str
) -> None:
    """A missing base, an undeclared kind, an empty or huge brief: exit 2, said, nothing made."""
    repo = repository(host / "repo")
    before = world_of(repo)
    ran = flume(
        "launch", "--repository", str(repo), "--kind", "fix", "--name", "x", *args, stdin=brief
    )
    assert ran.returncode == 2, ran.stderr
    assert says in ran.stderr
    assert world_of(repo) == before
    assert not places.registry_path().exists()


def test_a_brief_comes_from_a_file_or_stdin_and_never_both(host: Path) -> None:
    """--brief-file that cannot be read, or with --brief: exit 2; stdin carries a brief."""
    repo = repository(host / "repo")
    before = world_of(repo)
    absent = str(host / "absent.md")
    ran = launch(repo, "--name", "x", "--brief-file", absent, brief=None)
    assert ran.returncode == 2
    assert "cannot read the brief file" in ran.stderr
    ran = launch(repo, "--name", "x", "--brief-file", absent)
    assert ran.returncode == 2
    assert "both --brief and --brief-file" in ran.stderr
    assert world_of(repo) == before
    command = ("launch", "--repository", str(repo), "--kind", "fix", "--name", "piped", "--json")
    ran = flume(*command, stdin="")
    assert ran.returncode == 2
    assert "the brief is empty" in ran.stderr
    assert world_of(repo) == before
    ran = flume(*command, stdin="Mend the greeting,\nwhich says hullo.\n")
    assert ran.returncode == 0, ran.stderr
    journal_path = Path(json.loads(ran.stdout)["journal"])
    assert "which says hullo" in journal_path.read_text()


@pytest.mark.parametrize("option", ["--brief", "--brief-file"])
def test_a_dash_brief_is_read_from_stdin(host: Path, option: str) -> None:
    """``--brief -`` and ``--brief-file -`` read stdin, as ``tell -`` and ``needs -`` do."""
    repo = repository(host / "repo")
    command = ("launch", "--repository", str(repo), "--kind", "fix", "--name", "dash", "--json")
    ran = flume(*command, option, "-", stdin="Mend the greeting,\nwhich says hullo.\n")
    assert ran.returncode == 0, ran.stderr
    journal_path = Path(json.loads(ran.stdout)["journal"])
    assert "Mend the greeting,\\nwhich says hullo." in journal_path.read_text()


def test_a_dash_brief_and_another_is_two_briefs(host: Path) -> None:
    """A brief from stdin and one from a file or the command line: exit 2, nothing made."""
    repo = repository(host / "repo")
    before = world_of(repo)
    brief_file = host / "brief.md"
    brief_file.write_text("From the file.", encoding="utf-8")
    for given in (
        ("--brief", "-", "--brief-file", str(brief_file)),
        ("--brief", "words", "--brief-file", "-"),
        ("--brief", "-", "--brief-file", "-"),
    ):
        ran = launch(repo, "--name", "x", *given, brief=None)
        assert ran.returncode == 2
        assert "both --brief and --brief-file" in ran.stderr
    assert world_of(repo) == before


def test_a_malformed_config_is_named_with_its_line(host: Path) -> None:
    """A config file git would carry but flume cannot read: its file and line, exit 2."""
    repo = repository(
        host / "repo",
        files={".flume.toml": '[place]\nsetup = [["ok"]]\nsetupp = 1\n'},
    )
    before = world_of(repo)
    ran = launch(repo, "--name", "x")
    assert ran.returncode == 2
    assert f"{repo}/.flume.toml:3" in ran.stderr
    assert world_of(repo) == before
    (repo / ".flume.toml").write_text("[place\n", encoding="utf-8")
    ran = launch(repo, "--name", "x")
    assert ran.returncode == 2
    assert ".flume.toml:1" in ran.stderr
    assert world_of(repo) == before


def test_a_name_in_use_makes_nothing_more(host: Path) -> None:
    """A second launch of a name, or of a name whose branch or folder exists: exit 2."""
    repo = repository(host / "repo")
    first = launch(repo, "--name", "taken")
    assert first.returncode == 0, first.stderr
    after_first = world_of(repo)
    again = launch(repo, "--name", "taken")
    assert again.returncode == 2
    assert "fix--taken is already launched" in again.stderr
    run_git(repo, "branch", "fix/byhand")
    ran = launch(repo, "--name", "byhand")
    assert ran.returncode == 2
    assert "the branch fix/byhand already exists" in ran.stderr
    (repo / "places" / "fix--folder").mkdir(parents=True)
    ran = launch(repo, "--name", "folder")
    assert ran.returncode == 2
    assert "places/fix--folder already exists" in ran.stderr
    world = world_of(repo)
    assert world["journals"] == after_first["journals"]
    assert "fix/folder" not in world["branches"]  # type: ignore[operator]


def _said_command(stderr: str, ending: str) -> list[str]:
    """The ``git -C ...`` command a refusal says to run, the one ending in ``ending``, as argv."""
    end = stderr.index(ending) + len(ending)
    return shlex.split(stderr[stderr.rindex("git -C ", 0, end) : end])


def test_a_branch_left_holding_the_name_is_refused_with_the_command_that_frees_it(
    host: Path,
) -> None:
    """A leftover branch: the refusal says what it holds and the exact command freeing the name.

    The repository's path has a space, so the command is quoted as a shell would need it; run,
    it frees the name, and the launch then succeeds.
    """
    repo = repository(host / "my repo")
    # An agent that needs nothing installed, printed rather than started: only the name matters.
    run_git(repo, "branch", "fix/empty")
    before = world_of(repo)
    empty = launch(repo, "--name", "empty", *PRINTED)
    assert empty.returncode == 2
    assert "the branch fix/empty already exists" in empty.stderr
    assert "holding nothing main lacks" in empty.stderr
    assert world_of(repo) == before
    freeing = _said_command(empty.stderr, "branch -D fix/empty")
    assert freeing == ["git", "-C", str(repo), "branch", "-D", "fix/empty"]
    subprocess.run(freeing, check=True, capture_output=True)  # noqa: S603 (argv, ours)
    assert launch(repo, "--name", "empty", *PRINTED).returncode == 0

    run_git(repo, "checkout", "-q", "-b", "fix/ahead")
    commit(repo, "half.txt")
    run_git(repo, "checkout", "-q", "main")
    ahead = launch(repo, "--name", "ahead", *PRINTED)
    assert ahead.returncode == 2
    assert "holding 1 commit main lacks" in ahead.stderr
    look = _said_command(ahead.stderr, "log main..fix/ahead")
    assert look == ["git", "-C", str(repo), "log", "main..fix/ahead"]
    assert _said_command(ahead.stderr, "branch -D fix/ahead") == [
        "git", "-C", str(repo), "branch", "-D", "fix/ahead",
    ]  # fmt: skip


def test_concurrent_launches_of_one_name_have_one_winner(host: Path) -> None:
    """Eight launches of one name at once: exactly one wins; the others are told why."""
    repo = repository(host / "repo")
    argv = launch_argv(repo, "race", BRIEF)
    racers = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # noqa: S603
        for _ in range(8)
    ]
    results = [(racer.wait(timeout=120), *racer.communicate()) for racer in racers]
    winners = [out for status, out, _err in results if status == 0]
    losers = [err for status, _out, err in results if status != 0]
    assert winners == ["fix--race\n"]
    assert len(losers) == 7
    assert all(
        "fix--race" in err and ("already launched" in err or "same moment" in err) for err in losers
    )
    journals = places.journals_dir(repo)
    assert [p.name for p in journals.iterdir() if not p.name.startswith(".")] == ["fix--race"]
    assert not list(journals.glob(".launching-*"))


def test_a_launch_makes_its_place_and_runs_setup(host: Path, harness: Harness) -> None:
    """R1, R2: the worktree on fix/<name> from base, places/ out of git status, setup run."""
    repo = repository(
        host / "repo",
        files={
            ".flume.toml": (
                '[place]\nsetup = [["sh", "-c", "echo set up > .ready; echo done"]]\n'
                'copy = [".env"]\n'
            ),
            ".gitignore": ".env\n.ready\n",
        },
    )
    (repo / ".env").write_text("SECRET=1\n", encoding="utf-8")
    base = run_git(repo, "rev-parse", "main").strip()
    journal_path = launch_place(repo, "greeting")
    harness.settle()
    path = repo / "places" / "fix--greeting"
    assert git.worktree_paths(repo)[path] == "fix/greeting"
    assert run_git(path, "rev-parse", "HEAD").strip() == base
    assert (path / ".env").read_text() == "SECRET=1\n"
    assert (path / ".ready").read_text() == "set up\n"
    assert run_git(repo, "status", "--porcelain") == ""
    assert "/places/" in (repo / ".git" / "info" / "exclude").read_text()
    place = harness.place(journal_path)
    assert place.made
    assert place.ready
    assert place.agent is not None  # the echo agent took the first stage
    assert str(repo) in places.registry_path().read_text()


def test_a_failed_setup_stops_short_with_its_output(host: Path, harness: Harness) -> None:
    """R2: a failed setup is a stop short carrying its output, not a half-made place."""
    repo = repository(
        host / "repo",
        files={".flume.toml": '[place]\nsetup = [["sh", "-c", "echo cannot sync >&2; exit 3"]]\n'},
    )
    launch_place(repo, "broken")
    harness.settle()
    place = harness.place(places.journals_dir(repo) / "fix--broken" / places.JOURNAL)
    assert place.life is Life.ACTIVE
    assert isinstance(place.stage.phase, Short)
    assert place.stage.phase.cause is ShortCause.SETUP_FAILED
    assert "cannot sync" in place.stage.phase.words
    assert "exit status 3" in place.stage.phase.words
    assert place.agent is None
    status = json.loads(flume("status", "--json").stdout)
    (shown,) = status["places"]
    assert shown["short_cause"] == "setup-failed"
    assert "cannot sync" in shown["needs"]


def test_the_base_is_the_shared_branch(host: Path) -> None:
    """No --base: the remote's HEAD branch, else the branch the main worktree has out."""
    upstream = repository(host / "upstream")
    run_git(upstream, "branch", "trunk")
    run_git(upstream, "symbolic-ref", "HEAD", "refs/heads/trunk")
    clone = host / "clone"
    run_git(host, "clone", "-q", str(upstream), str(clone))
    run_git(clone, "checkout", "-q", "-b", "elsewhere")
    ran = launch(clone, "--name", "viaremote", "--json")
    assert ran.returncode == 0, ran.stderr
    made = json.loads(ran.stdout)
    assert made["base"] == "trunk"
    assert made["place"] == "fix--viaremote"
    assert made["branch"] == "fix/viaremote"
    assert made["path"] == f"{clone.resolve()}/places/fix--viaremote"
    local = repository(host / "local")
    run_git(local, "checkout", "-q", "-b", "develop")
    ran = launch(local, "--name", "viahead", "--json")
    assert json.loads(ran.stdout)["base"] == "develop"


def test_more_bad_input_makes_nothing(host: Path) -> None:
    """A file for a repository, a brief that is not UTF-8, a branch in the way of the name's."""
    repo = repository(host / "repo")
    before = world_of(repo)
    ran = flume("launch", "--repository", str(repo / "README.md"), "--kind", "fix",
                "--name", "x", "--brief", "b")  # fmt: skip
    assert ran.returncode == 2
    assert "is a file, not a folder" in ran.stderr
    ran = flume("launch", "--repository", str(repo), "--kind", "fix", "--name", "x",
                stdin_bytes=b"caf\xe9 au lait\n")  # fmt: skip
    assert ran.returncode == 2
    assert "not UTF-8 text" in ran.stderr
    run_git(repo, "branch", "fix")
    before = world_of(repo)
    ran = launch(repo, "--name", "blocked")
    assert ran.returncode == 2
    assert "the branch fix in" in ran.stderr
    assert "leaves no room for the branch fix/blocked" in ran.stderr
    assert world_of(repo) == before


@pytest.mark.parametrize(
    ("agent", "variable"), [("claude", "FLUME_CLAUDE"), ("codex", "FLUME_CODEX")]
)
def test_an_agent_not_installed_makes_nothing(
    host: Path, monkeypatch: pytest.MonkeyPatch, woken: list[str], agent: str, variable: str
) -> None:
    """The agent's program and tmux are looked for before anything is made: exit 2, each named.

    Not found on PATH, or not where its variable says: the launch names the program and how to
    mend it. Found, but no tmux for ``--panes tmux``: named too; ``--panes print`` needs none.
    """
    repo = repository(host / "repo")
    before = world_of(repo)
    path = os.environ["PATH"]
    empty = host / "empty-bin"
    empty.mkdir()
    only_agent = host / "agent-bin"
    only_agent.mkdir()
    (only_agent / agent).write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    (only_agent / agent).chmod(0o755)
    monkeypatch.delenv(variable, raising=False)

    monkeypatch.setenv("PATH", str(empty))
    ran = launch(repo, "--name", "x", "--agent", agent)
    assert ran.returncode == 2, ran.stderr
    assert f"the agent's program {agent!r} is not installed here (not on PATH)" in ran.stderr
    assert f"install {agent} and put it on PATH, or set {variable} to its path" in ran.stderr

    monkeypatch.setenv(variable, str(host / "nowhere" / agent))
    ran = launch(repo, "--name", "x", "--agent", agent)
    assert ran.returncode == 2, ran.stderr
    assert f"({variable} names {host / 'nowhere' / agent})" in ran.stderr
    monkeypatch.delenv(variable)

    monkeypatch.setenv("PATH", str(only_agent))
    ran = launch(repo, "--name", "x", "--agent", agent)
    assert ran.returncode == 2, ran.stderr
    assert "tmux is not installed here" in ran.stderr
    assert "--panes print" in ran.stderr
    assert woken == []
    monkeypatch.setenv("PATH", path)
    assert world_of(repo) == before

    monkeypatch.setenv("PATH", str(only_agent))
    ran = launch(repo, "--name", "x", "--agent", agent, "--panes", "print")
    assert ran.returncode == 0, ran.stderr
    assert woken == ["wake"]


def test_a_launch_asks_git_each_thing_once(
    host: Path, monkeypatch: pytest.MonkeyPatch, woken: list[str]
) -> None:
    """A launch's checks run no git command twice: four in all, from the main worktree.

    The repository, its shared git directory and its commits are one ``rev-parse``; the branch
    heads, the base's commit and the remote's HEAD one ``for-each-ref``; with no remote, the
    main worktree's branch is asked (two ``symbolic-ref``). A path git's answer cannot be read
    line by line for (one holding a newline) is asked the long way and launches all the same.
    """
    asked: list[tuple[str, tuple[str, ...]]] = []
    run = git.run

    def counted(cwd: Path, *args: str, pass_fds: tuple[int, ...] = ()) -> git.Ran:
        asked.append((str(cwd), args))
        return run(cwd, *args, pass_fds=pass_fds)

    monkeypatch.setattr(git, "run", counted)
    for folder in ("repo", "new\nline"):
        repo = repository(host / folder)
        asked.clear()
        ran = launch(repo, "--name", "once", *PRINTED)
        assert ran.returncode == 0, ran.stderr
        assert len(asked) == len(set(asked)), asked
    assert len(asked) > 5  # the long way
    asked.clear()
    assert launch(host / "repo", "--name", "twice", *PRINTED).returncode == 0
    assert len(asked) == 4, asked
    assert woken == ["wake"] * 3


def test_a_linked_worktree_launches_in_its_main_worktree_s_repository(host: Path) -> None:
    """A launch from a linked worktree is the main worktree's; its commits are the main's.

    One from a main worktree whose branch has no commit yet is refused as it always was, though
    the linked worktree it is asked from has commits; from a folder inside it, it launches.
    """
    repo = repository(host / "repo", files={"README.md": "hello\n", "sub/x.txt": "x\n"})
    linked = host / "linked"
    run_git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    ran = launch(linked / "sub", "--name", "linked", "--json", *PRINTED)
    assert ran.returncode == 0, ran.stderr
    made = json.loads(ran.stdout)
    assert made["repository"] == str(repo)
    assert made["path"] == str(repo / "places" / "fix--linked")
    assert made["base"] == "main"
    # The supervisor makes that place on its own time: the world is compared once it has, its
    # files checked out and its agent written down (git lists a worktree before its checkout).
    deadline = time.monotonic() + 60
    while b'"AgentStarted"' not in Path(made["journal"]).read_bytes():
        assert time.monotonic() < deadline, "the supervisor never made the first place"
        time.sleep(0.02)
    run_git(repo, "checkout", "-q", "--orphan", "unborn")
    before = world_of(repo)
    ran = launch(linked, "--name", "unborn", *PRINTED)
    assert ran.returncode == 2
    assert f"{repo} has no commits" in ran.stderr
    assert world_of(repo) == before
