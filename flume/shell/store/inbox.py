"""A sandboxed agent's commands, carried to the supervisor through an inbox it may write.

Theory of operation. A sandboxed step's agent may not write its place's journal (docs/config.md,
"Sandboxed steps"): a line it wrote there would be taken as the supervisor's or the caller's
(an approval, an answer, budgets raised, or a ``Launched`` line whose setup and finalize
commands the supervisor would run after a restart). Its commands (:data:`KINDS`: ``flume
needs``, ``progress``, ``ask`` and ``submit``, and a lead's ``spawn``, ``notify``, ``compose`` and
``answer``) go instead to an inbox of its own,
``<agents>/<session>.inbox/``, the one folder of flume's it may write (``$FLUME_INBOX`` names it
inside the sandbox):

- the command writes a request (:class:`Request`: its kind, its words and options, its session)
  as ``<id>.json``, ``<id>`` 32 random hex digits, and waits for ``<id>.answer``
  (:func:`through`);
- the supervisor, each tick, takes each request of the place's live sandboxed agent
  (:func:`take`: renamed ``<id>.taken`` first, so a request is carried out at most once),
  refuses one of another kind or another session, and carries the rest out exactly as the
  command does outside a sandbox (:func:`carry_out`: the core's rules through
  :func:`flume.shell.store.places.give`; a refusal journals nothing); then it writes the answer
  (:func:`answer`): what the command prints, or the refusal and its exit status;
- the command prints the answer and exits with its status, as it would have outside.

A request the supervisor answered is not carried out again: its answer stays, and the
supervisor remembers the ids it took. One it took and never answered (it was killed between)
is answered, on its next look, as lost: whether it was journaled, ``flume status`` says. The
agent owns the inbox and may put anything there, so the supervisor reads and writes it through
the folder's descriptor, never following a link, and reads only a regular file of bounded size.
An answer the agent forges fools only itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
from pyrsistent import pvector

from flume.core.choices import AgentName
from flume.core.errors import Problem, UsageError
from flume.core.ids import Instant, SessionId
from flume.core.kinds import Kind
from flume.core.observations import (
    AnswerGiven,
    AskSaid,
    ComposeSaid,
    NeedsSaid,
    NotifySaid,
    Observation,
    ProgressSaid,
    SpawnSaid,
    SubmitAsked,
)
from flume.core.place import Short, lanes_in_order
from flume.core.settings import Settings
from flume.core.step import Decision
from flume.core.text import MAX_TEXT_BYTES, checked_text
from flume.core.workflow.orchestrate import (
    answerer,
    spawned_child,
    spread_answerer,
    spread_child,
)
from flume.shell.store import outbox, places

#: The variable that names a sandboxed agent's inbox to the commands it runs.
VARIABLE = "FLUME_INBOX"
#: The commands an agent may send through its inbox; nothing else is carried out.
KINDS = ("needs", "progress", "ask", "submit", "spawn", "notify", "compose", "answer")
#: Seconds a command waits for the supervisor's answer before it withdraws its request.
WAIT_SECONDS = 60.0
#: Seconds it waits more for a request the supervisor took before that deadline.
TAKEN_SECONDS = 30.0
#: How often the waiting command looks for its answer.
_POLL_SECONDS = 0.05
#: A request's id: 32 hex digits, the name of its files.
_ID = re.compile(r"[0-9a-f]{32}")
#: The most a request file may weigh: a question, its options, and some room.
_MOST_BYTES = 8 * MAX_TEXT_BYTES
_REQUEST, _TAKEN, _ANSWER = ".json", ".taken", ".answer"


@attrs.frozen(kw_only=True)
class Request:
    """One of an agent's commands, as it sends it through its inbox."""

    kind: str
    session: SessionId | None
    words: str = ""
    options: tuple[str, ...] = ()


def folder(agents: Path, session: SessionId) -> Path:
    """The inbox of the agent ``session``, in flume's agents folder ``agents``."""
    return agents / f"{session}.inbox"


# --- carrying a command out: the CLI outside a sandbox, the supervisor for one inside ------


def observation(  # noqa: PLR0911 (one a command)
    request: Request, at: Instant, read_kind: ReadKind | None = None
) -> Observation:
    """The observation the command journals; a :class:`UsageError` for words it cannot carry."""
    if request.kind == "needs":
        return NeedsSaid(at=at, words=checked_text("words", request.words), session=request.session)
    if request.kind == "progress":
        return ProgressSaid(
            at=at, words=checked_text("words", request.words), session=request.session
        )
    if request.kind == "ask":
        question = checked_text("question", request.words)
        offered = [checked_text("option", each) for each in request.options]
        return AskSaid(at=at, question=question, options=pvector(offered), session=request.session)
    if request.kind == "submit":
        return SubmitAsked(at=at, session=request.session)
    if request.kind == "spawn":
        # Its one option, if any, is the agent the child runs (checked by the CLI).
        agents = [each.value for each in AgentName]
        if request.options and request.options[0] not in agents:
            raise UsageError.one(
                "agent", f"{request.options[0]!r} is not an agent", f"use one of {agents}"
            )
        agent = AgentName(request.options[0]) if request.options else None
        goal = checked_text("goal", request.words)
        return SpawnSaid(at=at, goal=goal, agent=agent, session=request.session)
    if request.kind == "compose" and len(request.options) == 4:
        return _composed(request, at, read_kind)
    if request.kind == "notify" and len(request.options) == 1:
        text = checked_text("words", request.words)
        return NotifySaid(at=at, to=request.options[0], text=text, session=request.session)
    raise UsageError.one(
        "command",
        f"{request.kind!r} is not a command an agent sends its supervisor",
        f"run one of flume {', '.join(KINDS)}",
    )


#: Reads a fragment's kind from its file's name and TOML text (``flume.shell.declared``).
ReadKind = Callable[[str, str], Kind]


def _composed(request: Request, at: Instant, read_kind: ReadKind | None) -> ComposeSaid:
    """``flume compose``: the fragment's TOML text, read by the command (never by path here).

    Its options: the file's name (for messages), its turns, its tokens, and head or base.
    """
    name, turns, tokens, start = request.options
    if read_kind is None:
        raise UsageError.one("compose", "no reader of fragments was given", "a bug of flume's")
    fragment = read_kind(name, checked_text("fragment", request.words))
    if not (turns.isdigit() and tokens.isdigit()) or start not in {"head", "base"}:
        raise UsageError.one(
            "compose", "--turns and --tokens are whole numbers, --from head or base", "mend them"
        )
    return ComposeSaid(
        at=at,
        kind=fragment,
        turns=int(turns),
        tokens=int(tokens),
        base=start == "base",
        session=request.session,
    )


def printed(kind: str, decision: Decision) -> str:  # noqa: PLR0911 (one a command)
    """What the command prints once its observation is journaled."""
    place = decision.place
    name = place.launch.place
    if kind == "needs":
        phase = place.stage.phase
        return f"flume: {name} stops short: {phase.words if isinstance(phase, Short) else ''}"
    if kind == "progress":
        return f"flume: {name}: progress noted"
    if kind == "spawn":
        run = lanes_in_order(place)[-1]
        return (
            f"flume: {name}: spawned {run.lane} ({run.place}); news of it comes to you as "
            "messages. Spawn the others, then end your turn and wait."
        )
    if kind == "notify":
        return f"flume: {name}: your words go to the children named"
    if kind == "compose":
        run = lanes_in_order(place)[-1]
        return (
            f"flume: {name}: composed {run.lane} ({run.place}), reserving {run.reserved_turns} "
            f"turns and {run.reserved_tokens} tokens; news of it comes to you as messages"
        )
    if kind == "ask":
        return (
            f"flume: {name}: asked {place.questions[-1].id}; the answer will come to you as a "
            "message. End your turn now and wait for it; do not guess."
        )
    return (
        f"flume: {name} submitted: {place.branch} is handed to the lander for "
        f"{place.launch.base}; if its checks fail, their output comes back to you"
    )


def carry_out(
    found: places.Found,
    request: Request,
    at: Instant,
    settings: Settings,
    read_kind: ReadKind | None = None,
) -> str:
    """Journal the command for the place ``found`` through its rules; what it prints.

    Raises :class:`UsageError` as the command would: nothing is journaled then.
    """
    if request.kind == "answer":
        return _answer_child(found, request, at, settings)
    seen = observation(request, at, read_kind)
    decision = places.give(found, seen, settings)
    if isinstance(seen, SpawnSaid) and not decision.actions:
        return spawned_before(decision, seen.goal)
    return printed(request.kind, decision)


def spawned_before(decision: Decision, goal: str) -> str:
    """WF-SPAWN-ONCE: what ``flume spawn`` prints of a goal a child was spawned with already."""
    place = decision.place
    run = spawned_child(place, goal)
    said = f"{run.lane} ({run.place}, {run.state.value})" if run is not None else "a child"
    return (
        f"flume: {place.launch.place}: {said} was spawned with this goal already; no second "
        "child is started. News of it comes to you as messages: spawn the others, then end "
        "your turn and wait."
    )


def _answer_child(found: places.Found, request: Request, at: Instant, settings: Settings) -> str:
    """A lead's answer to its child's question (``flume answer CHILD q1 TEXT``), journaled there.

    WF-ASK-ONE-ANSWERER: it counts as the lead's when the session is the live lead of the
    child's run (``found``); the child's rules refuse it otherwise.
    """
    run = found.place
    if len(request.options) != 2 or run is None:
        raise UsageError.one("answer", "it names no child and question", "flume answer CHILD q1")
    name, question = request.options
    elsewhere = spread_child(run, name)
    if elsewhere is not None:
        # WF-SPREAD: the child is on another host; who answers is judged here, at its run.
        by_lead, no_lead = spread_answerer(run, name, request.session)
        words = checked_text("answer", request.words)
        return outbox.answer(run, elsewhere, question, words, by_lead=by_lead, no_lead=no_lead)
    child = places.find(name, Path(run.launch.repository), settings)
    if child.place is None or child.place.launch.parent != run.launch.place:
        raise UsageError.one(
            "place",
            f"{name} is no child of {run.launch.place}",
            "answer your own children's questions",
            exit_status=1,
        )
    lead, _no_lead = answerer(run, request.session)
    seen = AnswerGiven(
        at=at, question=question, text=checked_text("answer", request.words), by_lead=lead
    )
    decision = places.give(child, seen, settings)
    return (
        f"{decision.place.launch.place}: question {question} answered; the answer goes to the "
        "agent that asked, once it waits, and counts once its transcript holds it"
    )


# --- the command's side, inside the sandbox ------------------------------------------------


def through(
    inbox: Path,
    request: Request,
    *,
    wake: Callable[[], object] = lambda: None,
    wait: float = WAIT_SECONDS,
) -> str:
    """Send ``request`` through the agent's inbox; what the supervisor's answer says to print.

    Raises :class:`UsageError` with the refusal and exit status the supervisor answered, or
    (exit status 1) when no supervisor took the request by the deadline (it is withdrawn:
    nothing was journaled) or took it and did not answer.
    """
    ident = secrets.token_hex(16)
    body = json.dumps(
        {
            "kind": request.kind,
            "session": request.session,
            "words": request.words,
            "options": list(request.options),
        }
    )
    staged = inbox / f"{ident}.tmp"
    staged.write_text(body, encoding="utf-8")
    staged.replace(inbox / f"{ident}{_REQUEST}")
    wake()
    deadline = time.monotonic() + wait
    answer_path = inbox / f"{ident}{_ANSWER}"
    taken = False
    while (said := _read_answer(answer_path)) is None:
        if time.monotonic() >= deadline:
            if taken:
                raise _LOST
            try:
                (inbox / f"{ident}{_REQUEST}").unlink()
            except FileNotFoundError:
                # Taken meanwhile: its answer is coming.
                taken, deadline = True, time.monotonic() + TAKEN_SECONDS
                continue
            raise UsageError.one(
                "supervisor",
                f"no supervisor took the command within {round(wait)} s; nothing was journaled",
                "see that flume's supervisor runs (flume daemon status), then run it again",
                exit_status=1,
            )
        time.sleep(_POLL_SECONDS)
    return _answered(said)


def _read_answer(path: Path) -> dict[str, object] | None:
    """The answer written at ``path``, once it is there whole."""
    try:
        said = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return said if isinstance(said, dict) else None


def _answered(said: dict[str, object]) -> str:
    """What an answer says to print; its refusal raised as a :class:`UsageError`."""
    status = said.get("status")
    if status == 0:
        return str(said.get("output", ""))
    problems = said.get("problems")
    found = tuple(
        Problem(field=str(each[0]), what=str(each[1]), mend=str(each[2]))
        for each in (problems if isinstance(problems, list) else [])
        if isinstance(each, list) and len(each) == 3
    )
    problems = found or (Problem("supervisor", "its answer said nothing", "run it again"),)
    raise UsageError(problems, exit_status=status if isinstance(status, int) and status else 1)


# --- the supervisor's side -----------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Taken:
    """A request taken from an inbox: its id, and what it asks or why it cannot be read."""

    ident: str
    request: Request | None
    #: Why there is no request: it cannot be read, or it was taken and never answered.
    problem: UsageError | None = None


def take(inbox: Path, seen: set[str]) -> Iterator[Taken]:
    """Each request waiting in ``inbox``, taken (renamed ``<id>.taken``) so it runs once.

    ``seen`` holds the ids this supervisor took; one of them sent again is removed, unanswered
    again. A request taken and never answered (the supervisor was killed between) is given as
    lost. Nothing in the folder is followed if it is a link.
    """
    try:
        descriptor = os.open(inbox, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        for name in sorted(os.listdir(descriptor)):  # noqa: PTH208 (by descriptor: no link followed)
            ident, _dot, rest = name.partition(".")
            if not _ID.fullmatch(ident) or f".{rest}" not in {_REQUEST, _TAKEN}:
                continue
            answered = _exists(descriptor, f"{ident}{_ANSWER}")
            if f".{rest}" == _TAKEN:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=descriptor)
                if not answered:
                    yield Taken(ident=ident, request=None, problem=_LOST)
                continue
            if answered or ident in seen:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=descriptor)
                continue
            try:
                os.rename(name, f"{ident}{_TAKEN}", src_dir_fd=descriptor, dst_dir_fd=descriptor)
            except OSError:
                continue
            seen.add(ident)
            yield _read_request(descriptor, ident)
    finally:
        os.close(descriptor)


#: A request the supervisor took and did not answer: it was stopped between.
_LOST = UsageError.one(
    "supervisor",
    "flume's supervisor stopped while it carried the command out",
    "run flume status to see whether it took, and run it again if not",
    exit_status=1,
)


def _exists(descriptor: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=descriptor, follow_symlinks=False)
    except OSError:
        return False
    return True


def _read_request(descriptor: int, ident: str) -> Taken:
    """The request taken as ``<id>.taken``, read and removed: a regular file, bounded."""
    name = f"{ident}{_TAKEN}"
    unreadable = UsageError.one(
        "request", "the command's request cannot be read", "run the command again"
    )
    try:
        handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=descriptor)
    except OSError:
        return Taken(ident=ident, request=None, problem=unreadable)
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return Taken(ident=ident, request=None, problem=unreadable)
        data = os.read(handle, _MOST_BYTES + 1)
    finally:
        os.close(handle)
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=descriptor)
    if len(data) > _MOST_BYTES:
        return Taken(ident=ident, request=None, problem=unreadable)
    try:
        given = json.loads(data.decode("utf-8"))
    except ValueError:
        return Taken(ident=ident, request=None, problem=unreadable)
    request = _request_of(given)
    if request is None:
        return Taken(ident=ident, request=None, problem=unreadable)
    return Taken(ident=ident, request=request)


def _request_of(given: object) -> Request | None:
    """The request a decoded file holds, when it holds one of the right shape."""
    if not isinstance(given, dict):
        return None
    kind, session = given.get("kind"), given.get("session")
    words, options = given.get("words", ""), given.get("options", [])
    if not (
        isinstance(kind, str)
        and (session is None or isinstance(session, str))
        and isinstance(words, str)
        and isinstance(options, list)
        and all(isinstance(each, str) for each in options)
    ):
        return None
    return Request(
        kind=kind,
        session=SessionId(session) if session is not None else None,
        words=words,
        options=tuple(options),
    )


def refused_for(request: Request, session: SessionId) -> UsageError | None:
    """Why the inbox of the agent ``session`` may not carry ``request`` out; None if it may.

    Only the agent's commands (:data:`KINDS`), and only in the agent's own session's name.
    """
    if request.kind not in KINDS:
        return UsageError.one(
            "command",
            f"{request.kind!r} is not a command an agent sends its supervisor",
            f"run one of flume {', '.join(KINDS)}",
        )
    if request.session != session:
        return UsageError.one(
            "session",
            f"the command names the session {request.session}, not this agent's",
            "run it as the agent flume started, with its own FLUME_SESSION",
        )
    return None


def answer(inbox: Path, ident: str, said: str | UsageError) -> None:
    """Write the answer to request ``ident``: what to print, or the refusal and its status.

    Written whole (a file of its own, renamed), never through a link the agent put there.
    """
    body: dict[str, object] = (
        {"status": 0, "output": said}
        if isinstance(said, str)
        else {
            "status": said.exit_status,
            "problems": [list(problem) for problem in said.problems],
        }
    )
    descriptor = os.open(inbox, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        staged = f"{ident}.{secrets.token_hex(8)}.answering"
        handle = os.open(
            staged,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
            0o600,
            dir_fd=descriptor,
        )
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(body, file)
        try:
            os.rename(staged, f"{ident}{_ANSWER}", src_dir_fd=descriptor, dst_dir_fd=descriptor)
        except OSError:
            os.unlink(staged, dir_fd=descriptor)
            raise
    finally:
        os.close(descriptor)
