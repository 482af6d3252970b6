"""The landings observer: a submitted place's work seen on its base, however it got there.

Theory of operation. The embedded lander (:mod:`flume.shell.perform.lander`) reports its own
landings; a merge queue (``[land] submit``) lands later, elsewhere, and a person may land a
branch by hand. :class:`Landings` sees each of them the same way: the place's base (or the
remote-tracking ref of the base a queue lands on) holds the branch's work, by the one meaning of
"holds" the lander uses too (:func:`flume.shell.tools.git.holds`). It decides nothing: ``Landed``
is an observation, and the core says what follows.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, Sha
from flume.core.observations import Landed, Observation
from flume.core.place import Life, Submission
from flume.shell.declared import config
from flume.shell.store.follower import Followed
from flume.shell.tools import git, openspec

_log = logging.getLogger("flume.lander")


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
                    archived = openspec.is_change_archived(repository, Sha(base), place.launch.name)
                    yield each, Landed(at=now, base_sha=Sha(base), change_archived=archived)
                    break

    def _holds(self, repository: Path, base: Sha, branch: Sha) -> bool:
        key = (str(repository), base, branch)
        if key not in self._held:
            self._held[key] = git.holds(repository, base, branch)
        return self._held[key]

    def _fetch(self, repository: Path, bases: set[BranchName], now: Instant) -> dict[str, str]:
        """Fetch the bases a queue lands on from their remotes; base -> remote-tracking ref.

        Only a repository that declares a submit command, or a fleet host's clone that lands
        through its remote (``flume.fleetRemote``), is fetched: the embedded lander lands on the
        local base, which needs no fetch.
        """
        try:
            declared = config.load(repository)
        except UsageError:
            _log.warning("%s has a malformed flume config: landings seen locally", repository)
            return {}
        if declared.submit is None and git.fleet_remote(repository) is None:
            return {}
        upstreams = git.upstreams(repository, bases)
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
                said = "\n".join(part for part in (ran.out.strip(), ran.err.strip()) if part)
                said = said or "no output"
                _log.warning("fetching %s in %s failed: %s", remote, repository, said)
        return {base: upstream.tracking for base, upstream in upstreams.items()}
