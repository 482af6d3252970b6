"""The print backend behind the pane port: a pane is a file whose command a person runs (R4)."""

from __future__ import annotations

from pathlib import Path

from flume.shell.panes import printed
from flume.shell.panes.port import PaneServer, send_of, typed_mark
from flume.shell.panes.printed import Printed
from flume.shell.panes.tmux import SESSION_VARIABLE


def test_a_printed_pane_is_started_typed_into_and_closed_through_the_pane_port(
    host: Path,
) -> None:
    """Start writes the file, the listing finds it by session, a paste is its send, kill ends it."""
    server: PaneServer = Printed()
    env = {SESSION_VARIABLE: "s-1", "PATH": "/bin"}
    made = server.start(group="g", window="fix--p", cwd=host, argv=["agent", "-x"], env=env)
    assert made.ok
    pane = made.out
    assert printed.is_printed(pane)
    assert not printed.is_printed("%3")
    path = printed.file_of(pane)
    assert path == printed.path_of("fix--p")
    assert printed.read(path) == {
        "session": "s-1",
        "cwd": str(host),
        "argv": ["agent", "-x"],
        "env": env,
        "prompt": None,
    }
    listed = server.panes()
    assert listed is not None
    assert [(each.id, each.session, each.dead) for each in listed.values()] == [
        (pane, "s-1", False)
    ]
    assert server.capture(pane) is None
    assert server.attach_argv(pane) == printed.command(path)
    # Nothing was typed yet: the file says send 0; the paste of send 2 says 2 (the file is the
    # pane's own mark, read back for DELIVERY-UNWRITTEN-NOW).
    assert printed.prompt_written(path, "s-1") == 0
    long_marker = "flume:" + "x" * 90 + ":code:1"
    assert server.paste(pane, "Mend it.", mark=typed_mark(long_marker, 2)).ok
    assert printed.prompt_written(path, "s-1") == 2
    assert (printed.read(path) or {}).get("prompt") == "Mend it."
    # A start asked again for the same session keeps the prompt; another session's rewrites.
    again = server.start(group="g", window="fix--p", cwd=host, argv=["agent"], env=env)
    assert again.out == pane
    assert printed.prompt_written(path, "s-1") == 2
    other = {SESSION_VARIABLE: "s-2"}
    server.start(group="g", window="fix--p", cwd=host, argv=["agent"], env=other)
    assert printed.prompt_written(path, "s-2") == 0
    assert server.kill_pane(pane).ok
    assert not path.exists()
    assert server.panes() == {}
    assert not server.paste(pane, "Too late.", mark=typed_mark("m", 1)).ok


def test_a_typed_mark_names_its_send_back() -> None:
    """send_of reads back the send typed_mark wrote, a long marker's digest too; none for a tell."""
    for marker in ("flume:fix--a:code:1", "x#y", "m" * 200):
        for send in (1, 2, 17):
            assert send_of(typed_mark(marker, send)) == send
    assert send_of("") is None
