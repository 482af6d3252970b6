"""R5 delivery: start the agent, wait until it takes input, send, and find it in the transcript.

Theory of operation. "Keys typed into a pane prove nothing; only the transcript does." Each
prompt carries a marker unique to its place, stage and attempt; a send counts as delivered only
when a later transcript line of the agent's own session holds the marker *as a message typed by
the user* (:func:`is_typed_by_user`): not a tool result, a meta line, a compact summary, hook
progress, a harness note or assistant text, all of which can quote a prompt. "Missing: send once
more and read again. Missing again: report that the stage never began. Never a third send."

A send is counted when it is decided, and is typed by the shell after. A shell killed between
the two would lose the send without typing it; so the pane says what was submitted (the shell
marks the pane in the same multiplexer command that presses Enter after the paste, and reports
:class:`PromptTyped`), and a send whose confirmation window passed without the pane ever showing
it typed is typed once more, as the same send (DELIVERY-RETYPE-UNTYPED); where the pane's own
mark shows the send never made (a printed agent's file, with no prompt in it), at once
(DELIVERY-UNWRITTEN-NOW). A copy pasted and left
unsubmitted by the kill goes with the second, as one message. A send is never typed again once
the pane has shown it, so no prompt is submitted in a pane more than twice.

The transcript can be read after the stage moved on: an agent that runs ``flume needs`` or
``flume submit`` at once is heard before its prompt's line is read, and a stage stopped or never
begun may still find its prompt taken. The prompt is then still reported delivered, once per
agent, and the stage stays where it went (DELIVERY-LATE-PROOF).

Rule ids: R5, DELIVERY-TWO-SENDS, DELIVERY-NEVER-BEGAN, DELIVERY-TRANSCRIPT-ONLY,
DELIVERY-RETYPE-UNTYPED, DELIVERY-UNWRITTEN-NOW, DELIVERY-LATE-PROOF.
"""

from __future__ import annotations

import string

import attrs

from flume.core.actions import EndAgent, Event, Report, SendPrompt
from flume.core.ids import Instant, Marker, SessionId
from flume.core.kinds import describe_deliverable, loop_named
from flume.core.observations import (
    Activity,
    Author,
    PromptTyped,
    PromptUnwritten,
    TranscriptEntry,
)
from flume.core.place import (
    AwaitingInput,
    Delivering,
    Life,
    Outcome,
    Place,
    Short,
    ShortCause,
    Working,
    current_step,
    evolve,
    is_live,
    lanes_in_order,
    leading,
)
from flume.core.settings import MAX_SENDS, Settings
from flume.core.workflow.budget import paused_from, spent_budget


def is_typed_by_user(entry: TranscriptEntry) -> bool:
    """DELIVERY-TRANSCRIPT-ONLY: the line is a message a person typed (or pasted).

    Only such a line proves a prompt delivered: text the agent's program injects, a tool's
    result, the agent's own words and a note of an interrupt never do, whatever they hold. Each
    agent's reader in the shell says who wrote a line (for Claude Code: not meta, not a compact
    summary, not a sidechain, not a harness row, no tool result, no injected tag, not an
    interrupt's note; reference/claude-code.md §2).
    """
    return entry.author is Author.PERSON


def prompt_marker(place: Place) -> Marker:
    """The marker of the current stage's attempt: unique per place, stage and attempt."""
    return _marker(place, place.stage.key, place.stage.attempt)


def _marker(place: Place, stage: str, attempt: int) -> Marker:
    name = place.launch.place
    return Marker(f"flume:{name}:{stage}:{attempt}")


def workflow_fields(place: Place) -> dict[str, str]:
    """A workflow's prompt fields: the blackboard, the step's handoff and verdict, its pass.

    ``$pass`` and ``$max`` are the innermost loop's pass and its most (1 and 1 outside loops);
    ``$position`` is the attempt's key (``review-loop@2/review``). ``$goal``: an orchestrate
    child's goal, as its lead spawned it; ``$question``: the last question the place's agents
    asked (``flume ask``) with its answer once given, so that a retried step reads it.
    """
    board = place.board
    step = place.stage.name
    position = place.stage.position
    innermost = position.passes[-1] if position is not None and position.passes else None
    most = 1 if innermost is None else loop_named(place.kind, innermost.loop).max
    return {
        "board": board,
        "handoff": f"{board}/{step}/handoff.md",
        "verdict": f"{board}/{step}/verdict.json",
        "pass": str(1 if innermost is None else innermost.number),
        "max": str(most),
        "position": place.stage.key,
        "goal": place.launch.goal,
        "question": _last_question(place),
    }


def _last_question(place: Place) -> str:
    if not place.questions:
        return ""
    last = place.questions[-1]
    answer = f" (answered: {last.answer})" if last.answer is not None else " (not answered)"
    return f"{last.text}{answer}"


def render_prompt(place: Place) -> str:
    """The exact prompt the current stage's agent is sent, its marker last."""
    launch = place.launch
    step = current_step(place)
    marker = prompt_marker(place)
    words = place.stage.words.strip()
    fields = {
        "brief": launch.brief,
        "name": launch.name,
        "kind": launch.kind,
        "stage": step.name,
        "place": launch.place,
        "path": place.path,
        "branch": place.branch,
        "base": launch.base,
        "deliverable": describe_deliverable(step.deliverable),
        "repository": launch.repository,
        "marker": marker,
        "words": (
            f"\nThis stage is being tried again. The caller's words for this attempt:\n\n{words}\n"
            if words
            else ""
        ),
        **workflow_fields(place),
    }
    template = string.Template(step.prompt)
    text = template.substitute(fields).rstrip()
    if words and "words" not in template.get_identifiers():
        # A workflow's prompt need not name $words: the attempt's words come last all the same.
        text = f"{text}\n\nFor this attempt:\n\n{words}"
    for note in place.notes:
        # A lead's words that came before this agent could be told (workflow/orchestrate.py).
        text = f"{text}\n\n{note}"
    if (
        place.stage.attempt > 1
        and leading(place) is not None
        and place.lanes_key == place.stage.key
    ):
        # A lead's later attempt: the news its earlier agent heard, or missed, in one place;
        # WF-LEAD-HEARS-OPEN-QUESTIONS: a child's question still open, whatever news came after.
        said = "\n".join(
            f"- {run.lane} ({run.place}): {run.state.value}; {run.note or 'no news yet'}"
            + (f"; still open: {run.asking}" if run.asking and run.asking != run.note else "")
            for run in lanes_in_order(place)
        )
        text = f"{text}\n\nYour children so far:\n{said or '- none yet'}"
    return f"{text}\n\n[{marker}]"


def _over_budget(place: Place) -> bool:
    """WF-BUDGET-PAUSES: nothing is sent over a budget; the stage pauses (workflow/gates.py)."""
    return spent_budget(place.budgets, place.spent, place.stage.turns, place.now) is not None


def send_prompt(place: Place, session: SessionId) -> Outcome:
    """DELIVERY-TWO-SENDS: send the prompt once more, if fewer than two sends were made.

    The send is counted when decided, before the shell pastes it.
    """
    sends = place.stage.sends + 1
    if sends > MAX_SENDS:
        return place, ()
    if _over_budget(place):
        return place, ()
    send = SendPrompt(
        session=session,
        stage=place.stage.name,
        attempt=place.stage.attempt,
        send=sends,
        marker=prompt_marker(place),
        text=render_prompt(place),
    )
    phase = Delivering(session=session, sent_at=place.now)
    stage = attrs.evolve(place.stage, phase=phase, sends=sends)
    return evolve(place, stage=stage), (send,)


def on_prompt_typed(place: Place, seen: PromptTyped) -> Outcome:
    """The pane shows the current send typed: a missing prompt is now a send made, not lost."""
    phase = place.stage.phase
    if (
        isinstance(phase, Delivering)
        and not phase.typed
        and seen.session == phase.session
        and seen.marker == prompt_marker(place)
        and seen.send == place.stage.sends
    ):
        stage = attrs.evolve(place.stage, phase=attrs.evolve(phase, typed=True))
        return evolve(place, stage=stage), ()
    return place, ()


def on_prompt_unwritten(place: Place, seen: PromptUnwritten) -> Outcome:
    """DELIVERY-UNWRITTEN-NOW: the pane's own mark shows the current send never made: type it now.

    A send decided but never shown typed is otherwise typed again only once its confirmation
    window passed (DELIVERY-RETYPE-UNTYPED), since a pane's mark cannot say a paste never
    happened. A printed agent's file can: it holds no prompt until the prompt is written. So a
    shell killed between deciding that send and writing it writes it as soon as it is back, not
    an hour later; it stays the same send, typed once more at most once.
    """
    phase = place.stage.phase
    if (
        isinstance(phase, Delivering)
        and not phase.typed
        and not phase.retyped
        and seen.session == phase.session
        and seen.marker == prompt_marker(place)
        and seen.send == place.stage.sends
        and place.life is Life.ACTIVE
        and is_live(place)
    ):
        return _retype(place, phase, seen.at)
    return place, ()


def on_agent_ready(place: Place, session: SessionId) -> Outcome:
    """The agent takes input: send the prompt the first time.

    Called only once the agent is seen waiting, so never while it asks a person.
    """
    phase = place.stage.phase
    if isinstance(phase, AwaitingInput) and phase.session == session:
        return send_prompt(place, session)
    return place, ()


def on_prompt_line(place: Place, entry: TranscriptEntry) -> Outcome:
    """A transcript line: the prompt is delivered if it holds the marker as typed by the user.

    DELIVERY-LATE-PROOF: the live agent's own prompt, found once its stage stopped short or
    moved on, is reported delivered all the same, once; the stage stays where it is.
    """
    agent = place.agent
    if (
        agent is None
        or agent.proven
        or entry.session != agent.session
        or not is_typed_by_user(entry)
        or _marker(place, agent.key or agent.stage, agent.attempt) not in entry.text
    ):
        return place, ()
    phase = place.stage.phase
    current = (place.stage.key, place.stage.attempt) == (agent.key or agent.stage, agent.attempt)
    if isinstance(phase, Delivering) and phase.session == agent.session:
        stage = attrs.evolve(place.stage, phase=Working(session=phase.session))
        text = f"the transcript holds the prompt (send {place.stage.sends} of {MAX_SENDS})"
        place = evolve(place, stage=stage)
    elif isinstance(phase, Short) or not current:
        moved = "stopped short" if current else "moved on"
        text = f"the transcript holds the prompt, found after the stage {moved}"
    else:
        return place, ()
    place = evolve(place, agent=attrs.evolve(agent, proven=True))
    return place, (Report(event=Event.PROMPT_DELIVERED, text=text, stage=agent.stage),)


def check_deadlines(settings: Settings, place: Place, now: Instant) -> Outcome:
    """Send anyway once the agent was slow to take input; resend once; then never began."""
    if place.life is not Life.ACTIVE or not is_live(place):
        return place, ()
    phase = place.stage.phase
    if isinstance(phase, AwaitingInput) and now - phase.since >= settings.ready_seconds:
        # A dialog (workspace trust, a permission) eats what is typed: wait until it is answered.
        if place.agent is not None and place.agent.activity is Activity.ASKING:
            return place, ()
        return send_prompt(place, phase.session)
    if isinstance(phase, Delivering) and now - phase.sent_at >= settings.confirm_seconds:
        if not phase.typed and not phase.retyped:
            return _retype(place, phase, now)
        return _missing(place, phase)
    return place, ()


def _retype(place: Place, phase: Delivering, now: Instant) -> Outcome:
    """DELIVERY-RETYPE-UNTYPED: a send decided but never shown typed is typed once more.

    The shell died between deciding the send and pasting it (or its paste failed): the pane
    never held it, so typing it now is its first typing, and it stays the same send. Like a
    resend, it waits while the agent works or asks a person.
    """
    agent = place.agent
    assert agent is not None  # noqa: S101 (check_deadlines asked for a live agent)
    if agent.activity in {Activity.WORKING, Activity.ASKING} or _over_budget(place):
        return place, ()
    send = SendPrompt(
        session=phase.session,
        stage=place.stage.name,
        attempt=place.stage.attempt,
        send=place.stage.sends,
        marker=prompt_marker(place),
        text=render_prompt(place),
    )
    stage = attrs.evolve(
        place.stage, phase=Delivering(session=phase.session, sent_at=now, retyped=True)
    )
    report = Report(
        event=Event.PROMPT_RETYPED,
        text=(
            f"send {place.stage.sends} of the prompt was decided but the pane never showed it "
            "typed; typing it now, as the same send"
        ),
        stage=place.stage.name,
    )
    return evolve(place, stage=stage), (report, send)


def _missing(place: Place, phase: Delivering) -> Outcome:
    """DELIVERY-NEVER-BEGAN: a missing first send is resent; a missing second one never began.

    The resend waits while the agent works or asks a person: typed into a busy agent it would
    queue, and typed into a dialog it could answer it.
    """
    agent = place.agent
    assert agent is not None  # noqa: S101 (check_deadlines asked for a live agent)
    missing = Report(
        event=Event.PROMPT_MISSING,
        text=(
            f"send {place.stage.sends} of the prompt is not in the transcript after "
            f"{place.settings.confirm_seconds:g}s"
        ),
        stage=place.stage.name,
    )
    if place.stage.sends < MAX_SENDS:
        if agent.activity in {Activity.WORKING, Activity.ASKING}:
            return place, ()
        place, actions = send_prompt(place, phase.session)
        return place, (missing, *actions)
    words = (
        f"the prompt was sent {MAX_SENDS} times and the transcript holds neither; "
        "retry the stage to start a fresh agent"
    )
    stage = attrs.evolve(place.stage, phase=Short(cause=ShortCause.NEVER_BEGAN, words=words))
    # A stage that never began waits on a person's retry: its time is not the run's active time.
    spent = paused_from(place.spent, place.now)
    place = evolve(place, stage=stage, agent=attrs.evolve(agent, ending=True), spent=spent)
    return place, (
        missing,
        Report(event=Event.NEVER_BEGAN, text=words, stage=stage.name),
        EndAgent(session=agent.session, reason="the stage never began"),
    )


def infer_activity(entry: TranscriptEntry, known: Activity) -> Activity:
    """What the agent is doing, as far as one transcript line tells (reference §2).

    Hooks and the live-session registry are more precise and override this when they report.
    A person's message or a tool's result starts or goes on with a turn; the agent asking a
    person waits on them; a line that ends the turn (an interrupt's note too: no Stop hook fires
    for it, reference §4) waits for input; any other line of the agent's is a turn running,
    except while it asks a person: the only line of its own it writes then is the tool call
    that opened the dialog, read after the hook that said so (a line's instant is when it was
    read). Only the tool's result (the person answered) or the turn's end moves an asking agent
    on: a person's message read while it asks was written before the dialog opened (its prompt,
    pasted and read in the same look as the hook's word), since no message can be typed into a
    dialog.
    """
    if entry.author is Author.TOOL:
        return Activity.WORKING
    if entry.author is Author.PERSON:
        return Activity.ASKING if known is Activity.ASKING else Activity.WORKING
    if entry.asks:
        return Activity.ASKING
    if entry.ends_turn:
        return Activity.WAITING
    if entry.author is Author.AGENT:
        return Activity.ASKING if known is Activity.ASKING else Activity.WORKING
    return known
