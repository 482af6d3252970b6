"""The landers: a submit stage's work carried onto its base (README, "Landing").

Theory of operation. ``flume submit`` makes the core ask for :class:`~flume.core.actions.Land`,
and :class:`Lander` performs it. It reads the repository's config at that moment: a declared
``[land] submit`` command hands the branch to a merge queue; otherwise the embedded lander lands
it here. Either way it answers with observations and never raises: ``Landed`` once the base
holds the work, ``ChecksFailed`` (which goes back to the agent) when the branch cannot land,
``LandingBlocked`` when the base repository's state keeps the base from moving (a lock git left,
the base checked out with uncommitted changes: a person's to mend, and flume tries again), and
nothing when a queue took the branch (:class:`Landings` sees that landing later).

The embedded lander: "rebase on base, run the repository's declared checks, fast-forward base
under a lock (compare-and-swap on the ref; never touch a dirty checkout)". Only the place's own
commits are rebased: those after the base's revision at launch (``Land.start``), so a commit
dropped from the base since the launch is not carried back onto it. The rebase and the
checks run in the place and take no lock, so landings from many places check side by side. Only
moving the base is serialised, by a lock file in the repository's git directory that every
supervisor and thread shares, and the base moves only from the revision the checks ran on. If
another landing moved it meanwhile, the work goes round again (rebased on the new base and
checked again), so what lands is always what was checked; after ``rounds`` tries it gives up.

A landing is observed, never assumed: performing the same ``Land`` twice (a supervisor killed
between landing and journaling) finds the base already holding the work and reports ``Landed``.
"The base holds the branch's work" means one of: every commit of the branch is reachable from
the base; each commit's patch is on the base (a rebase or cherry-pick by a queue); merging the
branch into the base would change nothing (a squash of several commits).

Nothing a caller writes reaches a shell: checks and submit commands are the repository's own
declarations, run as argument lists; ``{branch}`` and ``{base}`` are replaced inside arguments.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import logging
import os
import re
import shlex
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from flume.core.actions import Land
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, Sha
from flume.core.kinds import Landing
from flume.core.observations import ChecksFailed, Landed, LandingBlocked, Observation
from flume.core.place import Life, Place, Submission, current_step
from flume.shell.declared import config
from flume.shell.declared import run as runner
from flume.shell.process import Ran
from flume.shell.store.follower import Followed
from flume.shell.store.places import journals_dir
from flume.shell.tools import git

#: What a check's output keeps in the journal: its last 64 KiB (as a setup's does).
MAX_OUTPUT = 64 * 1024
#: How many times the embedded lander goes round when other landings keep moving the base.
ROUNDS = 10
#: Where OpenSpec keeps changes, and the changes it has archived.
CHANGES = "openspec/changes"
ARCHIVE = f"{CHANGES}/archive"
_log = logging.getLogger("flume.lander")


def _tail(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT else "[...]\n" + text[-MAX_OUTPUT:]


def _said(ran: Ran) -> str:
    return "\n".join(part for part in (ran.out.strip(), ran.err.strip()) if part) or "no output"


@attrs.define
class Lander:
    """The lander port: a merge queue's submit command when declared, else the embedded lander.

    ``pass_fds`` go to every git process it starts (the supervisor's lock), as the performer's do.
    """

    pass_fds: tuple[int, ...] = ()
    rounds: int = ROUNDS

    def land(self, place: Place, action: Land, at: Instant) -> list[Observation]:
        """Land the branch on its base, hand it to the queue, or say why not."""
        repository = Path(place.launch.repository)
        try:
            declared = config.load(repository)
        except UsageError as error:
            reason = f"the repository's {config.FILE_NAME} cannot be read"
            return [ChecksFailed(at=at, reason=reason, output=str(error))]
        deliverable = current_step(place).deliverable
        name = place.launch.name
        head = git.resolve(repository, action.branch)
        if (
            isinstance(deliverable, Landing)
            and deliverable.archived_change
            and head is not None
            and not is_change_archived(repository, head, name)
        ):
            # Landed unarchived, the stage's deliverable (the landing with the change archived)
            # could never come: the agent archives first.
            reason = f"the OpenSpec change {name} is not archived on {action.branch}"
            output = (
                f"Archive it (openspec archive {name} --yes, which moves it under {ARCHIVE}/), "
                "commit, and run flume submit again."
            )
            return [ChecksFailed(at=at, reason=reason, output=output)]
        if declared.submit is not None:
            return self.submit(place, action, at, tuple(declared.submit))
        return self.land_here(place, action, at, [tuple(argv) for argv in declared.checks])

    # --- the embedded lander ------------------------------------------------------------------

    def land_here(
        self, place: Place, action: Land, at: Instant, checks: Sequence[Sequence[str]]
    ) -> list[Observation]:
        """Rebase in the place, run ``checks`` there, and move the base forward under the lock."""
        for _ in range(self.rounds):
            outcome = self._round(place, action, at, checks)
            if outcome is not None:
                return outcome
            _log.info("%s moved while %s was checked: round again", action.base, action.branch)
        reason = f"{action.base} moved on during each of {self.rounds} tries to land"
        output = "Other landings kept moving the base. Run flume submit again."
        return [ChecksFailed(at=at, reason=reason, output=output)]

    def _round(
        self, place: Place, action: Land, at: Instant, checks: Sequence[Sequence[str]]
    ) -> list[Observation] | None:
        """One try at landing on the base as it is now; None when the base moved meanwhile."""
        repository, work = Path(place.launch.repository), Path(action.path)
        old = first_look(place, action, at)
        if isinstance(old, list):
            return old
        # The base's state is looked at first, so a wait on a person costs no rebase or checks.
        failed: Observation | None = base_blocked(repository, action.base, at) or self._rebase(
            work, action, old, at
        )
        if failed is not None:
            return [failed]
        new = git.resolve(repository, action.branch)
        if new is None or new == old:
            # Every commit was on the base already: the rebase dropped them all.
            return [landed(repository, old, place, at)]
        failed = run_checks(work, checks, at)
        if failed is not None:
            return [failed]
        moved = self._move(repository, action, old, new, at)
        if moved is None:
            return None
        done = moved if isinstance(moved, LandingBlocked) else landed(repository, moved, place, at)
        return [done]

    def _rebase(self, work: Path, action: Land, old: Sha, at: Instant) -> ChecksFailed | None:
        """Rebase the place's own commits on ``old``; on a conflict, abort and say why.

        The place's own commits are those after ``action.start``, the base's revision at launch.
        When the base no longer holds that revision (it was rewritten: a commit dropped) and the
        branch still does, only they are replayed: ``git rebase --onto <old> <start>``, so the
        dropped commit is not brought back. Otherwise (the base only moved on, a journal older
        than ``start``, or the agent rewrote its branch off it) the branch is rebased on ``old``,
        where git also skips commits the base already holds as patches.
        """
        since: tuple[str, ...] = ()
        start = action.start
        if (
            start is not None
            and not git.run(work, "merge-base", "--is-ancestor", start, old).ok
            and git.run(work, "merge-base", "--is-ancestor", start, "HEAD").ok
        ):
            since = ("--onto", old, start)
        upstream = since or (old,)
        ran = git.run(
            work, "rebase", "--quiet", "--no-autostash", *upstream, pass_fds=self.pass_fds
        )
        if ran.ok:
            return None
        words = _said(ran)
        aborted = git.run(work, "rebase", "--abort", pass_fds=self.pass_fds)
        if not aborted.ok and "no rebase in progress" not in aborted.err.lower():
            words += f"\n\ngit rebase --abort failed too: {_said(aborted)}"
        reason = f"the branch does not rebase cleanly on {action.base}"
        mend = f"\n\nRebase {action.branch} on {action.base} yourself, resolve, and submit again."
        return ChecksFailed(at=at, reason=reason, output=_tail(words + mend))

    def _move(
        self, repository: Path, action: Land, old: Sha, new: Sha, at: Instant
    ) -> Sha | LandingBlocked | None:
        """Move the base from ``old`` to ``new`` under the lock; None when it moved meanwhile.

        Where the base is checked out, its worktree follows by a fast-forward merge, which git
        refuses rather than overwrite a file; one with uncommitted changes to tracked files is
        never touched. The branch was rebased and checked by now, so git refusing to move the
        base is the base repository's state (a lock, a file in the way), never the branch's.
        """
        with base_lock(repository) as descriptor:
            fds = (*self.pass_fds, descriptor)
            if git.resolve(repository, action.base) != old:
                return None
            holder = next(
                (
                    path
                    for path, branch in git.worktree_paths(repository).items()
                    if branch == action.base and path.is_dir()
                ),
                None,
            )
            if holder is None:
                ref = f"refs/heads/{action.base}"
                message = f"flume: land {action.branch}"
                ran = git.run(repository, "update-ref", "-m", message, ref, new, old, pass_fds=fds)
            else:
                dirty = dirty_checkout(holder, action.base, at)
                if dirty is not None:
                    return dirty
                ran = git.run(holder, "merge", "--ff-only", "--quiet", new, pass_fds=fds)
            now = git.resolve(repository, action.base)
        if now == new:
            return new
        if now != old:
            return None
        words = _said(ran)
        lock = _LOCK_SAID.search(words)
        where = holder or repository
        way_out = (
            f"remove {lock.group(1)} if no git process runs there; flume lands the branch then"
            if lock is not None
            else f"mend what git says in {where}; flume tries the landing again"
        )
        reason = f"{action.base} could not be moved forward to {new} in {where}"
        return LandingBlocked(at=at, reason=reason, output=_tail(words), way_out=way_out)

    # --- a merge queue's submit command -------------------------------------------------------

    def submit(
        self, place: Place, action: Land, at: Instant, argv: Sequence[str]
    ) -> list[Observation]:
        """Run the declared submit command in the place; the queue lands the branch later."""
        found = first_look(place, action, at)
        if isinstance(found, list):
            return found
        names = {"branch": action.branch, "base": action.base}
        command = [re.sub(r"\{(branch|base)\}", lambda m: names[m.group(1)], a) for a in argv]
        status, output = run_command(Path(action.path), command)
        if status != 0:
            reason = f"the submit command {shlex.join(command)} failed (exit {status})"
            return [ChecksFailed(at=at, reason=reason, output=_tail(output))]
        return []


def first_look(place: Place, action: Land, at: Instant) -> list[Observation] | Sha:
    """What a landing finds before it does anything: its answer already, or the base to land on.

    The answer is ``Landed`` when the base holds the branch's work (a ``Land`` performed again),
    and ``ChecksFailed`` when the base or branch is gone or the place cannot be landed from.
    Uncommitted work is never taken as landed: it would not go with the branch.
    """
    repository, work = Path(place.launch.repository), Path(action.path)
    base = git.resolve(repository, action.base)
    head = git.resolve(repository, action.branch)
    if base is None or head is None:
        what = f"the base {action.base}" if base is None else f"the branch {action.branch}"
        return [ChecksFailed(at=at, reason=f"{what} does not exist", output="nothing was landed")]
    refused = refusal_in_place(work, action.branch, at)
    if refused is not None and work.is_dir():
        return [refused]
    if holds(repository, base, head):
        return [landed(repository, base, place, at)]
    return [refused] if refused is not None else base


#: Where git names a lock file it could not take ("Unable to create '<path>.lock': File exists").
_LOCK_SAID = re.compile(r"Unable to create '([^']+\.lock)'")


def base_blocked(repository: Path, base: BranchName, at: Instant) -> LandingBlocked | None:
    """Why the base repository's state keeps ``base`` from moving now, if it does.

    A lock file git left on the base's ref, or on the index of the worktree that has the base
    checked out, or that worktree with uncommitted changes. Each is a person's (or a running
    git's) to mend; flume only names it and the way out, and never removes a lock.
    """
    ref_lock = git.common_dir(repository) / "refs" / "heads" / f"{base}.lock"
    holder = next(
        (
            path
            for path, branch in git.worktree_paths(repository).items()
            if branch == base and path.is_dir()
        ),
        None,
    )
    locks = [ref_lock]
    if holder is not None:
        found = git.run(holder, "rev-parse", "--path-format=absolute", "--git-dir")
        if found.ok:
            locks.append(Path(found.out.strip()) / "index.lock")
    for lock in locks:
        if lock.exists():
            what = f"the ref {base}" if lock == ref_lock else f"the index of {holder}"
            output = (
                f"{lock} exists: git changes {what} only while no other git process holds it. "
                "A git process running there holds it, or one that crashed left it."
            )
            way_out = f"remove {lock} if no git process runs there; flume lands the branch then"
            reason = f"{base} cannot be moved forward: {lock} exists"
            return LandingBlocked(at=at, reason=reason, output=output, way_out=way_out)
    return None if holder is None else dirty_checkout(holder, base, at)


def dirty_checkout(holder: Path, base: BranchName, at: Instant) -> LandingBlocked | None:
    """The worktree ``holder``, which has ``base`` checked out, with uncommitted changes."""
    status = git.run(holder, "status", "--porcelain=v1", "--untracked-files=no")
    if status.ok and not status.out.strip():
        return None
    reason = f"{base} is checked out with uncommitted changes in {holder}"
    way_out = (
        f"commit or stash the changes in {holder} (flume never touches a dirty checkout); "
        "flume lands the branch then"
    )
    return LandingBlocked(at=at, reason=reason, output=_tail(_said(status)), way_out=way_out)


def refusal_in_place(work: Path, branch: BranchName, at: Instant) -> ChecksFailed | None:
    """Why the place cannot be landed from as it stands: gone, off its branch, or uncommitted."""
    if not work.is_dir():
        return ChecksFailed(at=at, reason=f"the place's worktree {work} is gone")
    head = git.run(work, "symbolic-ref", "--quiet", "HEAD")
    if not head.ok or head.out.strip() != f"refs/heads/{branch}":
        there = head.out.strip().removeprefix("refs/heads/") or "a detached HEAD"
        output = f"{work} has {there} checked out; git switch {branch} and submit again."
        return ChecksFailed(at=at, reason=f"the place is not on its branch {branch}", output=output)
    status = git.run(work, "status", "--porcelain=v1", "--untracked-files=normal")
    if not status.ok or status.out.strip():
        output = f"{_said(status)}\n\nCommit them (or remove them) and run flume submit again."
        return ChecksFailed(at=at, reason="uncommitted changes in the place", output=_tail(output))
    return None


def run_checks(work: Path, checks: Sequence[Sequence[str]], at: Instant) -> ChecksFailed | None:
    """Run the repository's declared checks in the place, in order; the first failure, or None."""
    said: list[str] = []
    for argv in checks:
        said.append(f"$ {shlex.join(argv)}")
        status, output = run_command(work, argv)
        said.append(output.rstrip())
        if status != 0:
            reason = f"{shlex.join(argv)} failed (exit {status})"
            return ChecksFailed(at=at, reason=reason, output=_tail("\n".join(said)))
    return None


@contextlib.contextmanager
def base_lock(repository: Path) -> Iterator[int]:
    """Hold the repository's landing lock (an ``flock`` shared by every process and thread)."""
    folder = journals_dir(repository)
    folder.mkdir(exist_ok=True)
    descriptor = os.open(folder / ".land.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield descriptor
    finally:
        os.close(descriptor)


def holds(repository: Path, base: Sha, branch: Sha) -> bool:
    """``base`` holds ``branch``'s work: reachable, patch-equivalent, or merging changes nothing."""
    if git.run(repository, "merge-base", "--is-ancestor", branch, base).status == 0:
        return True
    cherry = git.run(repository, "cherry", base, branch)
    if cherry.ok and not any(line.startswith("+") for line in cherry.out.splitlines()):
        return True
    merged = git.run(repository, "merge-tree", "--write-tree", "--no-messages", base, branch)
    if merged.status != 0 or not merged.out.strip():
        return False
    tree = git.run(repository, "rev-parse", "--verify", "--quiet", f"{base}^{{tree}}")
    return tree.ok and merged.out.split()[0] == tree.out.strip()


def is_change_archived(repository: Path, base: Sha, name: str) -> bool:
    """The base's tree has the change ``name`` under the archive, and no longer out of it.

    ``openspec archive`` moves ``openspec/changes/<name>`` to
    ``openspec/changes/archive/<YYYY-MM-DD>-<name>``.
    """
    ran = git.run(
        repository, "ls-tree", "-z", "--name-only", "-d", base, "--", f"{CHANGES}/", f"{ARCHIVE}/"
    )
    if not ran.ok:
        return False
    entries = [entry for entry in ran.out.split("\0") if entry]
    if f"{CHANGES}/{name}" in entries:
        return False
    archived = re.compile(rf"(?:\d{{4}}-\d{{2}}-\d{{2}}-)?{re.escape(name)}")
    return any(
        archived.fullmatch(entry.removeprefix(f"{ARCHIVE}/"))
        for entry in entries
        if entry.startswith(f"{ARCHIVE}/")
    )


def landed(repository: Path, base: Sha, place: Place, at: Instant) -> Landed:
    """The landing as observed on ``base``, with whether the place's change is archived there."""
    archived = is_change_archived(repository, base, place.launch.name)
    return Landed(at=at, base_sha=base, change_archived=archived)


# --- running declared commands ----------------------------------------------------------------


def run_command(cwd: Path, argv: Sequence[str]) -> tuple[int, str]:
    """Run one declared check or submit command exactly as written in ``cwd``.

    Its process group is recorded while it runs, as a setup's is (:mod:`.declared_run`).
    """
    return runner.run(cwd, argv, runner.record_of("landings", cwd))


# --- observing landings -----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class _Upstream:
    """Where a base is fetched from: the remote, its branch, and the remote-tracking ref."""

    remote: str
    merge: str
    tracking: str


@attrs.define
class Landings:
    """Every submitted place's landing, seen on its base (a supervisor :class:`Observer`).

    Only places whose submission waits on the lander cost anything: per repository with such
    places, one ``git for-each-ref`` a tick; where a queue lands (``[land] submit``) and the base
    has a remote, one ``git fetch`` at most every ``fetch_seconds``. Whether a base holds a branch
    is asked again only when one of them moved.
    """

    fetch_seconds: float = 10.0
    fetch_timeout: float = 30.0
    _fetched: dict[tuple[str, str], float] = attrs.field(factory=dict, init=False)
    _held: dict[tuple[str, Sha, Sha], bool] = attrs.field(factory=dict, init=False)

    def observe(
        self, followed: Sequence[Followed], now: Instant
    ) -> Iterator[tuple[Followed, Observation]]:
        """A ``Landed`` for each submitted place whose base holds its branch's work."""
        by_repository: dict[str, list[Followed]] = collections.defaultdict(list)
        for each in followed:
            place = each.place
            if (
                place is not None
                and place.life is Life.ACTIVE
                and place.submission in {Submission.SUBMITTED, Submission.BLOCKED}
            ):
                by_repository[place.launch.repository].append(each)
        if len(self._held) > 4096:
            self._held.clear()
        for repository, group in by_repository.items():
            yield from self._observe(Path(repository), group, now)

    def _observe(
        self, repository: Path, group: list[Followed], now: Instant
    ) -> Iterator[tuple[Followed, Observation]]:
        places = [each.place for each in group if each.place is not None]
        tracking = self._fetch(repository, {place.launch.base for place in places}, now)
        wanted = {f"refs/heads/{place.branch}" for place in places}
        wanted |= {f"refs/heads/{place.launch.base}" for place in places}
        wanted |= set(tracking.values())
        ran = git.run(
            repository, "for-each-ref", "--format=%(objectname) %(refname)", *sorted(wanted)
        )
        refs: dict[str, str] = {}
        for line in ran.out.splitlines():
            sha, _, name = line.partition(" ")
            refs[name] = sha
        for each in group:
            place = each.place
            assert place is not None  # noqa: S101 (grouped so above)
            branch = refs.get(f"refs/heads/{place.branch}")
            if branch is None:
                continue
            where: list[str | None] = [f"refs/heads/{place.launch.base}"]
            where.append(tracking.get(place.launch.base))
            for ref in where:
                base = refs.get(ref) if ref is not None else None
                if base is not None and self._holds(repository, Sha(base), Sha(branch)):
                    yield each, landed(repository, Sha(base), place, now)
                    break

    def _holds(self, repository: Path, base: Sha, branch: Sha) -> bool:
        key = (str(repository), base, branch)
        if key not in self._held:
            self._held[key] = holds(repository, base, branch)
        return self._held[key]

    def _fetch(self, repository: Path, bases: set[BranchName], now: Instant) -> dict[str, str]:
        """Fetch the bases a queue lands on from their remotes; base -> remote-tracking ref.

        Only a repository that declares a submit command is fetched: the embedded lander lands
        on the local base, which needs no fetch.
        """
        try:
            declared = config.load(repository)
        except UsageError:
            _log.warning("%s has a malformed flume config: landings seen locally", repository)
            return {}
        if declared.submit is None:
            return {}
        upstreams = _upstreams(repository, bases)
        by_remote: dict[str, list[str]] = collections.defaultdict(list)
        for upstream in upstreams.values():
            by_remote[upstream.remote].append(f"+{upstream.merge}:{upstream.tracking}")
        for remote, refspecs in by_remote.items():
            last = self._fetched.get((str(repository), remote))
            if last is not None and now - last < self.fetch_seconds:
                continue
            self._fetched[str(repository), remote] = now
            ran = git.fetch(repository, remote, *sorted(set(refspecs)), timeout=self.fetch_timeout)
            if not ran.ok:
                _log.warning("fetching %s in %s failed: %s", remote, repository, _said(ran))
        return {base: upstream.tracking for base, upstream in upstreams.items()}


def _upstreams(repository: Path, bases: set[BranchName]) -> dict[str, _Upstream]:
    """Each base's remote (``branch.<base>.remote``, else ``origin``), read in one git call."""
    pattern = r"^(branch\..*\.(remote|merge)|remote\..*\.url)$"
    ran = git.run(repository, "config", "-z", "--get-regexp", pattern)
    values: dict[str, str] = {}
    for entry in ran.out.split("\0"):
        key, _, value = entry.partition("\n")
        if key:
            values.setdefault(key, value)
    remotes = {
        key.removeprefix("remote.").removesuffix(".url")
        for key in values
        if key.startswith("remote.") and key.endswith(".url")
    }
    found: dict[str, _Upstream] = {}
    for base in bases:
        remote = values.get(f"branch.{base}.remote") or "origin"
        if remote not in remotes:
            continue  # no remote, "." (a local branch), or a bare URL: the local base it is
        merge = values.get(f"branch.{base}.merge") or f"refs/heads/{base}"
        if not merge.startswith("refs/heads/"):
            continue
        tracking = f"refs/remotes/{remote}/{merge.removeprefix('refs/heads/')}"
        found[base] = _Upstream(remote=remote, merge=merge, tracking=tracking)
    return found
