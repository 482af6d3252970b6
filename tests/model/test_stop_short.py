"""R6, R8, R9 model-checked: tells, stopping short, retry, stop and drop."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from flume.core.actions import EndAgent, Event, MakeWorktree, SendPrompt, SendTell, StartAgent
from flume.core.observations import (
    Activity,
    DropAsked,
    NeedsSaid,
    RetryAsked,
    StopAsked,
    Told,
)
from flume.core.place import (
    AwaitingInput,
    AwaitingWord,
    Delivered,
    Delivering,
    Life,
    Queued,
    Short,
    ShortCause,
    Starting,
    Working,
    is_live,
)
from tests.model.machine import PlaceMachine

#: The order a stage attempt's phases come in: an attempt only ever moves forward.
RANK: dict[type, int] = {
    AwaitingWord: 0,
    Queued: 1,
    Starting: 2,
    AwaitingInput: 3,
    Delivering: 4,
    Working: 5,
    Delivered: 6,
    Short: 7,
}

WORDS = st.sampled_from(["use the other API", "the tests live in t/", "ask Kim", "x" * 300])


class StopShortMachine(PlaceMachine):
    """A fix whose caller tells, stops, retries and drops while its agent may stop short."""

    retried: tuple[str, int, str, frozenset[str]] | None = None
    dropped_at: int | None = None

    @rule(text=WORDS)
    def caller_tells(self, text: str) -> None:
        """TELL-REFUSED: a tell is refused, with nothing typed, when no agent is live or it asks."""
        before = self.world.place
        assert before is not None
        decided = len(self.world.actions)
        free = (
            before.life is Life.ACTIVE
            and is_live(before)
            and before.agent is not None
            and before.agent.activity is not Activity.ASKING
        )
        no_agent = self.world.live_agent() is None
        refusal = self.world.feed(Told(at=self.world.instant(), text=text))
        assert (refusal is None) == free
        if no_agent or (self.world.activity is Activity.ASKING and free is False):
            assert refusal is not None
        if refusal is not None:
            assert self.world.place is before
            assert len(self.world.actions) == decided

    @precondition(lambda self: self.has_agent())
    @rule(text=WORDS)
    def caller_tells_then_agent_asks(self, text: str) -> None:
        """A tell is held while the agent works, then the agent asks a person a question.

        The five-step path to a tell held before the question rarely comes by chance.
        """
        self.agent_says(Activity.WORKING)
        self.caller_tells(text)
        self.agent_says(Activity.ASKING)

    @precondition(lambda self: self.has_agent())
    @rule(text=WORDS)
    def tell_held_while_the_stage_delivers(self, text: str) -> None:
        """A tell is held while the agent works; it takes its prompt, commits, then waits.

        The step that sends the tell is the agent's wait, long after the step that told it,
        with the stage delivered by then.
        """
        if not self.has_sends():
            self.agent_takes_input()
        if not self.has_sends():
            return
        self.agent_says(Activity.WORKING)
        self.caller_tells(text)
        self.agent_takes_a_send(0)
        self.agent_commits()
        self.agent_says(Activity.WAITING)

    @precondition(lambda self: self.has_agent())
    @rule(needs=WORDS, words=st.one_of(st.just(""), WORDS))
    def agent_needs_then_caller_retries(self, needs: str, words: str) -> None:
        """The agent stops short, still live, and the caller retries at once."""
        self.agent_needs(needs)
        self.caller_retries(words)

    @rule(words=WORDS)
    def agent_needs(self, words: str) -> None:
        """The agent runs ``flume needs``; accepted only while its stage runs."""
        self.world.feed(NeedsSaid(at=self.world.instant(), words=words))

    @rule(words=st.one_of(st.just(""), WORDS))
    def caller_retries(self, words: str) -> None:
        """R9: retry is accepted exactly when the stage stopped short; a refusal changes nothing.

        PLACE-REBUILT: a place whose worktree was removed (its branch kept) is retried too: its
        worktree is asked again on its branch, as it stands, and the world's worktree is back
        on that branch at the head it had before its next agent starts.
        """
        before = self.world.place
        assert before is not None
        short = (
            before.life is Life.ACTIVE
            and isinstance(before.stage.phase, Short)
            and not before.branch_gone
        )
        sessions = frozenset(self.world.agents)
        decided = len(self.world.actions)
        kept = before.branch in self.world.git.branches
        head = self.world.git.head(before.branch) if kept else None
        refusal = self.world.feed(RetryAsked(at=self.world.instant(), words=words))
        assert (refusal is None) == short
        if refusal is not None:
            assert self.world.place is before
            return
        made = [a for a in self.world.actions[decided:] if isinstance(a, MakeWorktree)]
        assert [a.again for a in made] == ([True] if before.worktree_gone else [False] * len(made))
        if before.worktree_gone:
            tree = self.world.worktrees[before.path]
            assert tree.branch == before.branch
            assert self.world.git.head(before.branch) == head
        after = self.world.place
        assert after is not None
        assert (after.stage.name, after.stage.attempt) == (
            before.stage.name,
            before.stage.attempt + 1,
        )
        if before.agent is not None and not before.agent.ending:
            # The agent still live is ended, never sent the retried prompt.
            ended = [a for a in self.world.actions[decided:] if isinstance(a, EndAgent)]
            assert [a.session for a in ended] == [before.agent.session]
        self.retried = (after.stage.name, after.stage.attempt, words, sessions)

    @rule()
    def caller_stops(self) -> None:
        """STOP-WAITS-RETRY: stop ends the live agent, and the stage waits short for a retry."""
        before = self.world.place
        assert before is not None
        decided = len(self.world.actions)
        refusal = self.world.feed(StopAsked(at=self.world.instant()))
        if refusal is not None:
            assert self.world.place is before
            return
        after = self.world.place
        assert after is not None
        assert isinstance(after.stage.phase, Short)
        assert after.stage.phase.cause is ShortCause.STOPPED
        if before.agent is not None and not before.agent.ending:
            ended = [a for a in self.world.actions[decided:] if isinstance(a, EndAgent)]
            assert [a.session for a in ended] == [before.agent.session]

    @rule()
    def caller_drops(self) -> None:
        """The caller drops the work (refused once it landed or was dropped)."""
        before = self.world.place
        assert before is not None
        refusal = self.world.feed(DropAsked(at=self.world.instant()))
        if refusal is None:
            self.dropped_at = len(self.world.actions)
        else:
            assert self.world.place is before

    @rule(what=st.sampled_from(["worktree", "branch", "restore"]))
    def person_deletes_the_place(self, what: str) -> None:
        """PLACE-LOST-STOPS-SHORT: a worktree or branch deleted under a place in flight stops it.

        Its stage stops short naming what is gone and the way out, and its agent is ended.
        """
        before = self.world.place
        assert before is not None
        decided = len(self.world.actions)
        if what == "restore":
            assert self.world.restore_branch() is None
            return
        gone_already = before.worktree_gone or before.branch_gone
        in_flight = before.made and before.life in {Life.MAKING, Life.ACTIVE}
        if what == "worktree":
            present = before.path in self.world.worktrees
            assert self.world.delete_worktree_by_hand() is None
            cause, way_out = ShortCause.WORKTREE_GONE, "flume drop"
            gone_already = before.worktree_gone
        else:
            present = before.branch in self.world.git.branches
            assert self.world.delete_branch_by_hand() is None
            cause, way_out = ShortCause.BRANCH_GONE, f"update-ref refs/heads/{before.branch}"
        after = self.world.place
        assert after is not None
        if not (present and in_flight and not gone_already):
            return
        assert isinstance(after.stage.phase, Short)
        assert after.stage.phase.cause is cause
        assert way_out in after.stage.phase.words
        if before.agent is not None and not before.agent.ending:
            ended = [a for a in self.world.actions[decided:] if isinstance(a, EndAgent)]
            assert [a.session for a in ended] == [before.agent.session]

    @invariant()
    def agents_start_only_in_their_place(self) -> None:
        """START-ONLY-IN-PLACE: no agent is started where the place's worktree or branch is gone.

        The core decides no start for a place it knows lost, and the world, judging on its own
        truth, never started an agent where no worktree of the place stood on its branch.
        """
        for _before, _seen, decision in self.world.steps:
            if any(isinstance(a, StartAgent) for a in decision.actions):
                assert not decision.place.worktree_gone
                assert not decision.place.branch_gone
        assert self.world.started_outside == []

    @invariant()
    def short_starts_nothing(self) -> None:
        """R8: a stage stopped short starts no agent and no next stage, until a retry."""
        for before, seen, decision in self.world.steps:
            if before is None or not isinstance(before.stage.phase, Short):
                continue
            if isinstance(seen, RetryAsked):
                continue
            assert not any(isinstance(a, StartAgent | SendPrompt) for a in decision.actions)
            assert decision.place.stage.name == before.stage.name
            assert decision.place.completed == before.completed

    @invariant()
    def retry_words_reach_a_fresh_agent(self) -> None:
        """RETRY-FRESH-AGENT: the retried attempt's prompt goes to a new session, with the words."""
        if self.retried is None:
            return
        stage, attempt, words, sessions = self.retried
        for action in self.world.actions:
            if isinstance(action, SendPrompt) and (action.stage, action.attempt) == (
                stage,
                attempt,
            ):
                assert action.session not in sessions
                assert words.strip() in action.text

    @invariant()
    def drop_ends_everything(self) -> None:
        """DROP-ENDS-WORK: after a drop, no agent starts, nothing is sent and none stays live."""
        if self.dropped_at is None:
            return
        later = self.world.actions[self.dropped_at :]
        assert not any(isinstance(a, StartAgent | SendPrompt | SendTell) for a in later)
        place = self.world.place
        assert place is not None
        assert place.life in {Life.DROPPED, Life.TIDIED}
        assert self.world.live_agent() is None

    @invariant()
    def tells_wait_for_a_waiting_agent(self) -> None:
        """TELL-HELD-WHILE-WORKING: a tell is sent only when the agent waits, never as it works.

        Judged on the world's truth: what the agent's hooks last said when the tell was pasted.
        """
        assert all(said is Activity.WAITING for said in self.world.tell_pasted_while)

    @invariant()
    def tells_move_no_stage(self) -> None:
        """TELL-NEVER-MOVES-STAGE: an accepted tell never starts, ends or moves a stage.

        Checked on the step that tells and on every step that sends a tell: a held tell goes
        out on a later step (the agent waits, time passes), and that step leaves the stage's
        attempt where it was or later, never back (a delivered or short stage stays so).
        """
        for before, seen, decision in self.world.steps:
            if before is not None and any(isinstance(a, SendTell) for a in decision.actions):
                after = decision.place
                assert after.completed == before.completed
                same = (after.stage.name, after.stage.attempt)
                if same == (before.stage.name, before.stage.attempt):
                    assert RANK[type(after.stage.phase)] >= RANK[type(before.stage.phase)]
                    if isinstance(before.stage.phase, Delivered | Short):
                        assert type(after.stage.phase) in {type(before.stage.phase), Short}
            if not isinstance(seen, Told):
                continue
            assert before is not None
            assert decision.place.stage == before.stage
            assert decision.place.completed == before.completed
            assert decision.place.life is before.life
            assert not any(
                isinstance(a, StartAgent | SendPrompt | EndAgent) for a in decision.actions
            )

    @invariant()
    def tell_delivered_only_when_typed(self) -> None:
        """R6: a tell counts as delivered only once the transcript holds it as typed text."""
        markers = {a.number: a.marker for a in self.world.actions if isinstance(a, SendTell)}
        for report in self.world.reports_of(Event.TELL_DELIVERED):
            number = int(report.text.rsplit(" ", 1)[-1])
            assert markers[number] in self.world.typed_markers


TestStopShort = StopShortMachine.TestCase
