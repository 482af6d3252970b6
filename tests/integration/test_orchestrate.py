"""An orchestrate block end to end: a lead spawns coders, answers one, and writes its verdict.

flume's test agent plays the lead and each coder, running ``flume spawn``, ``flume ask`` and
``flume answer`` through its Bash tool as Claude Code would. Through the real supervisor in
tmux, with real git: each coder a lane of its own, merged into the run's branch in order once
all are terminal; the lead told so, then judged on its verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flume.core.actions import Event, JudgeGate, LaunchLane, Report
from flume.core.observations import ChildNews, LaneEnded, SpawnSaid
from flume.core.place import Life
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from tests import shared
from tests.integration.agents_kit import (
    agent_repository,
    decided,
    observations,
    place_of,
    script,
    typed_lines,
    wait_for,
)
from tests.integration.places_kit import flume_process, run_git

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

KIND = """\
[kind]
name = "crew"
body = ["build"]

[orchestrate.build]
lead = "lead"
children = { template = "coder", max = 3 }
cap = 2

[step.lead]
prompt = "Give each slice to a coder with flume spawn --goal. Answer their questions. \
When all are done, write $verdict."
gate = "verdict"
may = ["spawn", "notify"]

[step.coder]
prompt = "Build: $goal. If the plan is unclear, flume ask. Commit."
gate = "commit"
may = ["progress", "ask"]
"""

SCRIPT = """
[[turn]]
match = ":lead:1"
steps = [
    {run = ["flume", "spawn", "--goal", "slice a: write a.md"]},
    {run = ["flume", "spawn", "--goal", "slice b: write b.md"]},
    {run = ["flume", "spawn", "--goal", "slice c: write c.md"]},
    {run = ["sh", "-c", "flume spawn --goal 'one too many' > over.txt 2>&1; echo $? >> over.txt"]},
    {run = ["sh", "-c", "flume spawn --goal 'slice a: write a.md' >a.txt; echo $? >>a.txt"]},
]

[[turn]]
match = "Build: slice a"
steps = [{write = {path = "a.md", text = "a\\n"}}, {commit = "Slice a"}]

[[turn]]
match = "Build: slice b"
steps = [{run = ["flume", "ask", "Hello or Hi in b.md?"]}]

[[turn]]
match = "The answer to your question q1"
steps = [{write = {path = "b.md", text = "Hello\\n"}}, {commit = "Slice b"}]

[[turn]]
match = "Build: slice c"
steps = [{write = {path = "c.md", text = "c\\n"}}, {commit = "Slice c"}]

[[turn]]
match = "asks q1: Hello or Hi in b.md?"
steps = [{run = ["flume", "answer", "crew--team+coder-2", "q1", "Hello"]}]

[[turn]]
match = "All children of build are terminal"
steps = [{write = {path = "$board/lead/verdict.json", text = '{"result": "done"}'}}]
"""


def _launch(tmp_path: Path, repo: Path, kind_text: str, script_text: str, name: str) -> Path:
    """Launch the kind ``kind_text`` as ``crew--<name>``, run by the test agent; its journal."""
    kind = tmp_path / "crew.toml"
    kind.write_text(kind_text, encoding="utf-8")
    agent_script = script(tmp_path, script_text)
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind), "--name", name,
        "--brief", "the greetings", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={agent_script}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / f"crew--{name}" / places.JOURNAL


def test_a_lead_spawns_coders_answers_one_and_the_block_ends_on_its_verdict(
    tmp_path: Path, panes: Tmux
) -> None:
    """WF-CHILDREN-CAP, WF-ASK-ONE-ANSWERER (the lead), WF-LEAD-WAITS-JOIN, merged in order."""
    del panes
    repo = agent_repository(tmp_path)
    path = _launch(tmp_path, repo, KIND, SCRIPT, "team")
    wait_for(lambda: place_of(path).life is Life.FINISHED, 90, "the run to finish")
    run = place_of(path)
    assert list(run.completed) == ["lead"]
    # Three spawned, the fourth refused with its reason where the lead reads it; cap 2 held.
    # Slice a spawned again (as a lead retried does) names coder-1 and starts nothing.
    spawned = [seen for seen in observations(path) if isinstance(seen, SpawnSaid)]
    assert [seen.goal for seen in spawned] == [
        "slice a: write a.md",
        "slice b: write b.md",
        "slice c: write c.md",
        "slice a: write a.md",
    ]
    over = (repo / "places" / "crew--team" / "over.txt").read_text()
    assert "may spawn 3 coder children at most, and 3 are spawned" in over
    assert over.strip().endswith("1")
    again = (repo / "places" / "crew--team" / "a.txt").read_text()
    assert "crew--team: coder-1 (crew--team+coder-1, " in again
    assert "was spawned with this goal already; no second child is started" in again
    assert again.strip().endswith("0")
    launches = [a for a in decided(path, LaunchLane) if isinstance(a, LaunchLane)]
    assert [a.launch.name for a in launches] == ["team+coder-1", "team+coder-2", "team+coder-3"]
    assert all(a.launch.led for a in launches)
    # The question went to the lead, which answered it; the child's transcript holds it.
    news = [seen for seen in observations(path) if isinstance(seen, ChildNews)]
    assert any(seen.lane == "coder-2" and seen.id == "q1" for seen in news)
    child = place_of(places.journals_dir(repo) / "crew--team+coder-2" / places.JOURNAL)
    (question,) = child.questions
    assert question.answer == "Hello"
    (said,) = typed_lines(child, question.session, "The answer to your question q1")
    assert "Hello" in str(said["message"])
    # The lead's gate was read only once every child had ended and it was told so.
    ended = [seen for seen in observations(path) if isinstance(seen, LaneEnded)]
    assert sorted(seen.lane for seen in ended) == ["coder-1", "coder-2", "coder-3"]
    assert all(seen.finished for seen in ended)
    events = [(r.event, r.text) for r in decided(path, Report) if isinstance(r, Report)]
    joined = next(i for i, (event, _) in enumerate(events) if event is Event.JOINED)
    assert joined > max(i for i, (event, _) in enumerate(events) if event is Event.LANE_ENDED)
    assert [a for a in decided(path, JudgeGate) if isinstance(a, JudgeGate)]
    merges = run_git(repo, "log", "--first-parent", "--format=%s", "crew/team").splitlines()
    assert [s for s in merges if s.startswith("Merge")] == [
        "Merge lane coder-3 (crew/team+coder-3) into crew/team",
        "Merge lane coder-2 (crew/team+coder-2) into crew/team",
        "Merge lane coder-1 (crew/team+coder-1) into crew/team",
    ]
    for name in ("a.md", "b.md", "c.md"):
        assert run_git(repo, "show", f"crew/team:{name}")
    shown = flume_process("status", "--json", "--repository", str(repo))
    rows = [row for row in json.loads(shown.stdout)["places"] if row["place"] == "crew--team"]
    assert [row["life"] for row in rows] == ["finished"]


def test_the_run_dropped_mid_block_ends_every_child_and_keeps_their_commits(
    tmp_path: Path, panes: Tmux
) -> None:
    """WF-DROP-CASCADES through the shell: no agent of the run or its children lives on.

    The lead and both coders' agents end, their places are dropped and tidied, and the coder
    that committed keeps its branch, named.
    """
    del panes
    repo = agent_repository(tmp_path)
    release = tmp_path / "release"
    waits = json.dumps(f'while [ ! -f "{release}" ]; do sleep 0.05; done')
    held = f"""
[[turn]]
match = ":lead:1"
steps = [
    {{run = ["flume", "spawn", "--goal", "slice a"]}},
    {{run = ["flume", "spawn", "--goal", "slice b"]}},
]

[[turn]]
match = "Build: slice a"
steps = [
    {{write = {{path = "a.md", text = "a\\n"}}}},
    {{commit = "Slice a"}},
    {{run = ["sh", "-c", {waits}]}},
]

[[turn]]
match = "Build: slice b"
steps = [{{run = ["sh", "-c", {waits}]}}]
"""
    journals = places.journals_dir(repo)
    try:
        path = _launch(tmp_path, repo, KIND, held, "gone")
        a_path = journals / "crew--gone+coder-1" / places.JOURNAL
        b_path = journals / "crew--gone+coder-2" / places.JOURNAL

        def both_working() -> bool:
            if not (a_path.exists() and b_path.exists()):
                return False
            a, b = place_of(a_path), place_of(b_path)
            return a.agent is not None and b.agent is not None and a.head != a.start

        wait_for(both_working, 60, "both coders at work, a committed")
        dropped = flume_process("drop", "crew--gone", "--repository", str(repo))
        assert dropped.returncode == 0, dropped.stderr
        for each in (path, a_path, b_path):
            wait_for(lambda each=each: place_of(each).life is Life.TIDIED, 60, f"{each} tidied")
    finally:
        release.write_text("", encoding="utf-8")
    for each in (path, a_path, b_path):
        assert place_of(each).agent is None
    branches = run_git(repo, "branch", "--list", "--format=%(refname:short)").splitlines()
    assert "crew/gone+coder-1" in branches  # its commit is kept
    assert "crew/gone+coder-2" not in branches  # nothing of its own
    assert not any((repo / "places").glob("crew--gone*"))


COMPOSING = """\
[kind]
name = "crew"
body = ["build"]
budgets = { turns = 40, tokens = 1000000 }

[orchestrate.build]
lead = "lead"
compose = { runs = 1, depth = 2 }
branches = ["notes"]

[step.lead]
prompt = "Compose a run for the docs, then write $verdict once all are done."
gate = "verdict"
may = ["compose"]

[step.notes]
prompt = "Write NOTES.md; commit."
gate = "commit"
"""

FRAGMENT = """\
[kind]
name = "docs"
body = ["write"]

[step.write]
prompt = "Write DOCS.md for $brief; commit."
gate = "commit"
"""

#: A fragment whose lead may compose: a third level, refused.
DEEPER = """\
[kind]
name = "deeper"
body = ["inner"]

[orchestrate.inner]
lead = "boss"
compose = { runs = 1 }
branches = ["leaf"]

[step.boss]
prompt = "Compose again; write $verdict."
gate = "verdict"
may = ["compose"]

[step.leaf]
prompt = "A leaf; commit."
gate = "commit"
"""


def test_a_lead_composes_a_child_run_its_slice_reserved_then_released(
    tmp_path: Path, panes: Tmux
) -> None:
    """WF-DEPTH-CAP, WF-BUDGET-RESERVE through the CLI: a child run with a journal of its own.

    The lead composes ``docs`` with 10 turns: the run's spend holds the slice at once; the child
    run (depth 2, its budgets the slice) commits and is merged; once it ended, the run's spend
    holds what it really spent instead. A second compose (past ``runs``) and a fragment that
    would compose again (a third level) are refused, exit 1, nothing journaled.
    """
    del panes
    repo = agent_repository(tmp_path)
    (tmp_path / "docs.toml").write_text(FRAGMENT, encoding="utf-8")
    (tmp_path / "deeper.toml").write_text(DEEPER, encoding="utf-8")
    (tmp_path / "bad.toml").write_text("[kind]\nname = 'bad'\nbody = ['nothing']\n", "utf-8")
    docs, deeper, bad = (str(tmp_path / f"{n}.toml") for n in ("docs", "deeper", "bad"))
    record = tmp_path / "said.txt"

    def tried(*argv: str) -> str:
        """A step running ``argv``, what it said and its exit status kept in ``record``."""
        line = f"{' '.join(argv)} >> {record} 2>&1; echo exit-$? >> {record}"
        return f"{{run = {json.dumps(['sh', '-c', line])}}}"

    lead = ",\n    ".join(
        [
            tried("flume", "compose", bad, "--turns", "5", "--tokens", "100"),
            tried("flume", "compose", deeper, "--turns", "5", "--tokens", "100"),
            tried("flume", "compose", docs, "--turns", "10", "--tokens", "5000"),
            tried("flume", "compose", docs, "--turns", "5", "--tokens", "100"),
        ]
    )
    turns = f"""
[[turn]]
match = ":lead:1"
steps = [
    {lead},
]

[[turn]]
match = ":notes:1"
steps = [{{write = {{path = "NOTES.md", text = "n\\n"}}}}, {{commit = "Notes"}}]

[[turn]]
match = "Write DOCS.md"
steps = [{{work = 1}}, {{write = {{path = "DOCS.md", text = "d\\n"}}}}, {{commit = "Docs"}}]

[[turn]]
match = "All children of build are terminal"
steps = [{{write = {{path = "$board/lead/verdict.json", text = '{{"result": "done"}}'}}}}]
"""
    path = _launch(tmp_path, repo, COMPOSING, turns, "team")
    journals = places.journals_dir(repo)
    child_path = journals / "crew--team+run-1" / places.JOURNAL
    wait_for(child_path.exists, 60, "the child run's journal")
    reserved = place_of(path)
    assert reserved.lanes["run-1"].reserved_turns == 10
    assert reserved.spent.turns >= 10  # the slice, reserved at once
    wait_for(lambda: place_of(path).life is Life.FINISHED, 90, "the run to finish")
    said = record.read_text(encoding="utf-8")
    assert "bad.toml:3" in said  # bad input: the file and line named, and exit 2
    assert "exit-2" in said
    assert "would nest runs 3 deep" in said
    assert "may compose 1 runs, and 1 are composed" in said
    assert said.count("exit-1") == 2
    assert said.count("exit-0") == 1
    composed = [seen for seen in observations(path) if type(seen).__name__ == "ComposeSaid"]
    assert len(composed) == 1  # the refused ones journaled nothing
    child = place_of(child_path)
    assert child.launch.depth == 2
    assert child.launch.parent == "crew--team"
    assert child.kind.budgets.turns == 10
    run = place_of(path)
    lead_turns = sum(1 for s in observations(path) if type(s).__name__ == "TurnEnded")
    assert run.spent.turns == lead_turns + child.spent.turns + 1  # the notes child's one turn
    assert run.spent.turns < 10 + lead_turns
    merges = run_git(repo, "log", "--first-parent", "--format=%s", "crew/team").splitlines()
    assert [s for s in merges if s.startswith("Merge")] == [
        "Merge lane run-1 (crew/team+run-1) into crew/team",
        "Merge lane notes (crew/team+notes) into crew/team",
    ]
    assert run_git(repo, "show", "crew/team:DOCS.md") == "d\n"


def test_a_sandboxed_lead_spawns_and_answers_through_its_inbox(tmp_path: Path, panes: Tmux) -> None:
    """A lead in bubblewrap answers its child through its inbox, as the lead.

    It cannot write the journals: its spawn and its answer to a child's question go through its
    inbox, and its supervisor journals them, the answer counted as the lead's.
    """
    del panes
    shared.sandbox_programs()
    repo = agent_repository(tmp_path)
    boxed = KIND.replace('may = ["spawn", "notify"]', 'may = ["spawn", "notify"]\nsandbox = true')
    lead = """
[[turn]]
match = ":lead:1"
steps = [{run = ["flume", "spawn", "--goal", "slice b: write b.md"]}]

[[turn]]
match = "Build: slice b"
steps = [{run = ["flume", "ask", "Hello or Hi in b.md?"]}]

[[turn]]
match = "The answer to your question q1"
steps = [{write = {path = "b.md", text = "Hello\\n"}}, {commit = "Slice b"}]

[[turn]]
match = "asks q1: Hello or Hi in b.md?"
steps = [{run = ["flume", "answer", "crew--boxed+coder-1", "q1", "Hello"]}]

[[turn]]
match = "All children of build are terminal"
steps = [{write = {path = "$board/lead/verdict.json", text = '{"result": "done"}'}}]
"""
    path = _launch(tmp_path, repo, boxed, lead, "boxed")
    wait_for(lambda: place_of(path).life is Life.FINISHED, 90, "the run to finish")
    child = place_of(places.journals_dir(repo) / "crew--boxed+coder-1" / places.JOURNAL)
    (question,) = child.questions
    assert question.answer == "Hello"
    (given,) = [seen for seen in observations(path.parent.parent / "crew--boxed+coder-1"
                / places.JOURNAL) if type(seen).__name__ == "AnswerGiven"]  # fmt: skip
    assert given.by_lead  # type: ignore[attr-defined]
    assert run_git(repo, "show", "crew/boxed:b.md") == "Hello\n"
