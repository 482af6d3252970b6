"""The one journal follower, on real files: what the supervisor and the events stream rely on.

Each read folds only the whole lines appended since the last, numbered on; another file at the
path is another journal, read anew (but not while the supervisor performs the old one's
actions); a journal that cannot be followed is given up, said once, until it is mended.
"""

from __future__ import annotations

import os
from pathlib import Path

from flume.core.ids import Instant
from flume.core.observations import Launched, Observation, ProceedAsked, Tick
from flume.core.settings import Settings
from flume.core.step import replay
from flume.shell.store.codec import encode
from flume.shell.store.follower import Followed, Follower
from flume.shell.store.journal import append, create
from tests.integration.test_journal import journal_of_a_fix
from tests.model.test_rules import FIX, launch


def written(path: Path, seen: list[Observation]) -> Path:
    """A journal at ``path`` holding ``seen``, a line each."""
    create(path, seen[0])
    for each in seen[1:]:
        append(path, each)
    return path


def fix() -> list[Observation]:
    """A fix launched, made, started and sent its prompt."""
    return journal_of_a_fix()  # type: ignore[return-value]


def test_each_read_folds_the_whole_lines_appended_since_and_a_torn_one_waits(
    tmp_path: Path,
) -> None:
    """Lines are folded once each, numbered on from the last read; half a line waits."""
    seen = fix()
    path = written(tmp_path / "fix--typo" / "journal.jsonl", seen[:2])
    follower = Follower(Settings())
    each = Followed(journal=path)
    first = follower.read(each)
    assert first is not None
    assert (first.first, first.before, len(first.decisions)) == (1, None, 2)
    assert first.decisions[-1].place == each.place == replay(Settings(), seen[:2])
    assert follower.read(each) is None
    line = (encode(seen[2]) + "\n").encode()
    with path.open("ab") as file:
        file.write(line[:9])
    assert follower.read(each) is None
    with path.open("ab") as file:
        file.write(line[9:])
    third = follower.read(each)
    assert third is not None
    assert (third.first, third.before, len(third.decisions)) == (3, first.decisions[-1].place, 1)
    assert each.place == replay(Settings(), seen[:3])
    assert each.offset == path.stat().st_size
    assert each.launched_at == 0.0


def test_another_file_at_the_path_is_read_anew_once_the_old_ones_actions_are_done(
    tmp_path: Path,
) -> None:
    """A name launched again is another journal: read from line 1, not while ``busy``."""
    path = written(tmp_path / "fix--typo" / "journal.jsonl", fix())
    follower = Follower(Settings())
    each = Followed(journal=path)
    whole = follower.read(each)
    assert whole is not None
    assert len(whole.decisions) == len(fix())
    old_digest = each.digest
    again = Launched(at=Instant(50), launch=launch(), kind=FIX, settings=Settings())
    written(tmp_path / "staged.jsonl", [again]).replace(path)
    each.busy = True
    assert follower.read(each) is None
    assert each.lines == len(fix())
    each.busy = False
    anew = follower.read(each)
    assert anew is not None
    assert (anew.first, anew.before, len(anew.decisions)) == (1, None, 1)
    assert each.place == replay(Settings(), [again])
    assert each.launched_at == 50.0
    assert each.digest not in {"", old_digest}


def test_a_line_the_rules_refuse_gives_the_journal_up_until_it_is_mended(tmp_path: Path) -> None:
    """Given up once, said once, with the path in ``problem``; mended in place, read anew."""
    path = written(tmp_path / "fix--typo" / "journal.jsonl", fix())
    heard: list[tuple[Path, str]] = []
    follower = Follower(Settings(), on_problem=lambda *said: heard.append(said))
    each = Followed(journal=path)
    follower.read(each)
    whole = path.stat().st_size
    append(path, Tick(at=Instant(8)))
    append(path, ProceedAsked(at=Instant(9)))
    before = follower.read(each)  # the line before the refused one is folded, and handed back
    assert before is not None
    assert (before.first, len(before.decisions)) == (len(fix()) + 1, 1)
    assert each.offset == whole
    assert follower.read(each) is None
    ((where, why),) = heard
    assert where == path
    assert why.startswith("a line the rules refuse: ")
    assert each.problem == f"{path}: {why}"
    os.truncate(path, whole)
    again = follower.read(each)
    assert again is not None
    assert (again.first, len(again.decisions)) == (1, len(fix()))
    assert each.problem is None
    assert len(heard) == 1


def test_a_damaged_line_is_named_as_the_journal_names_it(tmp_path: Path) -> None:
    """A line that is no observation gives the journal up, the error naming the file."""
    path = written(tmp_path / "fix--typo" / "journal.jsonl", fix())
    heard: list[tuple[Path, str]] = []
    follower = Follower(Settings(), on_problem=lambda *said: heard.append(said))
    each = Followed(journal=path)
    with path.open("ab") as file:
        file.write(b'{"type": "Nothing"}\n')
    assert follower.read(each) is None
    ((where, why),) = heard
    assert where == path
    assert why.startswith(str(path))
    assert each.problem == why
    assert each.place is None
