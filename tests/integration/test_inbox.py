"""A sandboxed agent's inbox (flume/shell/store/inbox.py): requests taken once, answers kept.

The supervisor's side in process: a request is taken (renamed) once, one sent again under an id
answered or taken already is not carried out again, one taken and never answered (the
supervisor killed between) is answered as lost, and nothing the agent puts there is followed
if it is a link. The command's side reads the answer back as what to print, or the refusal.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from flume.core.errors import UsageError
from flume.core.ids import SessionId
from flume.shell.store import inbox

SESSION = SessionId("0123456789abcdef0123456789abcdef")
IDENT = "a" * 32


def _request(folder: Path, fields: dict[str, object] | None = None) -> None:
    given = {"kind": "progress", "words": "halfway", "session": SESSION} | (fields or {})
    (folder / f"{IDENT}.json").write_text(json.dumps(given), encoding="utf-8")


def test_a_request_is_taken_once_and_answered(tmp_path: Path) -> None:
    """Taken: read and removed; sent again under its id after its answer: dropped, not taken."""
    seen: set[str] = set()
    _request(tmp_path)
    (taken,) = inbox.take(tmp_path, seen)
    assert taken.request == inbox.Request(kind="progress", session=SESSION, words="halfway")
    assert inbox.refused_for(taken.request, SESSION) is None
    inbox.answer(tmp_path, taken.ident, "flume: x: progress noted")
    assert sorted(path.name for path in tmp_path.iterdir()) == [f"{IDENT}.answer"]
    _request(tmp_path)
    assert list(inbox.take(tmp_path, seen)) == []
    assert list(inbox.take(tmp_path, set())) == []  # its answer stays: after a restart too
    assert not (tmp_path / f"{IDENT}.json").exists()


def test_a_request_taken_and_never_answered_is_answered_as_lost(tmp_path: Path) -> None:
    """The supervisor killed after taking it: its next look answers it lost (exit 1)."""
    (tmp_path / f"{IDENT}.taken").write_text("{}", encoding="utf-8")
    (taken,) = inbox.take(tmp_path, set())
    assert taken.request is None
    assert taken.problem is not None
    assert taken.problem.exit_status == 1


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"kind": "approve"}, "'approve' is not a command"),
        ({"session": "another"}, "names the session another"),
        ({"session": None}, "names the session None"),
    ],
)
def test_a_request_for_another_command_or_session_is_refused(
    tmp_path: Path, fields: dict[str, object], why: str
) -> None:
    """Only the four commands, only in the agent's own session's name."""
    _request(tmp_path, fields)
    (taken,) = inbox.take(tmp_path, set())
    assert taken.request is not None
    refused = inbox.refused_for(taken.request, SESSION)
    assert refused is not None
    assert why in str(refused)


def test_what_is_not_a_request_is_answered_unreadable_or_left(tmp_path: Path) -> None:
    """Bad JSON, a wrong shape or a link: unreadable; names not a request's are left alone."""
    outside = tmp_path / "outside.txt"
    outside.write_text("secret", encoding="utf-8")
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / f"{'b' * 32}.json").write_text("{not json", encoding="utf-8")
    (folder / f"{'c' * 32}.json").write_text('{"kind": 3}', encoding="utf-8")
    (folder / f"{'d' * 32}.json").symlink_to(outside)
    (folder / "notes.json").write_text("{}", encoding="utf-8")
    taken = list(inbox.take(folder, set()))
    assert [each.request for each in taken] == [None, None, None]
    assert (folder / "notes.json").exists()
    assert outside.read_text(encoding="utf-8") == "secret"


def test_an_answer_is_never_written_through_a_link(tmp_path: Path) -> None:
    """The agent puts a link where the answer goes: the link is replaced, its target kept."""
    target = tmp_path / "target"
    target.write_text("kept", encoding="utf-8")
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / f"{IDENT}.answer").symlink_to(target)
    inbox.answer(folder, IDENT, "said")
    assert target.read_text(encoding="utf-8") == "kept"
    assert json.loads((folder / f"{IDENT}.answer").read_text(encoding="utf-8"))["output"] == "said"


def test_the_command_prints_the_answer_or_raises_the_refusal(tmp_path: Path) -> None:
    """The command's side: its request is written, the supervisor's answer read back."""

    def supervisor(said: str | UsageError) -> threading.Thread:
        def answer() -> None:
            deadline = time.monotonic() + 10
            while not (taken := list(inbox.take(tmp_path, set()))):
                assert time.monotonic() < deadline, "no request came"
            inbox.answer(tmp_path, taken[0].ident, said)

        thread = threading.Thread(target=answer)
        thread.start()
        return thread

    request = inbox.Request(kind="progress", session=SESSION, words="halfway")
    thread = supervisor("flume: x: progress noted")
    assert inbox.through(tmp_path, request, wait=10) == "flume: x: progress noted"
    thread.join()
    refusal = UsageError.one("progress", "step code may not progress", "declare it", exit_status=1)
    thread = supervisor(refusal)
    with pytest.raises(UsageError) as raised:
        inbox.through(tmp_path, request, wait=10)
    thread.join()
    assert raised.value.exit_status == 1
    assert raised.value.problems == refusal.problems


def test_a_request_no_supervisor_takes_is_withdrawn(tmp_path: Path) -> None:
    """Past its deadline, untaken: removed, and the command fails saying nothing was journaled."""
    request = inbox.Request(kind="submit", session=SESSION)
    with pytest.raises(UsageError, match="nothing was journaled") as raised:
        inbox.through(tmp_path, request, wait=0)
    assert raised.value.exit_status == 1
    assert not list(tmp_path.glob("*.json"))
