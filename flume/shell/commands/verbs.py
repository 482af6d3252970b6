"""The caller's commands on a place that exists, and ``flume prompt``: the shell's part of them.

Theory of operation. A command (tell, stop, retry, proceed, needs, submit) is an observation
journaled in the place's journal once the core accepts it
(:func:`flume.shell.store.places.command`):
the core decides; a refusal raises :class:`UsageError` and nothing is journaled. What this module
adds is what only the shell can know: which place the command is for (by name, or for ``needs``
and ``submit`` from the folder the agent runs in), the agent's session from its environment,
and whether the words a caller typed can be carried at all (UTF-8 text, no NUL, at most 1 MiB;
docs/commands.md, "Words a caller gives"). ``flume prompt`` builds the place a launch would
make, with the core, and renders the stage's prompt with it; it starts nothing and writes
nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import attrs
from pyrsistent import pmap, pvector
from pyrsistent.typing import PVector

from flume.core.delivery import render_prompt
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, KindName, SessionId, StageName, WorkName
from flume.core.kinds import steps
from flume.core.launch import Launch
from flume.core.observations import Launched, Observation, ResolveAsked
from flume.core.place import Place, evolve
from flume.core.settings import Settings
from flume.core.step import Decision, step
from flume.core.workflow.tree import position_of

# Re-exported: the caller's commands are where they were always found.
from flume.shell.commands.input_checks import MAX_TEXT_BYTES as MAX_TEXT_BYTES  # noqa: PLC0414
from flume.shell.commands.input_checks import checked_text as checked_text  # noqa: PLC0414
from flume.shell.commands.input_checks import decoded as decoded  # noqa: PLC0414
from flume.shell.commands.input_checks import outside
from flume.shell.declared import config
from flume.shell.store import places
from flume.shell.tools import git

#: The environment variable that names the session of the agent running a command.
SESSION_VARIABLE = "FLUME_SESSION"
#: The repository ``flume prompt`` shows when it is given none and the folder is in none.
STAND_IN_REPOSITORY = "/path/to/repository"


def session_of(environment: Mapping[str, str] | None = None) -> SessionId | None:
    """The session of the agent running the command, when its environment names one."""
    session = (os.environ if environment is None else environment).get(SESSION_VARIABLE, "")
    session = session.strip()
    return SessionId(session) if session else None


def give(found: places.Found, seen: Observation, settings: Settings) -> Decision:
    """Journal the command ``seen`` for the place ``found``, if its rules accept it.

    :func:`flume.shell.store.places.give`: the supervisor carries a sandboxed agent's commands
    out through the same path (:mod:`flume.shell.store.inbox`).
    """
    return places.give(found, seen, settings)


def merge_facts(place: Place, at: Instant) -> ResolveAsked:
    """What ``flume resolve --by-hand`` finds in the run's worktree, for the core to judge.

    Whether a merge is under way there (git's ``MERGE_HEAD``); and each lane the run merges
    that its branch's head does not hold, with why: its branch gone, its head not in the run's
    history, or its changes not in the run's tree (WF-FINISHED-HOLDS-ITS-WORK), then with the
    files to take back from its branch and those it deleted.
    """
    worktree = Path(place.path)
    if not worktree.is_dir():
        return ResolveAsked(at=at)
    missing: dict[str, str] = {}
    restore: dict[str, PVector[str]] = {}
    remove: dict[str, PVector[str]] = {}
    for lane in place.merging:
        run = place.lanes.get(lane)
        if run is None:
            continue
        start = place.start if run.from_base else place.entry
        if git.resolve(worktree, run.branch) is None:
            missing[lane] = f"its branch {run.branch} does not exist"
        elif not git.run(worktree, "merge-base", "--is-ancestor", run.branch, "HEAD").ok:
            missing[lane] = f"its head is not in {place.branch}'s history"
        elif start is not None and (lacking := git.lacking(worktree, start, run.branch)):
            missing[lane] = (
                f"its changes to {', '.join(lacking)} are not in {place.branch}'s tree (a "
                "merge was concluded without them)"
            )
            held = git.held_paths(worktree, run.branch, lacking)
            restore[lane] = pvector(path for path in lacking if path in held)
            remove[lane] = pvector(path for path in lacking if path not in held)
    return ResolveAsked(
        at=at,
        under_way=git.merging(worktree),
        missing=pmap(missing),
        restore=pmap(restore),
        remove=pmap(remove),
    )


def place_here(cwd: Path, settings: Settings) -> places.Found:
    """The place whose worktree holds ``cwd``: ``<repository>/places/<kind>--<name>``.

    Raises :class:`UsageError` (exit 2) naming ``cwd`` when it is in no place flume made.
    """
    outside_here = outside(cwd)
    top = git.toplevel(cwd) if cwd.is_dir() else None
    if top is None:
        raise outside_here
    try:
        repository = git.main_worktree(cwd).resolve()
    except git.GitError as error:
        raise outside_here from error
    top = top.resolve()
    if top.parent != repository / "places":
        raise outside_here
    try:
        found = places.find(top.name, repository, settings)
    except UsageError as error:
        raise outside_here from error
    if found.place is not None and Path(found.place.path).resolve() != top:
        raise outside_here
    return found


@attrs.frozen(kw_only=True)
class PromptAsked:
    """What ``flume prompt`` was asked to show."""

    kind: str
    stage: str
    brief: str = "(the brief)"
    name: str = "example"
    base: str | None = None
    #: The repository whose kinds and prompt overrides apply; None: the folder, if in one.
    repository: Path | None = None


@attrs.frozen(kw_only=True)
class Prompt:
    """The prompt a stage would be sent, and where the kind came from."""

    text: str
    #: The repository whose config applied, or None when only built-in kinds did.
    repository: Path | None


def prompt(asked: PromptAsked, cwd: Path, settings: Settings) -> Prompt:
    """The exact prompt the stage would be sent in the place a launch would make.

    The launch is built and folded through the core as a real one is, then the place is put at
    the stage asked for, and the core renders its prompt. Nothing starts, nothing is written.
    Raises :class:`UsageError` (exit 2) for an unknown kind or stage, or a bad name, brief or base.
    """
    if asked.repository is not None:
        repository: Path | None = places.repository_of(asked.repository)
    elif cwd.is_dir() and git.toplevel(cwd) is not None:
        repository = places.repository_of(cwd)
    else:
        repository = None
    declared = config.load(repository) if repository is not None else config.Config()
    kind = declared.kind(asked.kind)
    names = [found.name for found in steps(kind.body)]
    if asked.stage not in names:
        raise UsageError.one(
            "stage",
            f"kind {kind.name} has no stage {asked.stage!r}",
            f"name one of its stages: {', '.join(names)}",
        )
    base = asked.base
    if base is None and repository is not None and git.has_commits(repository):
        base = git.shared_branch(repository)
    launch = Launch(
        repository=str(repository) if repository is not None else STAND_IN_REPOSITORY,
        kind=KindName(asked.kind),
        name=WorkName(asked.name),
        brief=asked.brief,
        base=BranchName(base or "main"),
    )
    seen = Launched(at=Instant(0), launch=launch, kind=kind, settings=settings)
    place = step(settings, None, seen).place
    named = StageName(asked.stage)
    position = position_of(kind.body, named)
    place = evolve(place, stage=attrs.evolve(place.stage, name=named, position=position))
    return Prompt(text=render_prompt(place), repository=repository)
