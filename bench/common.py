"""What the benchmarks share: a private host, and realistic repositories built at bench time."""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

from flume.shell.tools import git

IDENTITY = {
    "GIT_AUTHOR_NAME": "flume bench",
    "GIT_AUTHOR_EMAIL": "bench@flume.invalid",
    "GIT_COMMITTER_NAME": "flume bench",
    "GIT_COMMITTER_EMAIL": "bench@flume.invalid",
}


def private_host() -> Path:
    """Point HOME and the XDG folders at a fresh temporary folder; it is returned."""
    home = Path(tempfile.mkdtemp(prefix="flume-bench-"))
    os.environ["HOME"] = str(home)
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        os.environ[name] = str(home / name.lower())
    os.environ.update(IDENTITY)
    return home


def _git(cwd: Path, *args: str) -> str:
    ran = git.run(cwd, *args)
    if not ran.ok:
        message = f"git {' '.join(args)}: {ran.err}"
        raise RuntimeError(message)
    return ran.out


def realistic_repository(folder: Path, *, files: int = 3000, commits: int = 60) -> Path:
    """A repository shaped like a middling project.

    ``files`` source files of about 2 KB in nested folders, and a history of ``commits``
    commits touching a file each.
    """
    folder.mkdir(parents=True)
    _git(folder, "init", "-q", "-b", "main")
    line = "def function_{n}(value):\n    return value * {n} + len(str(value))\n\n"
    for number in range(files):
        path = folder / f"pkg{number % 17}" / f"mod{number % 7}" / f"file{number}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line.format(n=n) for n in range(number, number + 30)))
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "the project")
    for number in range(commits):
        path = folder / f"pkg{number % 17}" / f"change{number}.py"
        path.write_text(f"CHANGE = {number}\n")
        _git(folder, "add", "-A")
        _git(folder, "commit", "-q", "-m", f"change {number}")
    return folder.resolve()


def small_repository(folder: Path) -> Path:
    """A repository with one commit."""
    folder.mkdir(parents=True)
    _git(folder, "init", "-q", "-b", "main")
    (folder / "README.md").write_text("hello\n")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "start")
    return folder.resolve()


def best(samples: list[float]) -> float:
    """The best (lowest) time: the one least disturbed by the rest of the machine."""
    return min(samples)


def median(samples: list[float]) -> float:
    """The median time."""
    return statistics.median(samples)
