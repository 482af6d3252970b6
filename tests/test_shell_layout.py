"""The shell's shape: its packages are layered, with no import hidden to dodge a cycle.

import-linter (pyproject.toml) holds the layers; these tests hold what it cannot see: an import
of another shell module made inside a function or under ``TYPE_CHECKING`` (how a cycle hides),
and the map a newcomer reads (flume/shell/__init__.py, docs/architecture.md) naming every
package there is.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import flume.shell
from flume.core.launch import AgentName
from flume.shell import agents

ROOT = Path(__file__).resolve().parent.parent
SHELL = ROOT / "flume" / "shell"


def _shell_files() -> list[Path]:
    return sorted(SHELL.rglob("*.py"))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _shell_module(node: ast.Import | ast.ImportFrom) -> str | None:
    """The flume.shell module ``node`` imports, if it imports one."""
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return f"relative import from {'.' * node.level}{node.module or ''}"
        names = [node.module or ""]
    else:
        names = [alias.name for alias in node.names]
    return next((name for name in names if name.startswith("flume.shell")), None)


def hidden_shell_imports(source: str) -> list[str]:
    """Each import of a shell module that is not at a module's top level, with its line."""
    tree = ast.parse(source)
    found: list[str] = []

    def visit(node: ast.AST, *, hidden: str | None) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            module = _shell_module(node)
            if module is not None and hidden is not None:
                found.append(f"line {node.lineno}: {module} ({hidden})")
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            hidden = hidden or "inside a function"
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, hidden="under TYPE_CHECKING")
            for child in node.orelse:
                visit(child, hidden=hidden)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, hidden=hidden)

    visit(tree, hidden=None)
    return found


@pytest.mark.parametrize("path", _shell_files(), ids=lambda p: str(p.relative_to(SHELL)))
def test_no_shell_module_hides_an_import_of_another(path: Path) -> None:
    """Every import of a shell module by a shell module is at its top, seen by import-linter."""
    assert hidden_shell_imports(path.read_text(encoding="utf-8")) == []


def test_a_hidden_import_is_found() -> None:
    """The check finds each way of hiding an import, and passes a top-level one."""
    source = """
from typing import TYPE_CHECKING
from flume.shell.tools import git
if TYPE_CHECKING:
    from flume.shell.store.follower import Followed
def f():
    from flume.shell.supervisor import client
    import flume.shell.process
class C:
    def g(self):
        from . import sibling
"""
    assert hidden_shell_imports(source) == [
        "line 5: flume.shell.store.follower (under TYPE_CHECKING)",
        "line 7: flume.shell.supervisor (inside a function)",
        "line 8: flume.shell.process (inside a function)",
        "line 11: relative import from . (inside a function)",
    ]


def _packages() -> list[str]:
    return sorted(p.name for p in SHELL.iterdir() if (p / "__init__.py").is_file())


def test_the_shell_is_laid_out_in_its_packages() -> None:
    """The shell's modules live in its packages; only the bottom three sit beside them."""
    assert _packages() == [
        "agents",
        "commands",
        "declared",
        "observe",
        "panes",
        "perform",
        "store",
        "supervisor",
        "tools",
    ]
    loose = sorted(p.name for p in SHELL.glob("*.py"))
    assert loose == ["__init__.py", "environment.py", "host.py", "process.py"]


@pytest.mark.parametrize(
    "text",
    [flume.shell.__doc__ or "", (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")],
    ids=["flume/shell/__init__.py", "docs/architecture.md"],
)
def test_the_map_names_every_package_of_the_shell(text: str) -> None:
    """A newcomer's map names every package, and every module beside them."""
    for name in [*_packages(), "environment", "host", "process"]:
        assert f"{name}/" in text or f"{name}.py" in text, f"the map does not name {name}"


#: The one place an agent's name becomes its module (flume/shell/agents/__init__.py).
AGENT_LOOKUP = SHELL / "agents" / "__init__.py"


def _is_agent_member(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "AgentName"
    )


def agent_branches(source: str) -> list[str]:
    """Each place ``source`` tells agents apart by name: compared, matched, or a table's key."""
    found: list[int] = []
    for node in ast.walk(ast.parse(source)):
        named: list[ast.expr] = []
        if isinstance(node, ast.Compare):
            named = [node.left, *node.comparators]
        elif isinstance(node, ast.MatchValue):
            named = [node.value]
        elif isinstance(node, ast.Dict):
            named = [key for key in node.keys if key is not None]
        found += [each.lineno for each in named if _is_agent_member(each)]
    return [f"line {line}" for line in sorted(found)]


def _agent_knowing_files() -> list[Path]:
    cli = sorted((ROOT / "flume" / "cli").rglob("*.py"))
    return [p for p in _shell_files() if p != AGENT_LOOKUP] + cli + [ROOT / "flume" / "api.py"]


@pytest.mark.parametrize("path", _agent_knowing_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_outside_the_agents_tells_agents_apart_by_name(path: Path) -> None:
    """What is particular to an agent is asked of its module (``agents.of``), never branched on."""
    assert agent_branches(path.read_text(encoding="utf-8")) == []


def test_an_agent_branch_is_found() -> None:
    """The check finds a comparison, a match and a table keyed by an agent's name."""
    source = """
if kind is AgentName.CODEX:
    pass
match kind:
    case AgentName.TEST:
        pass
VARIABLES = {AgentName.CLAUDE: "FLUME_CLAUDE"}
default = AgentName.CLAUDE.value
"""
    assert agent_branches(source) == ["line 2", "line 5", "line 7"]
    assert agent_branches(AGENT_LOOKUP.read_text(encoding="utf-8")) != []


def test_the_test_agent_is_started_by_a_module_name_declared_in_one_place() -> None:
    """Only the test agent's own module in the shell names ``flume.testing.agent``."""
    naming = [
        str(path.relative_to(SHELL))
        for path in _shell_files()
        if any(
            isinstance(node, ast.Constant) and node.value == "flume.testing.agent"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        )
    ]
    assert naming == ["agents/scripted.py"]


def test_every_agent_a_launch_may_name_has_its_module() -> None:
    """``agents.of`` knows every agent name, each by a module of its own."""
    modules = [agents.of(name).__name__ for name in AgentName]  # type: ignore[attr-defined]
    assert sorted(modules) == [
        "flume.shell.agents.claude",
        "flume.shell.agents.codex",
        "flume.shell.agents.scripted",
    ]
