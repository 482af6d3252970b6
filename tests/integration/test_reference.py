"""The manual's reference pages are drawn from the code: whatever the code holds, they show.

flume/cli/reference.py makes each page when the manual is built (scripts/docs). These tests read
what the pages would say now, against the declarations themselves: every command and option of
the app, an option added to a command (shown with no page edited), every table and key of the
kind file, every step of the test agent's script (each one the parser takes). Then the manual is
built as CI builds it, and a broken link fails the build.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer import _click as click
from typer.core import TyperOption

from flume.cli import reference
from flume.core import kindfile
from flume.testing import agent

ROOT = Path(__file__).resolve().parents[2]


def _commands_of(command: object, context: click.Context) -> list[tuple[str, object]]:
    """Every command under ``command`` with its path (``flume daemon status``), groups included."""
    found: list[tuple[str, object]] = []
    lister = getattr(command, "list_commands", None)
    for name in lister(context) if lister is not None else []:
        inner = command.get_command(context, name)  # type: ignore[attr-defined]
        if inner is None or inner.hidden:
            continue
        inner_context = click.Context(inner, info_name=name, parent=context)
        found.append((inner_context.command_path, inner))
        found.extend(_commands_of(inner, inner_context))
    return found


def test_every_command_and_option_of_the_app_is_on_its_page() -> None:
    """Each command has its section and usage; each argument and option its row and help."""
    root = reference.app_command()
    page = reference.commands(root)
    listed = _commands_of(root, click.Context(root, info_name="flume"))
    assert len(listed) > 30
    for path, command in listed:
        assert f"`{path}`\n" in page, path
        section = page.split(f"`{path}`\n", 1)[1]
        for param in command.params:  # type: ignore[attr-defined]
            if param.hidden if hasattr(param, "hidden") else False:
                continue
            names = param.opts if param.param_type_name == "option" else [param.human_readable_name]
            assert f"`{names[0]}`" in section.split("\n(command-", 1)[0], (path, names)


def test_an_option_added_to_a_command_is_on_the_page_with_no_page_edited() -> None:
    """A new option of ``flume status`` appears in its section, with its help, as drawn."""
    root = reference.app_command()
    status = root.get_command(click.Context(root, info_name="flume"), "status")
    before = reference.commands(root)
    assert "--since" not in before
    status.params.append(
        TyperOption(param_decls=["--since"], metavar="WHEN", help="Only places changed since WHEN.")
    )
    try:
        after = reference.commands(root)
    finally:
        status.params.pop()
    section = after.split("### `flume status`\n", 1)[-1].split("(command-flume-launch)=")[0]
    assert "| `--since` | `WHEN` |  | Only places changed since WHEN. |" in section


def test_every_table_key_gate_and_field_of_the_kind_file_is_on_its_page() -> None:
    """Each table's header and each key's row; each gate word; each prompt field."""
    page = reference.kind_file()
    for table in (*kindfile.TABLES, *kindfile.STAGES_TABLES):
        assert f"### `{table.header}`" in page
        section = page.split(f"### `{table.header}`", 1)[1]
        for key in table.keys:
            default = "required" if key.required else reference.cell(key.default or "")
            assert f"| `{key.name}` | {reference.cell(key.type)} | {default} |" in section, key
    for gate in kindfile.GATES:
        assert f"| `{gate.word}` |" in page
    for field in kindfile.PROMPT_FIELD_MEANINGS:
        assert f"| `${field}` |" in page


#: A value each kind of step takes, to show the parser takes every kind the page lists.
SAMPLES = {
    "say": '"Hi."',
    "work": "0.1",
    "write": '{path = "a.txt", text = "a"}',
    "commit": '"A commit"',
    "run": '["true"]',
    "ask": '"Which?"',
    "exit": "0",
}


def test_the_test_agent_page_lists_what_its_parser_takes() -> None:
    """Every key and step the page lists is parsed; its turn rule and paths are said."""
    page = reference.test_agent()
    assert [key.name for key in agent.STEP_KINDS] == list(SAMPLES)
    for name, value in SAMPLES.items():
        parsed = agent.parse_script(f"[[turn]]\nsteps = [{{{name} = {value}}}]\n")
        (step,) = parsed.turns[0].steps
        assert type(step).__name__.lower() == name
        assert f"| `{name}` |" in page
    with pytest.raises(agent.ScriptError, match="say, work, write, commit, run, ask, exit"):
        agent.parse_script('[[turn]]\nsteps = [{shout = "x"}]\n')
    for key in (*agent.SCRIPT_KEYS, *agent.TURN_KEYS):
        assert f"| `{key.name}` |" in page
    assert 'it says "ok"' in page
    assert "the place's worktree" in page


def test_every_page_is_made_and_titled() -> None:
    """Each reference page starts with its title and says what it is drawn from."""
    pages = reference.pages()
    assert set(pages) == {"commands", "kind-file", "board", "status", "events", "test-agent"}
    for text in pages.values():
        assert text.startswith("# ")
        assert "*Drawn from " in text


def _docs_tools() -> Path | None:
    """``sphinx-build`` beside this interpreter, if the manual's tools are installed."""
    found = Path(sys.executable).with_name("sphinx-build")
    if found.exists():
        return found
    if os.environ.get("FLUME_REQUIRE_DOCS") == "1":
        pytest.fail("sphinx-build is missing: pip install -e '.[docs]' (scripts/docs does)")
    pytest.skip("the manual's tools are not installed: pip install -e '.[docs]'")
    return None


def _build(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """Build the manual in ``source`` as scripts/docs does: every warning an error."""
    tool = _docs_tools()
    assert tool is not None
    return subprocess.run(  # noqa: S603 (this environment's sphinx-build, on a copy of the docs)
        [str(tool), "-W", "--keep-going", "-q", "-b", "html", str(source), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.processes
def test_the_manual_builds_and_a_broken_link_fails_it(tmp_path: Path) -> None:
    """The manual builds with no warning; a link to no page, or to no heading, fails the build."""
    source = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", source, ignore=shutil.ignore_patterns("_build", "reference"))
    built = _build(source, tmp_path / "html")
    assert built.returncode == 0, built.stderr
    page = (tmp_path / "html" / "reference" / "commands.html").read_text(encoding="utf-8")
    assert "flume launch" in page
    with (source / "tidy.md").open("a", encoding="utf-8") as tidy:
        tidy.write("\nSee [nowhere](nowhere.md) and [a heading](places.md#no-such-heading).\n")
    broken = _build(source, tmp_path / "broken")
    assert broken.returncode != 0
    assert "tidy.md" in broken.stderr
    assert "'nowhere.md'" in broken.stderr
    assert "'no-such-heading'" in broken.stderr
