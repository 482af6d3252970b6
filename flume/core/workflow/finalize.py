"""Finalize: a workflow run's last acts once its body is done, its branch pushed, its PR opened.

Theory of operation. A kind may say ``finalize = { push = "origin", pr = [...] }``
(:class:`~flume.core.kinds.Finalize`). When the run's last block ends, instead of finishing it
stands ``Finalizing`` with no agent, and asks for the acts not yet observed done, one at a time
(:func:`flume.core.place.finalize_action`): ``Push`` (the run's branch alone, never forced,
never the base: WF-PUSH-ONLY-RUN-BRANCH), then ``OpenPR`` (the kind's command, run once). Each
is done when its observation says so (``Pushed``, ``PROpened``), and a done act is never asked
for again (WF-FINALIZE-ONCE): a restart asks only for the one pending, whose performer finds
the remote holding the head already, or the PR command's try already started and waits for it
rather than run it twice. A failure pauses the run ``finalize-failed`` with the failure's words
(git's, or the command's); ``flume resume`` asks again for what is not done.
"""

from __future__ import annotations

from flume.core import stage
from flume.core.actions import Event, Report
from flume.core.observations import PROpened, Pushed
from flume.core.place import Finalizing, Life, Outcome, Place, evolve


def _finalizing(place: Place) -> bool:
    return place.life is Life.ACTIVE and isinstance(place.stage.phase, Finalizing)


def on_pushed(place: Place, seen: Pushed) -> Outcome:
    """WF-FINALIZE-ONCE: the remote holds the run's branch at its head; the next act, or done."""
    if not _finalizing(place) or seen.branch != place.branch or place.pushed == seen.head:
        return place, ()
    place = evolve(place, pushed=seen.head)
    pushed = Report(
        event=Event.PUSHED,
        text=f"{place.branch} pushed to {seen.remote} at {seen.head}",
        stage=place.stage.name,
    )
    place, then = stage.finish_place(place)
    return place, (pushed, *then)


def on_pr_opened(place: Place, seen: PROpened) -> Outcome:
    """WF-FINALIZE-ONCE: the pull request command ran to success; the run finishes."""
    if not _finalizing(place) or place.pr_opened:
        return place, ()
    place = evolve(place, pr_opened=True, pr_url=seen.url)
    said = seen.url or "no URL printed"
    opened = Report(
        event=Event.PR_OPENED,
        text=f"the pull request for {place.branch} is open: {said}",
        stage=place.stage.name,
    )
    place, then = stage.finish_place(place)
    return place, (opened, *then)
