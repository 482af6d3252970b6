"""``flume daemon install``: the systemd user unit's text, and its refusal where systemd is absent.

systemd does not run on the machines these tests run on (containers): what is checked is the
unit flume would write, and that the command refuses, writing nothing, where it cannot be used.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flume.cli.app import app
from flume.core.errors import UsageError
from flume.shell.supervisor import unit

runner = CliRunner()


@pytest.fixture(autouse=True)
def _own_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test has a config folder of its own: no unit is written into the user's."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def test_the_unit_runs_this_flume_and_restarts_it_on_failure() -> None:
    """The unit runs ``python -P -m flume daemon run``, Restart=on-failure, in default.target."""
    text = unit.unit_text(
        "/opt/py 3/bin/python", {"PATH": "/bin:/usr/bin", "XDG_STATE_HOME": '/s/"q"%', "X": "no"}
    )
    lines = text.splitlines()
    assert lines[0] == "[Unit]"
    assert "ExecStart=/opt/py 3/bin/python -P -m flume daemon run" in lines
    assert "Restart=on-failure" in lines
    assert "Type=simple" in lines
    assert lines[lines.index("[Install]") + 1] == "WantedBy=default.target"
    assert 'Environment="PATH=/bin:/usr/bin"' in lines
    # A quote escaped, a % doubled: systemd reads the value back whole.
    assert 'Environment="XDG_STATE_HOME=/s/\\"q\\"%%"' in lines
    assert not any("X=no" in line for line in lines)
    assert text.endswith("\n")


def test_print_shows_this_interpreter_s_unit_and_writes_nothing(tmp_path: Path) -> None:
    """``flume daemon install --print`` prints the unit for this Python; no file is written."""
    shown = runner.invoke(app, ["daemon", "install", "--print"])
    assert shown.exit_code == 0, shown.output
    assert f"ExecStart={sys.executable} -P -m flume daemon run" in shown.stdout
    assert "Restart=on-failure" in shown.stdout
    assert shown.stdout == unit.this_unit()
    assert not (tmp_path / "config").exists()


def test_install_is_refused_where_systemd_does_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``/run/systemd/system``: refused, exit 1, naming flume daemon start; nothing written."""
    monkeypatch.setattr(unit, "BOOTED", tmp_path / "run" / "systemd" / "system")
    refused = runner.invoke(app, ["daemon", "install"])
    assert refused.exit_code == 1, refused.output
    assert "systemd does not run this host's services" in refused.stderr
    assert "flume daemon start" in refused.stderr
    assert not unit.unit_path().exists()
    assert not (tmp_path / "config").exists()
    with pytest.raises(UsageError) as raised:
        unit.install()
    assert raised.value.exit_status == 1
    assert unit.unit_path() == tmp_path / "config" / "systemd" / "user" / "flume.service"
