"""What a user reads cites only what a user has: rule ids docs/rules.md explains, no team files.

And what flume shows a user is explained where they look: each event, each status field, phase
and pause in the reference pages drawn from the code, each pause's command in docs/commands.md.

The README, docs/ and flume's own source once cited DESIGN.md and STYLE.md, which live beside
the team's clones, not in the repository or the package.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from flume.cli.statusview import STATUS_FIELDS
from flume.core.actions import Event
from flume.core.place import PauseCause
from flume.core.rules import RULES
from flume.core.status import PhaseWord, PlaceStatus
from flume.shell.store.events import (
    EVENT_FIELDS,
    EVENT_GROUPS,
    EVENT_MEANINGS,
    Cursor,
    PlaceEvent,
)

ROOT = Path(__file__).resolve().parents[2]
_ROW = re.compile(r"^\| (?:\*\*(?P<rule>R\d+)\*\*|`(?P<finer>[A-Z-]+)`) \| (?P<text>.*) \|$")


def manual_pages() -> list[Path]:
    """Every page of the manual written by hand (the reference is drawn from flume's code)."""
    docs = ROOT / "docs"
    return sorted(
        page
        for page in docs.rglob("*.md")
        if page.relative_to(docs).parts[0] not in {"_build", "reference"}
    )


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
    pages = [ROOT / "README.md", *manual_pages()]
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
        *manual_pages(),
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
    """Each event has its meaning in the events reference, in one group; phases and pauses too.

    The reference pages are drawn from the data checked here: each event's meaning, and the
    status fields' rows, which name every phase word and pause cause. Each pause cause has its
    row in commands.md's table of what lets it go on.
    """
    assert set(EVENT_MEANINGS) == set(Event)
    grouped = [event for _title, said in EVENT_GROUPS for event in said]
    assert sorted(grouped, key=lambda event: event.value) == sorted(
        Event, key=lambda event: event.value
    )
    fields = " ".join(meaning for _names, meaning in STATUS_FIELDS)
    commands = _page("commands.md")
    assert [word.value for word in PhaseWord if f"`{word.value}`" not in fields] == []
    assert [cause.value for cause in PauseCause if f"`{cause.value}`" not in fields] == []
    assert [cause.value for cause in PauseCause if f"| `{cause.value}` |" not in commands] == []


def test_every_status_field_has_its_meaning() -> None:
    """``status --json``'s rows name every field of a place, each once, and no other."""
    named = [name for names, _meaning in STATUS_FIELDS for name in names]
    assert sorted(named) == sorted(field.name for field in attrs.fields(PlaceStatus))


def test_every_event_field_has_its_meaning() -> None:
    """``events --json``'s rows name every key an event's JSON holds, each once."""
    event = PlaceEvent(
        cursor=Cursor(at_us=1, journal="j", line=1, index=0),
        at=1.0,
        place="fix--typo",
        repository="/r",
        kind="fix",
        name="typo",
        mark=None,
        stage="code",
        attempt=1,
        event=Event.LAUNCHED,
        text="launched",
        journal="/r/.git/flume/fix--typo/journal.jsonl",
        key="review-loop@2/review",
    )
    named = [name for names, _meaning in EVENT_FIELDS for name in names]
    assert sorted(named) == sorted(event.as_dict())
