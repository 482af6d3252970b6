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
