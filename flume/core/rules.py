"""The catalogue of flume's rule ids: R1-R11 and the finer rules under them (docs/rules.md).

Each id is named in the docstring of the core code that carries it out, and in exactly one rule
or invariant docstring of the model tests (``tests/model/test_traceability.py`` checks both).
"""

from __future__ import annotations

#: id -> the sentence of the spec it stands for.
RULES: dict[str, str] = {
    "R1": "A worktree at <repository>/places/<kind>--<name>, on <prefix>/<name>, cut from base.",
    "HOST-OWNS-PLACE": "A place is carried only by the supervisor of the host that launched it.",
    "FLEET-CARRIED-HEAD": (
        "A fleet place carried again on another host is cut at its last pushed head, and lands "
        "every commit since its base's revision at launch."
    ),
    "NAME-FROM-BRIEF": (
        "Work launched unnamed is named from its brief, numbered while taken, up to 50."
    ),
    "R2": "The repository's declaration makes the place ready; a failed setup is a stop short.",
    "R3": "Every stage of the work runs in that one place.",
    "R4": "Each stage starts a new agent; the previous one has ended.",
    "AGENT-END-FAILED-NAMED": (
        "An agent that would not end, with a stage queued behind it, stops that stage short, "
        "named; its retry asks the end again."
    ),
    "R5": "Start the agent, wait for input, send, read the transcript for the prompt.",
    "DELIVERY-TWO-SENDS": "Missing: send once more. Never a third send.",
    "DELIVERY-NEVER-BEGAN": "Missing again: report that the stage never began.",
    "DELIVERY-TRANSCRIPT-ONLY": "Keys typed into a pane prove nothing; only the transcript does.",
    "DELIVERY-RETYPE-UNTYPED": "A send decided but never shown typed in its pane is typed again.",
    "DELIVERY-LATE-PROOF": "A prompt proven after its stage moved on is still reported, once.",
    "DELIVERY-UNWRITTEN-NOW": "A send its pane's own mark shows never made is typed again at once.",
    "R6": "A tell reaches the agent as a prompt the transcript holds, or not at all.",
    "TELL-HELD-WHILE-WORKING": "It is held while the agent works and sent once it waits.",
    "TELL-REFUSED": "Refused, with nothing typed, when no agent is live or it asks a person.",
    "TELL-NEVER-MOVES-STAGE": "A tell never starts, ends or moves a stage.",
    "R7": "A stage ends when its deliverable exists; stages run in the kind's order.",
    "STAGE-NEVER-ON-QUIET": "A stage never ends because its pane went quiet.",
    "STAGE-DELIVERABLE-SINCE-START": "A deliverable counts only when made since its stage began.",
    "STAGE-ENDS-WHEN-QUIET": "flume waits until the agent is quiet, then ends it.",
    "STAGE-WAITS-WORD": "A stage that waits on its caller's word does not start without it.",
    "STAGE-AFTER-DELIVERY": "No deliverable counts before the transcript holds the stage's prompt.",
    "SOURCES-LATEST-SPEAKS": (
        "Of an agent's hooks and its registry entry, the one that spoke last says what it does."
    ),
    "TURN-ENDED-ONLY-REPORTED": (
        "A turn's end is reported with the tokens its agent used; only a workflow gate acts on it."
    ),
    "TRANSCRIPT-KEPT": (
        "Each agent started is an attempt kept for the place's life, "
        "with its transcript once found."
    ),
    "WF-LOOP-CAP": "A loop's body runs at most max passes; then loop-max, and on (or a pause).",
    "WF-LOOP-EXITS-ON-DONE": "The until step's verdict done leaves the loop at once.",
    "WF-GATE-REPROMPT-ONCE": (
        "A gate that did not pass is told to the agent once, with why; again, the run pauses."
    ),
    "WF-VERDICT-SINCE-DELIVERY": "A verdict written before its attempt began never passes it.",
    "WF-ARTIFACT-BLOCKS": "An artifact gate passes only when its file exists.",
    "WF-BUDGET-PAUSES": (
        "Over a budget no start or send is decided; the run pauses, never failed or dropped."
    ),
    "WF-BUDGET-RAISE-RESUMES": "A raise resumes a run paused on a budget it no longer exceeds.",
    "WF-PERSON-PASSES": (
        "A person passes a gate the run holds blocked (flume pass), journaled with their words; "
        "refused where no gate is blocked."
    ),
    "REFUSAL-NAMES-WAY": (
        "A person's command refused names what the place waits on and the command accepted "
        "there, or that nothing waits on a person."
    ),
    "WF-EDGES": "No message along an edge its step does not declare (may).",
    "WF-ASK-ONE-ANSWERER": (
        "A question has one answerer, the nearest lead above the asker, else the caller; once. "
        "One its lead leaves unanswered a stall window falls to the caller too."
    ),
    "WF-ASK-PAUSES-WITHOUT-LEAD": (
        "A question with no lead above pauses the run, named, for the caller's answer."
    ),
    "WF-ASK-DEFERS-GATE": (
        "While its question is open, the asker's gate is not judged; unanswered, its stall "
        "clock stops."
    ),
    "WF-MESSAGE-TRANSCRIPT": (
        "An answer counts only when the asker's transcript holds it; two sends at most."
    ),
    "WF-FINALIZE-ONCE": (
        "Finalize pushes, then opens the PR, each once; a failure pauses, resume does what is left."
    ),
    "WF-PUSH-ONLY-RUN-BRANCH": (
        "Finalize pushes only the run's branch: never forced, never the base."
    ),
    "WF-CHILDREN-CAP": (
        "A lead spawns at most max children, none over a spent budget; at most cap run at once; a "
        "refused spawn journals nothing."
    ),
    "WF-SPAWN-ONCE": (
        "A lead's spawn of a goal a child of its block was spawned with names that child and "
        "starts none: no two children of one lead share a goal."
    ),
    "WF-LEAD-WAITS-JOIN": (
        "A lead's gate is judged only once every child is terminal, the finished merged, and its "
        "transcript holds the join's tell."
    ),
    "WF-CHILD-NEWS-BATCHED": (
        "Each piece of a child's news reaches its lead once; pieces that come while one is held "
        "join it, one send."
    ),
    "WF-CHILD-PAUSE-SURFACES": (
        "A child paused or stopped short shows on its run's status, named, with where to resolve "
        "it."
    ),
    "WF-CHILD-ASKING-SURFACES": (
        "A child's question its lead has not answered shows on its run's status, with since "
        "when, until news says it was answered or the child ends."
    ),
    "WF-LEAD-HEARS-OPEN-QUESTIONS": (
        "A lead's later attempt reads in its prompt each child's question still open, whatever "
        "news came after it."
    ),
    "WF-DROP-CASCADES": (
        "A dropped run drops its running children and launches no more; tidy keeps their unmerged "
        "commits."
    ),
    "WF-DEPTH-CAP": (
        "Runs nest 2 deep at most: a compose past the block's depth, or of a fragment whose lead "
        "may compose, is refused."
    ),
    "WF-BUDGET-RESERVE": (
        "A composed run's slice is reserved from what its run has left, counted as spent until it "
        "ends, then replaced by its real spend."
    ),
    "STEP-NAMED": ("A tell or retry naming a step is taken only while the run is at that step."),
    "WF-STALL-NUDGES-ONCE": (
        "An agent silent mid-turn is nudged once; silent as long again, the run pauses, stalled."
    ),
    "WF-NO-SILENT-WAIT": (
        "Every run and lane not terminal waits on something whose deadline the core holds (a "
        "timer the shell delivers: quiet, confirm, stall, tests, hand-over), on an action in "
        "flight, or on a person, named."
    ),
    "WF-PAUSE-HAS-A-WAY-OUT": (
        "A pause names its cause and a command, and that command is accepted by the core and "
        "leads out of the pause; no pause's only way out is refused."
    ),
    "WF-NO-LOST-COMMIT": (
        "Every commit seen on a place's branch stays reachable from a kept branch or the base, "
        "unless a person deleted it, and flume named the command that restores it."
    ),
    "WF-FINISHED-HOLDS-ITS-WORK": (
        "A run holds every lane and child it merged: each one's head an ancestor of its head, "
        "each one's changes in its tree."
    ),
    "WF-DELIVERABLE-AT-TURN-END": (
        "In a workflow, a step gated on one of the five deliverables is judged at its turn's end "
        "on the evidence seen: told once, then paused gate-blocked; never left working."
    ),
    "WF-RETRY-EXITED": (
        "In a workflow, an attempt whose agent exited before its gate was met is tried again "
        "with a fresh agent while the step's retries last (2 by default), then stops short."
    ),
    "WF-DELIVERED-PASSES": (
        "A deliverable an attempt made passes its gate whenever it is seen, before or after a "
        "pause: the step is never redone for it."
    ),
    "WF-CAP": (
        "At most cap of a parallel's lanes run at once; the rest wait, launched in declared "
        "order as running ones end."
    ),
    "WF-JOIN-ALL": (
        'join = "all" is met when every lane finished; a lane that ends unfinished (dropped) '
        "pauses the run, lane-dropped, and only a drop remains."
    ),
    "WF-JOIN-FIRST": (
        'join = "first" is met by the first lane to finish; the others are dropped (their '
        "agents end), and those not launched never are."
    ),
    "WF-MERGE-ORDER": (
        'merge = "merge" merges every finished lane in declared order, pick the first to '
        "finish, none none, in the run's worktree with no agent live; the first lane that "
        "conflicts pauses the run, merge-conflict, naming its files, until flume resolve "
        "--by-hand or --agent."
    ),
    "WF-ONE-WRITER-PER-LANE": (
        "Each lane is a place of its own, its worktree and branch its own, with one live agent "
        "at most (R4 in each lane); the run's own worktree has no agent while its lanes run or "
        "merge."
    ),
    "WF-TIDY-LANES": (
        "A merged lane is tidied, its branch going with its worktree; a lane not merged is "
        "tidied too, its branch kept and named (R10); a dropped run drops its running lanes."
    ),
    "WF-SPREAD": (
        "A block with spread = true makes each lane or child a fleet place: its launch, orders "
        "and notes go through the fleet, its run hears of it only through the fleet, and its "
        "merge takes the head it ended at, fetched from the fleet's remote."
    ),
    "VERSION-FROZEN": (
        "A running place keeps the definition frozen at its launch: its kind is its journal's "
        "launch's, whatever becomes of the file it was read from."
    ),
    "VERSION-FIRST-DIFFERENCE": (
        "A journal folded under a changed definition names the first observation decided "
        "differently (its actions or refusal), or says every decision is the same."
    ),
    "UNREGISTERED-ASKS": (
        "A Claude Code agent unregistered 10 s after it started is taken to ask a person."
    ),
    "PANE-OUTPUT-MOVES": (
        "A pane's activity is new output only when over 0.5 s later than the last seen."
    ),
    "PRINTED-CONFIRM-WAITS": (
        "A printed agent's send waits an hour to be found, unless the repository says."
    ),
    "R8": "An agent that stops short: no next stage starts; the place waits.",
    "R9": "retry, stop and drop act only where the rules allow; a refusal changes nothing.",
    "RETRY-FRESH-AGENT": "retry starts the stage again with the caller's words, a fresh agent.",
    "STOP-WAITS-RETRY": "stop ends the agent; its stage waits for a retry.",
    "DROP-ENDS-WORK": "drop abandons the work: no agent starts and nothing is sent again.",
    "PLACE-LOST-STOPS-SHORT": (
        "A worktree or branch deleted under a place stops it short, named, with the way out."
    ),
    "PLACE-REBUILT": (
        "A retry of a place whose worktree was removed adds it again on its kept branch, at its "
        "head, before a fresh agent starts there; its branch gone too, it is restored first."
    ),
    "START-ONLY-IN-PLACE": "An agent starts only in its place's worktree, on its branch.",
    "R10": "Landed work: its clean place is removed, and its branch when the base holds it.",
    "TIDY-ONLY-OURS": "flume removes only places it made; a hand-made worktree is never touched.",
    "TIDY-KEEPS-AHEAD-BRANCH": "A branch holding commits its base lacks stays, and is named.",
    "TIDY-DROPPED-CHANGE-KEEPS-BRANCH": "A dropped change: its place is removed, its branch kept.",
    "TIDY-DROPPED-EMPTY-BRANCH-GOES": (
        "Other dropped work: a branch holding nothing its base lacks goes with its place."
    ),
    "TIDY-DIRTY-NEEDS-FORCE": "A worktree with uncommitted or untracked changes needs force.",
    "TIDY-DONE-ON-FACTS": "A place is tidied only on facts showing nothing left to remove.",
    "LAND-BASE-BLOCKED-WAITS": (
        "A landing the base repository's state blocks waits, named, and is tried again; "
        "the agent is not told."
    ),
    "LAND-HELD-FOR-A-PERSON": (
        "A sandboxed run's change to what runs outside lands only once a person approved it."
    ),
    "RESTART-PENDING": "On restart, what the place waits for is asked again; nothing done twice.",
    "NEXT-DEADLINE": (
        "A place's next deadline is the first instant a Tick changes it; none before it does."
    ),
    "R11": "status is a pure projection of the place's state.",
}
