"""scripts/install-agents on a machine without npm: it says what to install, and exits 2."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.shared import ROOT


def test_without_npm_it_names_what_to_install(tmp_path: Path) -> None:
    """A clone with no agents installed and no npm on PATH: exit 2, npm and Node.js named."""
    clone = tmp_path / "clone"
    (clone / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "install-agents", clone / "scripts" / "install-agents")
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("bash", "dirname", "grep"):
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    ran = subprocess.run(  # noqa: S603 (bash, and the repository's own script)
        [str(tools / "bash"), str(clone / "scripts" / "install-agents")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": str(tools)},
    )
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "needs npm" in ran.stderr
    assert "Node.js" in ran.stderr
    assert not (clone / ".node").exists()
