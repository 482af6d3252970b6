"""Gates judged when a turn ends, the re-prompt, and the pauses a person resolves.

Theory of operation. The five deliverables of a linear kind are judged as before: evidence seen,
then the stage ends when its agent is quiet (:mod:`flume.core.stage`); in a workflow, a step
whose deliverable exists ends when its agent's turn ends, not on quiet. The workflow gates,
``verdict``, ``artifact``, ``tests`` and ``approval``, are judged when the agent's turn ends,
never on quiet: the end of a turn (``TurnEnded``, provider-neutral) moves the stage to
``Judging`` and asks the shell for the facts (``JudgeGate``); the shell reads the verdict file or
the artifact, or runs the tests, and reports what it found (``GateRead``); the rules here judge.

- WF-VERDICT-SINCE-DELIVERY: a verdict counts only when written for this attempt: the one an
  earlier attempt wrote was archived before this attempt's agent started (``ArchiveVerdict``),
  and a reading for another attempt or key is ignored.
- WF-GATE-REPROMPT-ONCE: "a blocked gate re-prompts the agent once with the reason the gate
  didn't pass, and if it's still blocked, pauses the run". A verdict of ``blocked`` pauses at once,
  its summary as the words.
- WF-ARTIFACT-BLOCKS: an artifact gate passes only when the file exists.
- WF-BUDGET-PAUSES: the turns and tokens a turn spent are counted at its end; over a budget, the
  run pauses instead of telling the agent again, and no start or send is decided (the start's
  check is :func:`flume.core.stage.start_when_free`'s).
- An approval gate pauses the run for ``flume approve`` once the turn ends; approved, the step
  passes. WF-PERSON-PASSES: a gate that stayed blocked (the run paused ``gate-blocked``) passes
  on a person's word too (``flume pass``), journaled with their reasons: the step ends as a
  passed gate does, and the run goes on. A pass is no verdict: a loop it passes the until step
  of goes on to its next step, as on ``revise``. ``flume resume`` queues a paused stage
  again, ``flume raise`` raises the budgets in place and resumes a run paused on a budget it no
  longer exceeds (WF-BUDGET-RAISE-RESUMES); a raise the kind sets no budget for, or one that
  leaves the budget spent as it was, is refused, naming the budget spent (REFUSAL-NAMES-WAY).
- WF-DELIVERABLE-AT-TURN-END: in a workflow, a step gated on one of the five deliverables (a
  commit, a report, ...) is judged at its turn's end too, never left working: the stage stands
  ``Judging`` while the evidence its observers report comes in (a commit is seen on the branch's
  next look, a moment after the turn's end), for ``quiet_seconds``; none by then, the agent is
  told why once, then the run pauses ``gate-blocked``. A landing under way is the lander's to
  answer: a turn that ended on ``flume submit`` is not judged while the submission stands.
- WF-DELIVERED-PASSES: a deliverable an attempt made passes its gate whenever it is observed,
  before or after a pause: a stage paused for a new attempt (a budget spent at the turn's end,
  the gate told once, a stall) whose attempt's deliverable is then seen passes, and the run
  goes on to the next step (whose start a budget still spent pauses: a raise then starts it).
"""

from __future__ import annotations

from typing import assert_never

import attrs

from flume.core import stage, tell
from flume.core.actions import Action, Event, JudgeGate, Report
from flume.core.applies import refuse
from flume.core.errors import refused
from flume.core.ids import Instant, SessionId
from flume.core.kinds import (
    Approval,
    Artifact,
    Budgets,
    Gate,
    Landing,
    PassingTests,
    Verdict,
    describe_deliverable,
    judged_at_turn_end,
    parallels,
)
from flume.core.observations import (
    Activity,
    ApproveAsked,
    BudgetRaised,
    GateRead,
    PassAsked,
    ResumeAsked,
    TurnEnded,
    Usage,
)
from flume.core.place import (
    Agent,
    AwaitingInput,
    Delivered,
    Delivering,
    JoinStage,
    Judging,
    Life,
    Outcome,
    PauseCause,
    Paused,
    PersonPass,
    Place,
    Queued,
    Submission,
    Tell,
    TellSending,
    Working,
    accepts,
    current_step,
    deferred,
    evolve,
    has_deliverable,
    in_workflow,
    open_question,
    resolve_command,
    waits_on_children,
)
from flume.core.settings import Settings
from flume.core.workflow import budget

_NO_BUDGETS = Budgets()
#: The pauses of an agent's attempt, which its deliverable seen after them passes
#: (WF-DELIVERED-PASSES).
_ATTEMPT_PAUSES = frozenset({PauseCause.GATE_BLOCKED, PauseCause.BUDGET, PauseCause.STALLED})

#: The most characters of a failing test run's output the agent is told.
_TESTS_TAIL = 2000


def _spend(place: Place, usage: Usage | None) -> Place:
    spent = place.spent
    if usage is None:
        spent = attrs.evolve(spent, turns=spent.turns + 1, unreported=spent.unreported + 1)
    else:
        spent = attrs.evolve(spent, turns=spent.turns + 1, tokens=spent.tokens + usage.total)
    return evolve(place, spent=spent, stage=attrs.evolve(place.stage, turns=place.stage.turns + 1))


def on_turn_ended(place: Place, seen: TurnEnded, report: Report) -> Outcome:
    """A turn of the stage's agent ended: count what it spent, then judge its gate, if a workflow's.

    A turn of no live agent of the place, or of a place not running, decides nothing.
    """
    agent = place.agent
    if (
        place.life is not Life.ACTIVE
        or agent is None
        or agent.ending
        or (seen.session is not None and seen.session != agent.session)
    ):
        return place, (report,)
    place = _spend(place, seen.usage)
    phase = place.stage.phase
    if (
        isinstance(phase, Delivered)
        and in_workflow(place)
        and not place.held
        and place.sending is None
        and not deferred(place)
    ):
        # A workflow's step whose deliverable exists ends with its agent's turn, not on quiet:
        # the turn's end is the agent saying it is done.
        place, ended = stage.finish_stage(place, place.now, done=False)
        return place, (report, *ended)
    if not isinstance(phase, Working) or not judged_here(place) or deferred(place):
        # WF-ASK-DEFERS-GATE: a turn ended on a question open is the agent waiting for its
        # answer, not saying it is done.
        place, pausing = pause_when_spent(place.settings, place, place.now)
        return place, (report, *pausing)
    if _retelling(place):
        # The agent has not yet been told why its gate did not pass: this turn is not its answer.
        return place, (report,)
    return _judge_now(place, phase.session, (report,))


def judged_here(place: Place) -> bool:
    """The current step's gate is judged at its agent's turn's end (or once it is found waiting).

    A workflow gate always (verdict, artifact, tests, approval); in a workflow, one of the five
    deliverables too (WF-DELIVERABLE-AT-TURN-END), but a landing the lander is carrying out.
    """
    gate = current_step(place).deliverable
    if judged_at_turn_end(gate):
        return True
    if not in_workflow(place):
        return False
    return not isinstance(gate, Landing) or place.submission in {
        Submission.NONE,
        Submission.CHECKS_FAILED,
    }


def is_evidence(place: Place) -> bool:
    """The current step's gate is one of the five deliverables: judged on the evidence seen."""
    return not judged_at_turn_end(current_step(place).deliverable)


def _retelling(place: Place) -> bool:
    """The tell saying why the gate did not pass is still held or in flight."""
    retold = place.stage.retold
    if retold is None:
        return False
    sending = place.sending
    return any(each.number == retold for each in place.held) or (
        sending is not None and sending.tell.number == retold
    )


def _judge_now(place: Place, session: SessionId, before: tuple[Action, ...]) -> Outcome:
    """The stage's gate is read now (an approval: the run pauses for a person's word)."""
    if isinstance(current_step(place).deliverable, Approval):
        paused = Paused(
            cause=PauseCause.APPROVAL, words=f"step {place.stage.key} waits for approval"
        )
        place, pausing = stage.pause_stage(place, paused)
        return place, (*before, *pausing)
    judging = Judging(session=session, since=place.now)
    run = attrs.evolve(place.stage, phase=judging, judged_at=place.now)
    place = evolve(place, stage=run)
    if is_evidence(place):
        # WF-DELIVERABLE-AT-TURN-END: judged on what the observers report, within the window.
        return place, before
    return place, (*before, judge_gate(place))


def judge_evidence(settings: Settings, place: Place, now: Instant) -> Outcome:
    """WF-DELIVERABLE-AT-TURN-END, WF-DELIVERED-PASSES: a deliverable gate judged on its evidence.

    A stage judging a deliverable gate passes once its deliverable is seen, and is judged not
    to have passed once ``quiet_seconds`` went by with none (told once, then paused). A stage
    paused for a new attempt whose attempt's deliverable is then seen passes all the same.
    """
    del settings
    phase = place.stage.phase
    if place.life is not Life.ACTIVE or not in_workflow(place) or not is_evidence(place):
        return place, ()
    # Only an agent's attempt paused (its gate, a budget, a stall) passes on a deliverable seen
    # late: a block's merge paused goes on by resume or resolve alone, whatever its head shows
    # (a person's wrong hand-merge moves it: WF-FINISHED-HOLDS-ITS-WORK).
    late = (
        isinstance(phase, Paused)
        and phase.again
        and phase.cause in _ATTEMPT_PAUSES
        and not place.stage.resolving
        and place.stage.name not in parallels(place.kind.body)
    )
    if (late or isinstance(phase, Judging)) and has_deliverable(place):
        return _passed_late(place, phase) if isinstance(phase, Paused) else _evidence_passed(place)
    if not isinstance(phase, Judging) or now - phase.since < place.settings.quiet_seconds:
        return place, ()
    gate = describe_deliverable(current_step(place).deliverable)
    reason = f"its gate is {gate}, and none was seen made since the step started"
    return _failed(place, phase, reason)


def _evidence_passed(place: Place) -> Outcome:
    """The deliverable is seen: the gate passed, and the stage ends."""
    passed = Report(
        event=Event.GATE_PASSED,
        text=f"the gate of {place.stage.key} passed",
        stage=place.stage.name,
    )
    place, ended = stage.finish_stage(place, place.now, done=False)
    return place, (passed, *ended)


def _passed_late(place: Place, paused: Paused) -> Outcome:
    """WF-DELIVERED-PASSES: a paused attempt's deliverable, seen after the pause: it passes."""
    place = evolve(place, spent=budget.resumed_at(place.spent, place.now))
    resumed = Report(
        event=Event.RESUMED,
        text=f"{place.launch.place} goes on past {place.stage.key}: the deliverable of attempt "
        f"{place.stage.attempt} was seen after it paused ({paused.cause.value})",
        stage=place.stage.name,
    )
    place, passed = _evidence_passed(place)
    return place, (resumed, *passed)


def judge_when_waiting(settings: Settings, place: Place, now: Instant) -> Outcome:
    """WF-NO-SILENT-WAIT for a gate: an agent found waiting is judged, its turn's end unread.

    The agent's hooks (or registry) say it waits, and has for ``confirm_seconds``, showing
    nothing, with nothing of flume's held or in flight for it, since its prompt was proven and
    since its gate was last read: its turn ended, whether or not its transcript said so (a
    line unread, a re-prompt lost). Its gate is read as at a turn's end.
    """
    agent = place.agent
    run = place.stage
    if (
        place.life is not Life.ACTIVE
        or agent is None
        or agent.ending
        or not agent.proven
        or agent.activity is not Activity.WAITING
        or not isinstance(run.phase, Working)
        or place.held
        or place.sending is not None
        or not judged_here(place)
        or deferred(place)
    ):
        return place, ()
    since = max(agent.activity_since, agent.last_output_at, run.judged_at or run.started_at)
    if now - since < settings.confirm_seconds:
        return place, ()
    return _judge_now(place, run.phase.session, ())


def pause_when_spent(settings: Settings, place: Place, now: Instant) -> Outcome:
    """WF-BUDGET-PAUSES: a stage whose agent runs toward its gate pauses once a budget is spent.

    Its agent is ended, and nothing more is sent to it; resumed, the stage is tried afresh. A
    stage whose gate is already met (delivered) or being read ends as it would: the next
    stage's start is checked before it is made (:func:`flume.core.stage.start_when_free`).
    """
    del settings
    if place.life is not Life.ACTIVE or place.budgets == _NO_BUDGETS:
        return place, ()
    if not isinstance(place.stage.phase, AwaitingInput | Delivering | Working):
        return place, ()
    over = budget.spent_budget(place.budgets, place.spent, place.stage.turns, now)
    if over is None:
        return place, ()
    paused = Paused(cause=PauseCause.BUDGET, words=f"budget {over} spent", again=True, spent=over)
    return stage.pause_stage(place, paused)


def nudge_when_stalled(settings: Settings, place: Place, now: Instant) -> Outcome:  # noqa: PLR0911 (each wait the stall clock has)
    """WF-STALL-NUDGES-ONCE: an agent silent mid-turn is nudged once, then the run pauses.

    Silent: working (not waiting, not asking a person; a question answered, its answer not yet
    read, does not stop the clock), with no line in its transcript and no
    word from its hooks for ``stall_seconds``. Its pane does not count: Claude Code's spinner
    renews it the whole time the agent waits on a model that never answers. The nudge is typed
    at once, a tell flume gives (the agent is mid-turn: it takes it when it can); silent as long
    again after it, the agent is ended and the run pauses ``stalled``. Only a workflow's places:
    a kind of stages keeps its agents' time its own.

    WF-NO-SILENT-WAIT: an agent silent so before its prompt is found cannot be nudged (its
    prompt waits for it to wait): silent twice as long, the run pauses ``stalled``. One silent
    once its step's deliverable exists is ended, and the step passes (its turn never ends).
    """
    del settings
    agent = place.agent
    run = place.stage
    if (
        place.life is not Life.ACTIVE
        or agent is None
        or agent.ending
        or agent.activity is not Activity.WORKING
        or not isinstance(run.phase, Working | AwaitingInput | Delivering | Delivered)
        or not in_workflow(place)
        or _unanswered(place)
    ):
        return place, ()
    stall = place.settings.stall_seconds
    last = stall_since(place, agent)
    if not isinstance(run.phase, Working):
        return _stalled_outside_a_turn(place, now - last)
    if run.nudged_at is None:
        if now - last < stall:
            return place, ()
        if place.sending is not None:
            # A tell in flight is typed already, unread: it is the nudge (tells go one at a
            # time, so no other is typed before it is found or lost); silent as long again,
            # the run pauses (WF-NO-SILENT-WAIT: its resend waits for the agent to wait).
            report = Report(
                event=Event.NUDGED,
                text=f"the agent of {run.key} (attempt {run.attempt}) said nothing for "
                f"{stall:.0f}s mid-turn, tell {place.sending.tell.number} typed to it unread; "
                "that is its nudge",
                stage=run.name,
            )
            return evolve(place, stage=attrs.evolve(run, nudged_at=now)), (report,)
        number = place.tells_given + 1
        nudge = Tell(
            number=number,
            text=(
                f"flume has seen nothing from you for {_span(stall)}. Go on with your "
                "step; if you are stuck, say so with flume needs."
            ),
            asked_at=now,
        )
        place = evolve(
            place,
            stage=attrs.evolve(run, nudged_at=now),
            sending=TellSending(tell=nudge, sends=1, sent_at=now),
            tells_given=number,
        )
        report = Report(
            event=Event.NUDGED,
            text=f"the agent of {run.key} (attempt {run.attempt}) said nothing for "
            f"{stall:.0f}s mid-turn; nudged once",
            stage=run.name,
        )
        return place, (report, tell.send_tell(place, nudge, 1))
    if now - max(last, run.nudged_at) < stall:
        return place, ()
    paused = Paused(
        cause=PauseCause.STALLED,
        words=f"the agent said nothing for {stall:.0f}s after its nudge",
        again=True,
    )
    return stage.pause_stage(place, paused)


def _unanswered(place: Place) -> bool:
    """WF-ASK-DEFERS-GATE: the live agent waits on a person's answer; its stall clock stops.

    Answered, its answer held or in flight, the clock runs again from the answer: a hung agent
    never takes the answer (held until it waits), and its silence must still end in a nudge,
    then a pause.
    """
    asked = open_question(place)
    return asked is not None and asked.answer is None


def stall_since(place: Place, agent: Agent) -> Instant:
    """When the stall clock of ``agent`` last started.

    Its last word, its step's start, or the answer to its question, given and not yet read (the
    clock stopped while it was asked: WF-ASK-DEFERS-GATE).
    """
    since = max(agent.said_at, place.stage.started_at)
    asked = open_question(place)
    if asked is None or asked.answer is None:
        return since
    given = [tell.asked_at for tell in place.held if tell.number == asked.tell]
    if place.sending is not None and place.sending.tell.number == asked.tell:
        given.append(place.sending.tell.asked_at)
    return max([since, *given])


def _stalled_outside_a_turn(place: Place, silent: float) -> Outcome:
    """A silent agent before its prompt was found (paused), or after its deliverable (passed)."""
    stall = place.settings.stall_seconds
    if isinstance(place.stage.phase, Delivered):
        if silent < stall or _unanswered(place) or waits_on_children(place):
            return place, ()
        return stage.finish_stage(place, place.now, done=False)
    if silent < 2 * stall:
        return place, ()
    paused = Paused(
        cause=PauseCause.STALLED,
        words=f"the agent worked {2 * stall:.0f}s saying nothing, before its prompt was found",
        again=True,
    )
    return stage.pause_stage(place, paused)


def _span(seconds: float) -> str:
    """A stall window in words: ``10 minutes`` from two minutes on, ``45 seconds`` below."""
    if seconds >= 120:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds:.0f} seconds"


def judge_gate(place: Place) -> JudgeGate:
    """The shell's reading of the current stage's gate (asked again after a restart)."""
    return JudgeGate(
        path=place.path,
        board=place.board,
        stage=place.stage.name,
        key=place.stage.key,
        attempt=place.stage.attempt,
        gate=current_step(place).deliverable,
        tests=place.tests,
        deadline=place.settings.tests_seconds,
    )


@attrs.frozen(kw_only=True)
class _Passed:
    done: bool


@attrs.frozen(kw_only=True)
class _Blocked:
    words: str


@attrs.frozen(kw_only=True)
class _Failed:
    reason: str


def judge(place: Place, gate: Gate, seen: GateRead) -> _Passed | _Blocked | _Failed:
    """What the facts the shell read mean for ``gate``."""
    match gate:
        case Verdict():
            return _judge_verdict(place, seen)
        case Artifact(path=path):
            # WF-ARTIFACT-BLOCKS: only the file itself passes.
            if seen.found:
                return _Passed(done=False)
            return _Failed(reason=f"{path} does not exist in the worktree")
        case PassingTests():
            return _judge_tests(seen)
        case _:
            # No other gate is read: the five deliverables are judged on evidence, an
            # approval by a person.
            return _Failed(reason=f"the gate {type(gate).__name__} is not read")


#: A verdict file's keys, and what each holds (``<board>/<step>/verdict.json``, a JSON object).
VERDICT_KEYS = {
    "result": 'required: `"done"`, `"revise"` or `"blocked"` (below)',
    "summary": "optional: what the step found, in words. A fix step after a review reads it "
    "(`$board/review/verdict.json`); a blocked verdict's summary is the pause's words; "
    "finalize puts the last verdict's in the pull request's body",
}
#: What each verdict's ``result`` does to its step (WF-GATE-REPROMPT-ONCE, WF-LOOP-EXITS-ON-DONE).
VERDICT_RESULTS = {
    "done": "the gate passes; a loop whose `until` step this is ends",
    "revise": "the gate passes; a loop whose `until` step this is runs its body again, if "
    "passes are left (else `loop-max`)",
    "blocked": "the run pauses at once (`gate-blocked`), its summary as the pause's words, "
    "until a person lets it go on (`flume resume`, `flume retry`)",
}
#: The results that pass the gate.
_PASSING = ("done", "revise")


def _judge_verdict(place: Place, seen: GateRead) -> _Passed | _Blocked | _Failed:
    where = f"{place.board}/{place.stage.name}/verdict.json"
    if not seen.found:
        return _Failed(reason=f"no verdict was written at {where}")
    if seen.problem:
        return _Failed(reason=f"the verdict at {where} cannot be read: {seen.problem}")
    if seen.result in _PASSING:
        return _Passed(done=seen.result == "done")
    if seen.result == "blocked":
        return _Blocked(words=seen.summary or "the verdict says blocked, with no summary")
    *most, last = [f'"{result}"' for result in VERDICT_RESULTS]
    words = f"{', '.join(most)} or {last}"
    return _Failed(reason=f"the verdict at {where} says result {seen.result!r}; write {words}")


def _judge_tests(seen: GateRead) -> _Passed | _Failed:
    if seen.found and seen.code == 0:
        return _Passed(done=False)
    if not seen.found:
        return _Failed(reason=f"the tests did not finish: {seen.problem}")
    tail = seen.summary[-_TESTS_TAIL:]
    return _Failed(reason=f"the tests failed (exit status {seen.code}):\n{tail}")


def on_gate_read(place: Place, seen: GateRead) -> Outcome:
    """WF-GATE-REPROMPT-ONCE: the gate passes, or the agent is told why once, or the run pauses."""
    phase = place.stage.phase
    if (
        place.life is not Life.ACTIVE
        or not isinstance(phase, Judging)
        or seen.key != place.stage.key
        or seen.attempt != place.stage.attempt
    ):
        # WF-VERDICT-SINCE-DELIVERY: a reading for another attempt is not this one's.
        return place, ()
    step = current_step(place)
    judged = judge(place, step.deliverable, seen)
    if isinstance(step.deliverable, Verdict) and seen.found:
        recorded = f"{place.stage.key}#{place.stage.attempt}".replace("/", "--")
        place = evolve(place, verdicts=place.verdicts.set(step.name, recorded))
    match judged:
        case _Passed(done=done):
            said = f" (verdict: {seen.result})" if isinstance(step.deliverable, Verdict) else ""
            passed = Report(
                event=Event.GATE_PASSED,
                text=f"the gate of {place.stage.key} passed{said}",
                stage=step.name,
            )
            place, ended = stage.finish_stage(place, place.now, done=done)
            return place, (passed, *ended)
        case _Blocked(words=words):
            paused = Paused(cause=PauseCause.GATE_BLOCKED, words=words, again=True)
            return stage.pause_stage(place, paused)
        case _Failed(reason=reason):
            return _failed(place, phase, reason)
        case _:
            assert_never(judged)


def _failed(place: Place, phase: Judging, reason: str) -> Outcome:
    over = budget.spent_budget(place.budgets, place.spent, place.stage.turns, place.now)
    if over is None and place.stage.reprompted:
        paused = Paused(cause=PauseCause.GATE_BLOCKED, words=reason, again=True)
        return stage.pause_stage(place, paused)
    if over is None and not budget.retries_left(place.budgets, place.spent):
        over = "retries"
    if over is not None:
        words = f"budget {over} spent; {reason}"
        paused = Paused(cause=PauseCause.BUDGET, words=words, again=True, spent=over)
        return stage.pause_stage(place, paused)
    # Told once, as a tell flume gives: it goes when the agent waits, proven in its transcript.
    number = place.tells_given + 1
    told = Tell(
        number=number,
        text=f"The gate of your step did not pass: {reason}. Mend it, then end your turn.",
        asked_at=place.now,
    )
    stage_run = attrs.evolve(
        place.stage, phase=Working(session=phase.session), reprompted=True, retold=number
    )
    place = evolve(
        place,
        stage=stage_run,
        held=place.held.append(told),
        tells_given=number,
        spent=attrs.evolve(place.spent, retries=place.spent.retries + 1),
    )
    report = Report(
        event=Event.GATE_FAILED,
        text=f"the gate of {stage_run.key} (attempt {stage_run.attempt}) did not pass: {reason}; "
        "the agent is told once",
        stage=stage_run.name,
    )
    return place, (report,)


#: What each of a person's words on a pause answers, as a refusal names it.
_WANTED = {
    ApproveAsked: ("approve", "an approval"),
    ResumeAsked: ("resume", "flume resume"),
    BudgetRaised: ("raise", "a raise of its budgets"),
    PassAsked: ("pass", "a person's pass: no gate of it is blocked"),
}


def _refuse_unless(
    place: Place, command: type[ApproveAsked | ResumeAsked | BudgetRaised | PassAsked]
) -> Paused:
    """The pause ``command`` resolves; refused (exit 1, nothing journaled) when none waits on it.

    REFUSAL-NAMES-WAY: the refusal names what the place waits on and the command that applies.
    """
    phase = place.stage.phase
    verb, wanted = _WANTED[command]
    if place.life is Life.ACTIVE and isinstance(phase, Paused) and accepts(phase, command):
        return phase
    raise refuse(place, verb, wanted)


def _resume(place: Place, paused: Paused, words: str) -> Outcome:
    """The paused stage goes on: queued again (a new attempt if it must), or the run finishes.

    Queued, it starts when free; a budget still spent pauses it again there
    (:func:`flume.core.stage.start_when_free`), with the budget named.
    """
    place = evolve(place, spent=budget.resumed_at(place.spent, place.now))
    resumed = Report(
        event=Event.RESUMED,
        text=f"{place.launch.place} resumed at {place.stage.key}: {words}",
        stage=place.stage.name,
    )
    run = place.stage
    if paused.again:
        run = attrs.evolve(
            run,
            attempt=run.attempt + 1,
            reprompted=False,
            retold=None,
            judged_at=None,
            nudged_at=None,
            turns=0,
            sends=0,
            words="",
        )
    place = evolve(place, stage=attrs.evolve(run, phase=Queued()))
    if paused.cause is PauseCause.MERGE_FAILED and place.join is JoinStage.MERGING:
        # An orchestrate block's merge git refused: its lead's next turn's end merges again.
        place = evolve(place, join=JoinStage.OPEN)
    if paused.finish:
        # Paused at the last loop's max: nothing is left to run.
        place, finished = stage.finish_place(place)
        return place, (resumed, *finished)
    return place, (resumed,)


def on_approve(place: Place, seen: ApproveAsked) -> Outcome:
    """A person approved the step an approval gate holds: delivered, it ends; the run goes on.

    LAND-HELD-FOR-A-PERSON: a landing held for a person, approved, lands the head they read.
    """
    del seen
    paused = _refuse_unless(place, ApproveAsked)
    if paused.landing is not None:
        place = evolve(place, reviewed=paused.landing, submission=Submission.NONE)
        return _resume(place, paused, f"its landing at {paused.landing} approved")
    place = evolve(
        place,
        spent=budget.resumed_at(place.spent, place.now),
        stage=attrs.evolve(place.stage, phase=Delivered(at=place.now)),
    )
    approved = Report(
        event=Event.GATE_PASSED,
        text=f"the gate of {place.stage.key} passed (approved)",
        stage=place.stage.name,
    )
    return place, (approved,)


def on_pass(place: Place, seen: PassAsked) -> Outcome:
    """WF-PERSON-PASSES: a person passes the gate a run holds blocked; the step ends, passed.

    Their words are kept with the attempt (status shows them) and said in the event; the stage
    is delivered, and ends as an approved one does. Refused, naming what applies, where no gate
    is blocked.
    """
    paused = _refuse_unless(place, PassAsked)
    run = place.stage
    why = " ".join(seen.why.split())
    passed = PersonPass(key=run.key, attempt=run.attempt, why=why, at=place.now)
    place = evolve(
        place,
        passes=place.passes.append(passed),
        spent=budget.resumed_at(place.spent, place.now),
        stage=attrs.evolve(run, phase=Delivered(at=place.now)),
    )
    report = Report(
        event=Event.GATE_PASSED,
        text=f"the gate of {run.key} (attempt {run.attempt}) passed by a person, blocked as it "
        f"was ({paused.words.splitlines()[0] if paused.words else 'blocked'}): {why}",
        stage=run.name,
    )
    return place, (report,)


def on_resume(place: Place, seen: ResumeAsked) -> Outcome:
    """A person asked the paused run to go on."""
    del seen
    paused = _refuse_unless(place, ResumeAsked)
    return _resume(place, paused, "resumed by a person")


def _refuse_needless(place: Place, paused: Paused, seen: BudgetRaised) -> None:
    """REFUSAL-NAMES-WAY: a raise of a budget the kind sets not, or not of the one spent.

    A raise the pause would come straight back from (the budget spent left as it was) or of a
    budget the run has none of journals nothing: refused, naming the budget spent and its raise.
    """
    given = {
        "turns": seen.turns,
        "tokens": seen.tokens,
        "wall_minutes": seen.wall_minutes,
        "retries": seen.retries,
        "turns_per_attempt": seen.turns_per_attempt,
    }
    unset = [
        name
        for name, amount in given.items()
        if amount is not None and getattr(place.budgets, name) is None
    ]
    spent = paused.spent
    names = spent.split(" and ") if spent else []
    if not unset and (not names or any(given.get(each) is not None for each in names)):
        return
    name = place.launch.place
    problem = (
        f"{name} sets no {' or '.join(unset)} budget to raise"
        if unset
        else f"the raise leaves its {spent} budget as it was"
    )
    raise refused(
        "raise",
        f"{problem}; it is paused at {place.stage.key}: {paused.words.splitlines()[0]}",
        resolve_command(place, paused),
    )


def on_raise(place: Place, seen: BudgetRaised) -> Outcome:
    """WF-BUDGET-RAISE-RESUMES: the budgets raised in place; the stage is queued again.

    One still spent pauses it again before its agent starts, naming the budget.
    """
    paused = _refuse_unless(place, BudgetRaised)
    _refuse_needless(place, paused, seen)
    raised = budget.raised(
        place.budgets,
        turns=seen.turns,
        tokens=seen.tokens,
        wall_minutes=seen.wall_minutes,
        retries=seen.retries,
        turns_per_attempt=seen.turns_per_attempt,
    )
    place = evolve(place, budgets=raised)
    words = f"budgets raised ({budget.budget_words(raised, place.spent, place.now)})"
    return _resume(place, paused, words)
