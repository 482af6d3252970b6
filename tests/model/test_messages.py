"""Messages along declared edges: progress, a question with no lead above, and its answer.

The run's first step may report progress and ask; its second may neither. The FakeWorld's agents
run ``flume progress`` and ``flume ask`` (commands with their session), a person answers
(``flume answer``), and the answer reaches the asker as a tell its transcript must hold.
"""

from __future__ import annotations

from collections import Counter

import attrs
import pytest
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from pyrsistent import pset, pvector

from flume.core import tell
from flume.core.actions import Event, JudgeGate, SendTell
from flume.core.errors import UsageError
from flume.core.ids import Instant, KindName, SessionId, StageName
from flume.core.kinds import Commit, Kind, Sequence, Step, Verdict, check_kind
from flume.core.observations import (
    AnswerGiven,
    AskSaid,
    ProgressSaid,
    ResumeAsked,
    Tick,
)
from flume.core.place import Life, Question, Tell, TellSending, evolve, open_question
from flume.core.settings import Settings
from flume.core.status import status
from tests.model.world import FakeWorld

S = Settings()


def talking(*, may: frozenset[str] = frozenset({"progress", "ask"})) -> Kind:
    """Code (a commit; it may ``may``), then a review (a verdict; it may nothing)."""
    code = Step(
        name=StageName("code"),
        prompt="Build $brief; commit.",
        deliverable=Commit(),
        may=pset(may),
    )
    review = Step(name=StageName("review"), prompt="Review. Write $verdict.", deliverable=Verdict())
    return Kind(name=KindName("talk"), prefix="talk", body=Sequence(blocks=pvector([code, review])))


def world_of(kind: Kind) -> FakeWorld:
    """A world that launched ``kind``; its first step's agent started."""
    world = FakeWorld(settings=S, kind=kind)
    assert world.launch() is None
    return world


def ask(world: FakeWorld, question: str = "Which API?", *options: str) -> UsageError | None:
    """The live agent runs ``flume ask``."""
    agent = world.live_agent()
    assert agent is not None
    seen = AskSaid(
        at=world.instant(), question=question, options=pvector(options), session=agent.session
    )
    return world.feed(seen)


def test_a_question_pauses_named_its_gate_waits_and_the_answer_reaches_the_asker() -> None:
    """WF-ASK-PAUSES-WITHOUT-LEAD, WF-ASK-DEFERS-GATE, WF-MESSAGE-TRANSCRIPT in one run."""
    world = world_of(talking())
    assert world.deliver()
    assert ask(world, "Which API?", "old", "new") is None
    assert world.place is not None
    view = status(world.place)
    assert (view.paused, view.paused_words, view.resolve) == (
        "question",
        "q1: Which API? (options: old, new)",
        'flume answer talk--x q1 "..."',
    )
    (paused,) = world.reports_of(Event.PAUSED)
    assert paused.text == (
        "talk--x paused at code (question): q1: Which API? (options: old, new); "
        'flume answer talk--x q1 "..."'
    )
    # The agent commits and its turn ends waiting for the answer: the step does not end.
    assert world.commit() is None
    assert world.end_turn() is None
    world.now += S.quiet_seconds + S.stall_seconds + 1
    world.feed(Tick(at=world.instant()))
    assert world.place.stage.name == "code"
    assert world.live_agent() is not None
    assert world.feed(AnswerGiven(at=world.instant(), question="q1", text="The new one.")) is None
    (answer,) = [a for a in world.actions if isinstance(a, SendTell)]
    assert "The answer to your question q1 (Which API?):\n\nThe new one." in answer.text
    assert status(world.place).paused is None  # answered: no longer waiting on the caller
    assert open_question(world.place) is not None  # but open until its transcript holds it
    assert world.deliver()
    assert open_question(world.place) is None
    assert world.end_turn() is None
    world.now += S.quiet_seconds + 1
    world.feed(Tick(at=world.instant()))
    assert world.place.stage.name == "review"


def test_progress_is_shown_and_an_edge_not_declared_is_refused() -> None:
    """WF-EDGES: progress where declared is shown; ask where it is not is refused, unjournaled."""
    world = world_of(talking(may=frozenset({"progress"})))
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    said = ProgressSaid(at=world.instant(), words="half of it built", session=agent.session)
    assert world.feed(said) is None
    assert world.place is not None
    assert status(world.place).progress == "half of it built"
    assert [r.text for r in world.reports_of(Event.PROGRESS)] == ["code: half of it built"]
    journaled = len(world.journal)
    refused = ask(world)
    assert refused is not None
    assert refused.exit_status == 1
    assert "step code of talk--x may not ask: its may is [progress]" in str(refused)
    assert len(world.journal) == journaled


def test_answers_are_given_once_to_a_question_that_exists() -> None:
    """WF-ASK-ONE-ANSWERER: an unknown id is bad input (2); a second answer is refused (1)."""
    world = world_of(talking())
    assert world.deliver()
    assert ask(world) is None
    unknown = world.feed(AnswerGiven(at=world.instant(), question="q7", text="yes"))
    assert unknown is not None
    assert unknown.exit_status == 2
    assert "has no question 'q7' (its questions: q1)" in str(unknown)
    assert world.feed(AnswerGiven(at=world.instant(), question="q1", text="yes")) is None
    again = world.feed(AnswerGiven(at=world.instant(), question="q1", text="no"))
    assert again is not None
    assert again.exit_status == 1
    assert "answered already" in str(again)


def test_a_second_question_waits_for_the_first_and_bad_questions_are_refused() -> None:
    """One question open at a time; an empty question, or empty options, are refused."""
    world = world_of(talking())
    assert world.deliver()
    empty = ask(world, "  ")
    assert empty is not None
    assert "the question is empty" in str(empty)
    blank = ask(world, "Which?", "a", " ")
    assert blank is not None
    assert "options, none empty" in str(blank)
    assert ask(world) is None
    second = ask(world, "And then?")
    assert second is not None
    assert "has a question open already" in str(second)


def test_an_answer_to_an_asker_gone_is_refused() -> None:
    """The asker's agent ended (stopped, then retried): its question closes unanswered.

    The retry's fresh agent is not the asker: the answer is refused (tell it instead), and the
    new agent may ask afresh.
    """
    from flume.core.observations import RetryAsked, StopAsked  # noqa: PLC0415 (here alone)

    world = world_of(talking())
    assert world.deliver()
    assert ask(world) is None
    assert world.feed(StopAsked(at=world.instant())) is None
    stopped = world.feed(AnswerGiven(at=world.instant(), question="q1", text="x"))
    assert stopped is not None
    assert stopped.exit_status == 1
    assert "nothing waits on an answer" in str(stopped)
    assert world.feed(RetryAsked(at=world.instant())) is None
    assert world.deliver()
    assert world.place is not None
    assert open_question(world.place) is None
    gone = world.feed(AnswerGiven(at=world.instant(), question="q1", text="x"))
    assert gone is not None
    assert "the agent that asked q1 of talk--x is gone" in str(gone)
    assert ask(world, "Again?") is None
    assert [q.id for q in world.place.questions] == ["q1", "q2"]


def test_words_and_sessions_that_cannot_count_are_refused() -> None:
    """An empty answer or note, a session not the live agent's, progress with no step running."""
    world = world_of(talking())
    assert world.deliver()
    assert ask(world) is None
    empty = world.feed(AnswerGiven(at=world.instant(), question="q1", text="  "))
    assert empty is not None
    assert "the answer is empty" in str(empty)
    agent = world.live_agent()
    assert agent is not None
    blank = world.feed(ProgressSaid(at=world.instant(), words=" ", session=agent.session))
    assert blank is not None
    assert "the words are empty" in str(blank)
    other = world.feed(ProgressSaid(at=world.instant(), words="x", session=SessionId("s-other")))
    assert other is not None
    assert "session s-other is not the live agent of talk--x" in str(other)
    from flume.core.observations import StopAsked  # noqa: PLC0415 (here alone)

    assert world.feed(StopAsked(at=world.instant())) is None
    idle = world.feed(ProgressSaid(at=world.instant(), words="x", session=agent.session))
    assert idle is not None
    assert "no step of talk--x is running" in str(idle)
    late = world.feed(AskSaid(at=world.instant(), question="Still there?", session=agent.session))
    assert late is not None
    assert "no step of talk--x is running" in str(late)


@pytest.mark.parametrize(
    ("may", "says"),
    [
        (frozenset({"spawn"}), "only an orchestrate block's lead may spawn"),
        (frozenset({"shout"}), "may names an unknown edge 'shout'"),
    ],
)
def test_an_edge_a_step_cannot_have_is_refused(may: frozenset[str], says: str) -> None:
    """Bad input: a lead's edge on a step, or an edge that does not exist."""
    with pytest.raises(UsageError, match=says):
        check_kind(talking(may=may))


def said(refusal: UsageError | None) -> tuple[int, list[tuple[str, str, str]]]:
    """A refusal whole: its exit status, and each problem's field, what is wrong and the mend."""
    assert refusal is not None
    return refusal.exit_status, [tuple(problem) for problem in refusal.problems]


def test_every_refusal_of_a_message_names_its_field_what_is_wrong_and_the_way_out() -> None:
    """Each refusal of progress, ask and answer, compared whole: what a person or agent reads."""
    world = world_of(talking())
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    at = world.instant()
    assert said(world.feed(AnswerGiven(at=at, question="q1", text="x"))) == (
        2,
        [("question", "talk--x has no question 'q1' (its questions: none)", SEE_QUESTION)],
    )
    assert said(world.feed(ProgressSaid(at=at, words="x", session=SessionId("s-9")))) == (
        1,
        [("progress", "session s-9 is not the live agent of talk--x", FOR_THE_AGENT)],
    )
    assert said(world.feed(AskSaid(at=at, question="Q?", session=SessionId("s-9")))) == (
        1,
        [
            (
                "ask",
                "session s-9 is not the live agent of talk--x",
                "flume ask is for the agent of the place's running step",
            )
        ],
    )
    assert said(world.feed(ProgressSaid(at=at, words=" ", session=agent.session))) == (
        1,
        [("progress", "the words are empty", "say what you have done")],
    )
    assert said(ask(world, " ")) == (1, [("ask", "the question is empty", WHAT_YOU_WANT)])
    eleven = [str(number) for number in range(11)]
    for options in (eleven, ["a", " "]):
        assert said(ask(world, "Which?", *options)) == (1, [("ask", *TOO_MANY_OPTIONS)])
    assert ask(world, "Which?", *eleven[:10]) is None
    assert [r.stage for r in world.reports_of(Event.PAUSED)] == ["code"]
    assert said(ask(world, "And?")) == (
        1,
        [("ask", "talk--x has a question open already", "wait for its answer, then ask the next")],
    )
    assert said(world.feed(AnswerGiven(at=at, question="q1", text=" "))) == (
        1,
        [("answer", "the answer is empty", "give the answer as text")],
    )
    assert world.feed(AnswerGiven(at=at, question="q1", text=" Ten. ")) is None
    assert said(world.feed(AnswerGiven(at=at, question="q1", text="x"))) == (
        1,
        [("answer", "question q1 of talk--x is answered already", "a question is answered once")],
    )
    assert world.deliver()  # the answer reached the asker: it may ask the next
    assert ask(world, "And?") is None
    assert said(world.feed(AnswerGiven(at=at, question="q3", text="x"))) == (
        2,
        [("question", "talk--x has no question 'q3' (its questions: q1, q2)", SEE_QUESTION)],
    )
    assert [(r.text, r.stage) for r in world.reports_of(Event.ANSWERED)] == [
        ("question q1 answered; the answer goes to the agent of code", "code")
    ]
    assert world.place is not None
    assert world.place.questions[0].answer == "Ten."
    assert world.place.progress == ""  # the refused progress left none


SEE_QUESTION = "see the open question with flume status talk--x"
FOR_THE_AGENT = "flume progress is for the agent of the place's running step"
WHAT_YOU_WANT = "say what you want to know"
TOO_MANY_OPTIONS = (
    "a question offers 1-10 options, none empty",
    "give fewer options, each with words",
)


def test_every_refusal_with_no_step_running_names_the_command_that_applies() -> None:
    """Stopped: progress, ask and an answer are refused, each saying nothing runs, word for word."""
    world = world_of(talking())
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    assert ask(world) is None
    from flume.core.observations import RetryAsked, StopAsked  # noqa: PLC0415 (here alone)

    assert world.feed(StopAsked(at=world.instant())) is None
    at = world.instant()
    assert said(world.feed(ProgressSaid(at=at, words="x", session=agent.session))) == (
        1,
        [
            (
                "progress",
                "no step of talk--x is running",
                "flume progress is for the agent of a running step",
            )
        ],
    )
    assert said(world.feed(AskSaid(at=at, question="Q?", session=agent.session))) == (
        1,
        [("ask", "no step of talk--x is running", "flume ask is for the agent of a running step")],
    )
    assert said(world.feed(AnswerGiven(at=at, question="q1", text="x"))) == (
        1,
        [
            (
                "answer",
                "no step of talk--x is running: nothing waits on an answer",
                "see what talk--x waits on with flume status talk--x",
            )
        ],
    )
    assert world.feed(RetryAsked(at=world.instant())) is None
    assert world.deliver()
    assert said(world.feed(AnswerGiven(at=world.instant(), question="q1", text="x"))) == (
        1,
        [
            (
                "answer",
                "the agent that asked q1 of talk--x is gone",
                "tell the step's agent instead (flume tell talk--x)",
            )
        ],
    )


def test_edges_are_checked_for_a_command_given_without_a_session() -> None:
    """WF-EDGES: ``flume ask`` or ``progress`` run outside an agent (no session) is held to may."""
    world = world_of(talking(may=frozenset({"progress"})))
    assert world.deliver()
    at = world.instant()
    assert said(world.feed(AskSaid(at=at, question="Q?", session=None))) == (
        1,
        [
            (
                "ask",
                "step code of talk--x may not ask: its may is [progress]",
                'declare may = ["ask"] on the step to let its agent ask',
            )
        ],
    )
    assert world.feed(ProgressSaid(at=at, words=" half ", session=None)) is None
    assert world.place is not None
    assert world.place.progress == "half"
    assert [(r.text, r.stage) for r in world.reports_of(Event.PROGRESS)] == [("code: half", "code")]


def test_an_edge_not_declared_names_every_edge_the_step_may() -> None:
    """WF-EDGES: a lead that may spawn and notify, asking, is told both edges it has, in order."""
    from tests.model.test_orchestrate import crew  # noqa: PLC0415 (here alone)
    from tests.model.test_orchestrate import world_of as crew_world  # noqa: PLC0415

    world = crew_world(crew())
    assert said(ask(world)) == (
        1,
        [
            (
                "ask",
                "step lead of crew--x may not ask: its may is [notify, spawn]",
                'declare may = ["ask"] on the step to let its agent ask',
            )
        ],
    )


# --- the machine --------------------------------------------------------------------------------


class MessagesMachine(RuleBasedStateMachine):
    """Agents report, ask and take their answers; a person answers; the shell restarts."""

    world: FakeWorld

    @initialize()
    def launch(self) -> None:
        """Launch the kind whose first step may progress and ask."""
        self.world = world_of(talking())

    @rule()
    def agent_takes_input(self) -> None:
        """The live agent waits; its transcript holds the last thing sent to it."""
        self.world.deliver()

    @rule(words=st.sampled_from(["half done", "", "tests pass"]))
    def agent_reports(self, words: str) -> None:
        """The live agent runs ``flume progress``."""
        agent = self.world.live_agent()
        if agent is not None:
            self.world.feed(
                ProgressSaid(at=self.world.instant(), words=words, session=agent.session)
            )

    @rule(question=st.sampled_from(["Which API?", "Keep the flag?"]))
    def agent_asks(self, question: str) -> None:
        """The live agent runs ``flume ask``."""
        if self.world.live_agent() is not None:
            ask(self.world, question)

    @rule(number=st.integers(min_value=1, max_value=3))
    def person_answers(self, number: int) -> None:
        """A person answers question ``q<number>`` (refused unless it is open and unanswered)."""
        self.world.feed(AnswerGiven(at=self.world.instant(), question=f"q{number}", text="yes"))

    @rule()
    def agent_commits_and_ends_its_turn(self) -> None:
        """The live agent commits (a review writes its verdict) and its turn ends."""
        place = self.world.place
        if place is None or self.world.live_agent() is None:
            return
        if place.stage.name == "review":
            self.world.write_verdict("done")
        else:
            self.world.commit()
        self.world.end_turn()

    @rule(seconds=st.sampled_from([1.0, 6.0, 601.0]))
    def time_passes(self, seconds: float) -> None:
        """The clock moves; the supervisor's tick looks (a stall window may pass)."""
        self.world.now += seconds
        self.world.feed(Tick(at=self.world.instant()))

    @rule()
    def person_resumes(self) -> None:
        """A person resumes (refused unless a pause resume resolves waits)."""
        self.world.feed(ResumeAsked(at=self.world.instant()))

    @rule()
    def the_shell_restarts(self) -> None:
        """SIGKILL: the run replayed from its journal, its pending actions performed again."""
        self.world.restart()

    @invariant()
    def only_along_declared_edges(self) -> None:
        """WF-EDGES: progress and questions are taken only from a step that declares them."""
        for before, seen, _decision in self.world.steps:
            if isinstance(seen, ProgressSaid | AskSaid):
                assert before is not None
                edge = "progress" if isinstance(seen, ProgressSaid) else "ask"
                (found,) = [s for s in before.kind.body.blocks if s.name == before.stage.name]  # type: ignore[union-attr]
                assert edge in found.may  # type: ignore[union-attr]

    @invariant()
    def one_answer_from_the_caller(self) -> None:
        """WF-ASK-ONE-ANSWERER: each question answered once at most, by the caller (no lead).

        Once more for each answer that never reached its asker (sent twice, lost): the
        question is open again.
        """
        answered = Counter(
            seen.question for _b, seen, _d in self.world.steps if isinstance(seen, AnswerGiven)
        )
        place = self.world.place
        assert place is not None
        lost = {question.id: question.lost for question in place.questions}
        assert all(count <= 1 + lost[id_] for id_, count in answered.items()), answered

    @invariant()
    def question_named_while_unanswered(self) -> None:
        """WF-ASK-PAUSES-WITHOUT-LEAD: an unanswered question shows the run paused, named."""
        place = self.world.place
        assert place is not None
        asked = open_question(place)
        if asked is not None and asked.answer is None and place.life is Life.ACTIVE:
            view = status(place)
            if view.paused == "question":
                assert view.resolve == f'flume answer talk--x {asked.id} "..."'
            else:
                assert view.phase == "paused"  # a pause of its own (a budget) names itself

    @invariant()
    def no_judging_while_asking(self) -> None:
        """WF-ASK-DEFERS-GATE: no gate read while a question is open; no nudge while unanswered.

        Answered, its answer not yet read, the stall clock runs again from the answer: a nudge
        then comes no sooner than a whole window after the answer was given.
        """
        for before, seen, decision in self.world.steps:
            if before is None or (asked := open_question(before)) is None:
                continue
            if open_question(decision.place) is None:
                continue  # this step closed it (delivered, or its asker gone)
            for action in decision.actions:
                assert not isinstance(action, JudgeGate), action
                if getattr(action, "event", None) is Event.NUDGED:
                    assert asked.answer is not None, asked
                    given = [t.asked_at for t in before.held if t.number == asked.tell]
                    assert all(seen.at - at >= S.stall_seconds for at in given), (seen, given)

    @invariant()
    def answers_proven_in_the_transcript(self) -> None:
        """WF-MESSAGE-TRANSCRIPT: an answer closes its question only once delivered, 2 sends."""
        sends = Counter(a.number for a in self.world.actions if isinstance(a, SendTell))
        sends_by_number: dict[int, set[int]] = {}
        for action in self.world.actions:
            if isinstance(action, SendTell):
                sends_by_number.setdefault(action.number, set()).add(action.send)
        assert all(max(each) <= 2 for each in sends_by_number.values()), sends
        place = self.world.place
        assert place is not None
        delivered = {
            int(r.text.split("tell ")[1].split()[0])
            for r in self.world.reports_of(Event.TELL_DELIVERED)
        }
        for question in place.questions:
            if question.tell is not None and question.tell not in delivered:
                agent = place.agent
                gone = agent is None or agent.session != question.session or agent.ending
                assert gone or open_question(place) == question


TestMessagesMachine = MessagesMachine.TestCase
TestMessagesMachine.settings = hypothesis_settings(
    max_examples=80, stateful_step_count=30, deadline=None
)


def test_an_answer_that_never_reached_the_asker_leaves_its_question_open() -> None:
    """WF-MESSAGE-TRANSCRIPT: sent twice and lost, the answer is undone; it may be given again."""
    world = world_of(talking())
    assert world.deliver()
    assert ask(world) is None
    assert world.end_turn() is None
    assert world.feed(AnswerGiven(at=world.instant(), question="q1", text="the new one")) is None
    for _ in range(3):
        world.now += S.confirm_seconds + 1
        assert world.feed(Tick(at=world.instant())) is None
    assert world.reports_of(Event.TELL_LOST)
    place = world.place
    assert place is not None
    (question,) = place.questions
    assert (question.answer, question.tell, question.lost) == (None, None, 1)
    assert open_question(place) == question
    assert status(place).paused == "question"
    assert world.feed(AnswerGiven(at=world.instant(), question="q1", text="the new one")) is None


def test_only_the_question_whose_answer_was_lost_is_open_again() -> None:
    """Of two questions, the one whose answer's tell was lost; the other stays answered."""
    world = world_of(talking())
    assert world.deliver()
    place = world.place
    assert place is not None
    asked = Question(
        id="q1", text="A?", key="code", attempt=1, session=SessionId("s1"), asked_at=Instant(0.0)
    )
    first = attrs.evolve(asked, answer="yes", tell=7)
    second = attrs.evolve(asked, id="q2", text="B?", answer="no", tell=9)
    lost = Tell(number=9, text="The answer to your question q2", asked_at=Instant(0.0))
    sending = evolve(
        place,
        questions=pvector([first, second]),
        sending=TellSending(tell=lost, sends=2, sent_at=Instant(0.0)),
    )
    after, _reports = tell.check_deadline(S, sending, Instant(S.confirm_seconds + 1))
    assert after.questions[0] == first
    assert (after.questions[1].answer, after.questions[1].lost) == (None, 1)
