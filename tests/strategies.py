"""Hypothesis strategies for flume's values: ids, launches, kinds, observations, actions, places.

Values are drawn from small pools (a few session ids, shas, paths) so that generated facts often
match the place they are fed to; the totality and round-trip tests need both matches and misses.
"""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import strategies as st
from pyrsistent import pmap, pset, pvector

from flume.core import actions as act
from flume.core import observations as obs
from flume.core.errors import UsageError
from flume.core.ids import (
    BlockName,
    BranchName,
    Instant,
    KindName,
    Marker,
    PlaceName,
    SessionId,
    Sha,
    StageName,
    WorkName,
)
from flume.core.kinds import (
    BUILTIN_KINDS,
    Approval,
    Artifact,
    Block,
    Budgets,
    ChangeWritten,
    Commit,
    Deliverable,
    Finalize,
    Gate,
    Join,
    Kind,
    Landing,
    Loop,
    Merge,
    OnMax,
    Orchestrate,
    Parallel,
    PassingTests,
    ReportFile,
    Sequence,
    Step,
    StepAgent,
    TasksTicked,
    Verdict,
    has_sandbox,
    is_workflow,
    steps,
)
from flume.core.launch import AgentName, AgentSettings, Launch, place_branch, place_path
from flume.core.place import (
    Agent,
    AwaitingInput,
    AwaitingWord,
    Delivered,
    Delivering,
    Fanned,
    Finalizing,
    Judging,
    Life,
    Merging,
    PauseCause,
    Paused,
    Place,
    Queued,
    Short,
    ShortCause,
    StagePhase,
    StageRun,
    Starting,
    Submission,
    Tell,
    TellSending,
    TidyGathering,
    TidyNotWanted,
    TidyWanted,
    Working,
)
from flume.core.settings import Settings
from flume.core.step import step

REPOSITORY = "/src/app"
instants = st.floats(min_value=0, max_value=10_000, allow_nan=False).map(Instant)
sessions = st.sampled_from(["s1", "s2", "s3"]).map(SessionId)
shas = st.sampled_from(["a1", "b2", "c3", "d4"]).map(Sha)
texts = st.text(max_size=40)
names = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True).map(WorkName)
stage_names = st.sampled_from(["code", "submit", "construct", "verify", "session", "plan"]).map(
    StageName
)
branches = st.sampled_from(["fix/x", "change/x", "main", "sounding/x"]).map(BranchName)
paths = st.sampled_from(
    [f"{REPOSITORY}/places/fix--x", f"{REPOSITORY}/places/change--x", "/elsewhere"]
)

deliverables: st.SearchStrategy[Deliverable] = st.one_of(
    st.just(Commit()),
    st.builds(Landing, archived_change=st.booleans()),
    st.just(ChangeWritten()),
    st.just(TasksTicked()),
    st.sampled_from(["report.md", "out/verify.md"]).map(lambda path: ReportFile(path=path)),
)


@st.composite
def declared_kinds(draw: st.DrawFn) -> Kind:
    """A kind as a repository might declare it: 1-4 uniquely named stages."""
    count = draw(st.integers(min_value=1, max_value=4))
    stage_list = [
        Step(
            name=StageName(f"s{index}"),
            prompt=draw(st.sampled_from(["Do $brief in $path.", "Go on: $brief ($words)"])),
            deliverable=draw(deliverables),
            waits_on_caller=draw(st.booleans()),
        )
        for index in range(count)
    ]
    return Kind(name=KindName("crew"), prefix="crew", body=Sequence(blocks=pvector(stage_list)))


gates: st.SearchStrategy[Gate] = st.one_of(
    deliverables,
    st.just(Verdict()),
    st.sampled_from(["PLAN.md", "notes/a.md"]).map(lambda path: Artifact(path=path)),
    st.just(PassingTests()),
    st.just(Approval()),
)
_counts = st.none() | st.integers(min_value=1, max_value=10**7)


@st.composite
def workflow_kinds(draw: st.DrawFn) -> Kind:
    """A workflow as a file might declare it: a tree of steps, loops and parallels, budgets.

    Only its shape is drawn (for the codec): it need not pass the kind's checks.
    """
    names = iter(range(10**6))

    def block(depth: int) -> Block:
        number = next(names)
        match draw(st.integers(min_value=0, max_value=2 if depth < 3 else 0)):
            case 0:
                agent = draw(
                    st.none()
                    | st.builds(
                        StepAgent,
                        agent=st.sampled_from(AgentName),
                        model=st.none() | st.just("opus"),
                    )
                )
                return Step(
                    name=StageName(f"s{number}"),
                    prompt=draw(st.sampled_from(["Do $brief.", "Write $verdict; pass $pass."])),
                    deliverable=draw(gates),
                    waits_on_caller=draw(st.booleans()),
                    agent=agent,
                    sandbox=draw(st.booleans()),
                )
            case 1:
                return Loop(
                    name=BlockName(f"l{number}"),
                    body=Sequence(blocks=pvector(inner(depth))),
                    until=StageName(f"s{number + 1}"),
                    max=draw(st.integers(min_value=1, max_value=9)),
                    on_max=draw(st.sampled_from(OnMax)),
                )
            case _:
                return Parallel(
                    name=BlockName(f"p{number}"),
                    branches=pvector(inner(depth)),
                    join=draw(st.sampled_from(Join)),
                    merge=draw(st.sampled_from(Merge)),
                    cap=draw(st.none() | st.integers(min_value=1, max_value=4)),
                )

    def inner(depth: int) -> list[Block]:
        return [block(depth + 1) for _ in range(draw(st.integers(min_value=1, max_value=3)))]

    budgets = draw(
        st.builds(
            Budgets,
            turns=_counts,
            wall_minutes=_counts,
            turns_per_attempt=_counts,
            retries=_counts,
            tokens=_counts,
        )
    )
    finalize = draw(
        st.none()
        | st.builds(
            Finalize,
            push=st.just("origin"),
            pr=st.sampled_from([pvector(), pvector(["gh", "pr", "create", "--head", "{branch}"])]),
        )
        | st.just(Finalize(land=True))
    )
    body = Sequence(blocks=pvector(inner(0)))
    return Kind(
        name=KindName("feature"),
        prefix="feature",
        body=body,
        budgets=budgets,
        finalize=finalize,
        fenced=has_sandbox(body),
    )


#: The gates a runnable workflow's steps are drawn with: every gate a step may have but the
#: landing and OpenSpec's, which need a lander or a change (their machines are their own).
RUN_GATES: tuple[Gate, ...] = (
    Commit(),
    Verdict(),
    Artifact(path="out.md"),
    PassingTests(),
    Approval(),
    ReportFile(path="report.md"),
)


@st.composite
def runnable_workflows(draw: st.DrawFn) -> Kind:
    """A workflow the engine runs as drawn: it passes the kind's checks.

    A sequence of one to three blocks: steps of any gate (one may ask and report progress),
    loops of a verdict step and maybe another, parallels of one to three lanes (joined all or
    first, merged, picked or not, capped or not), an orchestrate block (a lead that may spawn
    from a template, static children, a cap); budgets none or tiny; a finalize or not.
    """
    names = iter(range(10**6))

    def step(gates: tuple[Gate, ...] = RUN_GATES, *, may: bool = True) -> Step:
        number = next(names)
        edges = draw(st.sampled_from([(), ("ask",), ("progress", "ask")])) if may else ()
        return Step(
            name=StageName(f"s{number}"),
            prompt="Do $brief; write $verdict.",
            deliverable=draw(st.sampled_from(gates)),
            may=pset(edges),
        )

    def loop() -> Loop:
        number = next(names)
        until = step((Verdict(),), may=False)
        body = [until, *([step()] if draw(st.booleans()) else [])]
        return Loop(
            name=BlockName(f"l{number}"),
            body=Sequence(blocks=pvector(body)),
            until=until.name,
            max=draw(st.integers(min_value=1, max_value=3)),
            on_max=draw(st.sampled_from(OnMax)),
        )

    def parallel() -> Parallel:
        number = next(names)
        join = draw(st.sampled_from(Join))
        merge = draw(st.sampled_from([Merge.PICK, Merge.NONE] if join is Join.FIRST else Merge))
        lanes = draw(st.integers(min_value=1, max_value=3))
        return Parallel(
            name=BlockName(f"p{number}"),
            branches=pvector(
                step((Commit(), Verdict(), Artifact(path="out.md"))) for _ in range(lanes)
            ),
            join=join,
            merge=merge,
            cap=draw(st.none() | st.integers(min_value=1, max_value=2)),
        )

    def orchestrate() -> Orchestrate:
        number = next(names)
        spawns = draw(st.booleans())
        lead = Step(
            name=StageName(f"s{next(names)}"),
            prompt="Lead $brief; write $verdict.",
            deliverable=Verdict(),
            may=pset(["spawn"] if spawns else []),
        )
        static = draw(st.integers(min_value=0 if spawns else 1, max_value=2))
        return Orchestrate(
            name=BlockName(f"o{number}"),
            lead=lead,
            template=step((Commit(),)) if spawns else None,
            max=draw(st.integers(min_value=1, max_value=2)) if spawns else 0,
            branches=pvector(step((Commit(), Verdict())) for _ in range(static)),
            merge=draw(st.sampled_from(Merge)),
            cap=draw(st.none() | st.just(1)),
        )

    makers = {"step": step, "loop": loop, "parallel": parallel, "orchestrate": orchestrate}
    shapes = draw(st.lists(st.sampled_from(sorted(makers)), min_size=1, max_size=3))
    body = [makers[shape]() for shape in shapes]
    budgets = draw(
        st.just(Budgets())
        | st.builds(
            Budgets,
            turns=st.none() | st.integers(min_value=1, max_value=6),
            tokens=st.none() | st.integers(min_value=5, max_value=60),
            retries=st.none() | st.integers(min_value=1, max_value=2),
            turns_per_attempt=st.none() | st.integers(min_value=1, max_value=3),
        )
    )
    finalize = draw(
        st.none()
        | st.just(Finalize(push="origin"))
        | st.just(Finalize(push="origin", pr=pvector(["gh", "pr", "create", "--head", "{branch}"])))
    )
    kind = Kind(
        name=KindName("wf"),
        prefix="wf",
        body=Sequence(blocks=pvector(body)),
        budgets=budgets,
        finalize=finalize,
    )
    # Plain steps gated on the five deliverables, with no budget or finalize, are a kind of
    # stages (seed 000), which keeps its agents' time its own: made a workflow by a budget.
    return kind if is_workflow(kind) else attrs.evolve(kind, budgets=Budgets(turns=6))


kinds: st.SearchStrategy[Kind] = st.one_of(
    st.sampled_from(list(BUILTIN_KINDS.values())), declared_kinds()
)


@st.composite
def launches(draw: st.DrawFn, kind: Kind) -> Launch:
    """A valid launch of ``kind``."""
    stage_list = [found.name for found in steps(kind.body)]
    return Launch(
        repository=REPOSITORY,
        kind=kind.name,
        name=WorkName("x"),
        # Text as a caller writes it: any character but control keys (tabs and line breaks are
        # text; an ESC and the like are refused at launch).
        brief=draw(
            st.text(
                st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("\t\n\r"),
                min_size=1,
                max_size=60,
            ).filter(str.strip)
        ),
        base=BranchName("main"),
        agent=AgentSettings(agent=draw(st.sampled_from(list(AgentName)))),
        waits=pset(draw(st.lists(st.sampled_from(stage_list), max_size=2))),
        mark=draw(st.none() | st.just("crew:7")),
        carried=draw(st.none() | st.just(Sha("c0ffee1"))),
    )


@st.composite
def launched(draw: st.DrawFn) -> obs.Launched:
    """A launch observation, with or without setup."""
    kind = draw(kinds)
    setup = draw(st.sampled_from([pvector(), pvector([pvector(["make", "setup"])])]))
    settings = draw(st.none() | st.builds(Settings, quiet_seconds=st.sampled_from([0.0, 5.0])))
    return obs.Launched(
        at=draw(instants),
        launch=draw(launches(kind)),
        kind=kind,
        setup=setup,
        settings=settings,
    )


def _facts() -> st.SearchStrategy[obs.TidyFactsSeen]:
    return st.builds(
        obs.TidyFactsSeen,
        at=instants,
        worktree=st.builds(
            obs.WorktreeFacts,
            path=paths,
            exists=st.booleans(),
            made_by_flume=st.booleans(),
            dirty=st.booleans(),
            untracked=st.booleans(),
            plain=st.booleans(),
        ),
        branch=st.builds(
            obs.BranchFacts,
            name=branches,
            exists=st.booleans(),
            base=st.just(BranchName("main")),
            base_lacks=st.integers(min_value=0, max_value=3),
            head=st.none() | shas,
        ),
    )


#: One strategy per observation type (but Launched, drawn by ``launched``).
FACTS: dict[type[Any], st.SearchStrategy[Any]] = {
    obs.Told: st.builds(obs.Told, at=instants, text=texts),
    obs.StopAsked: st.builds(obs.StopAsked, at=instants),
    obs.RetryAsked: st.builds(obs.RetryAsked, at=instants, words=texts),
    obs.DropAsked: st.builds(obs.DropAsked, at=instants),
    obs.ProceedAsked: st.builds(obs.ProceedAsked, at=instants),
    obs.SubmitAsked: st.builds(obs.SubmitAsked, at=instants, session=st.none() | sessions),
    obs.NeedsSaid: st.builds(obs.NeedsSaid, at=instants, words=texts, session=st.none() | sessions),
    obs.TidyAsked: st.builds(obs.TidyAsked, at=instants, force=st.booleans()),
    obs.WorktreeMade: st.builds(
        obs.WorktreeMade, at=instants, path=paths, branch=branches, head=shas
    ),
    obs.SetupFinished: st.builds(obs.SetupFinished, at=instants, ok=st.booleans(), output=texts),
    obs.ActionFailed: st.builds(
        obs.ActionFailed,
        at=instants,
        action=st.sampled_from(act.ActionName),
        argv=st.lists(texts, max_size=3).map(pvector),
        status=st.integers(min_value=-9, max_value=255),
        output=texts,
    ),
    obs.AgentStarted: st.builds(
        obs.AgentStarted,
        at=instants,
        stage=stage_names,
        attempt=st.integers(min_value=1, max_value=3),
        session=sessions,
        pane=st.just("%1"),
    ),
    obs.AgentReady: st.builds(obs.AgentReady, at=instants, session=sessions),
    obs.PromptTyped: st.builds(
        obs.PromptTyped,
        at=instants,
        session=sessions,
        marker=st.sampled_from(["flume:fix--x:code:1", "flume:fix--x:submit:1"]).map(Marker),
        send=st.integers(min_value=1, max_value=3),
    ),
    obs.PromptUnwritten: st.builds(
        obs.PromptUnwritten,
        at=instants,
        session=sessions,
        marker=st.sampled_from(["flume:fix--x:code:1", "flume:fix--x:submit:1"]).map(Marker),
        send=st.integers(min_value=1, max_value=3),
    ),
    obs.AgentStateSeen: st.builds(
        obs.AgentStateSeen,
        at=instants,
        session=sessions,
        activity=st.sampled_from(list(obs.Activity)),
    ),
    obs.TranscriptEntry: st.one_of(
        # A person's line never opens with text an agent's program injects: such a line is
        # the program's (tests/integration/test_transcript_words.py).
        st.builds(
            obs.TranscriptEntry,
            at=instants,
            session=sessions,
            author=st.just(obs.Author.PERSON),
            text=st.one_of(texts, st.just("[flume:fix--x:code:1]")).filter(
                lambda text: (
                    not text.lstrip().startswith(("<", "[")) or text == "[flume:fix--x:code:1]"
                )
            ),
        ),
        st.builds(
            obs.TranscriptEntry,
            at=instants,
            session=sessions,
            author=st.sampled_from([obs.Author.AGENT, obs.Author.SYSTEM, obs.Author.TOOL]),
            text=st.one_of(
                texts, st.sampled_from(["[flume:fix--x:code:1]", "<task-notification>x"])
            ),
            ends_turn=st.booleans(),
        ).map(
            lambda entry: (
                entry
                if entry.author is not obs.Author.TOOL
                else attrs.evolve(entry, ends_turn=False)
            )
        ),
        st.builds(
            obs.TranscriptEntry,
            at=instants,
            session=sessions,
            author=st.just(obs.Author.AGENT),
            text=texts,
            asks=st.just(True),  # noqa: FBT003 (a field's value)
            ends_turn=st.booleans(),
        ),
    ),
    obs.TranscriptUnreadable: st.builds(
        obs.TranscriptUnreadable,
        at=instants,
        session=sessions,
        count=st.integers(min_value=1, max_value=5),
    ),
    obs.TranscriptFound: st.builds(obs.TranscriptFound, at=instants, session=sessions, path=paths),
    obs.PaneOutput: st.builds(
        obs.PaneOutput, at=instants, session=sessions, last_output_at=instants
    ),
    obs.AgentExited: st.builds(obs.AgentExited, at=instants, session=sessions),
    obs.BranchHead: st.builds(obs.BranchHead, at=instants, branch=branches, sha=shas),
    obs.WorktreeLost: st.builds(obs.WorktreeLost, at=instants, path=paths, how=texts),
    obs.BranchVanished: st.builds(obs.BranchVanished, at=instants, branch=branches),
    obs.ChangeSeen: st.builds(
        obs.ChangeSeen,
        at=instants,
        head=st.none() | shas,
        written=st.booleans(),
        planning_complete=st.booleans(),
        valid=st.none() | st.booleans(),
        ticked=st.integers(min_value=0, max_value=4),
        total=st.integers(min_value=0, max_value=4),
    ),
    obs.ReportSeen: st.builds(
        obs.ReportSeen,
        at=instants,
        path=st.sampled_from(["verify.md", "conclusion.md", "report.md"]),
        modified_at=instants,
    ),
    obs.ChecksFailed: st.builds(obs.ChecksFailed, at=instants, reason=texts, output=texts),
    obs.LandingBlocked: st.builds(
        obs.LandingBlocked, at=instants, reason=texts, output=texts, way_out=texts
    ),
    obs.LandingHeld: st.builds(
        obs.LandingHeld,
        at=instants,
        head=shas,
        files=st.lists(st.sampled_from([".flume.toml", ".githooks/pre-commit"]), min_size=1).map(
            pvector
        ),
    ),
    obs.Landed: st.builds(obs.Landed, at=instants, base_sha=shas, change_archived=st.booleans()),
    obs.TidyFactsSeen: _facts(),
    obs.WorktreeRemoved: st.builds(obs.WorktreeRemoved, at=instants, path=paths),
    obs.BranchDeleted: st.builds(obs.BranchDeleted, at=instants, branch=branches),
    obs.TurnEnded: st.builds(
        obs.TurnEnded,
        at=instants,
        session=st.none() | sessions,
        usage=st.none()
        | st.builds(
            obs.Usage,
            input=st.integers(min_value=0, max_value=10**6),
            output=st.integers(min_value=0, max_value=10**6),
            cache_read=st.integers(min_value=0, max_value=10**6),
            cache_creation=st.integers(min_value=0, max_value=10**6),
        ),
    ),
    obs.Tick: st.builds(obs.Tick, at=instants),
    obs.ApproveAsked: st.builds(obs.ApproveAsked, at=instants),
    obs.PassAsked: st.builds(
        obs.PassAsked,
        at=instants,
        why=texts,
        step=st.sampled_from(["", "review", "review-loop@1/review", "code", "nowhere"]),
    ),
    obs.ResumeAsked: st.builds(obs.ResumeAsked, at=instants),
    obs.BudgetRaised: st.builds(
        obs.BudgetRaised,
        at=instants,
        turns=st.none() | st.integers(min_value=1, max_value=10),
        tokens=st.none() | st.integers(min_value=1, max_value=10**6),
    ),
    obs.ResolveAsked: st.builds(
        obs.ResolveAsked,
        at=instants,
        agent=st.booleans(),
        without=st.sampled_from(["", "slice-a", "coder-1"]),
        under_way=st.booleans(),
        missing=st.sampled_from(
            [pmap(), pmap({"slice-a": "its head is not in the run's history"})]
        ),
    ),
    obs.LaneEnded: st.builds(
        obs.LaneEnded,
        at=instants,
        lane=st.sampled_from(["slice-a", "slice-b", "other"]),
        finished=st.booleans(),
        head=st.none() | shas,
    ),
    obs.LanesMerged: st.builds(obs.LanesMerged, at=instants, head=shas),
    obs.Pushed: st.builds(
        obs.Pushed, at=instants, remote=st.just("origin"), branch=branches, head=st.none() | shas
    ),
    obs.PROpened: st.builds(obs.PROpened, at=instants, url=texts, output=texts),
    obs.ProgressSaid: st.builds(
        obs.ProgressSaid, at=instants, words=texts, session=st.none() | sessions
    ),
    obs.AskSaid: st.builds(
        obs.AskSaid,
        at=instants,
        question=texts,
        options=st.lists(texts, max_size=3).map(pvector),
        session=st.none() | sessions,
    ),
    obs.AnswerGiven: st.builds(
        obs.AnswerGiven,
        at=instants,
        question=st.sampled_from(["q1", "q2"]),
        text=texts,
        by_lead=st.booleans(),
        no_lead=st.booleans(),
    ),
    obs.SpawnSaid: st.builds(
        obs.SpawnSaid,
        at=instants,
        goal=texts,
        agent=st.none() | st.sampled_from(list(AgentName)),
        session=st.none() | sessions,
    ),
    obs.NotifySaid: st.builds(
        obs.NotifySaid,
        at=instants,
        to=st.sampled_from(["all", "coder-1", "slice-a", "nobody"]),
        text=texts,
        session=st.none() | sessions,
    ),
    obs.ChildNews: st.builds(
        obs.ChildNews,
        at=instants,
        lane=st.sampled_from(["coder-1", "slice-a", "other"]),
        id=st.sampled_from(["started", "q1", "paused:code#1:budget", "resumed:2"]),
        text=texts,
    ),
    obs.Notified: st.builds(obs.Notified, at=instants, text=texts),
    obs.ComposeSaid: st.builds(
        obs.ComposeSaid,
        at=instants,
        kind=st.just(
            Kind(
                name=KindName("docs"),
                prefix="docs",
                body=Step(name=StageName("write"), prompt="Write.", deliverable=Commit()),
            )
        ),
        turns=st.integers(min_value=0, max_value=20),
        tokens=st.integers(min_value=0, max_value=10**6),
        base=st.booleans(),
        session=st.none() | sessions,
    ),
    obs.MergeConflicted: st.builds(
        obs.MergeConflicted,
        at=instants,
        lane=st.sampled_from(["slice-a", "slice-b"]),
        files=st.lists(texts, max_size=2).map(pvector),
    ),
    obs.MergeRefused: st.builds(
        obs.MergeRefused,
        at=instants,
        lane=st.sampled_from(["slice-a", "coder-1", "nowhere"]),
        reason=st.just("error: Unable to write index."),
        lock=st.sampled_from(["", "/src/app/.git/worktrees/x/index.lock"]),
        missing=st.booleans(),
        under_way=st.booleans(),
    ),
    obs.GateRead: st.builds(
        obs.GateRead,
        at=instants,
        key=stage_names,
        attempt=st.integers(min_value=1, max_value=3),
        found=st.booleans(),
        result=st.sampled_from(["done", "revise", "blocked", "maybe", ""]),
        summary=texts,
        code=st.none() | st.integers(min_value=0, max_value=2),
        problem=st.sampled_from(["", "it is not JSON"]),
    ),
}

observations: st.SearchStrategy[obs.Observation] = st.one_of(launched(), *FACTS.values())


@st.composite
def fitting(draw: st.DrawFn, place: Place) -> obs.Observation:
    """An observation that often fits ``place``: its session, branch, path, stage and attempt."""
    seen = draw(st.sampled_from(list(FACTS.values())))
    drawn: obs.Observation = draw(seen)
    fields = attrs.fields_dict(type(drawn))
    changes: dict[str, object] = {
        "at": Instant(place.now + draw(st.sampled_from([0, 1, 6, 31, 61])))
    }
    if place.agent is not None and "session" in fields and draw(st.booleans()):
        changes["session"] = place.agent.session
    if "branch" in fields and not isinstance(drawn, obs.TidyFactsSeen) and draw(st.booleans()):
        changes["branch"] = place.branch
    if "path" in fields and draw(st.booleans()):
        changes["path"] = place.path
    if isinstance(drawn, obs.AgentStarted) and draw(st.booleans()):
        changes |= {"stage": place.stage.name, "attempt": place.stage.attempt}
    if isinstance(drawn, obs.TranscriptEntry) and draw(st.booleans()):
        stage = place.stage
        marker = f"flume:{place.launch.kind}--{place.launch.name}:{stage.name}:{stage.attempt}"
        changes |= {"text": f"[{marker}]", "author": obs.Author.PERSON, "asks": False}
        changes |= {"ends_turn": False}
    return attrs.evolve(drawn, **changes)  # type: ignore[arg-type]


@st.composite
def places(draw: st.DrawFn, max_steps: int = 25) -> Place:
    """A place reached by folding fitting observations from a launch (refusals skipped)."""
    settings = Settings()
    place = step(settings, None, draw(launched())).place
    for _ in range(draw(st.integers(min_value=0, max_value=max_steps))):
        try:
            place = step(settings, place, draw(fitting(place))).place
        except UsageError:
            continue
    return place


#: A phase of each kind, for tests that set a place in any phase, reachable or not.
phases: st.SearchStrategy[StagePhase] = st.one_of(
    st.just(AwaitingWord()),
    st.just(Queued()),
    st.builds(Starting, since=instants),
    st.builds(AwaitingInput, session=sessions, since=instants),
    st.builds(Delivering, session=sessions, sent_at=instants),
    st.builds(Working, session=sessions),
    st.builds(Delivered, at=instants),
    st.builds(Short, cause=st.sampled_from(list(ShortCause)), words=texts),
    st.builds(Judging, session=sessions, since=instants),
    st.builds(Fanned, since=instants),
    st.builds(Merging, since=instants),
    st.builds(Finalizing, since=instants),
    st.builds(
        Paused,
        cause=st.sampled_from(list(PauseCause)),
        words=texts,
        again=st.booleans(),
        finish=st.booleans(),
    ),
)


def _fixed_launches() -> list[obs.Launched]:
    """One launch of each built-in kind and of a declared kind whose later stages wait."""
    crew = Kind(
        name=KindName("crew"),
        prefix="crew",
        body=Sequence(
            blocks=pvector(
                [
                    Step(
                        name=StageName("plan"),
                        prompt="Plan $brief",
                        deliverable=ReportFile(path="report.md"),
                    ),
                    Step(
                        name=StageName("build"),
                        prompt="Build $brief",
                        deliverable=Commit(),
                        waits_on_caller=True,
                    ),
                    Step(name=StageName("land"), prompt="Land $brief", deliverable=Landing()),
                ],
            ),
        ),
    )
    made = []
    for kind in [*BUILTIN_KINDS.values(), crew]:
        launch = Launch(
            repository=REPOSITORY,
            kind=kind.name,
            name=WorkName("x"),
            brief="Mend it.",
            base=BranchName("main"),
        )
        made.append(obs.Launched(at=Instant(0.0), launch=launch, kind=kind, setup=pvector()))
    return made


FIXED_LAUNCHES = _fixed_launches()


_AGENTS = st.none() | st.builds(
    Agent,
    session=sessions,
    stage=st.just(StageName("?")),
    attempt=st.just(1),
    pane=st.just("%1"),
    activity=st.sampled_from(list(obs.Activity)),
    activity_since=instants,
    last_output_at=instants,
    said_at=instants,
    ending=st.booleans(),
)
_TELLS = st.builds(
    Tell, number=st.integers(min_value=1, max_value=3), text=st.just("hi"), asked_at=instants
)
_HELD = st.lists(_TELLS, max_size=2).map(pvector)
_SENDING = st.none() | st.builds(
    TellSending, tell=_TELLS, sends=st.integers(1, 2), sent_at=instants
)
_REPORTS = st.dictionaries(
    st.sampled_from(["verify.md", "report.md", "conclusion.md"]),
    instants,
    max_size=2,
).map(pmap)
_MAYBE_SHA = st.none() | shas
_MAYBE_INSTANT = st.none() | instants
_MAYBE_CHANGE = st.none() | FACTS[obs.ChangeSeen]
_MAYBE_TASKS = st.none() | st.just((1, 3))
_LIVES = st.sampled_from(list(Life))
_SUBMISSIONS = st.sampled_from(list(Submission))
_TIDIES = st.one_of(
    st.just(TidyNotWanted()),
    st.builds(TidyWanted, force=st.booleans()),
    st.builds(TidyGathering, force=st.booleans()),
)
_LAUNCHES = st.sampled_from(FIXED_LAUNCHES)
_ATTEMPTS = st.integers(min_value=1, max_value=2)
_SENDS = st.integers(min_value=0, max_value=2)
_COUNTS = st.integers(min_value=0, max_value=3)
_STAGE_NAMES = {
    seen.kind.name: st.sampled_from([found.name for found in steps(seen.kind.body)])
    for seen in FIXED_LAUNCHES
}


@st.composite
def any_places(draw: st.DrawFn) -> Place:
    """A place in any combination of life, phase, agent, tells and evidence: reachable or not."""
    launch_seen = draw(_LAUNCHES)
    kind = launch_seen.kind
    stage = StageRun(
        name=draw(_STAGE_NAMES[kind.name]),
        attempt=draw(_ATTEMPTS),
        started_at=draw(instants),
        start_head=draw(_MAYBE_SHA),
        words="",
        phase=draw(phases),
        sends=draw(_SENDS),
    )
    agent = draw(_AGENTS)
    if agent is not None:
        agent = attrs.evolve(agent, stage=stage.name, attempt=stage.attempt)
    step_names = [found.name for found in steps(kind.body)]
    return Place(
        launch=launch_seen.launch,
        kind=kind,
        path=place_path(launch_seen.launch),
        branch=place_branch(kind, launch_seen.launch.name),
        setup=launch_seen.setup,
        life=draw(_LIVES),
        stage=stage,
        now=draw(instants),
        made=draw(st.booleans()),
        ready=draw(st.booleans()),
        completed=pvector(step_names[: draw(st.integers(0, len(step_names)))]),
        agent=agent,
        held=draw(_HELD),
        sending=draw(_SENDING),
        tells_given=draw(_COUNTS),
        head=draw(_MAYBE_SHA),
        change=draw(_MAYBE_CHANGE),
        tasks=draw(_MAYBE_TASKS),
        reports=draw(_REPORTS),
        landed_at=draw(_MAYBE_INSTANT),
        change_archived=draw(st.booleans()),
        submission=draw(_SUBMISSIONS),
        tidy=draw(_TIDIES),
    )


#: One strategy per action type.
ACTIONS: dict[type[Any], st.SearchStrategy[Any]] = {
    act.MakeWorktree: st.builds(
        act.MakeWorktree, repository=st.just(REPOSITORY), path=paths, branch=branches, base=branches
    ),
    act.RunSetup: st.builds(
        act.RunSetup,
        path=paths,
        commands=st.lists(st.lists(texts, min_size=1, max_size=2).map(pvector), max_size=2).map(
            pvector
        ),
    ),
    act.StartAgent: st.builds(
        act.StartAgent,
        path=paths,
        stage=stage_names,
        attempt=st.integers(1, 3),
        agent=st.builds(
            AgentSettings,
            agent=st.sampled_from(list(AgentName)),
            model=st.none() | texts,
            flags=st.lists(texts, max_size=2).map(pvector),
        ),
    ),
    act.SendPrompt: st.builds(
        act.SendPrompt,
        session=sessions,
        stage=stage_names,
        attempt=st.integers(1, 3),
        send=st.integers(1, 2),
        marker=texts.map(Marker),
        text=texts,
    ),
    act.SendTell: st.builds(
        act.SendTell,
        session=sessions,
        number=st.integers(1, 3),
        send=st.integers(1, 2),
        marker=texts.map(Marker),
        text=texts,
    ),
    act.EndAgent: st.builds(act.EndAgent, session=sessions, reason=texts),
    act.Land: st.builds(
        act.Land, path=paths, branch=branches, base=branches, start=st.none() | shas
    ),
    act.GatherTidyFacts: st.builds(
        act.GatherTidyFacts, path=paths, branch=branches, base=branches, force=st.booleans()
    ),
    act.RemoveWorktree: st.builds(act.RemoveWorktree, path=paths, force=st.booleans()),
    act.DeleteBranch: st.builds(
        act.DeleteBranch, branch=branches, base=branches, head_was=st.none() | shas
    ),
    act.KeepBranch: st.builds(act.KeepBranch, branch=branches, reason=texts),
    act.KeepPlace: st.builds(act.KeepPlace, path=paths, reason=texts),
    act.Report: st.builds(
        act.Report,
        event=st.sampled_from(list(act.Event)),
        text=texts,
        stage=st.none() | stage_names,
    ),
    act.ArchiveVerdict: st.builds(
        act.ArchiveVerdict, board=paths, stage=stage_names, archive_as=stage_names
    ),
    act.LaunchLane: st.builds(
        act.LaunchLane,
        repository=st.just(REPOSITORY),
        parent=st.just(PlaceName("feature--x")),
        lane=st.just("slice-a"),
        launch=st.just(
            Launch(
                repository=REPOSITORY,
                kind=KindName("feature"),
                name=WorkName("x+slice-a"),
                brief="Mend it.",
                base=BranchName("feature/x"),
                parent=PlaceName("feature--x"),
                lane="slice-a",
            )
        ),
        kind=st.just(BUILTIN_KINDS[KindName("fix")]),
        start=st.none() | shas,
        board=paths,
    ),
    act.OrderLane: st.builds(
        act.OrderLane,
        repository=st.just(REPOSITORY),
        place=st.just(PlaceName("feature--x+slice-a")),
        order=st.sampled_from(list(act.LaneOrder)),
    ),
    act.MergeLanes: st.builds(
        act.MergeLanes,
        path=paths,
        branch=branches,
        lanes=st.lists(st.sampled_from(["slice-a", "slice-b"]), max_size=2).map(pvector),
        branches=st.lists(branches, max_size=2).map(pvector),
    ),
    act.Push: st.builds(
        act.Push, path=paths, remote=st.just("origin"), branch=branches, head=st.none() | shas
    ),
    act.OpenPR: st.builds(
        act.OpenPR,
        path=paths,
        argv=st.just(pvector(["gh", "pr", "create", "--title", "{title}"])),
        base=branches,
        branch=branches,
        title=texts,
        board=paths,
        attempt=st.integers(min_value=1, max_value=3),
    ),
    act.JudgeGate: st.builds(
        act.JudgeGate,
        path=paths,
        board=paths,
        stage=stage_names,
        key=stage_names,
        attempt=st.integers(min_value=1, max_value=3),
        gate=st.just(Verdict()),
    ),
}
actions: st.SearchStrategy[act.Action] = st.one_of(*ACTIONS.values())
