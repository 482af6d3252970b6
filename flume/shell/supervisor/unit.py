"""``flume daemon install``: a systemd user unit that keeps the host's supervisor running.

Theory of operation. The supervisor is started by the first command that needs it and runs
until ``flume daemon stop``; killed (SIGKILL, the OOM killer), nothing starts it again until a
command needs it, and meanwhile no place is followed (issue 25, 2.6). Where systemd runs the
user's services, a user unit with ``Restart=on-failure`` starts it again at once: the unit
runs this interpreter's ``flume daemon run`` (which takes the host's lock, so a second one
never runs beside it), with the variables that say where flume keeps its state and finds its
programs, as a user's service inherits none of the shell's. ``flume daemon stop`` ends it
with status 0: systemd leaves it stopped until the next ``systemctl --user start flume``
or command that needs it.

Where systemd does not run (a container, a machine without it: ``/run/systemd/system`` is
absent, as ``sd_booted(3)`` tests) the command refuses, naming ``flume daemon start``; its
``--print`` shows the unit anyway.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from flume.core.errors import UsageError, refused

#: The unit's name, in the user's systemd folder.
UNIT = "flume.service"
#: The variables the unit hands the supervisor: where flume keeps its state and the places'
#: agents keep theirs, and where its programs (git, tmux, the agents) are found.
CARRIED = ("PATH", "HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "TMUX_TMPDIR")
#: sd_booted(3): systemd is the init system when this folder exists.
BOOTED = Path("/run/systemd/system")


def unit_text(python: str, environment: Mapping[str, str]) -> str:
    """The unit's text: ``python -P -m flume daemon run``, restarted when it fails.

    ``environment``: the variables of :data:`CARRIED` the unit sets (those given, in order).
    """
    carried = [
        f'Environment="{name}={_escaped(environment[name])}"'
        for name in CARRIED
        if environment.get(name)
    ]
    lines = [
        "[Unit]",
        "Description=flume's supervisor: carries the places' work (flume daemon run)",
        "",
        "[Service]",
        "Type=simple",
        f"ExecStart={_escaped(python)} -P -m flume daemon run",
        "Restart=on-failure",
        "RestartSec=2",
        *carried,
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return "\n".join(lines)


def _escaped(value: str) -> str:
    """A value as systemd reads it whole: its quotes and backslashes escaped, ``%`` doubled."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")


def unit_path() -> Path:
    """Where the user's systemd units are: ``$XDG_CONFIG_HOME/systemd/user/flume.service``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user" / UNIT


def this_unit() -> str:
    """The unit for this interpreter and this process's environment."""
    return unit_text(sys.executable, os.environ)


def systemd_runs(booted: Path | None = None) -> bool:
    """Whether systemd runs this host's services (sd_booted) and ``systemctl`` is found."""
    return (booted or BOOTED).is_dir() and shutil.which("systemctl") is not None


def install(booted: Path | None = None) -> Path:
    """Write the unit and have systemd enable and start it; the unit's path.

    Refused (exit status 1, nothing written) where systemd does not run; a ``systemctl`` that
    fails is named with its words (the unit written stays, for a person to enable).
    """
    if not systemd_runs(booted):
        raise refused(
            "systemd",
            f"systemd does not run this host's services ({booted or BOOTED} is absent, or "
            "systemctl is not found): no unit can keep the supervisor running here",
            "start it with flume daemon start (any command that needs it starts it too); "
            "flume daemon install --print shows the unit for a host that runs systemd",
        )
    path = unit_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(f".{UNIT}.new")
    staged.write_text(this_unit(), encoding="utf-8")
    staged.replace(path)
    for argv in (("daemon-reload",), ("enable", "--now", UNIT)):
        done = subprocess.run(  # noqa: S603 (systemctl with our own words)
            ["systemctl", "--user", *argv],  # noqa: S607 (systemctl as the user's PATH finds it)
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            words = (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"
            raise UsageError.one(
                "systemd",
                f"systemctl --user {' '.join(argv)} failed: {words}",
                f"the unit is written at {path}: enable it with systemctl --user enable --now "
                f"{UNIT} once that is mended",
                exit_status=1,
            )
    return path
