"""What a test does without what it needs from outside the repository (tests/shared.py)."""

from __future__ import annotations

import pytest

from tests import shared


@pytest.mark.parametrize("variable", [shared.REQUIRE_SHARED, shared.REQUIRE_AGENTS])
def test_without_it_a_test_is_skipped_with_what_is_missing(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the run does not promise it (CI=true alone does not), a skip naming what is missing."""
    monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.skip.Exception, match="no corpus at /nowhere"):
        shared.lacking("no corpus at /nowhere", variable)


@pytest.mark.parametrize("variable", [shared.REQUIRE_SHARED, shared.REQUIRE_AGENTS])
def test_where_the_run_requires_it_a_test_fails(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the run promises it (.ci/run, scripts/test), a failure naming it and the variable."""
    monkeypatch.setenv(variable, "1")
    with pytest.raises(pytest.fail.Exception, match=f"no corpus at /nowhere \\({variable}=1"):
        shared.lacking("no corpus at /nowhere", variable)


def test_ci_run_requires_shared_and_scripts_test_the_agents() -> None:
    """The runs that promise them say so, and nothing keys on CI alone."""
    ci_run = (shared.ROOT / ".ci" / "run").read_text(encoding="utf-8")
    script = (shared.ROOT / "scripts" / "test").read_text(encoding="utf-8")
    assert f"{shared.REQUIRE_SHARED}=1" in ci_run
    assert f"export {shared.REQUIRE_AGENTS}=1" in script
    assert "unset PYTHONDONTWRITEBYTECODE" in script
