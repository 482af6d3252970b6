"""OpenSpec changes, as their files say: live from the working tree, committed at each head.

Theory of operation. :class:`Changes` is one of the supervisor's observers, for places whose kind
works on an OpenSpec change (a stage whose deliverable is :class:`~flume.core.kinds.ChangeWritten`
or :class:`~flume.core.kinds.TasksTicked`). The change's id is the launch's name: its files are
``openspec/changes/<name>/``. It reports two kinds of :class:`ChangeSeen`, and decides nothing:

- **live** (``head=None``), each tick, from the working tree: whether the change is written and
  how many of its tasks are ticked. A few ``stat`` calls and one small read, no process; reported
  only when what it says moved since the last report for that place, for status.
- **committed** (``head=<sha>``), once per new branch head: the change's files *at that commit*
  (``git ls-tree``, then ``git archive`` of ``openspec/`` into a temporary folder, so uncommitted
  edits never count), its planning judged by ``openspec status --json`` and its validity by
  ``openspec validate <name> --strict --json`` run in that folder. This is the evidence the core
  weighs for the change's deliverables.

Where the CLI comes from: ``$FLUME_OPENSPEC``, else ``<flume>/.node/node_modules/.bin/openspec``
(``scripts/install-agents``), else ``openspec`` on PATH. Without one, validation is skipped
(``valid=None``, logged, and said by :attr:`Changes.validation`) and planning is judged from the
files by the default schema's rule (reference/openspec.md §5, §7).

Tasks are counted as OpenSpec 1.13.2 counts them (``TASK_LINE_PATTERN``, reference §3): any list
item whose bracket holds at most one non-space character, indented or not, fenced or not; only
``x``/``X`` is ticked.
"""

from __future__ import annotations

import logging
import os
import re
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from flume.core.ids import Instant, Sha
from flume.core.kinds import ChangeWritten, Kind, TasksTicked, steps
from flume.core.observations import ChangeSeen, Observation
from flume.core.place import Life, Place
from flume.shell.store.follower import Followed
from flume.shell.tools import git
from flume.shell.tools.locate import NODE_BIN
from flume.shell.tools.openspec import CHANGES, OpenSpec

_log = logging.getLogger("flume.openspec")

# JavaScript's ``\s`` exactly (Python's also takes \x1c-\x1f and \x85, and not U+FEFF).
_S = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
#: OpenSpec 1.13.2's ``TASK_LINE_PATTERN`` (src/utils/task-progress.ts). Its marker class is one
#: UTF-16 unit, so a character outside the BMP (two units) is no marker: excluded here too.
_TASK_LINE = re.compile(
    rf"[{_S}]*(?:[-*+]|[0-9]{{1,9}}[.)])[{_S}]*"
    rf"\[(?:[{_S}]*([^\]{_S}\U00010000-\U0010ffff]?)[{_S}]*\](?![(\[])|[{_S}]+\])"
)
#: ``skip_specs: true`` in ``.openspec.yaml`` (YAML 1.2's spellings of true).
_SKIP_SPECS = re.compile(r"^skip_specs:[ \t]*(?:true|True|TRUE)[ \t]*(?:#.*)?$", re.MULTILINE)


def count_tasks(text: str) -> tuple[int, int]:
    """How many tasks of a tasks.md are ticked, and how many there are: (ticked, total)."""
    ticked = total = 0
    for line in text.split("\n"):
        match = _TASK_LINE.match(line)
        if match:
            total += 1
            ticked += (match.group(1) or "").lower() == "x"
    return ticked, total


def skips_specs(metadata: str) -> bool:
    """The change's ``.openspec.yaml`` says it has no spec deltas by design (``skip_specs``)."""
    return _SKIP_SPECS.search(metadata) is not None


@attrs.frozen(kw_only=True)
class ChangeFiles:
    """What a change's folder holds, read from a working tree or a checkout of a commit."""

    #: The folder exists.
    exists: bool = False
    proposal: bool = False
    design: bool = False
    tasks: bool = False
    #: Some ``specs/**/*.md`` exists (the CLI's glob for the specs artifact).
    specs: bool = False
    skip_specs: bool = False
    ticked: int = 0
    total: int = 0

    @property
    def written(self) -> bool:
        """proposal.md and tasks.md, and a spec delta (or ``skip_specs: true``)."""
        return self.proposal and self.tasks and (self.specs or self.skip_specs)

    @property
    def planned(self) -> bool:
        """Every planning artifact of the default schema (spec-driven) exists.

        ``openspec status`` waits for design.md too, though its instructions call it optional
        (reference §7): the files are judged the way the CLI would judge them.
        """
        return self.written and self.design


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _has_markdown(folder: Path) -> bool:
    """Some ``*.md`` file under ``folder``, at any depth (stops at the first)."""
    for _root, _dirs, files in os.walk(folder):
        if any(name.endswith(".md") for name in files):
            return True
    return False


def read_change(root: Path, name: str) -> ChangeFiles:
    """What ``<root>/openspec/changes/<name>/`` holds: a few stats and two small reads."""
    folder = root / CHANGES / name
    if not folder.is_dir():
        return ChangeFiles()
    tasks = _read(folder / "tasks.md")
    ticked, total = count_tasks(tasks) if tasks is not None else (0, 0)
    metadata = _read(folder / ".openspec.yaml")
    return ChangeFiles(
        exists=True,
        proposal=_is_file(folder / "proposal.md"),
        design=_is_file(folder / "design.md"),
        tasks=tasks is not None,
        specs=_has_markdown(folder / "specs"),
        skip_specs=metadata is not None and skips_specs(metadata),
        ticked=ticked,
        total=total,
    )


def committed_files(repository: Path, head: Sha, name: str) -> list[str] | None:
    """The change's files at ``head`` (paths from the repository's top); None if git failed."""
    ran = git.run(
        repository, "ls-tree", "-r", "-z", "--name-only", "--full-tree", head, "--",
        f"{CHANGES}/{name}/",
    )  # fmt: skip
    if not ran.ok:
        _log.warning("git ls-tree %s in %s failed: %s", head, repository, ran.err.strip())
        return None
    return [path for path in ran.out.split("\0") if path]


def check_out(repository: Path, head: Sha, into: Path) -> bool:
    """Write ``openspec/`` as committed at ``head`` (archived changes left out) under ``into``.

    ``git archive`` into a tar file, unpacked here: one process, no worktree to register or
    remove, and nothing of the working tree. (It honours ``export-ignore`` attributes, which a
    repository would have to set on its own OpenSpec files to matter.)
    """
    tar = into / "openspec.tar"
    ran = git.run(
        repository, "archive", "--format=tar", "-o", str(tar), head, "--",
        ":(top)openspec", ":(top,exclude)openspec/changes/archive",
    )  # fmt: skip
    if not ran.ok:
        _log.warning("git archive %s in %s failed: %s", head, repository, ran.err.strip())
        return False
    with tarfile.open(tar) as archive:
        archive.extractall(into / "tree", filter="data")
    tar.unlink()
    return True


def is_change_kind(kind: Kind) -> bool:
    """The kind works on an OpenSpec change: one of its stages delivers one."""
    return any(
        isinstance(each.deliverable, ChangeWritten | TasksTicked) for each in steps(kind.body)
    )


#: How many kinds' answers are remembered before all are forgotten (and worked out again).
_KINDS_KEPT = 1024


def _is_safe_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in {".", ".."}


#: Which followed place a memory is for: its journal, and that file's identity (a name launched
#: again is a new journal file, and a new place).
_Key = tuple[Path, tuple[int, int] | None]


class Changes:
    """The supervisor's observer of OpenSpec changes, live and committed."""

    def __init__(self, cli: Path | None) -> None:
        """Observe with the CLI at ``cli`` (:func:`binary`), or None to skip validation."""
        self.cli = OpenSpec(cli) if cli is not None else None
        #: Whether each kind met works on a change, by its id (the kind kept, so the id is its).
        self._kinds: dict[int, tuple[Kind, bool]] = {}
        #: Said to whoever asks (status, the supervisor's report): how changes are validated.
        self.validation = (
            f"openspec at {cli}"
            if cli is not None
            else "skipped: no OpenSpec CLI ($FLUME_OPENSPEC, .node, PATH)"
        )
        if cli is None:
            _log.warning(
                "no OpenSpec CLI found ($FLUME_OPENSPEC, %s, PATH): changes are not validated "
                "and their planning is judged from their files",
                NODE_BIN / "openspec",
            )
        #: The last live report per place: (written, ticked, total).
        self.live: dict[_Key, tuple[bool, int, int]] = {}
        #: The last head each place's committed change was read at.
        self.heads: dict[_Key, Sha] = {}

    def _is_change_kind(self, kind: Kind) -> bool:
        """:func:`is_change_kind`, remembered for each kind met (asked of every place a tick)."""
        kept = self._kinds.get(id(kind))
        if kept is None or kept[0] is not kind:
            if len(self._kinds) > _KINDS_KEPT:
                self._kinds.clear()
            kept = self._kinds[id(kind)] = (kind, is_change_kind(kind))
        return kept[1]

    def observe(
        self, followed: Sequence[Followed], now: Instant
    ) -> Iterator[tuple[Followed, Observation]]:
        """A live ``ChangeSeen`` when the working tree's counts moved; a committed one per head."""
        current: set[_Key] = set()
        for each in followed:
            place = each.place
            if (
                place is None
                or place.life is not Life.ACTIVE
                or not self._is_change_kind(place.kind)
                or not _is_safe_name(place.launch.name)
            ):
                continue
            key = (each.journal, each.identity)
            current.add(key)
            try:
                for seen in self._place(key, place, now):
                    yield each, seen
            except OSError:
                _log.exception("reading the change of %s failed", place.path)
        self.live = {key: value for key, value in self.live.items() if key in current}
        self.heads = {key: value for key, value in self.heads.items() if key in current}

    def _place(self, key: _Key, place: Place, now: Instant) -> Iterator[ChangeSeen]:
        files = read_change(Path(place.path), place.launch.name)
        said = (files.written, files.ticked, files.total)
        if self.live.get(key) != said:
            self.live[key] = said
            yield ChangeSeen(at=now, written=files.written, ticked=files.ticked, total=files.total)
        head = place.head
        if (
            head is None
            or self.heads.get(key) == head
            or (place.change is not None and place.change.head == head)
        ):
            return
        seen = self.committed(Path(place.launch.repository), head, place.launch.name, now)
        self.heads[key] = head
        if seen is not None:
            yield seen

    def committed(self, repository: Path, head: Sha, name: str, now: Instant) -> ChangeSeen | None:
        """The change as committed at ``head``; None when git could not say."""
        listed = committed_files(repository, head, name)
        if listed is None:
            return None
        if not listed:
            return ChangeSeen(at=now, head=head, written=False)
        with tempfile.TemporaryDirectory(prefix="flume-openspec-") as folder:
            into = Path(folder)
            if not check_out(repository, head, into):
                return None
            root = into / "tree"
            files = read_change(root, name)
            planned: bool | None = None
            valid: bool | None = None
            if self.cli is not None:
                planned = self.cli.is_planning_complete(root, name)
                valid = self.cli.is_valid(root, name)
            else:
                _log.info("%s at %s: not validated (no OpenSpec CLI)", name, head)
            if planned is None:
                _log.info("%s at %s: planning judged from its files", name, head)
                planned = files.planned
        return ChangeSeen(
            at=now,
            head=head,
            written=files.written,
            planning_complete=planned,
            valid=valid,
            ticked=files.ticked,
            total=files.total,
        )
