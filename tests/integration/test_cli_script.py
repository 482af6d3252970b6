"""The ``flume`` console script: the app loads with the collector off, then runs with it on."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import gc, json, sys
sys.argv = ["flume", "--version"]
from flume.cli.script import main
try:
    main()
except SystemExit:
    pass
print(json.dumps({
    "app": "flume.cli.app" in sys.modules,
    "collecting": gc.isenabled(),
    "frozen": gc.get_freeze_count(),
}))
"""


def test_the_command_runs_with_the_collector_on_and_the_loaded_app_out_of_its_sight() -> None:
    """What loading the app made is frozen; the collector is on for what the command makes."""
    ran = subprocess.run(  # noqa: S603 (our own interpreter and probe)
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    )
    found = json.loads(ran.stdout.strip().splitlines()[-1])
    assert found["app"]
    assert found["collecting"]
    assert found["frozen"] > 10_000  # typer and the commands, not a handful
