"""What a user reads cites only what a user has: rule ids docs/rules.md explains, no team files.

And what flume shows a user is explained where they look: each event in docs/events.md, each
phase and pause in docs/status.md, each pause's command in docs/commands.md.

The README, docs/ and flume's own source once cited DESIGN.md and STYLE.md, which live beside
the team's clones, not in the repository or the package.
"""

from __future__ import annotations

import re
from pathlib import Path

from flume.core.actions import Event
from flume.core.place import PauseCause
from flume.core.rules import RULES
from flume.core.status import PhaseWord

ROOT = Path(__file__).resolve().parents[2]
_ROW = re.compile(r"^\| (?:\*\*(?P<rule>R\d+)\*\*|`(?P<finer>[A-Z-]+)`) \| (?P<text>.*) \|$")


def documented() -> dict[str, str]:
    """Each id docs/rules.md lists, with its sentence as written (code spans unmarked)."""
    found: dict[str, str] = {}
    for line in (ROOT / "docs" / "rules.md").read_text(encoding="utf-8").splitlines():
        row = _ROW.match(line)
        if row:
            rule = row.group("rule") or row.group("finer")
            found[rule] = row.group("text").replace("`", "").replace("\\|", "|")
    return found


def test_docs_rules_lists_every_rule_with_its_sentence() -> None:
    """Every id of the catalogue, in its order, with the catalogue's own sentence; no other."""
    assert list(documented().items()) == list(RULES.items())


def test_every_rule_id_the_docs_cite_is_listed() -> None:
    """An id cited in the README or docs/ is one docs/rules.md explains."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    cited = {
        (page.name, rule)
        for page in pages
        for rule in re.findall(r"\bR\d+\b", page.read_text(encoding="utf-8"))
    }
    assert cited, "the docs cite rule ids"
    assert {(page, rule) for page, rule in cited if rule not in RULES} == set()


def test_nothing_a_user_reads_cites_the_teams_own_documents() -> None:
    """No page, docstring or comment sends a user to DESIGN.md or STYLE.md."""
    read = [
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "flume").rglob("*.py"),
        *(ROOT / "flume").rglob("*.toml"),
    ]
    assert len(read) > 50
    citing = [
        str(path.relative_to(ROOT))
        for path in read
        if re.search(r"DESIGN\.md|STYLE\.md|STYLE rule|DESIGN §", path.read_text(encoding="utf-8"))
    ]
    assert citing == []


def _page(name: str) -> str:
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


def test_every_event_phase_and_pause_is_documented() -> None:
    """An event has its row in events.md; a phase and a pause cause are named in status.md.

    Each pause cause has its row in commands.md's table of what lets it go on.
    """
    events, status, commands = _page("events.md"), _page("status.md"), _page("commands.md")
    rows = {
        name
        for line in events.splitlines()
        if line.startswith("| `")
        for name in re.findall(r"`([a-z-]+)`", line.split(" | ")[0])
    }
    assert [event.value for event in Event if event.value not in rows] == []
    assert [word.value for word in PhaseWord if f"`{word.value}`" not in status] == []
    assert [cause.value for cause in PauseCause if f"`{cause.value}`" not in status] == []
    assert [cause.value for cause in PauseCause if f"| `{cause.value}` |" not in commands] == []
