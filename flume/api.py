"""flume's Python API, for tools that drive flume: launch, status, the caller's commands, events.

Each function does what its ``flume`` command does, with the same checks, and returns what the
command prints, as values: a tracker, a release tool or an MCP server calls these instead of
running the CLI and reading its output. The CLI itself is built on them: every command goes
through here to the shell. Documented in docs/api.md.

Bad input, or a command the place's rules refuse, raises :class:`UsageError` (the one from
:mod:`flume.core.errors`): its ``problems`` say what is wrong and how to mend it, and its
``exit_status`` is what the CLI would exit with (2 for bad input, 1 for a refusal). Nothing is
created or journaled then. No function here exits the process or prints.

A command that journals something for the supervisor to act on (``launch``, ``tell``, ``stop``,
``retry``, ``drop``, ``proceed``, ``approve``, ``resume``, ``raise_budgets``, ``resolve``,
``needs``, ``submit``) wakes the host's supervisor, starting
one when none runs, as the CLI does. ``status``, ``status_dicts`` and ``events`` only read
journals and start nothing.

Imports. A command answers at once only if it loads no more than it needs (bench/cli.py,
tests/integration/test_cli_imports.py): this module loads at its top only what the quick
answers need (an agent's command refused outside any place), and each function loads the
rules, git, the journal's codec and the supervisor's client when it runs. The names it
re-exports from those (``PlaceStatus``, ``Cursor``, ``Unanswered``...) load on first use.
"""

from __future__ import annotations

import importlib
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from flume.core.errors import Problem, UsageError, refused
from flume.shell.commands import input_checks

if TYPE_CHECKING:
    import threading

    from flume.api_records import DaemonStatus, Launched, Simulated, Survey, Versioned
    from flume.core.ids import Instant
    from flume.core.observations import Launched as LaunchSeen
    from flume.core.observations import Observation
    from flume.core.place import Place
    from flume.core.settings import Settings
    from flume.core.status import PlaceStatus
    from flume.core.step import Decision
    from flume.shell.agents.inspection import Inspection
    from flume.shell.commands.attach import Attaching
    from flume.shell.commands.herdr_plugin import Context as HerdrContext
    from flume.shell.commands.herdr_plugin import HerdrRequest, InFlight
    from flume.shell.commands.tidying import TidyOutcome
    from flume.shell.commands.transcripts import AttemptChat
    from flume.shell.commands.verbs import Prompt
    from flume.shell.panes.herdr import Client as HerdrClient
    from flume.shell.panes.herdr import HerdrError
    from flume.shell.perform.launch_words import LaunchAsked
    from flume.shell.store import places
    from flume.shell.store.events import Cursor, EventStream, PlaceEvent
    from flume.shell.store.journal import Read
    from flume.shell.supervisor.client import START_SECONDS as DAEMON_START_SECONDS
    from flume.shell.supervisor.handover import Unanswered
    from flume.shell.supervisor.protocol import Answered, DaemonReport, SurveyAnswer

__all__ = [
    "DAEMON_START_SECONDS",
    "Attaching",
    "AttemptChat",
    "Cursor",
    "DaemonStatus",
    "EventStream",
    "HerdrClient",
    "HerdrContext",
    "HerdrError",
    "HerdrRequest",
    "InFlight",
    "Inspection",
    "LaunchAsked",
    "LaunchFailed",
    "Launched",
    "PlaceEvent",
    "PlaceStatus",
    "Prompt",
    "Simulated",
    "Survey",
    "TidyOutcome",
    "Unanswered",
    "UsageError",
    "Versioned",
    "answer",
    "approve",
    "ask",
    "attach",
    "board_of",
    "check_launch",
    "commits_of",
    "compose",
    "daemon_install",
    "daemon_log",
    "daemon_run",
    "daemon_start",
    "daemon_status",
    "daemon_stop",
    "daemon_unit",
    "decoded",
    "drop",
    "events",
    "exec_attach",
    "followed",
    "follower",
    "hand_over",
    "herdr_notify",
    "herdr_place_meant",
    "herdr_reports",
    "herdr_repository_meant",
    "herdr_row",
    "herdr_sidebar",
    "if_dropped",
    "in_flight",
    "inspect",
    "launch",
    "launch_asked",
    "needs",
    "notify",
    "pass_gate",
    "plan_launch",
    "proceed",
    "progress",
    "prompt",
    "raise_budgets",
    "resolve",
    "resume",
    "retry",
    "scenarios",
    "simulate",
    "simulate_journal",
    "simulate_versions",
    "spawn",
    "status",
    "status_dicts",
    "status_document",
    "stop",
    "submit",
    "supervised",
    "supervisor_running",
    "survey",
    "tell",
    "tidy",
    "transcript",
    "view_of",
]

#: Names re-exported from modules loaded on first use: name -> (module, its name there).
_LATER = {
    "Attaching": ("flume.shell.commands.attach", "Attaching"),
    "AttemptChat": ("flume.shell.commands.transcripts", "AttemptChat"),
    "DaemonStatus": ("flume.api_records", "DaemonStatus"),
    "Launched": ("flume.api_records", "Launched"),
    "Simulated": ("flume.api_records", "Simulated"),
    "Versioned": ("flume.api_records", "Versioned"),
    "Survey": ("flume.api_records", "Survey"),
    "Cursor": ("flume.shell.store.events", "Cursor"),
    "EventStream": ("flume.shell.store.events", "EventStream"),
    "HerdrClient": ("flume.shell.panes.herdr", "Client"),
    "HerdrContext": ("flume.shell.commands.herdr_plugin", "Context"),
    "HerdrError": ("flume.shell.panes.herdr", "HerdrError"),
    "HerdrRequest": ("flume.shell.commands.herdr_plugin", "HerdrRequest"),
    "InFlight": ("flume.shell.commands.herdr_plugin", "InFlight"),
    "Inspection": ("flume.shell.agents.inspection", "Inspection"),
    "LaunchAsked": ("flume.shell.perform.launch_words", "LaunchAsked"),
    "PlaceEvent": ("flume.shell.store.events", "PlaceEvent"),
    "PlaceStatus": ("flume.core.status", "PlaceStatus"),
    "Prompt": ("flume.shell.commands.verbs", "Prompt"),
    "TidyOutcome": ("flume.shell.commands.tidying", "TidyOutcome"),
    # A launch the supervisor took and then said nothing of: whether it was made is unknown.
    "Unanswered": ("flume.shell.supervisor.handover", "Unanswered"),
    # How long :func:`daemon_start` waits for a supervisor it started to answer.
    "DAEMON_START_SECONDS": ("flume.shell.supervisor.client", "START_SECONDS"),
}


def __getattr__(name: str) -> Any:  # noqa: ANN401 (a class, whichever is named)
    """A re-exported name whose module is loaded when the name is first asked for."""
    if name not in _LATER:
        message = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(message)
    module, there = _LATER[name]
    found = getattr(importlib.import_module(module), there)
    globals()[name] = found
    return found


# --- launch --------------------------------------------------------------------------------


def launch(  # noqa: PLR0913 (each is one thing a launch names)
    *,
    repository: str | Path,
    name: str,
    brief: str | Callable[[], str],
    kind: str | None = None,
    kind_file: str | Path | None = None,
    base: str | None = None,
    mark: str | None = None,
    waits: Sequence[str] = (),
    agent: str = "claude",
    model: str | None = None,
    agent_args: Sequence[str] = (),
    panes: str = "tmux",
) -> Launched:
    """Launch work (``flume launch``): check it whole, journal it, wake the supervisor.

    ``kind`` is fix, change, question or a kind the repository declares; ``kind_file`` is a
    TOML file with a ``[kind]`` table the launch carries (``kind`` may then be left out).
    ``brief`` may be a function returning the brief, called once the kind file, the agent and
    the panes are read, before the rest is checked (the CLI reads stdin so). ``waits`` names
    stages that wait on the caller's word (:func:`proceed`). ``agent`` is claude, codex or
    test; ``agent_args`` go on the agent's command line, in order; ``panes`` is tmux, herdr or
    print. Raises :class:`UsageError`, creating nothing, when
    anything is wrong; with exit status 1 when a folder it writes cannot be written (a full
    disk, a read-only folder), naming it and the system's words. The same as
    :func:`launch_asked` of a :class:`LaunchAsked` holding these arguments.
    """
    from flume.shell.perform.launch_words import LaunchAsked

    return launch_asked(
        LaunchAsked(
            repository=repository,
            name=name,
            brief=brief,
            kind=kind,
            kind_file=kind_file,
            base=base,
            mark=mark,
            waits=waits,
            agent=agent,
            model=model,
            agent_args=agent_args,
            panes=panes,
        )
    )


def launch_asked(asked: LaunchAsked) -> Launched:
    """:func:`launch`, its arguments in one record: checked and journaled in this process."""
    from flume.api_records import Launched
    from flume.shell.perform import launcher
    from flume.shell.supervisor import client

    made = launcher.launch_asked(asked)
    client.ensure()
    return Launched.of(made)


def check_launch(asked: LaunchAsked) -> LaunchSeen:
    """A launch checked whole, as :func:`launch_asked` checks it, and nothing made or journaled.

    Its journal's first line as it would be (the place, its kind and base, resolved). Raises
    :class:`UsageError` as :func:`launch` does. A fleet launch is checked so where it is made.
    """
    from flume.shell.perform import launcher

    return launcher.check_asked(asked)


def plan_launch(asked: LaunchAsked) -> dict[str, Any]:
    """The worst case a launch's kind's caps allow (``flume launch --plan``), as JSON-ready data.

    Checked as :func:`launch_asked` checks (a bad kind file raises :class:`UsageError`), its
    brief unread; nothing is started, made or journaled. A figure no cap bounds is None.
    """
    from flume.shell.perform import launcher

    worst = launcher.plan_asked(asked)
    return {
        "format": 1,
        "kind": worst.kind,
        "agents_at_once": worst.agents_at_once,
        "lanes": worst.lanes,
        "step_runs": worst.step_runs,
        "attempts": worst.attempts,
        "turns": worst.turns,
        "tokens": worst.tokens,
        "wall_minutes": worst.wall_minutes,
        "steps": [{"path": each.path, "runs": each.runs} for each in worst.steps],
    }


class LaunchFailed(Exception):  # noqa: N818 (what happened, as handover.Unanswered)
    """The supervisor took a launch and failed with an error of its own (said in the message)."""


def hand_over(asked: LaunchAsked) -> Launched | None:
    """Hand the launch to the host's running supervisor, which checks and journals it.

    Its rules, git and the journal's codec are loaded already, so this answers sooner than
    :func:`launch_asked`, loading none of them. None, and nothing done, when no supervisor runs
    or it does not take the launch (one carrying a kind file, or asked of another flume): launch
    it with :func:`launch_asked`. Raises :class:`UsageError` as :func:`launch` does (nothing
    made), :class:`Unanswered` when the supervisor took it and said nothing more (it may have
    been made), :class:`LaunchFailed` when the supervisor failed at it.
    """
    from flume.api_records import Launched
    from flume.shell.perform.launch_words import Made
    from flume.shell.supervisor import handover

    match handover.launch(asked):
        case None:
            return None
        case handover.LaunchMade(document=made):
            return Launched.of(Made.from_dict(dict(made)))
        case handover.LaunchRefused(problems=problems, exit_status=exit_status):
            raise UsageError(problems, exit_status=exit_status)
        case handover.LaunchCrashed(output=output):
            raise LaunchFailed(output)


# --- status --------------------------------------------------------------------------------


def _repositories(repository: str | Path | None) -> list[Path]:
    """The repository named (its main worktree), or every one flume knows."""
    from flume.shell.store import places

    if repository is not None:
        return [places.repository_of(Path(repository))]
    return places.remembered()


def survey(
    *, place: str | None = None, repository: str | Path | None = None, mark: str | None = None
) -> Survey:
    """Every place's status, with what could not be read; never raises for a missing place.

    ``place`` keeps one place (``<kind>--<name>``), ``mark`` the places launched with it, and
    ``repository`` one repository's places (default: every repository flume knows). A live
    agent's state is ``unknown`` while no supervisor runs (R11).
    """
    import attrs

    from flume.api_records import Survey
    from flume.core.settings import Settings
    from flume.core.status import status as core_status
    from flume.shell.store import places
    from flume.shell.supervisor import client

    repositories = _repositories(repository)
    views: list[PlaceStatus] = []
    unreadable: list[tuple[str, str]] = []
    torn: list[str] = []
    # R11: with no supervisor following the places, what an agent does now cannot be read.
    said = client.status(timeout=1.0)
    supervised = said is not None
    here = places.host_id()
    for found_in in repositories:
        for found in places.places_of(found_in, Settings()):
            if found.place is None:
                unreadable.append((str(found.journal), found.problem or "unreadable"))
                continue
            if found.torn:
                torn.append(str(found.journal))
            view = core_status(found.place, agent_known=supervised, here=here)
            fault = _fault_of(found.journal, said)
            if fault is not None:
                view = attrs.evolve(view, fault=fault)
            if (mark is None or view.mark == mark) and (place is None or view.place == place):
                views.append(view)
    return Survey(
        places=tuple(views),
        unreadable=tuple(unreadable),
        torn=tuple(torn),
        repositories=tuple(repositories),
    )


def status_document(
    *, place: str | None = None, repository: str | Path | None = None, mark: str | None = None
) -> SurveyAnswer:
    """Every place's status as ``flume status --json``'s data, with ``torn`` and more.

    The running supervisor answers it from the places it follows, with their journals read to
    their ends; with none running, or for one repository, the journals are read here (R11: what
    an agent does now is then unknown). No repository registered: no places, nothing to read.
    Filtered as :func:`survey`, but the supervisor's answer holds every place.
    """
    from flume.shell import host
    from flume.shell.supervisor import client
    from flume.shell.supervisor.protocol import SurveyAnswer, Unreadable

    if repository is None:
        # A supervisor that cannot answer within this is taken as none: the journals are read.
        answer = client.survey(timeout=2.0)
        if answer is not None:
            return answer
        if not host.remembered():
            return SurveyAnswer(
                format=host.STATUS_FORMAT, places=(), unreadable=(), torn=(), repositories=()
            )
    from flume.shell.store.codec import codec

    found = survey(place=place, repository=repository, mark=mark)
    return SurveyAnswer(
        format=host.STATUS_FORMAT,
        places=tuple(codec().unstructure(view) for view in found.places),
        unreadable=tuple(Unreadable(journal, problem) for journal, problem in found.unreadable),
        torn=found.torn,
        repositories=tuple(str(each) for each in found.repositories),
    )


def _fault_of(journal_path: Path, said: DaemonReport | None) -> str | None:
    """What the supervisor's ``status`` answer says keeps it from carrying a place on."""
    from flume.shell.store.journal import fault_words

    if said is None:
        return None
    return fault_words(
        unwritable=said.unwritable.get(str(journal_path)),
        unread=said.unreadable.get(str(journal_path)),
    )


def no_such_place(place: str, repositories: Sequence[Path]) -> UsageError:
    """The error for a place that is in none of ``repositories``."""
    return UsageError.one(
        "place",
        f"no place {place} in {', '.join(map(str, repositories)) or 'any repository'}",
        "run flume status to list the places there are",
    )


def status(
    *, place: str | None = None, repository: str | Path | None = None, mark: str | None = None
) -> list[PlaceStatus]:
    """The status of each place (``flume status``), as :class:`PlaceStatus` views.

    Filters as :func:`survey`; a ``place`` found nowhere raises :class:`UsageError`.
    """
    found = survey(place=place, repository=repository, mark=mark)
    if place is not None and not found.places:
        raise no_such_place(place, found.repositories)
    return list(found.places)


def status_dicts(
    *, place: str | None = None, repository: str | Path | None = None, mark: str | None = None
) -> list[dict[str, Any]]:
    """:func:`status` as JSON-ready data: the ``places`` of ``flume status --json`` (format 2)."""
    from flume.shell.store.codec import codec

    views = status(place=place, repository=repository, mark=mark)
    return [codec().unstructure(view) for view in views]


# --- the caller's commands -----------------------------------------------------------------


def _now() -> Instant:
    from flume.core.ids import Instant

    return Instant(time.time())


#: The variables that mark a process as an agent's that flume started (runner.marks).
_AGENT_SESSION, _AGENT_PLACE = "FLUME_SESSION", "FLUME_PLACE"


def _a_persons_word(verb: str, place: str = "", *, own_place_too: bool = True) -> None:
    """A person's verb from inside an agent's session is refused, exit 1, naming why.

    The engine reserves approve, resume, raise, resolve, pass, answer and drop for a person ("a
    person always has the last word", docs/claude-code.md, "An agent's tools"): an agent that
    could approve its own gate, raise its own budget, answer its own question or drop another's
    place would hold them.
    Whatever path a call comes by (the CLI, the MCP server, this API), a process started in an
    agent's session carries its mark (``$FLUME_SESSION``, which the agents flume starts and the
    MCP servers they start inherit), and is refused here. ``own_place_too``: false for a verb an
    agent may use on its own place (dropping it).
    """
    session = os.environ.get(_AGENT_SESSION, "").strip()
    if not session:
        return
    own = os.environ.get(_AGENT_PLACE, "").strip()
    if not own_place_too and place and place == own:
        return
    where = f" of {own}" if own else ""
    raise refused(
        verb,
        f"flume {verb} is a person's word, and this comes from inside the agent session "
        f"{session}{where} ($FLUME_SESSION is set)",
        f"a person runs flume {verb} from their own terminal, not from an agent's",
    )


def _give(place: str, repository: str | Path | None, seen: Observation) -> Decision:
    """Journal the caller's command for the place and wake the supervisor."""
    return _given(place, repository, seen)[1]


def _given(
    place: str, repository: str | Path | None, seen: Observation
) -> tuple[Place | None, Decision]:
    """:func:`_give`, with the place as it was before the command."""
    from flume.core.settings import Settings
    from flume.shell.commands import verbs
    from flume.shell.store import places
    from flume.shell.supervisor import client

    settings = Settings()
    where = Path(repository) if repository is not None else None
    found = places.find(place, where, settings)
    decision = verbs.give(found, seen, settings)
    client.ensure()
    return found.place, decision


def _at_step(
    place: str, repository: str | Path | None, step: str, settings: Settings
) -> tuple[places.Found, str]:
    """The place a command naming ``step`` is for, and the step to check there (STEP-NAMED).

    A run standing at a parallel has no agent: a step of one of its lanes is the lane's place's
    (:func:`flume.core.workflow.lanes.lane_for`). Otherwise the place itself, whose rules check
    the step.
    """
    from flume.core.workflow.lanes import lane_for
    from flume.shell.store import places

    where = Path(repository) if repository is not None else None
    found = places.find(place, where, settings)
    run = found.place
    lane = lane_for(run, step) if run is not None else None
    if run is None or lane is None:
        return found, step
    lane_place, inner = lane
    return places.find(lane_place, Path(run.launch.repository), settings), inner


def _followed_or_refuse(found: places.Found) -> None:
    """Refuse (exit status 1) a command for a place the host's supervisor cannot follow now.

    A tell journaled there would be said to be held, and never be sent: the supervisor that
    would send it does not read the journal (a line it cannot read, found before a mend, while
    an action of the place still runs). No supervisor answering is no refusal: the one the
    command starts reads every journal anew.
    """
    from flume.shell.supervisor import client

    if found.place is None:
        return
    reply = client.follows(found.journal, timeout=2.0)
    problem = reply.problem if reply is not None else None
    if problem:
        name = _name(found.place)
        raise refused(
            "place",
            f"the supervisor does not follow {name}, so nothing would be sent: {problem}",
            f"mend the journal so it reads whole (flume daemon status names what is wrong), "
            f"then run it again; flume drop {name} abandons the work",
        )


def _name(place: Place) -> str:
    return place.launch.place


def tell(place: str, text: str, *, step: str = "", repository: str | Path | None = None) -> str:
    """Tell the place's agent ``text`` (R6): held while it works, sent once it waits.

    With ``step`` (a key or name, as ``flume status`` shows it), only while the place is at that
    step (STEP-NAMED); a run standing at a parallel passes it to the lane it names. Returns
    what ``flume tell`` prints. Refused (exit status 1) with no live agent, while the agent asks
    a person, at another step, or while the host's supervisor cannot follow the place's
    journal; bad words (empty, not text, over 1 MiB) or a malformed step are exit status 2.
    """
    from flume.core.actions import SendTell
    from flume.core.observations import Told
    from flume.core.settings import Settings
    from flume.shell.commands import verbs
    from flume.shell.supervisor import client

    words = input_checks.checked_text("tell", text)
    named = input_checks.checked_step(step)
    settings = Settings()
    found, named = _at_step(place, repository, named, settings)
    _followed_or_refuse(found)
    decision = verbs.give(found, Told(at=_now(), text=words, step=named), settings)
    client.ensure()
    number = decision.place.tells_given
    sent = any(
        isinstance(action, SendTell) and action.number == number for action in decision.actions
    )
    if sent:
        return (
            f"{_name(decision.place)}: tell {number} is sent now, as the agent waits; it is "
            "delivered once the agent's transcript holds it"
        )
    return (
        f"{_name(decision.place)}: tell {number} is held while the agent works; "
        "it is sent once the agent waits"
    )


def stop(place: str, *, repository: str | Path | None = None) -> str:
    """End the agent that went the wrong way; its stage waits for a retry (R9)."""
    from flume.core.observations import StopAsked

    decision = _give(place, repository, StopAsked(at=_now()))
    name = _name(decision.place)
    return (
        f"{name}: the agent of stage {decision.place.stage.name} is ended; the stage waits: "
        f"flume retry {name} [--words TEXT] runs it again, flume drop {name} abandons the work"
    )


def retry(
    place: str, *, words: str = "", step: str = "", repository: str | Path | None = None
) -> str:
    """Run the stage that stopped short again, with a fresh agent and ``words`` (R9).

    With ``step``, only while the place is at that step, a lane's as :func:`tell` finds it.
    """
    from flume.core.observations import RetryAsked
    from flume.core.settings import Settings
    from flume.shell.commands import verbs
    from flume.shell.supervisor import client

    given = input_checks.checked_text("words", words, empty_ok=True)
    named = input_checks.checked_step(step)
    settings = Settings()
    found, named = _at_step(place, repository, named, settings)
    decision = verbs.give(found, RetryAsked(at=_now(), words=given, step=named), settings)
    client.ensure()
    stage = decision.place.stage
    with_words = " and your words in its prompt" if stage.words.strip() else ""
    retried = decision.place
    again = (
        f", once its worktree is added again from its branch {retried.branch} at {retried.head}"
        if retried.rebuilding
        else ""
    )
    return (
        f"{_name(retried)}: stage {stage.name} starts again (attempt {stage.attempt}) "
        f"with a fresh agent{with_words}{again}"
    )


def proceed(place: str, *, repository: str | Path | None = None) -> str:
    """Give your word to a stage that waits on it, so that it starts (R7)."""
    from flume.core.observations import ProceedAsked

    decision = _give(place, repository, ProceedAsked(at=_now()))
    return (
        f"{_name(decision.place)}: stage {decision.place.stage.name} is released; "
        "it starts with a fresh agent"
    )


def approve(place: str, *, repository: str | Path | None = None) -> str:
    """Approve the step an approval gate holds: its gate passes and the run goes on.

    Refused (exit status 1, nothing journaled) when the place is not paused for an approval,
    naming what it waits on and the command that applies (a question: ``flume answer``).
    Returns what starts next.
    """
    from flume.core.applies import went_on
    from flume.core.observations import ApproveAsked

    _a_persons_word("approve")
    before, decision = _given(place, repository, ApproveAsked(at=_now()))
    key = (before or decision.place).stage.key
    return went_on(before, decision.place, f"step {key} is approved")


def pass_gate(place: str, why: str, *, step: str = "", repository: str | Path | None = None) -> str:
    """A person passes a gate the run holds blocked (``flume pass``), saying ``why``.

    Journaled as a person's decision: the step ends as a passed gate does, and the run goes on;
    ``flume events`` and ``flume status`` show it, with ``why``. With ``step``, only while the
    place is at that step; a run standing at a parallel passes it to the lane it names, as
    :func:`tell` does. Refused (exit status 1, nothing journaled) where no gate is blocked,
    naming what the place waits on; empty or overlong words, or a malformed step, exit 2.
    Returns what starts next.
    """
    from flume.core.applies import went_on
    from flume.core.observations import PassAsked
    from flume.core.settings import Settings
    from flume.shell.commands import verbs
    from flume.shell.supervisor import client

    _a_persons_word("pass")
    words = input_checks.checked_text("why", why)
    named = input_checks.checked_step(step)
    settings = Settings()
    found, named = _at_step(place, repository, named, settings)
    decision = verbs.give(found, PassAsked(at=_now(), why=words, step=named), settings)
    client.ensure()
    key = (found.place or decision.place).stage.key
    return went_on(found.place, decision.place, f"the gate of {key} is passed, by your word")


def resume(place: str, *, repository: str | Path | None = None) -> str:
    """Let a run paused on a blocked gate or a loop's max go on: its step starts again.

    Refused (exit status 1, nothing journaled) when the place is not paused, or paused for what
    resume does not resolve (an approval: ``approve``; a budget: ``raise_budgets``), naming the
    command that applies. Returns what starts next: the step again, the step after a loop's max,
    or a finalize going on.
    """
    from flume.core.applies import went_on
    from flume.core.observations import ResumeAsked

    _a_persons_word("resume")
    before, decision = _given(place, repository, ResumeAsked(at=_now()))
    return went_on(before, decision.place, "resumed") + _budgets_said(decision.place)


def resolve(
    place: str, *, agent: bool = False, without: str = "", repository: str | Path | None = None
) -> str:
    """Let a run paused on its lanes' merge, or on a lane that ended unfinished, go on.

    What ``flume resolve --by-hand`` (``agent`` false, no ``without``), ``--agent`` or
    ``--without LANE`` does. By hand: the person merged the lane the merge stopped at in the
    run's worktree and committed, and the merge goes on (a lane merged already is passed over);
    refused unless no merge is under way there and the run's head holds that lane and those
    before it, history and changes (what this finds in the worktree goes with the command, for
    the rules to judge). By an agent: the parallel's merge step starts with a fresh agent in
    the run's worktree, told to merge the lanes in order and commit; once it has, the merge
    goes on. Without: the run goes on without a lane that ended unfinished, a person's
    decision. Refused (exit status 1, nothing journaled) when nothing of the kind waits.
    """
    from flume.core.observations import ResolveAsked
    from flume.core.settings import Settings
    from flume.shell.commands import verbs
    from flume.shell.store import places
    from flume.shell.supervisor import client

    _a_persons_word("resolve")
    settings = Settings()
    where = Path(repository) if repository is not None else None
    found = places.find(place, where, settings)
    seen = ResolveAsked(at=_now(), agent=agent, without=without)
    if not agent and not without and found.place is not None:
        seen = verbs.merge_facts(found.place, seen.at)
    decision = verbs.give(found, seen, settings)
    client.ensure()
    name = _name(decision.place)
    stage = decision.place.stage
    if without:
        return (
            f"{name}: goes on without lane {without} (your decision); the lanes of parallel "
            f"{stage.key} that finished are merged"
        )
    if agent:
        return (
            f"{name}: an agent merges the lanes of parallel {stage.key} (attempt "
            f"{stage.attempt}), a fresh agent in the run's worktree; the merge goes on once it "
            "commits"
        )
    return (
        f"{name}: merged by hand; the merge of the lanes of parallel {stage.key} goes on, "
        "passing over what is merged already"
    )


#: The budgets ``raise_budgets`` raises, each by the option ``flume raise`` names it with.
RAISED_OPTIONS = {
    "turns": "--turns",
    "tokens": "--tokens",
    "wall_minutes": "--wall",
    "retries": "--retries",
    "turns_per_attempt": "--turns-per-attempt",
}


def raise_budgets(  # noqa: PLR0913 (one keyword per budget)
    place: str,
    *,
    turns: int | None = None,
    tokens: int | None = None,
    wall_minutes: int | None = None,
    retries: int | None = None,
    turns_per_attempt: int | None = None,
    repository: str | Path | None = None,
) -> str:
    """Raise a paused run's budgets by these amounts, in place; the paused step starts again.

    What ``flume raise`` does. Each amount given is a whole number of at least 1 and at least one
    is given, else exit status 2; refused (exit status 1, nothing journaled) when the place is not
    paused on a budget. A budget still spent after the raise pauses the run again, named.
    """
    from flume.core.applies import went_on
    from flume.core.observations import BudgetRaised

    _a_persons_word("raise")
    given = {
        "turns": turns,
        "tokens": tokens,
        "wall_minutes": wall_minutes,
        "retries": retries,
        "turns_per_attempt": turns_per_attempt,
    }
    problems = [
        Problem(
            field=RAISED_OPTIONS[name],
            what=f"{RAISED_OPTIONS[name]} is {amount!r}, not a whole number of at least 1",
            mend=f"raise by a whole number, such as {RAISED_OPTIONS[name]} +5",
        )
        for name, amount in given.items()
        if amount is not None
        and (isinstance(amount, bool) or not isinstance(amount, int) or amount < 1)
    ]
    if problems:
        raise UsageError(tuple(problems))
    if all(amount is None for amount in given.values()):
        raise UsageError.one(
            "raise",
            "no budget is named to raise",
            "name one or more: --turns +N, --tokens +N, --wall +MINUTES, --retries +N, "
            "--turns-per-attempt +N",
        )
    before, decision = _given(place, repository, BudgetRaised(at=_now(), **given))
    return went_on(before, decision.place, "budgets raised") + _budgets_said(decision.place)


def _budgets_said(place: Place) -> str:
    """The run's budgets after a word that let it go on, in words ("" when it sets none)."""
    from flume.core.workflow.budget import budget_words

    spent = budget_words(place.budgets, place.spent, place.now)
    return f" (budgets: {spent})" if spent else ""


def drop(place: str, *, repository: str | Path | None = None) -> str:
    """Abandon the work: its agent ends; tidy removes its place, and keeps a branch with work."""
    from flume.core.observations import DropAsked

    _a_persons_word("drop", place, own_place_too=False)
    _give(place, repository, DropAsked(at=_now()))
    return (
        f"{place} dropped: the supervisor removes its place if clean, and keeps its branch if it "
        "holds commits its base lacks or the work is a change"
    )


# --- the agent's commands ------------------------------------------------------------------


def decoded(field: str, data: bytes) -> str:
    """Bytes read from stdin as the caller's words (UTF-8); a :class:`UsageError` if not text."""
    return input_checks.decoded(field, data)


def _folder(cwd: str | Path | None) -> Path:
    """The folder named, or the one this process runs in; a usage error when it is gone."""
    if cwd is not None:
        return Path(cwd)
    try:
        return Path.cwd()
    except FileNotFoundError as error:
        raise UsageError.one(
            "folder", "the current folder no longer exists", "run it from a folder that exists"
        ) from error


def _here(cwd: str | Path | None) -> Path:
    """:func:`_folder`, refused at once (no git, rules or codec loaded) when in no place."""
    here = _folder(cwd)
    if input_checks.in_no_place(here):
        raise input_checks.outside(here)
    return here


def _agent_command(here: Path, kind: str, words: str = "", options: Sequence[str] = ()) -> str:
    """Carry the agent's command out for the place ``here`` is in; what it prints.

    Outside a sandbox it is journaled here, through the place's rules, and the supervisor is
    woken. Inside one (``$FLUME_INBOX`` names its inbox) the journal is not the agent's to
    write: the command goes through its inbox, and the supervisor carries it out the same way
    and answers (:mod:`flume.shell.store.inbox`); its answer is printed, or raised.
    """
    from flume.shell.commands import verbs
    from flume.shell.store import inbox
    from flume.shell.supervisor import client

    request = inbox.Request(
        kind=kind, session=verbs.session_of(), words=words, options=tuple(options)
    )
    sandboxed = os.environ.get(inbox.VARIABLE, "")
    if sandboxed:
        return inbox.through(Path(sandboxed), request, wake=lambda: client.wake(timeout=1.0))
    from flume.core.settings import Settings

    settings = Settings()
    found = verbs.place_here(here, settings)
    from flume.shell.declared import kinds

    said = inbox.carry_out(found, request, _now(), settings, kinds.read_fragment)
    client.ensure()
    return said


def needs(text: str, *, cwd: str | Path | None = None) -> str:
    """For the agent: stop its stage short with what it needs (``flume needs``, R8).

    The place is the one ``cwd`` (default: this process's folder) is in; the agent's session is
    ``$FLUME_SESSION``. Returns what the command prints. Bad words, or a folder in no place,
    are refused before the rules, git or the journal are loaded.
    """
    words = input_checks.checked_text("words", text)
    return _agent_command(_here(cwd), "needs", words)


def progress(text: str, *, cwd: str | Path | None = None) -> str:
    """For the agent: report progress (``flume progress``), if its step may (WF-EDGES).

    The place and session as :func:`needs` finds them; returns what the command prints.
    """
    words = input_checks.checked_text("words", text)
    return _agent_command(_here(cwd), "progress", words)


def ask(question: str, options: Sequence[str] = (), *, cwd: str | Path | None = None) -> str:
    """For the agent: ask a question (``flume ask``), if its step may (WF-EDGES).

    With no lead above, the caller answers (``flume answer``); the answer comes back to the
    agent as a message its transcript holds. Returns what the command prints: the question's
    id and what to do meanwhile.
    """
    words = input_checks.checked_text("question", question)
    offered = [input_checks.checked_text("option", each) for each in options]
    return _agent_command(_here(cwd), "ask", words, offered)


def spawn(goal: str, agent: str | None = None, *, cwd: str | Path | None = None) -> str:
    """For a lead: spawn a child of its orchestrate block's template (``flume spawn``).

    Refused (exit 1), nothing started, past the block's ``max`` or a spent budget, or from a
    step that is no lead or may not spawn (WF-CHILDREN-CAP, WF-EDGES). Returns what it prints.
    """
    from flume.core.choices import AgentName

    words = input_checks.checked_text("goal", goal)
    agents = [each.value for each in AgentName]
    if agent is not None and agent not in agents:
        raise UsageError.one(
            "agent", f"{agent!r} is not an agent flume starts", f"use one of {', '.join(agents)}"
        )
    return _agent_command(_here(cwd), "spawn", words, [agent] if agent else [])


def compose(
    file: str | Path,
    turns: int,
    tokens: int,
    *,
    base: bool = False,
    cwd: str | Path | None = None,
) -> str:
    """For a lead: compose a child run of the fragment ``file`` (``flume compose``).

    The fragment is a kind file (its ``[kind]`` and blocks), read and checked here: a bad one
    is exit 2, naming its line. The run reserves ``turns`` and ``tokens`` of its budgets for it
    (WF-BUDGET-RESERVE); refused, exit 1, at depth 3 or past the block's ``compose`` runs
    (WF-DEPTH-CAP), or where the run's budgets cannot spare the slice.
    """
    from flume.shell.declared import kinds

    here = _here(cwd)
    path = Path(file) if Path(file).is_absolute() else here / file
    kinds.read_kind_file(path)
    for what, count in (("turns", turns), ("tokens", tokens)):
        if count < 1:
            raise UsageError.one(
                what, f"--{what} {count} is below 1", f"give the {what} the run may spend"
            )
    text = path.read_text(encoding="utf-8")
    options = [str(path), str(turns), str(tokens), "base" if base else "head"]
    return _agent_command(here, "compose", text, options)


def notify(to: str, text: str, *, cwd: str | Path | None = None) -> str:
    """For a lead: words for one child (by name) or ``all`` (``flume notify``).

    A running child's agent is told (proven as any tell); one waiting reads them in its prompt.
    """
    words = input_checks.checked_text("words", text)
    target = input_checks.checked_text("child", to)
    return _agent_command(_here(cwd), "notify", words, [target])


def answer(place: str, question: str, text: str, *, repository: str | Path | None = None) -> str:
    """Answer question ``question`` (``q1``) of ``place`` (``flume answer``): once, to its asker.

    Refused (exit 1) when it was answered already or its asker is gone; an unknown question is
    exit 2. The answer goes to the asker as a tell: held while it works, proven delivered.
    """
    from flume.core.observations import AnswerGiven

    words = input_checks.checked_text("answer", text)
    if not input_checks.QUESTION_ID.fullmatch(question):
        raise UsageError.one(
            "question",
            f"{question!r} is not a question's id",
            "give it as flume status shows it: q1, q2, ...",
        )
    if os.environ.get("FLUME_INBOX", ""):
        # A sandboxed lead: the journals are not its to write; its supervisor answers for it.
        return _agent_command(_here(None), "answer", words, [place, question])
    elsewhere = _answer_elsewhere(place, question, words, repository)
    if elsewhere is not None:
        return elsewhere
    by_lead, no_lead = _answerer(place, repository)
    if not by_lead:
        # Only a lead answers from an agent's session, and only its own children (its own
        # question, or another's, is a person's to answer).
        _a_persons_word("answer")
    seen = AnswerGiven(at=_now(), question=question, text=words, by_lead=by_lead, no_lead=no_lead)
    decision = _give(place, repository, seen)
    return (
        f"{_name(decision.place)}: question {question} answered; the answer goes to the agent "
        "that asked, once it waits, and counts once its transcript holds it"
    )


def _answer_elsewhere(
    place: str, question: str, words: str, repository: str | Path | None
) -> str | None:
    """An answer to a child of a run here that is a fleet place on another host (WF-SPREAD).

    Who answers is judged here, at its run (the live lead, or a person while none lives), and
    the answer goes to the child's host through the fleet. None: ``place`` is here (or is no
    such child: then it is unknown, as any place not here is).
    """
    from flume.core.settings import Settings
    from flume.core.workflow.orchestrate import spread_answerer, spread_child
    from flume.shell.commands import verbs
    from flume.shell.store import outbox, places

    settings = Settings()
    where = Path(repository) if repository is not None else None
    try:
        places.find(place, where, settings)
    except UsageError as unknown:
        repositories = [places.repository_of(where)] if where else places.remembered()
        for each in repositories:
            for found in places.places_of(each, settings):
                run = found.place
                child = spread_child(run, place) if run is not None else None
                if run is None or child is None:
                    continue
                by_lead, no_lead = spread_answerer(run, place, verbs.session_of())
                if not by_lead:
                    _a_persons_word("answer")
                return outbox.answer(run, child, question, words, by_lead=by_lead, no_lead=no_lead)
        raise unknown from None
    return None


def _answerer(place: str, repository: str | Path | None) -> tuple[bool, bool]:
    """WF-ASK-ONE-ANSWERER: whether the command is the live lead's, and whether no lead lives.

    The facts for :func:`flume.core.workflow.orchestrate.answerer`: the run that launched the
    place, as its journal stands, and this command's session (``$FLUME_SESSION``).
    """
    from flume.core.settings import Settings
    from flume.core.workflow.orchestrate import answerer
    from flume.shell.commands import verbs
    from flume.shell.store import places

    settings = Settings()
    where = Path(repository) if repository is not None else None
    child = places.find(place, where, settings).place
    if child is None or child.launch.parent is None:
        return False, False
    try:
        run = places.find(child.launch.parent, Path(child.launch.repository), settings).place
    except UsageError:
        if not child.launch.spread:
            raise
        run = None
    # A fleet place whose run is on another host (WF-SPREAD): its answers come from there.
    return answerer(run, verbs.session_of(), elsewhere=child.launch.spread)


def submit(*, cwd: str | Path | None = None) -> str:
    """For the agent: hand the place's branch to the repository's lander (``flume submit``).

    The place and session as :func:`needs` finds them; returns what the command prints.
    """
    return _agent_command(_here(cwd), "submit")


def prompt(  # noqa: PLR0913 (each is one thing a launch names)
    kind: str,
    stage: str,
    *,
    brief: str = "(the brief)",
    name: str = "example",
    base: str | None = None,
    repository: str | Path | None = None,
    cwd: str | Path | None = None,
) -> Prompt:
    """The exact prompt a stage would be sent (``flume prompt``); starts nothing, writes nothing.

    The repository's kinds and prompts apply (default: those of the one ``cwd`` is in); with
    none, the built-in ones and a stand-in path (``.repository`` is then None).
    """
    from flume.core.settings import Settings
    from flume.shell.commands import verbs

    wanted = verbs.PromptAsked(
        kind=kind,
        stage=stage,
        brief=brief,
        name=name,
        base=base,
        repository=Path(repository) if repository is not None else None,
    )
    return verbs.prompt(wanted, _folder(cwd), Settings())


# --- transcripts ---------------------------------------------------------------------------


def transcript(
    place: str,
    step: str = "",
    *,
    attempt: int | None = None,
    repository: str | Path | None = None,
) -> list[AttemptChat]:
    """Each chosen attempt of the place and its conversation (``flume transcript``).

    ``step`` is a step's key or name as ``flume status`` shows it (``review-loop@2/review``,
    ``review``), or a loop's; empty: every attempt. ``attempt`` picks one number (with a step).
    A place tidied is found too (its journal set aside). Each :class:`AttemptChat` names its
    key, attempt, agent, session and transcript, and holds its ``lines`` (each a ``part``:
    prompt, text, tool or result, and its ``text``), or says why it could not be read
    (``missing``). Raises :class:`UsageError` (exit status 2) for an unknown place, step or
    attempt, and (exit status 1) when no agent ran there yet. Reads; writes and starts nothing.
    """
    from flume.core.settings import Settings
    from flume.shell.commands.transcripts import transcripts

    where = Path(repository) if repository is not None else None
    return transcripts(place, where, Settings(), step=step, attempt=attempt)


# --- tidy and attach -----------------------------------------------------------------------


def tidy(
    *,
    repository: str | Path | None = None,
    force: bool = False,
    dry_run: bool = False,
    timeout: float = 120.0,
) -> list[TidyOutcome]:
    """Remove what landed or was dropped (``flume tidy``): each place's outcome, with why.

    Asks each place's tidy, waits up to ``timeout`` seconds for the supervisor's, moves aside
    the journals of places tidied and removes the staging folders of launches that died.
    ``dry_run``: what it would report now, changing nothing. ``force`` removes places holding
    uncommitted or untracked changes. An outcome whose ``failed`` is not empty failed (the CLI
    exits 1).
    """
    from flume.core.settings import Settings
    from flume.shell.commands import tidying
    from flume.shell.store import places

    settings = Settings()
    repositories = _repositories(repository)
    found = [
        each
        for where in repositories
        for each in places.places_of(where, settings)
        if each.place is not None
    ]
    if dry_run:
        return tidying.plans(found, force=force, settings=settings)
    outcomes = tidying.tidy(found, force=force, settings=settings, timeout=timeout)
    for where in repositories:
        tidying.sweep_staging(where, time.time())
    return outcomes


def attach(place: str, *, repository: str | Path | None = None) -> Attaching:
    """How to show the place's agent in a terminal (``flume attach``): its pane and command.

    ``.printed``: the agent waits for its caller to run ``.argv`` (``--panes print``). Else
    ``.argv`` shows the live ``.pane`` (:func:`exec_attach` runs it here). Refused (exit status 1)
    when the place has no live agent in a pane.
    """
    from flume.core.settings import Settings
    from flume.shell.commands.attach import attaching

    return attaching(place, Path(repository) if repository is not None else None, Settings())


def exec_attach(attached: Attaching) -> NoReturn:
    """Replace this process with the program that shows the pane (:func:`attach`'s argv)."""
    from flume.shell.panes.attach import exec_attach as replace

    replace(attached.argv)
    message = f"{attached.argv[0]} did not take over the process"
    raise SystemExit(message)


# --- events --------------------------------------------------------------------------------


def seconds(field: str, value: float) -> float:
    """``value``, a time between looks; a :class:`UsageError` (exit 2) unless finite and over 0."""
    if not (math.isfinite(value) and value > 0):
        raise UsageError.one(field, f"it is {value}", "give a number of seconds over 0")
    return value


def events(  # noqa: PLR0913 (each narrows the stream or says how to follow it)
    *,
    repository: str | Path | None = None,
    mark: str | None = None,
    place: str | None = None,
    follow: bool = False,
    after: str | None = None,
    poll: float = 0.2,
    until: Callable[[], bool] | None = None,
    on_problem: Callable[[Path, str], None] | None = None,
) -> Iterator[PlaceEvent]:
    """The places' events (``flume events``), derived from their journals (docs/events.md).

    Every event so far, in time order across places and journal order within one; with
    ``follow``, then each new one as its journal line appears (``poll`` seconds between looks,
    places launched later included) until ``until()`` is true. ``after`` is a cursor
    (``str(event.cursor)``): only later events come. ``on_problem(journal, problem)`` hears of
    each journal that cannot be read. The arguments are checked at once, before the first event:
    a bad repository or cursor raises :class:`UsageError`, as does a ``place`` found nowhere
    when not following.
    """
    from flume.core.settings import Settings
    from flume.shell.store import places
    from flume.shell.store.events import Cursor, EventStream

    where = places.repository_of(Path(repository)) if repository is not None else None
    cursor = Cursor.parse(after) if after is not None else None
    seconds("poll", poll)
    follower = EventStream(
        Settings(), repository=where, place=place, mark=mark, after=cursor, on_problem=on_problem
    )
    first = follower.poll()
    if place is not None and not follow and not follower.followed:
        raise no_such_place(place, [where] if where is not None else places.remembered())
    return _stream(follower, first, follow=follow, poll=poll, until=until)


def follower(*, repository: str | Path | None = None, mark: str | None = None) -> EventStream:
    """What ``flume watch`` draws its board from: the places' events, read as journals grow.

    ``repository`` (checked at once: a :class:`UsageError` when it is none) and ``mark`` narrow
    it as they narrow :func:`events`; its ``repository`` is the main worktree, or None for
    every repository flume knows. Nothing is read until it is polled.
    """
    from flume.core.settings import Settings
    from flume.shell.store import places
    from flume.shell.store.events import EventStream

    where = places.repository_of(Path(repository)) if repository is not None else None
    return EventStream(Settings(), repository=where, mark=mark)


def _stream(
    follower: EventStream,
    first: list[PlaceEvent],
    *,
    follow: bool,
    poll: float,
    until: Callable[[], bool] | None,
) -> Iterator[PlaceEvent]:
    """The events read so far, then, when following, each poll's new ones."""
    yield from first
    while follow and not (until is not None and until()):
        time.sleep(poll)
        yield from follower.poll()


# --- the monitor ---------------------------------------------------------------------------


#: The most of one board file the monitor is given, in bytes: a page, not a dump.
BOARD_FILE_MOST = 256 * 1024


def supervised(timeout: float = 1.0) -> bool:
    """Whether the host's supervisor answers: a live agent's state is unknown while it does not."""
    from flume.shell.supervisor import client

    return client.ping(timeout=timeout) is not None


def followed(follower: EventStream) -> list[Place]:
    """Each place ``follower`` follows, as its journal reads to the last poll, in name order."""
    return [each.place for each in follower.places() if each.place is not None]


def view_of(place: Place, *, agent_known: bool) -> dict[str, Any]:
    """The place's status as ``flume status --json`` gives it (R11), for the view model.

    ``agent_known``: whether the supervisor answers (else a live agent's state is unknown).
    """
    from flume.core.status import status as core_status
    from flume.shell.store import places
    from flume.shell.store.codec import codec

    view = core_status(place, agent_known=agent_known, here=places.host_id())
    plain: dict[str, Any] = codec().unstructure(view)
    return plain


def board_of(place: Place) -> list[tuple[str, str]]:
    """The run's board as a person reads it: ``task.md``, then each step's handoff and verdict.

    Each as (its path in the board, its text), in the order the steps run; a file not written
    is left out, and one longer than :data:`BOARD_FILE_MOST` is cut there, said so. Reads only.
    """
    from flume.core.kinds import steps

    if not place.board:
        return []
    board = Path(place.board)
    names = ["task.md"]
    for step in steps(place.kind.body):
        names.extend([f"{step.name}/handoff.md", f"{step.name}/verdict.json"])
    found: list[tuple[str, str]] = []
    for name in dict.fromkeys(names):
        try:
            with (board / name).open("rb") as file:
                data = file.read(BOARD_FILE_MOST + 1)
        except OSError:
            continue
        text = data[:BOARD_FILE_MOST].decode("utf-8", errors="replace")
        if len(data) > BOARD_FILE_MOST:
            text += f"\n... cut at {BOARD_FILE_MOST} bytes: the file is {board / name}"
        found.append((name, text))
    return found


def commits_of(place: Place) -> list[tuple[str, str]] | None:
    """The run branch's commits its base lacks, newest first (sha, subject); None: unknown."""
    from flume.shell.tools import git

    repository = Path(place.launch.repository)
    found = git.log(repository, place.branch, place.launch.base)
    return None if found is None else [(str(sha), subject) for sha, subject in found]


def if_dropped(place: Place) -> TidyOutcome:
    """What ``flume drop`` would lead tidy to remove and keep of the place: its confirmation."""
    from flume.shell.commands import tidying

    return tidying.if_dropped(place)


# --- the host's supervisor -----------------------------------------------------------------


def daemon_status() -> DaemonStatus:
    """Whether the host's supervisor runs and answers, and what it follows (its ``reply``)."""
    from flume.api_records import DaemonStatus
    from flume.shell.supervisor import client

    holder = client.holder()
    paused = holder is not None and client.stopped(holder)
    reply = None if paused else client.status(timeout=client.ANSWER_SECONDS)
    problem = None
    if reply is None and holder is not None:
        (problem,) = client.not_answering(holder, 0 if paused else client.ANSWER_SECONDS).problems
    return DaemonStatus(pid=holder, paused=paused, reply=reply, problem=problem)


def daemon_start() -> Answered | None:
    """Start the host's supervisor if none runs: its answer, or None when it does not answer.

    Waits :data:`DAEMON_START_SECONDS`; its log is :func:`daemon_log`.
    """
    from flume.shell.supervisor import client

    return client.ensure(wait=client.START_SECONDS)


def daemon_unit() -> str:
    """The systemd user unit :func:`daemon_install` writes, for this interpreter (``--print``)."""
    from flume.shell.supervisor import unit

    return unit.this_unit()


def daemon_install() -> Path:
    """Write a systemd user unit that keeps the supervisor running, and enable it: its path.

    ``Restart=on-failure``: a supervisor killed is started again at once. Raises
    :class:`UsageError` (exit status 1, nothing written) where systemd does not run.
    """
    from flume.shell.supervisor import unit

    return unit.install()


def supervisor_running() -> bool:
    """The host's supervisor runs (it holds the host's lock): the places are followed."""
    from flume.shell.supervisor import client

    return client.holder() is not None


def daemon_log() -> Path:
    """The host's supervisor's log file."""
    from flume.shell.supervisor import client

    return client.log_path()


def daemon_stop(*, timeout: float = 600.0) -> tuple[int, bool] | None:
    """Stop the host's supervisor once its actions finish: its pid, and whether it exited.

    None when none runs. Waits up to ``timeout`` seconds for it to exit. Raises
    :class:`UsageError` (exit status 1) when one runs and does not answer.
    """
    from flume.shell import process
    from flume.shell.supervisor import client

    holder = client.holder()
    paused = holder is not None and client.stopped(holder)
    reply = None if paused else client.stop(timeout=client.ANSWER_SECONDS)
    if reply is None and holder is not None:
        raise client.not_answering(holder, 0 if paused else client.ANSWER_SECONDS)
    if reply is None:
        return None
    pid = reply.pid
    # It stops listening at once, and exits once its running actions are done.
    deadline = time.monotonic() + timeout
    while process.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pid, not process.alive(pid)


def daemon_run(*, asked_after: int | None = None) -> int:
    """Run the host's supervisor in this process until it is stopped: its exit status."""
    from flume.core.settings import Settings
    from flume.shell.supervisor import daemon

    return daemon.serve(Settings(), asked_after=asked_after)


# --- herdr's plugin ------------------------------------------------------------------------


def in_flight() -> list[InFlight]:
    """Every place in flight on the host (launched, not yet tidied or dropped), with its status.

    Each is an :class:`InFlight`: ``.place`` (its state), ``.view`` (its ``PlaceStatus``),
    ``.name`` (``<kind>--<name>``) and ``.repository``. A live agent's state is ``unknown``
    while no supervisor runs.
    """
    from flume.shell.commands import herdr_plugin

    return herdr_plugin.in_flight()


def herdr_place_meant(
    herdr: HerdrClient, context: HerdrContext, found: Sequence[InFlight] | None = None
) -> InFlight | None:
    """The place a plugin action means, by herdr's invoking context; None when no single one.

    The focused pane's agent's place, else the place the focused folder is in, else the only
    place in flight in the focused workspace's repository (docs/herdr.md). ``found`` is the
    places to pick from (default: :func:`in_flight`, asked after herdr's panes are listed).
    """
    from flume.shell.commands import herdr_plugin

    panes = herdr.call("pane.list", {}).get("panes", [])
    if found is None:
        found = herdr_plugin.in_flight()
    return herdr_plugin.place_meant(context, found, panes)


def herdr_repository_meant(context: HerdrContext) -> Path | None:
    """The repository the focused workspace (or pane) of a plugin's context stands in, if any."""
    from flume.shell.commands import herdr_plugin

    return herdr_plugin.repository_meant(context)


def herdr_reports(herdr: HerdrClient, context: HerdrContext) -> list[HerdrRequest]:
    """The sidebar reports that would show every place in flight now; none is sent.

    Each is a :class:`HerdrRequest`, ``.method`` and ``.params``, as sent to herdr's socket.
    """
    from flume.shell.commands import herdr_plugin

    return herdr_plugin.planned(herdr, context.source)


def herdr_sidebar(
    herdr: HerdrClient,
    context: HerdrContext,
    *,
    every: float | None = None,
    stopping: threading.Event | None = None,
) -> list[str]:
    """Show every place in flight in herdr's sidebar (``flume herdr sidebar``): the problems.

    Reports once; with ``every``, again every ``every`` seconds until ``stopping`` is set or
    herdr goes away (then with no problem). The problems are those herdr answered to the last
    reports, one line each ([] when it took them all). Raises :class:`HerdrError` when herdr
    cannot be reached for a single report.
    """
    import threading

    from flume.shell.commands import herdr_plugin

    if every is None:
        return herdr_plugin.show(herdr, context.source)
    return herdr_plugin.follow(herdr, context.source, every, stopping or threading.Event())


def herdr_notify(herdr: HerdrClient, title: str, body: str) -> None:
    """Show a toast in herdr: the title and body each on one line, cut to what herdr shows."""
    from flume.shell.commands import herdr_plugin

    params = {"title": herdr_plugin.fit(title), "body": herdr_plugin.fit(body, 240)}
    herdr.call("notification.show", params)


def herdr_row(each: InFlight) -> str:
    """A place in flight on one line, as herdr's sidebar rows show it: name, stage, agent, tasks."""
    from flume.shell.commands import herdr_plugin

    return herdr_plugin.row(each)


# --- simulate ------------------------------------------------------------------------------


def simulate(given: Sequence[str]) -> list[Simulated]:
    """Each scenario (a file, or the name of one flume ships) run through the rules, in order.

    Every scenario is read before any runs: one malformed raises :class:`UsageError` naming
    each problem, and nothing runs.
    """
    from flume.api_records import Simulated
    from flume.shell.declared import scenario

    problems: list[Problem] = []
    loaded: list[scenario.Scenario] = []
    for each in given:
        try:
            loaded.append(scenario.load(scenario.find(each)))
        except UsageError as error:
            problems.extend(error.problems)
    if problems:
        raise UsageError(tuple(problems))
    return [
        Simulated(
            path=one.path,
            description=one.description,
            rows=tuple(scenario.rows(one)),
        )
        for one in loaded
    ]


def simulate_journal(path: str | Path) -> Simulated:
    """A place's journal run through the rules again, as a scenario is (``simulate --journal``).

    Its observations are stepped from the launch as the supervisor and ``flume events`` fold
    them, so the trace's ``Report`` actions are the events ``flume events`` shows for the place.
    A torn last line (a crash mid-write) is left out, as every reader leaves it. A journal that
    cannot be read raises :class:`UsageError` naming it.
    """
    from flume.api_records import Simulated
    from flume.core.settings import Settings
    from flume.core.step import trace

    where = Path(path)
    read = _journal_read(where)
    return Simulated(
        path=str(where),
        description="a journal, read again",
        rows=tuple(trace(Settings(), read.observations)),
    )


def _journal_read(where: Path) -> Read:
    """A journal read whole for a simulation, or :class:`UsageError` naming it."""
    from flume.shell.store import journal

    try:
        read = journal.read(where)
    except (OSError, journal.JournalError) as error:
        raise UsageError.one(
            str(where),
            f"cannot be read as a journal ({error})",
            "name a place's journal, <git-common-dir>/flume/<place>/journal.jsonl",
        ) from error
    if not read.observations:
        raise UsageError.one(str(where), "holds no launch", "name a place's journal")
    return read


def simulate_versions(path: str | Path, kind_file: str | Path) -> Versioned:
    """A journal folded under its own definition and the one ``kind_file`` declares, compared.

    ``flume simulate --journal J --kind-file NEW``: the kind file is read as ``flume launch
    --kind-file`` reads it, with the same checks, and checked against the journal's launch as a
    launch would be (its waits name its stages; a tests gate needs the tests command the launch
    froze). The journal is then folded twice, step by step, once as journaled and once with the
    file's kind in its launch (:func:`flume.core.workflow.versions.compare`), up to the first
    observation decided differently. A file or journal at fault raises :class:`UsageError` naming
    it.
    """
    from flume.api_records import Versioned
    from flume.core.launch import check_launch
    from flume.core.observations import Launched as LaunchSeen
    from flume.core.settings import Settings
    from flume.core.workflow.versions import compare, relaunched
    from flume.shell.declared.kinds import read_kind_file

    where, file = Path(path), Path(kind_file)
    declared = read_kind_file(file)
    read = _journal_read(where)
    launched = read.observations[0]
    if not isinstance(launched, LaunchSeen):
        raise UsageError.one(str(where), "does not start with its launch", "name a place's journal")
    try:
        changed = relaunched(launched, declared.kind)
        check_launch(changed.launch, changed.kind)
    except UsageError as error:
        raise UsageError(
            tuple(
                problem._replace(field=f"{file}: {problem.field} (against {where})")
                for problem in error.problems
            )
        ) from error
    if declared.tests_gates and not launched.tests:
        raise UsageError(
            tuple(
                Problem(
                    field=at,
                    what=f"step {name} is gated on tests, and the journal's launch froze no "
                    "tests command",
                    mend="gate the step otherwise: the place would have no tests to run",
                )
                for name, at in sorted(declared.tests_gates.items())
            )
        )
    return Versioned(
        journal=str(where),
        kind_file=str(file),
        journal_kind=launched.kind.name,
        file_kind=declared.kind.name,
        lane=launched.launch.lane if launched.launch.parent is not None else "",
        whole=not read.torn and not read.mended,
        comparison=compare(Settings(), read.observations, declared.kind),
    )


def scenarios() -> tuple[Path, list[tuple[str, str]]]:
    """The folder of the scenarios flume ships, and each one's name and what it shows.

    A scenario that cannot be read says its problem in place of what it shows.
    """
    from flume.shell.declared import scenario

    named: list[tuple[str, str]] = []
    for path in scenario.shipped():
        try:
            about = scenario.load(path).description
        except UsageError as error:
            about = error.problems[0].render()
        named.append((path.stem, about))
    return scenario.SHIPPED, named


# --- inspect -------------------------------------------------------------------------------


def inspect(file: str | Path) -> Inspection:
    """What flume makes of an agent's transcript or rollout (``flume inspect``).

    The messages it takes as typed by a person, and the agent's state at the end of the file.
    A file none of whose lines is a transcript's raises :class:`UsageError` (exit status 2).
    """
    from flume.shell.agents.inspection import inspect as inspected

    return inspected(Path(file))
