"""The landers: a submit stage's work carried onto its base (docs/landing.md).

Theory of operation. ``flume submit`` makes the core ask for :class:`~flume.core.actions.Land`,
and :class:`Lander` performs it. It reads the repository's config at that moment: a declared
``[land] submit`` command hands the branch to a merge queue; otherwise the embedded lander lands
it here. Either way it answers with observations and never raises: ``Landed`` once the base
holds the work, ``ChecksFailed`` (which goes back to the agent) when the branch cannot land,
``LandingBlocked`` when the base repository's state keeps the base from moving (a lock git left,
the base checked out with uncommitted changes: a person's to mend, and flume tries again), and
nothing when a queue took the branch (:class:`flume.shell.observe.landings.Landings` sees that
landing later).

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

import contextlib
import fcntl
import logging
import os
import re
import shlex
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs
from pyrsistent import pvector

from flume.core.actions import Land
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, Sha
from flume.core.kinds import Landing
from flume.core.observations import ChecksFailed, Landed, LandingBlocked, LandingHeld, Observation
from flume.core.place import Place, current_step
from flume.shell.declared import command, config
from flume.shell.perform import gates
from flume.shell.process import Ran
from flume.shell.store.places import journals_dir
from flume.shell.tools import git, openspec

#: What a check's output keeps in the journal: its last 64 KiB (as a setup's does).
MAX_OUTPUT = 64 * 1024
#: How many times the embedded lander goes round when other landings keep moving the base.
ROUNDS = 10
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
            and not openspec.is_change_archived(repository, head, name)
        ):
            # Landed unarchived, the stage's deliverable (the landing with the change archived)
            # could never come: the agent archives first.
            reason = f"the OpenSpec change {name} is not archived on {action.branch}"
            output = (
                f"Archive it (openspec archive {name} --yes, which moves it under "
                f"{openspec.ARCHIVE}/), commit, and run flume submit again."
            )
            return [ChecksFailed(at=at, reason=reason, output=output)]
        if place.kind.fenced and head is not None:
            touched = runs_outside(repository, action.start, head)
            if touched and action.reviewed != head:
                return [LandingHeld(at=at, head=head, files=pvector(touched))]
        if declared.submit is not None:
            return self.submit(place, action, at, tuple(declared.submit))
        checks = [tuple(argv) for argv in declared.checks]
        remote = git.fleet_remote(repository)
        if remote is not None:
            return self.land_through(place, action, at, checks, remote)
        return self.land_here(place, action, at, checks)

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
        failed = run_checks(work, checks, at, fenced=place.kind.fenced)
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

        A branch that holds the base as it is now, when the base only moved on, is not rebased:
        the base can move to it as it is. A rebase would only flatten its merges, and replaying
        a merge someone resolved by hand (a workflow's lanes merged into the run's branch, a
        conflict mended) would conflict again where nothing conflicts.
        """
        since: tuple[str, ...] = ()
        start = action.start
        if (
            start is not None
            and not git.run(work, "merge-base", "--is-ancestor", start, old).ok
            and git.run(work, "merge-base", "--is-ancestor", start, "HEAD").ok
        ):
            since = ("--onto", old, start)
        if not since and git.run(work, "merge-base", "--is-ancestor", old, "HEAD").ok:
            return None
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
            holder = checkout_of(repository, action.base)
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
            f"remove the lock {lock.group(1)} if no git process runs there; flume lands the "
            "branch then"
            if lock is not None
            else f"mend what git says in {where}; flume tries the landing again"
        )
        reason = f"{action.base} could not be moved forward to {new} in {where}"
        return LandingBlocked(at=at, reason=reason, output=_tail(words), way_out=way_out)

    # --- through a fleet's remote -------------------------------------------------------------

    def land_through(
        self,
        place: Place,
        action: Land,
        at: Instant,
        checks: Sequence[Sequence[str]],
        remote: str,
    ) -> list[Observation]:
        """Land on the remote's base, as the embedded lander lands on the local one.

        A fleet host's clone (``git config flume.fleetRemote``) lands through the shared remote:
        the base is fetched, the place's own commits rebased on it and checked, and pushed to
        the remote's base unforced, which git takes only as a fast-forward of what the remote
        holds: a compare-and-swap from the revision the checks ran on. Rejected, the base moved
        meanwhile: round again. Landed, the local base follows where it can without touching a
        dirty checkout.
        """
        for _ in range(self.rounds):
            outcome = self._remote_round(place, action, at, checks, remote)
            if outcome is not None:
                return outcome
            _log.info(
                "%s moved on %s while %s was checked: round again",
                action.base,
                remote,
                action.branch,
            )
        reason = f"{action.base} on {remote} moved on during each of {self.rounds} tries to land"
        output = "Other landings kept moving the base. Run flume submit again."
        return [ChecksFailed(at=at, reason=reason, output=output)]

    def _remote_round(  # noqa: PLR0911 (each way out says why)
        self,
        place: Place,
        action: Land,
        at: Instant,
        checks: Sequence[Sequence[str]],
        remote: str,
    ) -> list[Observation] | None:
        """One try at landing on the remote's base as it is now; None when it moved meanwhile."""
        repository, work = Path(place.launch.repository), Path(action.path)
        tracking = f"refs/remotes/{remote}/{action.base}"
        fetched = git.fetch(repository, remote, f"+refs/heads/{action.base}:{tracking}")
        old = git.commit(repository, tracking)
        if not fetched.ok or old is None:
            return [_remote_blocked(remote, action.base, fetched, at)]
        head = git.resolve(repository, action.branch)
        if head is None:
            what = f"the branch {action.branch} does not exist"
            return [ChecksFailed(at=at, reason=what, output="nothing was landed")]
        refused = refusal_in_place(work, action.branch, at)
        if git.holds(repository, old, head):
            self._follow(repository, action.base, old)
            return [landed(repository, old, place, at)]
        failed = refused or self._rebase(work, action, old, at)
        if failed is not None:
            return [failed]
        new = git.resolve(repository, action.branch)
        if new is None or new == old:
            self._follow(repository, action.base, old)
            return [landed(repository, old, place, at)]
        failed = run_checks(work, checks, at)
        if failed is not None:
            return [failed]
        pushed = git.push(repository, remote, f"{new}:refs/heads/{action.base}")
        if pushed.ok:
            git.run(repository, "update-ref", tracking, new)
            self._follow(repository, action.base, new)
            return [landed(repository, new, place, at)]
        if _REJECTED.search(pushed.out):
            return None
        return [_remote_blocked(remote, action.base, pushed, at)]

    def _follow(self, repository: Path, base: BranchName, new: Sha) -> None:
        follow_base(repository, base, new, self.pass_fds)

    # --- a merge queue's submit command -------------------------------------------------------

    def submit(
        self, place: Place, action: Land, at: Instant, argv: Sequence[str]
    ) -> list[Observation]:
        """Run the declared submit command in the place; the queue lands the branch later."""
        found = first_look(place, action, at)
        if isinstance(found, list):
            return found
        names = {"branch": action.branch, "base": action.base}
        filled = [re.sub(r"\{(branch|base)\}", lambda m: names[m.group(1)], a) for a in argv]
        status, output = run_command(Path(action.path), filled)
        if status != 0:
            reason = f"the submit command {shlex.join(filled)} failed (exit {status})"
            return [ChecksFailed(at=at, reason=reason, output=_tail(output))]
        return []


def checkout_of(repository: Path, base: BranchName) -> Path | None:
    """The worktree that has ``base`` checked out, if one does (and still stands)."""
    return next(
        (
            path
            for path, branch in git.worktree_paths(repository).items()
            if branch == base and path.is_dir()
        ),
        None,
    )


def follow_base(
    repository: Path, base: BranchName, new: Sha, pass_fds: tuple[int, ...] = ()
) -> None:
    """Move the local base to ``new`` where that is a fast-forward and touches no change.

    A fleet host's clone: the remote's base is the one that counts, and the local one follows
    it so that the next launch here is cut from what landed. A base checked out with
    uncommitted changes, or one that went its own way, is left as it is.
    """
    with base_lock(repository) as descriptor:
        fds = (*pass_fds, descriptor)
        old = git.resolve(repository, base)
        if old is None or old == new or not git.is_ancestor(repository, old, new):
            return
        holder = checkout_of(repository, base)
        if holder is None:
            git.run(repository, "update-ref", f"refs/heads/{base}", new, old, pass_fds=fds)
        elif dirty_checkout(holder, base, Instant(0.0)) is None:
            git.run(holder, "merge", "--ff-only", "--quiet", new, pass_fds=fds)


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
    if git.holds(repository, base, head):
        return [landed(repository, base, place, at)]
    return [refused] if refused is not None else base


#: A ref git refused to push as no fast-forward (``--porcelain``'s ``!`` lines): the base moved.
_REJECTED = re.compile(r"^!\t.*\[rejected\]", re.MULTILINE)


def _remote_blocked(remote: str, base: BranchName, ran: Ran, at: Instant) -> LandingBlocked:
    """The remote could not be fetched from or pushed to: named, and tried again."""
    reason = f"{base} on the remote {remote} could not be reached (git exit {ran.status})"
    way_out = f"mend what git says about {remote}; flume tries the landing again"
    return LandingBlocked(at=at, reason=reason, output=_tail(_said(ran)), way_out=way_out)


#: Where git names a lock file it could not take ("Unable to create '<path>.lock': File exists").
_LOCK_SAID = re.compile(r"Unable to create '([^']+\.lock)'")


def base_blocked(repository: Path, base: BranchName, at: Instant) -> LandingBlocked | None:
    """Why the base repository's state keeps ``base`` from moving now, if it does.

    A lock file git left on the base's ref, or on the index of the worktree that has the base
    checked out, or that worktree with uncommitted changes. Each is a person's (or a running
    git's) to mend; flume only names it and the way out, and never removes a lock.
    """
    ref_lock = git.common_dir(repository) / "refs" / "heads" / f"{base}.lock"
    holder = checkout_of(repository, base)
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
            way_out = (
                f"remove the lock {lock} if no git process runs there; flume lands the branch then"
            )
            reason = f"{base} cannot be moved forward: git's lock {lock} is held"
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


def run_checks(
    work: Path, checks: Sequence[Sequence[str]], at: Instant, *, fenced: bool = False
) -> ChecksFailed | None:
    """Run the repository's declared checks in the place, in order; the first failure, or None.

    ``fenced``: the run has sandboxed steps, and each check runs in a fence of its own: it may
    be a script a sandboxed agent wrote (:func:`~flume.shell.perform.gates.run_command`).
    """
    said: list[str] = []
    for argv in checks:
        said.append(f"$ {shlex.join(argv)}")
        if fenced:
            record = command.record_of("landings", work)
            ran, output = gates.run_command(work, tuple(argv), record, None, fenced=True)
            status = 126 if ran is None else ran
        else:
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
    descriptor = os.open(folder / ".land.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield descriptor
    finally:
        os.close(descriptor)


def landed(repository: Path, base: Sha, place: Place, at: Instant) -> Landed:
    """The landing as observed on ``base``, with whether the place's change is archived there."""
    archived = openspec.is_change_archived(repository, base, place.launch.name)
    return Landed(at=at, base_sha=base, change_archived=archived)


# --- what runs outside -------------------------------------------------------------------------

#: Files and folders of a repository that run outside any sandbox once they reach its base: its
#: flume config (setup and checks run on the host), Claude Code's and Codex's project settings
#: (hooks, MCP servers, permissions), direnv's ``.envrc``, and the usual hooks folders.
OUTSIDE = (".flume.toml", ".claude/", ".mcp.json", ".codex/", ".envrc", ".githooks/", ".husky/")


def runs_outside(repository: Path, start: Sha | None, head: Sha) -> list[str]:
    """The files the place's own commits (``start..head``) change that run outside a sandbox.

    :data:`OUTSIDE`, each kind file the main ``.flume.toml`` names, and the folder of hooks a
    relative ``core.hooksPath`` names (LAND-HELD-FOR-A-PERSON). Renames count by both names.
    """
    if start is None:
        return []
    changed = git.run(repository, "diff", "--name-only", "--no-renames", start, head)
    if not changed.ok:
        return []
    watched = [*OUTSIDE, *_named_outside(repository)]
    hooks = git.held_hooks(repository)
    if hooks is not None and hooks.is_relative_to(repository) and repository in hooks.parents:
        watched.append(hooks.relative_to(repository).as_posix().rstrip("/") + "/")
    return [
        path
        for path in changed.out.splitlines()
        if any(path == each or (each.endswith("/") and path.startswith(each)) for each in watched)
    ]


def _named_outside(repository: Path) -> list[str]:
    """What the main ``.flume.toml`` names that runs outside, besides itself.

    Its kind files, and the repository's scripts its commands start (``./checks.sh`` in
    ``[land] checks``, a setup's script).
    """
    try:
        document = tomllib.loads((repository / config.FILE_NAME).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    kinds = document.get("kinds", [])
    named = [
        str(each["file"])
        for each in (kinds if isinstance(kinds, list) else [])
        if isinstance(each, dict) and isinstance(each.get("file"), str)
    ]
    commands: list[object] = []
    for table, key in (("place", "setup"), ("land", "checks"), ("tests", "command")):
        found = document.get(table, {})
        value = found.get(key) if isinstance(found, dict) else None
        commands += (
            value if isinstance(value, list) and value and isinstance(value[0], list) else [value]
        )
    submit = document.get("land", {})
    commands.append(submit.get("submit") if isinstance(submit, dict) else None)
    for argv in commands:
        program = argv[0] if isinstance(argv, list) and argv and isinstance(argv[0], str) else ""
        if "/" in program and not program.startswith("/"):
            named.append(program.removeprefix("./"))
    return named


# --- running declared commands ----------------------------------------------------------------


def run_command(cwd: Path, argv: Sequence[str]) -> tuple[int, str]:
    """Run one declared check or submit command exactly as written in ``cwd``.

    Its process group is recorded while it runs, as a setup's is
    (:mod:`flume.shell.declared.command`).
    """
    return command.run(cwd, argv, command.record_of("landings", cwd))
