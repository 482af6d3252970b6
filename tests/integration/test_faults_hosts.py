"""Faults of where places live: two hosts on one repository, and bare repositories.

Each fault is met by the real supervisor (the ``flume daemon`` the CLI starts), the test agent
in real tmux panes and real git, on a host of the test's own (issue 15, items 3 and 4).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from flume.core.observations import Activity, AgentExited, Launched
from flume.core.place import Delivered
from flume.shell.panes.tmux import Tmux
from flume.shell.store import codec, journal, places
from flume.shell.tools import git
from flume.testing import scenario
from tests.integration.agents_kit import observations, place_of, wait_for
from tests.integration.conftest import stop_supervisor
from tests.integration.places_kit import Harness, flume, flume_process, launch_place, run_git

#: How long a fix has to land with the test agent (a few seconds when the machine is idle).
LANDING_SECONDS = 120


def status_of(repository: Path) -> list[dict[str, object]]:
    """``flume status --json`` of the repository's places."""
    ran = flume_process("status", "--json", "--repository", str(repository))
    assert ran.returncode == 0, ran.stderr
    return list(json.loads(ran.stdout)["places"])


def phase_of(repository: Path, name: str) -> str | None:
    """The place's phase as ``flume status --json`` says it, or None when it is not listed."""
    return next((str(p["phase"]) for p in status_of(repository) if p["place"] == name), None)


# --- item 4: the .bare layout, bare repositories ---------------------------------------------


def bare_layout(folder: Path, seed: Path) -> Path:
    """``folder/.bare`` cloned bare from ``seed``, ``folder/.git`` naming it, ``main`` beside it.

    The layout worktree-heavy users keep; returns the worktree ``folder/main``.
    """
    folder.mkdir()
    run_git(folder, "clone", "-q", "--bare", str(seed), ".bare")
    (folder / ".git").write_text("gitdir: ./.bare\n", encoding="utf-8")
    run_git(folder, "worktree", "add", "-q", "main", "main")
    # The repository's config is read beside .bare: the layout's folder is its main worktree.
    (folder / ".flume.toml").write_text(scenario.FAST_TIMING, encoding="utf-8")
    return folder / "main"


def test_a_fix_launched_in_the_bare_layout_lands_and_is_tidied(tmp_path: Path, panes: Tmux) -> None:
    """Launched from a worktree of ``proj/.bare``, the place is made beside it and lands.

    The test agent's ``flume submit`` inside the place finds it (before, it was "not inside a
    place flume made" and the submit stage waited for ever).
    """
    del panes
    sample = scenario.fix_that_lands(tmp_path)
    project = tmp_path / "proj"
    main = bare_layout(project, sample.repository)
    argv = sample.argv()
    argv[argv.index("--repository") + 1] = str(main)
    launched = flume_process(*argv)
    assert launched.returncode == 0, launched.stderr
    assert f"{project.resolve()}/places/fix--greet" in launched.stderr
    wait_for(lambda: phase_of(project, "fix--greet") == "tidied", LANDING_SECONDS, "tidied")
    assert run_git(project / ".bare", "show", "main:greet.txt") == "hello\n"
    # The main worktree, which has main checked out, followed the landing.
    assert (main / "greet.txt").read_text(encoding="utf-8") == "hello\n"
    assert not (project / "places" / "fix--greet").exists()
    # Asked from the layout's folder or from its worktree, status names the one repository.
    assert [p["repository"] for p in status_of(main)] == [str(project.resolve())]


def test_flume_needs_inside_a_place_of_the_bare_layout_reaches_it(
    tmp_path: Path, panes: Tmux
) -> None:
    """The agent's ``flume needs``, run inside a place of the .bare layout, stops its stage."""
    del panes
    seed = scenario.make_repository(tmp_path / "seed", {"README.md": "hi\n"})
    project = tmp_path / "proj"
    bare_layout(project, seed)
    script = scenario.write_script(
        tmp_path,
        '[[turn]]\nmatch = ":code:1]"\nsteps = [{run = ["flume", "needs", "which greeting?"]}]\n',
    )
    ran = flume_process(
        "launch", "--repository", str(project), "--kind", "fix", "--name", "ask",
        "--brief", "Ask.", "--agent", "test", "--agent-arg=--script", f"--agent-arg={script}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    wait_for(lambda: phase_of(project, "fix--ask") == "short", LANDING_SECONDS, "short")
    (shown,) = status_of(project)
    assert shown["short_cause"] == "needs"
    assert shown["needs"] == "which greeting?"
    assert shown["path"] == f"{project.resolve()}/places/fix--ask"
    said = flume_process("status", "--repository", str(project)).stdout
    assert "fix--ask code: stopped short (needs): which greeting?" in said
    # Also by hand, from a folder inside the place: the place is found, and refuses sensibly.
    inside = subprocess.run(
        [sys.executable, "-m", "flume", "submit"],
        cwd=project / "places" / "fix--ask",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=os.environ.copy(),
    )
    assert "not inside a place flume made" not in inside.stderr, inside.stderr


def test_a_plain_bare_repository_is_refused_as_bare(tmp_path: Path, host: Path) -> None:
    """A launch naming a bare repository says it is bare and how to mend it; nothing is made."""
    del host
    seed = scenario.make_repository(tmp_path / "seed")
    bare = tmp_path / "h11.git"
    run_git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    before = sorted(str(p) for p in bare.rglob("*"))
    ran = flume_process(
        "launch", "--repository", str(bare), "--kind", "fix", "--name", "x", "--brief", "b"
    )
    assert ran.returncode == 2, ran.stdout
    assert f"{bare} is a bare repository" in ran.stderr
    assert "not in a git repository" not in ran.stderr
    assert f"git clone {bare.resolve()} <folder>" in ran.stderr
    assert "Traceback" not in ran.stderr
    assert sorted(str(p) for p in bare.rglob("*")) == before
    assert not places.registry_path().exists()


def test_a_worktree_of_a_bare_repository_is_refused_naming_the_bare_repository(
    tmp_path: Path, host: Path
) -> None:
    """A worktree of a plain bare repository names that repository, not the folder holding it."""
    del host
    seed = scenario.make_repository(tmp_path / "seed")
    holder = tmp_path / "h11"
    holder.mkdir()
    bare = holder / "repo.git"
    run_git(holder, "clone", "-q", "--bare", str(seed), str(bare))
    run_git(bare, "worktree", "add", "-q", str(holder / "work"), "main")
    ran = flume_process(
        "launch", "--repository", str(holder / "work"), "--kind", "fix", "--name", "x",
        "--brief", "b",
    )  # fmt: skip
    assert ran.returncode == 2, ran.stdout
    assert f"is a worktree of the bare repository {bare.resolve()}" in ran.stderr
    assert "has no commits" not in ran.stderr
    assert "Traceback" not in ran.stderr
    assert sorted(git.heads(bare)) == ["main"]
    assert not (holder / "places").exists()
    assert not places.registry_path().exists()


# --- item 3: two hosts on one repository ------------------------------------------------------

#: Host A's fix: it commits, then works on until the test opens the gate; then it submits.
GATED_SCRIPT = """\
[[turn]]
match = ":code:1]"
steps = [
  {{write = {{path = "a.txt", text = "a\\n"}}}},
  {{commit = "Add a"}},
  {{run = ["sh", "-c", "while [ ! -e {gate} ]; do sleep 0.1; done"]}},
]

[[turn]]
match = ":submit:1]"
steps = [{{run = ["flume", "submit"]}}]
"""


def as_host(environment: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run a flume command as another host (its own state folder and tmux server) would."""
    return subprocess.run(  # noqa: S603 (our own interpreter and module)
        [sys.executable, "-m", "flume", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=environment,
    )


def test_two_hosts_on_one_repository_each_carry_only_their_own_places(
    tmp_path: Path, panes: Tmux, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second host's supervisor neither follows nor judges the first host's working place.

    Host A's agent has committed (its deliverable) and works on; host B (another state
    folder, another tmux server) launches in the same repository, which starts its supervisor.
    Before, B's first tick journaled ``AgentExited`` for A's live agent (not in B's tmux), and
    A's supervisor did the same to B's: both places went short. Now B's fix lands, A's place
    works on untouched, status names whose each place is, and A's fix lands once its agent is
    done.
    """
    del panes
    sample = scenario.fix_that_lands(tmp_path, name="b")
    repo = sample.repository
    gate = tmp_path / "gate"
    gated = scenario.write_script(tmp_path, GATED_SCRIPT.format(gate=gate), "gated.toml")
    here = flume_process(
        "launch", "--repository", str(repo), "--kind", "fix", "--name", "a",
        "--brief", "Add a.", "--agent", "test", "--agent-arg=--script", f"--agent-arg={gated}",
    )  # fmt: skip
    assert here.returncode == 0, here.stderr
    journal_a = places.journals_dir(repo) / "fix--a" / places.JOURNAL

    def committed_and_working() -> bool:
        place = place_of(journal_a)
        return (
            isinstance(place.stage.phase, Delivered)
            and place.agent is not None
            and place.agent.activity is Activity.WORKING
        )

    wait_for(committed_and_working, LANDING_SECONDS, "host A's agent to commit and work on")
    state_a = str(places.state_dir())
    sockets = Path(tempfile.mkdtemp(prefix="flb-", dir="/tmp"))
    host_b = {
        **os.environ,
        "XDG_STATE_HOME": str(tmp_path / "state-b"),
        "FLUME_TMUX_SOCKET": str(sockets / "tmux.sock"),
    }
    try:
        there = as_host(host_b, *sample.argv())
        assert there.returncode == 0, there.stderr

        def b_status() -> dict[str, dict[str, object]]:
            ran = as_host(host_b, "status", "--json", "--repository", str(repo))
            assert ran.returncode == 0, ran.stderr
            return {str(p["place"]): p for p in json.loads(ran.stdout)["places"]}

        wait_for(lambda: b_status()["fix--b"]["phase"] == "tidied", LANDING_SECONDS, "B tidied")
        # Host B's supervisor ran all the while, and judged nothing of A's.
        seen_a = observations(journal_a)
        assert not [seen for seen in seen_a if isinstance(seen, AgentExited)], seen_a
        assert committed_and_working(), place_of(journal_a)
        from_b = b_status()
        assert from_b["fix--a"]["host"] == state_a
        assert from_b["fix--a"]["phase"] == "delivered"
        assert "host" not in from_b["fix--b"]
        said = as_host(host_b, "status", "--repository", str(repo)).stdout
        assert f"fix--a: host: {state_a} (another host launched it" in said
        daemon_b = as_host(host_b, "daemon", "status", "--json")
        assert daemon_b.returncode == 0, daemon_b.stderr
        assert json.loads(daemon_b.stdout)["other_hosts_places"] == 1
        # From host A, its own place names no host, and B's names B's state folder.
        from_a = {str(p["place"]): p for p in status_of(repo)}
        assert "host" not in from_a["fix--a"]
        assert from_a["fix--b"]["host"] == str(tmp_path / "state-b" / "flume")
        # A's agent finishes; its own supervisor carries the fix to its landing.
        gate.touch()
        wait_for(lambda: phase_of(repo, "fix--a") == "tidied", LANDING_SECONDS, "A tidied")
        assert run_git(repo, "show", "main:a.txt") == "a\n"
        assert run_git(repo, "show", "main:greet.txt") == "hello\n"
    finally:
        with monkeypatch.context() as inside:
            inside.setenv("XDG_STATE_HOME", host_b["XDG_STATE_HOME"])
            stop_supervisor()
        Tmux(sockets / "tmux.sock").kill_server()
        shutil.rmtree(sockets, ignore_errors=True)


def rewrite_launch(path: Path, host: dict[str, str] | None) -> str:
    """Rewrite the journal's launch line with ``host`` (None: as before hosts were recorded)."""
    first, *rest = path.read_text(encoding="utf-8").splitlines()
    data = json.loads(first)
    assert "host" in data["launch"], data
    if host is None:
        del data["launch"]["host"]
    else:
        data["launch"]["host"] = host
    line = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    path.write_text("\n".join([line, *rest]) + "\n", encoding="utf-8")
    return line


def test_a_launch_journaled_before_hosts_replays_unchanged_and_is_followed(
    tmp_path: Path, harness: Harness
) -> None:
    """An old journal, whose launch names no host, reads as before and any supervisor follows it.

    Its line decodes and encodes back to the very same text, and status shows no host.
    """
    repo = scenario.make_repository(tmp_path / "repo")
    path = launch_place(repo, "old")
    line = rewrite_launch(path, None)
    (seen,) = journal.read(path).observations
    assert isinstance(seen, Launched)
    assert seen.launch.host is None
    assert codec.encode(seen) == line
    harness.settle()
    place = harness.place(path)
    assert place.made
    assert Path(place.path).is_dir()
    (shown,) = status_of(repo)
    assert "host" not in shown
    assert harness.supervisor.report().other_hosts_places == 0


def test_a_supervisor_leaves_another_hosts_launch_alone(tmp_path: Path, harness: Harness) -> None:
    """A launch by another host is read, never acted on: no worktree, no line journaled."""
    repo = scenario.make_repository(tmp_path / "repo")
    path = launch_place(repo, "theirs")
    rewrite_launch(path, {"id": "0ther", "state": "/home/someone/.local/state/flume"})
    before = path.read_text(encoding="utf-8")
    harness.pass_time(120)
    assert path.read_text(encoding="utf-8") == before
    assert not (repo / "places" / "fix--theirs").exists()
    assert harness.supervisor.report().other_hosts_places == 1
    (shown,) = status_of(repo)
    assert shown["host"] == "/home/someone/.local/state/flume"
    assert (shown["life"], shown["phase"]) == ("making", "queued")


def test_tidy_leaves_another_hosts_dropped_place_to_that_host(
    tmp_path: Path, host: Path, woken: list[str]
) -> None:
    """``flume tidy`` keeps a place another host launched, naming that host; nothing is asked.

    Before, it journaled a tidy no supervisor of this host would ever perform, and said
    "waiting ... run flume tidy again" for ever.
    """
    del host
    repo = scenario.make_repository(tmp_path / "repo")
    path = launch_place(repo, "theirs")
    rewrite_launch(path, {"id": "0ther", "state": "/home/someone/.local/state/flume"})
    dropped = flume("drop", "fix--theirs", "--repository", str(repo))
    assert dropped.returncode == 0, dropped.stderr
    before = path.read_text(encoding="utf-8")
    tidied = flume("tidy", "--repository", str(repo), "--timeout", "2", "--json")
    assert tidied.returncode == 0, tidied.stderr
    (outcome,) = json.loads(tidied.stdout)["places"]
    assert outcome["state"] == "kept"
    assert outcome["kept"][0]["reason"] == (
        "launched by another host (/home/someone/.local/state/flume): run flume tidy there"
    )
    assert path.read_text(encoding="utf-8") == before
    assert woken == ["wake"]  # the drop's wake-up; tidy asked nothing of this host's supervisor
    planned = flume("tidy", "--dry-run", "--repository", str(repo), "--json")
    assert json.loads(planned.stdout)["places"] == [outcome]
