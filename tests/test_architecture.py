"""flume.core does no I/O: an allowlist of imports and a ban on I/O builtins (STYLE.md §2)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parent.parent / "flume" / "core"
ALLOWED = {
    "__future__",
    "typing",
    "collections",
    "enum",
    "functools",
    "itertools",
    "re",
    "string",
    "unicodedata",  # the Unicode database, read only: a made name's letters folded to ASCII
    "attrs",
    "pyrsistent",
    "flume",
}
BANNED_CALLS = {"open", "print", "input", "eval", "exec", "compile", "__import__", "breakpoint"}


def _core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def test_the_core_exists() -> None:
    """The allowlist has files to check."""
    assert len(_core_files()) > 10


@pytest.mark.parametrize("path", _core_files(), ids=lambda path: path.name)
def test_core_imports_only_pure_modules(path: Path) -> None:
    """Every import in flume/core is of a pure module, and every flume import is of the core."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}:{node.lineno}: relative import"
            names = [node.module or ""]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            assert top in ALLOWED, f"{path.name}:{node.lineno}: imports {name}"
            if top == "flume":
                assert name.startswith("flume.core"), f"{path.name}:{node.lineno}: imports {name}"


@pytest.mark.parametrize("path", _core_files(), ids=lambda path: path.name)
def test_core_calls_no_io_builtins(path: Path) -> None:
    """Nothing in flume/core calls open, print, input, eval, exec and the like."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in BANNED_CALLS, f"{path.name}:{node.lineno}: {node.func.id}()"


def test_the_allowlist_catches_an_io_import(tmp_path: Path) -> None:
    """The check itself fails on a module that imports os (it is not a check that cannot fail)."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="imports os"):
        test_core_imports_only_pure_modules(bad)


def test_the_core_package_gives_each_public_name_from_its_module() -> None:
    """``flume.core.<name>`` is imported on first use, and is the one its module defines."""
    import flume.core  # noqa: PLC0415 (the package as a caller sees it)
    from flume.core import errors, settings, tidy  # noqa: PLC0415

    for name in flume.core.__all__:
        assert getattr(flume.core, name) is not None, name
    assert flume.core.Settings is settings.Settings
    assert flume.core.UsageError is errors.UsageError
    assert flume.core.plan_tidy is tidy.plan
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = flume.core.nothing  # type: ignore[attr-defined]


def core_imports(source: str) -> set[str]:
    """The core modules ``source`` imports, wherever in it the import is (a function's too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            found.add(node.module)
            # ``from flume.core.workflow import lanes`` imports the module lanes.
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("flume.core.")}


def module_of(path: Path) -> str:
    """The dotted name of the core module at ``path``."""
    parts = path.relative_to(CORE.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_cycle(graph: dict[str, set[str]]) -> list[str]:
    """A cycle of modules in ``graph`` (each importing the next), or [] when there is none."""
    done: set[str] = set()
    trail: list[str] = []

    def visit(module: str) -> list[str]:
        if module in trail:
            return [*trail[trail.index(module) :], module]
        if module in done:
            return []
        trail.append(module)
        for imported in sorted(graph.get(module, set())):
            cycle = visit(imported)
            if cycle:
                return cycle
        trail.pop()
        done.add(module)
        return []

    for module in sorted(graph):
        cycle = visit(module)
        if cycle:
            return cycle
    return []


def test_core_modules_import_each_other_one_way() -> None:
    """No module of flume/core imports one that imports it back, even inside a function.

    The package ``flume.core`` itself is left out: it imports its public names on first use
    (PEP 562), for callers, and no core module imports it. So is ``lanes`` below
    ``orchestrate`` (the house's last circle, broken): orchestrate builds on lanes.
    """
    graph = {
        module_of(path): core_imports(path.read_text(encoding="utf-8"))
        for path in _core_files()
        if module_of(path) != "flume.core"
    }
    graph = {module: names & set(graph) for module, names in graph.items()}
    assert import_cycle(graph) == []
    assert "flume.core.workflow.lanes" in graph["flume.core.workflow.orchestrate"]


def test_an_import_cycle_is_found() -> None:
    """The cycle check finds a circle, and an import hidden in a function is an import."""
    assert import_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert import_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    hidden = "def f():\n    from flume.core.workflow import lanes\n"
    assert core_imports(hidden) == {"flume.core.workflow", "flume.core.workflow.lanes"}
