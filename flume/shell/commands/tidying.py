"""``flume tidy`` on demand: ask each place's tidy, wait for the supervisor's, and say what came.

Theory of operation. Tidy's decisions are the core's (R10, :mod:`flume.core.tidy`) and its
removals are the supervisor's to perform, like every action: this module journals a
``TidyAsked`` for each finished or dropped place, wakes the supervisor, waits until each place's
journal shows the tidy decided, and reads back what was removed and what was kept, with why.
``--dry-run`` says exactly what ``flume tidy`` would report, changing nothing: for a place the
supervisor already tidied (as it does by itself once work lands or is dropped), what its journal
shows removed and kept, as the real run reports it; for any other, the core's plan on facts
gathered now.

It also cleans up what is left of flume's own: the journals of places already tidied are moved
aside (so ``status`` shows only live places and their names are free again), and staging
folders of launches that died before their journal was renamed into place are removed.
"""

from __future__ import annotations

import contextlib
import enum
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

from flume.core.actions import (
    DeleteBranch,
    Event,
    GatherTidyFacts,
    KeepBranch,
    KeepPlace,
    RemoveWorktree,
    Report,
)
from flume.core.errors import UsageError
from flume.core.ids import Instant
from flume.core.launch import followed_by
from flume.core.observations import (
    ActionFailed,
    BranchDeleted,
    TidyAsked,
    WorktreeRemoved,
)
from flume.core.place import LaneState, Life, Place, TidyNotWanted, evolve
from flume.core.settings import Settings
from flume.core.step import replay, step
from flume.core.tidy import plan
from flume.core.workflow.lanes import parallel_of
from flume.shell.perform import launcher
from flume.shell.perform.performer import branch_facts, lane_entry, worktree_facts
from flume.shell.store import journal, places
from flume.shell.supervisor import client

#: A launch's staging folder older than this belongs to a launch that died.
STALE_STAGING_SECONDS = 600.0


class TidyResult(enum.StrEnum):
    """What a tidy came to for one place."""

    TIDIED = "tidied"  #: nothing of the place is left to remove
    KEPT = "kept"  #: something stays, with reasons
    IN_FLIGHT = "in-flight"  #: the place is still in flight: drop it to tidy it
    WAITING = "waiting"  #: the supervisor had not finished when tidy stopped waiting


@attrs.frozen(kw_only=True)
class Kept:
    """Something tidy left, and why."""

    what: str
    reason: str


@attrs.frozen(kw_only=True)
class TidyOutcome:
    """What tidy did (or, in a dry run, would do) for one place."""

    place: str
    repository: str
    state: TidyResult
    removed: tuple[str, ...] = ()
    kept: tuple[Kept, ...] = ()
    failed: tuple[str, ...] = ()
    #: Tidied before this run (by the supervisor, as it does once work lands or is dropped, or
    #: by an earlier tidy): ``removed`` and ``kept`` say what that tidy did.
    earlier: bool = False


def _name(place: Place) -> str:
    return place.launch.place


def dry_run(place: Place, *, force: bool) -> TidyOutcome:
    """The plan tidy would carry out now, from facts gathered without changing anything."""
    repository = Path(place.launch.repository)
    if place.life not in {Life.FINISHED, Life.DROPPED}:
        return _in_flight(place)
    worktree = worktree_facts(repository, Path(place.path), place.branch)
    entry = lane_entry(place)
    branch = branch_facts(repository, place.branch, place.launch.base, entry=entry)
    if branch is None:
        reason = f"git cannot compare {place.branch} with {place.launch.base}: kept"
        kept = (Kept(what=place.branch, reason=reason),)
        return TidyOutcome(
            place=_name(place), repository=str(repository), state=TidyResult.KEPT, kept=kept
        )
    removed: list[str] = []
    kept_list: list[Kept] = []
    for action in plan(
        kind=place.launch.kind,
        life=place.life,
        made=place.made,
        worktree=worktree,
        branch=branch,
        force=force,
    ):
        match action:
            case RemoveWorktree(path=path):
                removed.append(f"worktree {path}")
            case DeleteBranch(branch=name):
                removed.append(f"branch {name}")
            case KeepPlace(path=path, reason=reason):
                kept_list.append(Kept(what=path, reason=reason))
            case KeepBranch(branch=name, reason=reason):
                kept_list.append(Kept(what=name, reason=reason))
            case _:
                pass
    kept_place = any(k.what == place.path for k in kept_list)
    state = TidyResult.KEPT if kept_place else TidyResult.TIDIED
    return TidyOutcome(
        place=_name(place),
        repository=str(repository),
        state=state,
        removed=tuple(removed),
        kept=tuple(kept_list),
    )


def if_dropped(place: Place) -> TidyOutcome:
    """What tidy would remove and keep of ``place`` were it dropped now, nothing changed.

    What ``flume drop`` is to be confirmed with: a branch holding commits its base lacks, or a
    change's, is kept; a worktree with uncommitted changes too (R10).
    """
    if place.life in {Life.DROPPED, Life.TIDIED}:
        return dry_run(place, force=False)
    return dry_run(evolve(place, life=Life.DROPPED), force=False)


def _in_flight(place: Place) -> TidyOutcome:
    reason = f"in flight (stage {place.stage.name}, {place.life.value}): drop it to tidy it"
    return TidyOutcome(
        place=_name(place),
        repository=place.launch.repository,
        state=TidyResult.IN_FLIGHT,
        kept=(Kept(what=place.path, reason=reason),),
    )


def _other_host(place: Place, here: str | None) -> TidyOutcome | None:
    """Kept, when another host launched the place: its supervisor alone tidies it.

    HOST-OWNS-PLACE: this host's supervisor would never perform the tidy, so none is asked.
    """
    owner = place.launch.host
    if owner is None or followed_by(place.launch, here):
        return None
    reason = f"launched by another host ({owner.state}): run flume tidy there"
    return TidyOutcome(
        place=_name(place),
        repository=place.launch.repository,
        state=TidyResult.KEPT,
        kept=(Kept(what=place.path, reason=reason),),
    )


def ask(
    found: places.Found, *, force: bool, settings: Settings, clock: Callable[[], float]
) -> int | None:
    """Journal a tidy for a finished or dropped place; the line it starts after, else None."""
    place = found.place
    if place is None or place.life not in {Life.FINISHED, Life.DROPPED}:
        return None
    before = len(journal.read(found.journal).observations)
    places.command(found.journal, TidyAsked(at=Instant(clock()), force=force), settings)
    return before


def outcome(found: places.Found, after: int, settings: Settings) -> TidyOutcome | None:
    """What the tidy asked at line ``after`` came to; None while the supervisor is at it."""
    seen = journal.read(found.journal).observations
    place: Place | None = None
    removed: list[str] = []
    kept: list[Kept] = []
    failed: list[str] = []
    for number, observation in enumerate(seen):
        decision = step(settings, place, observation)
        place = decision.place
        if number < after:
            continue
        match observation:
            case WorktreeRemoved(path=path):
                removed.append(f"worktree {path}")
            case BranchDeleted(branch=branch):
                removed.append(f"branch {branch}")
            case ActionFailed(action=failed_action, output=output):
                failed.append(f"{failed_action.value}: {output}")
            case _:
                pass
        for action in decision.actions:
            if isinstance(action, GatherTidyFacts):
                # A new look at the place: what an earlier look kept is judged again. (Kept
                # things are reported only by a look that removes nothing, the last of a tidy.)
                kept.clear()
            if isinstance(action, Report) and action.event is Event.KEPT:
                what, _, reason = action.text.partition(": ")
                kept.append(Kept(what=what, reason=reason))
    if place is None or not isinstance(place.tidy, TidyNotWanted):
        return None
    state = TidyResult.TIDIED if place.life is Life.TIDIED else TidyResult.KEPT
    return TidyOutcome(
        place=_name(place),
        repository=place.launch.repository,
        state=state,
        removed=tuple(dict.fromkeys(removed)),
        kept=tuple(dict.fromkeys(kept)),
        failed=tuple(failed),
    )


def wait(
    asked: list[tuple[places.Found, int]], settings: Settings, deadline: float
) -> list[TidyOutcome]:
    """Each asked place's outcome, waiting for the supervisor until ``deadline`` (monotonic)."""
    done: dict[Path, TidyOutcome] = {}
    while True:
        for found, after in asked:
            if found.journal not in done:
                result = outcome(found, after, settings)
                if result is not None:
                    done[found.journal] = result
        if len(done) == len(asked) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    results = []
    for found, _after in asked:
        result = done.get(found.journal)
        if result is None:
            assert found.place is not None  # noqa: S101 (only replayed places are asked)
            result = TidyOutcome(
                place=_name(found.place),
                repository=found.place.launch.repository,
                state=TidyResult.WAITING,
                failed=("the supervisor had not finished; run flume tidy again",),
            )
        results.append(result)
    return results


def tidied_before(found: places.Found, settings: Settings) -> TidyOutcome:
    """A place tidied before (by the supervisor, or a tidy): what it removed and kept."""
    assert found.place is not None  # noqa: S101 (only replayed places are tidied)
    result = outcome(found, 0, settings)
    return TidyOutcome(
        place=_name(found.place),
        repository=found.place.launch.repository,
        state=TidyResult.TIDIED,
        removed=result.removed if result is not None else (),
        kept=result.kept if result is not None else (),
        earlier=True,
    )


def archive(found: places.Found) -> None:
    """Move a tidied place's journal aside: its name is free and status shows it no more.

    Judged again under the repository's name lock: a launch may have taken the name since.
    """
    place = found.place
    if place is None:
        return
    repository = Path(place.launch.repository)
    with places.names_locked(repository):
        try:
            now = replay(Settings(), journal.read(found.journal).observations)
        except (OSError, journal.JournalError, UsageError):
            return
        if (
            now.life is Life.TIDIED
            and now.launch == place.launch
            and not _run_waits_on(found.journal, now)
        ):
            launcher.archive(found.journal.parent.parent, found.journal.parent)


def _run_holding(path: Path, lane: Place, states: set[LaneState]) -> Place | None:
    """The run of the lane ``lane`` (journal ``path``), when it holds the lane in ``states``.

    None for a place that is no lane, a run gone or unreadable, or one past the lane: a run
    that is no longer active, or no longer at the parallel block the lane is of.
    """
    parent = lane.launch.parent
    if parent is None:
        return None
    try:
        read = journal.read(path.parent.parent / parent / places.JOURNAL)
        run = replay(Settings(), read.observations)
    except (OSError, journal.JournalError, UsageError):
        return None
    held = run.lanes.get(lane.launch.lane)
    if (
        run.life is Life.ACTIVE
        and parallel_of(run) is not None
        and held is not None
        and held.place == lane.launch.place
        and held.state in states
    ):
        return run
    return None


def _run_waits_on(path: Path, lane: Place) -> bool:
    """``lane`` is a lane its run has not yet been told ended: its journal stays till it is.

    The run learns of it from the lane's journal alone (the supervisor reads it there): set
    aside first, the run would wait on it for ever, and a restart launch it again.
    """
    return _run_holding(path, lane, {LaneState.RUNNING}) is not None


def _lane_of_a_run(found: places.Found, place: Place) -> TidyOutcome | None:
    """Kept, when the place is a lane its run still holds: the run tidies it once merged.

    WF-TIDY-LANES: a finished lane's branch is merged into its run's first; tidied before, its
    branch would be kept (its run's branch lacks it yet), and left once merged.
    """
    if place.life is not Life.FINISHED:
        return None
    run = _run_holding(found.journal, place, {LaneState.RUNNING, LaneState.FINISHED})
    if run is None:
        return None
    reason = (
        f"a lane of {run.launch.place}, which merges it and then tidies it: kept "
        f"(flume drop {place.launch.place} to abandon it)"
    )
    return TidyOutcome(
        place=_name(place),
        repository=place.launch.repository,
        state=TidyResult.KEPT,
        kept=(Kept(what=place.path, reason=reason),),
    )


def sweep_staging(repository: Path, now: float) -> list[str]:
    """Remove staging folders of launches that died before their journal was in place.

    A folder's name says which launch made it (boot and process): it goes once that process
    is gone, whatever the clock says. Only a folder of an older flume, which names no owner,
    is judged by its age.
    """
    folder = places.journals_dir(repository)
    removed = []
    for staging in folder.glob(f"{launcher.STAGING}*") if folder.is_dir() else []:
        with contextlib.suppress(OSError):
            gone = launcher.staging_owner_gone(staging.name)
            if gone is None:
                gone = now - staging.stat().st_mtime > STALE_STAGING_SECONDS
            if gone:
                shutil.rmtree(staging)
                removed.append(str(staging))
    return removed


@attrs.frozen(kw_only=True)
class Standing:
    """A place found, as tidy and its dry run walk it: said already, or this host's to tidy."""

    found: places.Found
    place: Place
    #: What is reported without asking a tidy: the place tidied earlier (from its journal), or
    #: kept as another host's; None when it is this host's to tidy now.
    said: TidyOutcome | None
    #: Tidied earlier: its journal is set aside, freeing its name.
    tidied: bool


def standings(found: list[places.Found], settings: Settings) -> Iterator[Standing]:
    """Each readable place in ``found``, in order, as :func:`plans` and :func:`tidy` both see it.

    Tidied earlier: reported as its journal shows. Launched by another host: kept, for its
    supervisor alone tidies it (HOST-OWNS-PLACE). A finished lane its run has yet to merge:
    kept, for its run tidies it (WF-TIDY-LANES). Else this host's to tidy.
    """
    here = places.host_id()
    for each in found:
        place = each.place
        if place is None:
            continue
        if place.life is Life.TIDIED:
            yield Standing(found=each, place=place, said=tidied_before(each, settings), tidied=True)
        else:
            said = _other_host(place, here) or _lane_of_a_run(each, place)
            yield Standing(found=each, place=place, said=said, tidied=False)


def plans(found: list[places.Found], *, force: bool, settings: Settings) -> list[TidyOutcome]:
    """``flume tidy --dry-run``: what ``flume tidy`` would report now, changing nothing.

    The places it reports are :func:`tidy`'s, in its order: a place already tidied is reported
    as the real run reports it, from its journal; any other with the plan on today's facts.
    """
    return [
        each.said if each.said is not None else dry_run(each.place, force=force)
        for each in standings(found, settings)
    ]


def tidy(
    found: list[places.Found], *, force: bool, settings: Settings, timeout: float
) -> list[TidyOutcome]:
    """``flume tidy``: ask, wait for the supervisor, and move aside what ends up tidied.

    Places are reported in the order found, as :func:`plans` reports them.
    """
    outcomes: list[TidyOutcome | None] = []
    asked: list[tuple[places.Found, int]] = []
    slots: list[int] = []
    for each in standings(found, settings):
        if each.tidied:
            archive(each.found)
        if each.said is not None:
            outcomes.append(each.said)
            continue
        after = ask(each.found, force=force, settings=settings, clock=time.time)
        if after is None:
            outcomes.append(dry_run(each.place, force=force))
        else:
            asked.append((each.found, after))
            slots.append(len(outcomes))
            outcomes.append(None)
    if asked:
        client.ensure(wait=10.0)
        waited = wait(asked, settings, time.monotonic() + timeout)
        for (done, _after), slot, outcome in zip(asked, slots, waited, strict=True):
            if outcome.state is TidyResult.TIDIED:
                archive(done)
            outcomes[slot] = outcome
    return [outcome for outcome in outcomes if outcome is not None]
