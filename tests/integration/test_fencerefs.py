"""A fenced agent's branch and objects carried to the repository's, with real git.

The agent's branch lives in a stand-in folder and its objects in a folder of its own
(:mod:`flume.shell.agents.fencerefs`); ``settle`` carries its commits to the real branch and the
real branch's moves to the stand-in. Here git itself plays the agent: it commits with
``GIT_OBJECT_DIRECTORY`` naming the agent's folder, as inside the fence.
"""

from __future__ import annotations

import os
import subprocess
import zlib
from pathlib import Path

from flume.core.ids import BranchName, Sha
from flume.shell.agents import fencerefs
from flume.shell.agents.fencerefs import Mirror
from flume.shell.tools import git
from tests.integration.places_kit import GIT_IDENTITY, repository, run_git

BRANCH = BranchName("sb/mine")


def _made(tmp_path: Path) -> tuple[Path, Mirror]:
    repo = repository(tmp_path / "repo")
    run_git(repo, "branch", str(BRANCH), "main")
    run_git(repo, "branch", "sb/victim", "main")
    mirror = Mirror(folder=tmp_path / "fence", common=repo / ".git", branch=BRANCH)
    fencerefs.prepare(mirror, BranchName("main"))
    return repo, mirror


def _agent_commits(repo: Path, mirror: Mirror, parent: str, text: str) -> Sha:
    """A commit made as the fenced agent makes it: its objects in its own folder only."""
    env = {
        **os.environ,
        **GIT_IDENTITY,
        "GIT_OBJECT_DIRECTORY": str(mirror.objects),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo / ".git" / "objects"),
    }

    def agent_git(*args: str, stdin: str | None = None) -> str:
        return subprocess.run(  # noqa: S603
            ["git", "-C", str(repo), *args],  # noqa: S607
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stdout.strip()

    blob = agent_git("hash-object", "-w", "--stdin", stdin=text)
    tree = agent_git("mktree", stdin=f"100644 blob {blob}\tfile.txt\n")
    commit = agent_git("commit-tree", tree, "-p", parent, "-m", text)
    (mirror.ref).write_text(commit + "\n", encoding="ascii")
    return Sha(commit)


def test_a_commit_made_in_the_fence_reaches_the_real_branch_its_objects_copied(
    tmp_path: Path,
) -> None:
    """Carried in: the real branch moves to it, the repository holds its objects, fsck is clean."""
    repo, mirror = _made(tmp_path)
    start = run_git(repo, "rev-parse", BRANCH).strip()
    made = _agent_commits(repo, mirror, start, "mended\n")
    assert not git.run(repo, "cat-file", "-e", made).ok  # in the agent's folder alone
    assert fencerefs.settle(mirror, Sha(start)) == made
    assert run_git(repo, "rev-parse", BRANCH).strip() == made
    assert run_git(repo, "show", f"{BRANCH}:file.txt") == "mended\n"
    run_git(repo, "fsck", "--strict")
    assert run_git(repo, "rev-parse", "sb/victim").strip() == start
    # Nothing moved since: a second look carries nothing and asks git nothing new.
    assert fencerefs.settle(mirror, made) == made


def test_a_move_of_the_real_branch_reaches_the_stand_in(tmp_path: Path) -> None:
    """The branch moved outside (a merge): the stand-in follows; the next commit builds on it."""
    repo, mirror = _made(tmp_path)
    (repo / "merged.txt").write_text("merged\n")
    run_git(repo, "add", "merged.txt")
    run_git(repo, "commit", "-q", "-m", "merged")
    moved = run_git(repo, "rev-parse", "main").strip()
    run_git(repo, "update-ref", f"refs/heads/{BRANCH}", moved)
    assert fencerefs.settle(mirror, Sha(moved)) == moved
    assert fencerefs.read(mirror.ref) == moved
    assert fencerefs.read(mirror.mirrored) == moved


def test_both_moved_apart_the_real_branch_stays_and_the_agent_s_head_is_kept(
    tmp_path: Path,
) -> None:
    """Neither holds the other: nothing lost, the agent's commit kept on a branch of its own."""
    repo, mirror = _made(tmp_path)
    start = run_git(repo, "rev-parse", BRANCH).strip()
    made = _agent_commits(repo, mirror, start, "the agent's\n")
    (repo / "other.txt").write_text("flume's\n")
    run_git(repo, "add", "other.txt")
    run_git(repo, "commit", "-q", "-m", "flume's")
    theirs = run_git(repo, "rev-parse", "main").strip()
    run_git(repo, "update-ref", f"refs/heads/{BRANCH}", theirs)
    assert fencerefs.settle(mirror, Sha(theirs)) == theirs
    assert run_git(repo, "rev-parse", BRANCH).strip() == theirs
    kept = f"{BRANCH}.sandboxed-{made[:12]}"
    assert run_git(repo, "rev-parse", kept).strip() == made
    assert fencerefs.read(mirror.ref) == theirs


def test_an_object_that_is_not_what_its_name_says_is_never_copied(tmp_path: Path) -> None:
    """A forged loose object (another's content under a name) stays out; the branch stays put."""
    repo, mirror = _made(tmp_path)
    start = run_git(repo, "rev-parse", BRANCH).strip()
    made = _agent_commits(repo, mirror, start, "mended\n")
    forged = mirror.objects / made[:2] / made[2:]
    forged.chmod(0o644)
    forged.write_bytes(zlib.compress(b"blob 6\0forged"))
    assert fencerefs.settle(mirror, Sha(start)) == start
    assert run_git(repo, "rev-parse", BRANCH).strip() == start
    assert not (repo / ".git" / "objects" / made[:2] / made[2:]).exists()


def test_a_stand_in_naming_no_commit_is_not_carried(tmp_path: Path) -> None:
    """The agent wrote a blob's id (or junk) as its branch: the real branch does not move."""
    repo, mirror = _made(tmp_path)
    start = run_git(repo, "rev-parse", BRANCH).strip()
    blob = run_git(repo, "rev-parse", "main:README.md").strip()
    mirror.ref.write_text(blob + "\n", encoding="ascii")
    assert fencerefs.settle(mirror, Sha(start)) == start
    mirror.ref.write_text("not a sha\n", encoding="ascii")
    assert fencerefs.settle(mirror, Sha(start)) == start
    assert run_git(repo, "rev-parse", BRANCH).strip() == start


def test_a_pack_the_agent_made_is_checked_by_git_and_moved_in(tmp_path: Path) -> None:
    """The agent packed its objects (``git gc`` inside): git checks the pack, then it lands."""
    repo, mirror = _made(tmp_path)
    start = run_git(repo, "rev-parse", BRANCH).strip()
    made = _agent_commits(repo, mirror, start, "packed\n")
    pack = mirror.objects / "pack"
    pack.mkdir()
    listed = subprocess.run(  # noqa: S603
        ["git", "-C", str(repo), "rev-list", "--objects", made, "--not", start],  # noqa: S607
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GIT_OBJECT_DIRECTORY": str(mirror.objects),
             "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo / ".git" / "objects")},
    ).stdout  # fmt: skip
    subprocess.run(  # noqa: S603
        ["git", "-C", str(repo), "pack-objects", "-q", str(pack / "pack")],  # noqa: S607
        input=listed,
        text=True,
        check=True,
        env={**os.environ, "GIT_OBJECT_DIRECTORY": str(mirror.objects),
             "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo / ".git" / "objects")},
    )  # fmt: skip
    for folder in mirror.objects.iterdir():
        if len(folder.name) == 2:
            for each in folder.iterdir():
                each.unlink()
    assert fencerefs.settle(mirror, Sha(start)) == made
    run_git(repo, "fsck", "--strict")
    assert run_git(repo, "show", f"{BRANCH}:file.txt") == "packed\n"
