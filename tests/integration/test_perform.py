"""The performer names the action that failed as the action it was asked for."""

from __future__ import annotations

from pyrsistent import pset

from flume.core.actions import ActionName, Event, Report, SendPrompt, SendTell
from flume.core.ids import BranchName, Instant, KindName, Marker, SessionId, StageName, WorkName
from flume.core.kinds import BUILTIN_KINDS
from flume.core.launch import Launch
from flume.core.observations import ActionFailed, Launched
from flume.core.place import Place
from flume.core.settings import Settings
from flume.core.step import step
from flume.shell.perform.performer import Performer


def _place() -> Place:
    launch = Launch(
        repository="/nowhere/repo",
        kind=KindName("fix"),
        name=WorkName("typed"),
        brief="Mend it.",
        base=BranchName("main"),
        waits=pset(),
    )
    kind = BUILTIN_KINDS[KindName("fix")]
    return step(Settings(), None, Launched(at=Instant(0), launch=launch, kind=kind)).place


def test_a_send_without_agents_fails_naming_the_send_it_was() -> None:
    """A prompt's or a tell's send that fails is named SendPrompt or SendTell, never "Send".

    The core reads the name to know what failed: a name no action has matches nothing.
    """
    place = _place()
    session, marker = SessionId("s"), Marker("m")
    prompt = SendPrompt(
        session=session, stage=StageName("code"), attempt=1, send=1, marker=marker, text="go"
    )
    sends = (
        (prompt, "SendPrompt"),
        (SendTell(session=session, number=1, send=1, marker=marker, text="and this"), "SendTell"),
    )
    for action, name in sends:
        (failed,) = Performer(clock=lambda: 5.0).perform(place, action)
        assert isinstance(failed, ActionFailed)
        assert failed.action is ActionName(name)
        (report,) = step(Settings(), place, failed).actions
        assert isinstance(report, Report)
        assert report.event is Event.FAILED
        assert report.text.startswith(f"{name} failed (status 1): flume cannot start agents")
