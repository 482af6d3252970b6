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
