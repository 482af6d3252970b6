"""Following places' journals: the one reader the supervisor and the events stream share.

Theory of operation. A journal only grows, a line an observation, so a :class:`Follower` keeps,
for each journal it follows (a :class:`Followed`), the byte offset it has read to, and each
:meth:`Follower.read` takes only the whole lines appended since
(:func:`flume.shell.store.journal.read_from`): a read costs what was appended, not what the
journal holds. Each line is folded through ``step``, and what a read folded is handed back as
one :class:`Folded` (the place before its first line, each line's decision in order, the first
line's number); what a reader does with the decisions is its own: the supervisor performs their
actions, the events stream tells their reports.

What can happen to a journal between two reads, and what the follower does:

- a last line still being written, or cut short by a crash: left for a later read (only whole
  lines are read), and the place is as its whole lines say;
- another file at its path (the name tidied and launched again), or the file shorter than what
  was read: another journal, followed anew from its start;
- a line that cannot be read (damage), or one the rules refuse (an edit by hand): the journal is
  given up (``problem`` says why, ``on_problem`` hears it once); once the file changes (mended in
  place) it is read again from its start, and followed if it reads whole;
- its folder gone (tidied and set aside): not read, and forgotten by the next :meth:`discover`.

While the supervisor performs a batch of a journal's actions (``busy``), the journal is neither
followed anew nor forgotten: the old journal's actions finish first.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import os
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import attrs

from flume.core.actions import Action
from flume.core.errors import UsageError
from flume.core.observations import Observation
from flume.core.place import Place
from flume.core.settings import Settings
from flume.core.step import Decision, step
from flume.shell.store import journal, places
from flume.shell.tools import git

#: How much of a digest of the launch line names a journal (in the events' cursors).
_DIGEST_LENGTH = 16


#: How often a journals folder is listed even when its times say it did not change.
LISTED_SECONDS = 5.0
#: A folder's times are trusted once they are this old (a file system's clock ticks coarsely).
_SETTLED_NS = 1_000_000_000


@attrs.define(eq=False)
class Followed:
    """One journal followed: how far it has been read, the place it folds to, and what is to do.

    The first fields are every reader's; the last are what the supervisor keeps for the place
    while it carries it (the events stream leaves them as they are made).
    """

    journal: Path
    #: The file's (device, inode): another file at the path is another launch, read anew.
    identity: tuple[int, int] | None = None
    #: The byte offset just past the last whole line folded.
    offset: int = 0
    #: How many lines were folded: the number of the last one (1 is the launch).
    lines: int = 0
    place: Place | None = None
    #: The instant of the launch, the first line.
    launched_at: float | None = None
    #: A digest of the first line, the launch: the journal's identity wherever it is moved.
    digest: str = ""
    #: Why the journal can no longer be followed (damaged, or edited by hand), naming its path.
    problem: str | None = None
    #: The journal's (size, mtime, ctime) when its problem was found: once the file changes
    #: (mended in place), it is read again from its start, and followed if it reads whole.
    problem_mark: tuple[int, int, int] | None = None
    #: The journal's (size, mtime, ctime) at the last look.
    mark: tuple[int, int, int] | None = None

    # --- what the supervisor keeps ---------------------------------------------------------
    #: Never read yet: its first read performs what it is pending, not its history.
    fresh: bool = True
    #: A batch of its actions is being performed.
    busy: bool = False
    batches: collections.deque[tuple[Action, ...]] = attrs.field(factory=collections.deque)
    #: Another host launched the place: its supervisor carries it, this one only reads it.
    foreign: bool = False
    #: Why the supervisor's last write to the journal failed (a full disk, a read-only folder).
    fault: str | None = None
    #: What could not be journaled yet (the journal could not be written): written, in order,
    #: once it can be, before anything seen later.
    unwritten: collections.deque[Observation] = attrs.field(factory=collections.deque)

    def restart(self, identity: tuple[int, int]) -> None:
        """Follow the journal now at the path, another one, from its start."""
        self.identity, self.offset, self.lines, self.place = identity, 0, 0, None
        self.launched_at, self.digest = None, ""
        self.problem, self.problem_mark = None, None
        self.fresh, self.foreign, self.fault = True, False, None
        self.batches.clear()
        self.unwritten.clear()


@attrs.frozen
class Folded:
    """What one read folded: each new line's decision, in order.

    One record a read, not one a line: a first read folds a journal's every line.
    """

    #: The number of the first line folded (1 is the launch), counting the lines read.
    first: int
    #: The place before the first line (None before the launch); each decision's ``place`` is
    #: the place after its line, and so before the next.
    before: Place | None
    decisions: tuple[Decision, ...]


class Follower:
    """Follows the journals of one repository, or of every repository flume knows.

    ``place`` keeps one place's journal (``<kind>--<name>``). ``on_problem(journal, why)``
    hears once of each journal given up (``why`` names the path only where the error does);
    ``on_lost(repository)`` of each repository that is no longer one, each time it is looked for.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        repository: Path | None = None,
        place: str | None = None,
        on_problem: Callable[[Path, str], None] | None = None,
        on_lost: Callable[[Path], None] | None = None,
    ) -> None:
        self.settings = settings
        self.repository = repository
        self.place = place
        self.on_problem = on_problem
        self.on_lost = on_lost
        #: The journals followed, by path, in the order they were found.
        self.followed: dict[Path, Followed] = {}
        #: Each repository's journals folder, once found.
        self.folders: dict[Path, Path] = {}
        #: What each journals folder listed last: the folder's (mtime, ctime, inode) then, when
        #: it was listed (monotonic), and the journals found in it; None when one of its places
        #: had no journal yet (it is listed again until it has).
        self._listed: dict[Path, tuple[tuple[int, int, int], float, frozenset[Path] | None]] = {}

    def repositories(self) -> list[Path]:
        """The repositories looked in: the one named, or the registry's, as it is now."""
        return [self.repository] if self.repository is not None else places.remembered()

    def discover(self) -> None:
        """Follow every journal there is now (places launched since too); forget the ones gone.

        A journal whose actions are being performed (``busy``) is kept until they are done.
        """
        seen: set[Path] = set()
        for repository in self.repositories():
            folder = self._folder(repository)
            if folder is None:
                continue
            seen |= self._listing(folder)
        for path in [path for path, each in self.followed.items() if path not in seen]:
            if not self.followed[path].busy:
                del self.followed[path]

    def _listing(self, folder: Path) -> frozenset[Path]:
        """The journals in a journals folder, listed again only when the folder may have changed.

        A place's folder made or removed (set aside, tidied) changes the journals folder's
        times: while they are as at the last listing, and were already when it was made (a
        change within the clock's last tick would not show), the journals found then are the
        journals now; and at least every :data:`LISTED_SECONDS` it is listed whatever they say.
        """
        began = time.monotonic()
        try:
            info = folder.stat()
        except (FileNotFoundError, NotADirectoryError):
            return frozenset()
        mark = (info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        kept = self._listed.get(folder)
        if (
            kept is not None
            and kept[0] == mark
            and kept[2] is not None
            and 0 <= began - kept[1] < LISTED_SECONDS
            and time.time_ns() - info.st_ctime_ns > _SETTLED_NS
            and all(path in self.followed for path in kept[2])
        ):
            return kept[2]
        found: set[Path] = set()
        whole = True
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for entry in sorted(os.scandir(folder), key=lambda entry: entry.name):
                # Dot folders are not places: a launch's staging, tidied places set aside.
                if entry.name.startswith(".") or not entry.is_dir():
                    continue
                if self.place is not None and entry.name != self.place:
                    continue
                path = Path(entry.path, places.JOURNAL)
                each = self.followed.get(path)
                if each is None:
                    if not path.exists():
                        whole = False
                        continue  # a launch still making it: found at a later look
                    each = self.followed[path] = Followed(journal=path)
                # The path kept, not the one just made: its hash is computed once, ever.
                found.add(each.journal)
        listed = frozenset(found)
        self._listed[folder] = (mark, began, listed if whole else None)
        return listed

    def _folder(self, repository: Path) -> Path | None:
        """The repository's journals folder; None when it is no longer a repository."""
        folder = self.folders.get(repository)
        if folder is None:
            try:
                folder = self.folders[repository] = places.journals_dir(repository)
            except git.GitError:
                if self.on_lost is not None:
                    self.on_lost(repository)
        return folder

    def read(self, each: Followed) -> Folded | None:
        """Fold the whole lines appended to ``each`` since it was last read; None for none."""
        try:
            stat = each.journal.stat()
        except FileNotFoundError:
            return None  # set aside: discovery forgets it
        identity = (stat.st_dev, stat.st_ino)
        each.mark = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
        mended = each.problem is not None and each.mark != each.problem_mark
        if each.identity is None:
            each.identity = identity
        elif identity != each.identity or stat.st_size < each.offset or mended:
            if each.busy:
                return None  # the old journal's actions finish first
            each.restart(identity)
        if each.problem is not None or stat.st_size <= each.offset:
            return None  # given up until the journal changes (mended, or launched anew)
        try:
            tail = journal.read_from(each.journal, each.offset)
            if not each.digest and tail.observations:
                each.digest = _digest(each.journal)  # the launch line is whole now
        except (OSError, journal.JournalError) as error:
            self._give_up(each, str(error), named=True)
            return None
        return self._fold(each, tail)

    def _fold(self, each: Followed, tail: journal.JournalTail) -> Folded | None:
        """Step each new line; a line the rules refuse, or one that breaks them, gives up.

        The lines folded before such a line are handed back; the journal is read no further.
        """
        first, before = each.lines + 1, each.place
        decisions: list[Decision] = []
        for seen in tail.observations:
            try:
                decision = step(self.settings, each.place, seen)
            except UsageError as error:
                self._give_up(each, f"a line the rules refuse: {error}", named=False)
                break
            except Exception:  # noqa: BLE001 (one bad journal must not stop the others)
                self._give_up(each, traceback.format_exc(limit=3), named=False)
                break
            each.lines += 1
            each.place = decision.place
            if each.launched_at is None:
                each.launched_at = float(seen.at)
            decisions.append(decision)
        else:
            each.offset = tail.offset
        return Folded(first, before, tuple(decisions)) if decisions else None

    def _give_up(self, each: Followed, why: str, *, named: bool) -> None:
        """Follow the journal no more, as it is now, and say why once (``named``: with its path)."""
        each.problem = why if named else f"{each.journal}: {why}"
        each.problem_mark = each.mark
        if self.on_problem is not None:
            self.on_problem(each.journal, why)


def _digest(path: Path) -> str:
    """A digest of a journal's first line, the launch: the same wherever the file moves."""
    with path.open("rb") as file:
        first = file.readline()
    return hashlib.sha256(first).hexdigest()[:_DIGEST_LENGTH]
