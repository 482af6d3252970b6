"""What a user reads cites only what a user has: rule ids docs/rules.md explains, no team files.

The README, docs/ and flume's own source once cited DESIGN.md and STYLE.md, which live beside
the team's clones, not in the repository or the package.
"""

from __future__ import annotations

import re
from pathlib import Path

from flume.core.rules import RULES

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
