"""Lanes and children spread over a fleet (``spread = true``, WF-SPREAD), on a real Temporal.

Hosts are processes with state folders and clones of their own, sharing only the dev server and
a bare remote (tests/integration/fleet_kit.py). A run carried by one host fans its lanes out to
the others through the fleet; each lane is launched, carried and tidied there, its branch
pushed to the remote, and the run merges the lanes, fetched from the remote, in declared order
on its own host. An orchestrate block's child on another host asks; its lead, on the run's
host, hears the question as news and answers it through the fleet.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes
pytest.importorskip(
    "temporalio", reason="the fleet's tests need flume's fleet extra: pip install '.[fleet]'"
)

from flume.core.observations import ChildNews, LaneEnded, Notified  # noqa: E402
from flume.fleet.local import LocalFleet, LocalHost  # noqa: E402
from flume.shell.store import journal, places  # noqa: E402
from tests.integration.fleet_kit import Make, name, record, wait_for  # noqa: E402

#: Two slices in a parallel whose lanes spread over the fleet, each a commit.
SLICES = """\
[kind]
name = "slices"
body = ["build"]

[parallel.build]
branches = ["slice-a", "slice-b"]
spread = true

[step.slice-a]
prompt = "Build slice a; commit."
gate = "commit"

[step.slice-b]
prompt = "Build slice b; commit."
gate = "commit"
"""

#: Slice a works until the test sees the run told slice b ended: they end out of declared order.
SLICES_SCRIPT = """\
[[turn]]
match = ":slice-a:1]"
steps = [
  {{run = ["sh", "-c", 'while [ ! -e "$1" ]; do sleep 0.1; done', "sh", "{done}"]}},
  {{write = {{path = "a.md", text = "a\\n"}}}},
  {{commit = "Slice a"}},
]

[[turn]]
match = ":slice-b:1]"
steps = [
  {{write = {{path = "b.md", text = "b\\n"}}}},
  {{commit = "Slice b"}},
]
"""

#: A lead whose one child, spread over the fleet, asks a question.
CREW = """\
[kind]
name = "crew"
body = ["build"]

[orchestrate.build]
lead = "lead"
children = { template = "coder", max = 1 }
spread = true

[step.lead]
prompt = "Give the slice to a coder with flume spawn --goal. Answer its questions. \
When it is done, write $verdict."
gate = "verdict"
may = ["spawn", "notify"]

[step.coder]
prompt = "Build: $goal. If the plan is unclear, flume ask. Commit."
gate = "commit"
may = ["progress", "ask"]
"""

CREW_SCRIPT = """\
[[turn]]
match = ":lead:1"
steps = [
  {{run = ["flume", "spawn", "--goal", "slice b: write b.md"]}},
  {{run = ["flume", "notify", "coder-1", "Keep it short."]}},
]

[[turn]]
match = "Build: slice b"
steps = [{{run = ["flume", "ask", "Hello or Hi in b.md?"]}}]

[[turn]]
match = "The answer to your question q1"
steps = [{{write = {{path = "b.md", text = "Hello\\n"}}}}, {{commit = "Slice b"}}]

[[turn]]
match = "asks q1: Hello or Hi in b.md?"
steps = [{{run = ["flume", "answer", "{child}", "q1", "Hello"]}}]

[[turn]]
match = "All children of build are terminal"
steps = [{{write = {{path = "$board/lead/verdict.json", text = '{{"result": "done"}}'}}}}]
"""


def _git(cwd: Path, *args: str) -> str:
    argv = ["git", *args]
    ran = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=True)  # noqa: S603
    return ran.stdout


def _launch_run(fleet: LocalFleet, host: LocalHost, kind: str, script: str, work: str) -> None:
    """Launch the run of ``kind`` into the fleet from ``host``, played by the test agent."""
    kind_file = fleet.folder / f"{work}.toml"
    kind_file.write_text(kind, encoding="utf-8")
    script_file = fleet.folder / f"{work}-script.toml"
    script_file.write_text(script, encoding="utf-8")
    ran = host.flume(
        "launch", "--fleet", "--kind-file", str(kind_file), "--name", work,
        "--brief", "Greet.", "--agent", "test", "--agent-arg=--script",
        f"--agent-arg={script_file}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr


def _seen(host: LocalHost, place: str) -> list[object]:
    """The observations of ``place``'s journal on ``host``."""
    path = places.journals_dir(host.clone) / place / places.JOURNAL
    return list(journal.read(path).observations)


def test_a_run_s_lanes_run_on_two_other_hosts_and_merge_in_order_on_its_own(
    fleet_of: Make,
) -> None:
    """WF-SPREAD end to end: each lane on a host of its own, merged in declared order on h1.

    The run, carried by h1 (its one slot taken), fans out its two lanes through the fleet: h2
    and h3 take one each, launch it from its entry commit (pushed to the remote as its branch),
    and push its commit. Slice b ends first; the run, told through the fleet, merges slice a
    then slice b, fetched from the remote at the heads they ended at, and finishes. Each lane
    is tidied on its host by the run's order: its branch and base copy gone there, its branch
    gone from the remote, whose run branch holds both.
    """
    fleet = fleet_of(hosts=3, slots=1)
    h1, h2, h3 = fleet.hosts
    fleet.start([h1])
    work = name("sl")
    run = f"slices--{work}"
    done = str(fleet.folder / "b-done")
    _launch_run(fleet, h1, SLICES, SLICES_SCRIPT.format(done=done), work)
    wait_for(fleet, lambda rows: rows.get(run, {}).get("state") == "carried")
    fleet.start([h2, h3])
    lanes = [f"{run}+slice-a", f"{run}+slice-b"]

    def b_ended(_rows: object) -> bool:
        return any(
            isinstance(each, LaneEnded) and each.lane == "slice-b" for each in _seen(h1, run)
        )

    wait_for(fleet, b_ended, seconds=180)
    Path(done).touch()
    rows = wait_for(
        fleet,
        lambda rows: (
            rows.get(run, {}).get("state") == "finished"
            and all(not rows.get(lane, {"running": True})["running"] for lane in lanes)
        ),
        seconds=240,
    )
    assert rows[run]["host"] == "h1"
    hosts = {lane: fleet.journaled_on(lane) for lane in lanes}
    assert sorted(hosts.values()) == [["h2"], ["h3"]], hosts
    assert {rows[lane]["host"] for lane in lanes} == {"h2", "h3"}
    seen = _seen(h1, run)
    ended = [each.lane for each in seen if isinstance(each, LaneEnded)]
    assert ended == ["slice-b", "slice-a"]
    branch = f"slices/{work}"
    merges = _git(h1.clone, "log", "--first-parent", "--format=%s", branch).splitlines()
    assert [each for each in merges if each.startswith("Merge")] == [
        f"Merge lane slice-b (slices/{work}+slice-b) into slices/{work}",
        f"Merge lane slice-a (slices/{work}+slice-a) into slices/{work}",
    ]
    for file in ("a.md", "b.md"):
        assert _git(fleet.remote, "show", f"{branch}:{file}").strip()
    # Tidied on their hosts by the run's order: nothing of the lanes is left there or on the
    # remote but what the run's branch holds.
    assert _git(fleet.remote, "for-each-ref", f"refs/heads/slices/{work}+*") == ""
    for host in (h2, h3):
        assert _git(host.clone, "for-each-ref", f"refs/heads/slices/{work}*") == ""
        assert not list((host.clone / "places").glob(f"{run}+*"))
    record(fleet, lanes[0], "spread-lanes")


def test_an_orchestrate_child_on_another_host_asks_and_its_lead_answers(fleet_of: Make) -> None:
    """A child carried by h2 asks; the lead on h1 hears it as news and answers through the fleet.

    The lead's note reaches the child on h2 too; the child's answer is the lead's, journaled on
    h2 as its lead gave it; the child commits, ends, is merged into the run's branch on h1, and
    the lead, told, writes its verdict: the run finishes.
    """
    fleet = fleet_of(hosts=2, slots=1)
    h1, h2 = fleet.hosts
    fleet.start([h1])
    work = name("cr")
    run = f"crew--{work}"
    child = f"{run}+coder-1"
    _launch_run(fleet, h1, CREW, CREW_SCRIPT.format(child=child), work)
    wait_for(fleet, lambda rows: rows.get(run, {}).get("state") == "carried")
    fleet.start([h2])
    rows = wait_for(
        fleet,
        lambda rows: (
            rows.get(run, {}).get("state") == "finished"
            and not rows.get(child, {"running": True})["running"]
        ),
        seconds=240,
    )
    assert rows[child]["host"] == "h2"
    assert fleet.journaled_on(child) == ["h2"]
    news = [each for each in _seen(h1, run) if isinstance(each, ChildNews)]
    asked = [each for each in news if each.id == "q1"]
    assert len(asked) == 1
    assert "Hello or Hi in b.md?" in asked[0].text
    there = _seen(h2, child)
    assert any(isinstance(each, Notified) and "Keep it short." in each.text for each in there)
    answered = [each for each in there if type(each).__name__ == "AnswerGiven"]
    assert [(each.text, each.by_lead) for each in answered] == [("Hello", True)]  # type: ignore[attr-defined]
    assert _git(h1.clone, "show", f"crew/{work}:b.md").strip() == "Hello"
    record(fleet, child, "spread-child")
