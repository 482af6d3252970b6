"""What a command imports: ``flume --help`` loads none of the heavy libraries (bench/cli.py).

A test of what is imported, not of time: each command is run in a fresh interpreter of its own,
which then prints the modules loaded. Timing is bench/cli.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from flume.shell.store import places
from flume.shell.supervisor import client
from tests.integration.test_status import place, repository

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "fix-clean.toml"

#: What ``--help`` must not load: each costs a command tens of milliseconds. ``flume.api`` may
#: be loaded (every command goes through it) but loads none of these at its top.
HEAVY = (
    "plumbum",
    "cattrs",
    "rich.markdown",
    "rich",
    "mcp",
    "flume.core.step",
    "flume.shell.store.places",
    "flume.shell.store.journal",
    "flume.shell.store.codec",
    # The fleet's (flume[fleet]): Temporal's SDK and its protobufs load only for --fleet.
    "temporalio",
    "google.protobuf",
    "flume.fleet.client",
    # The monitor's (flume[monitor]): its server, toolkit and templates load for it alone.
    "starlette",
    "uvicorn",
    "jinja2",
    "flume.web.app",
)

# The probe loads nothing before the command runs (json only after the modules are listed).
_PROBE = """
import sys
sys.argv = ["flume", *sys.argv[1:]]
from flume.cli.script import main
try:
    main()
except SystemExit:
    pass
modules = sorted(sys.modules)
import json
module = sys.modules.get("flume.shell.store.codec")
codec = getattr(module, "codec", None)
built = module is not None and (
    "converter" in vars(module) or (codec is not None and codec.cache_info().currsize > 0)
)
print(json.dumps({"modules": modules, "converter_built": built}), file=sys.stderr)
"""


def loaded(*argv: str, state: Path | None = None, cwd: Path | None = None) -> tuple[set[str], bool]:
    """The modules ``flume argv`` loaded, and whether the one converter was built."""
    environment = dict(os.environ)
    if state is not None:
        environment["XDG_STATE_HOME"] = str(state)
    ran = subprocess.run(  # noqa: S603 (our own interpreter and probe)
        [sys.executable, "-c", _PROBE, *argv],
        env=environment,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(ran.stderr.strip().splitlines()[-1])
    return set(found["modules"]), found["converter_built"]


#: What help needs neither: it is answered from the commands' declarations alone.
HELP_NEEDS_NONE = ("attrs", "json", "flume.api")


def test_help_imports_none_of_the_heavy_libraries() -> None:
    """``flume --help`` builds no converter and loads no plumbum, cattrs, rich, mcp or rules."""
    modules, converter_built = loaded("--help")
    assert "flume.cli.app" in modules  # the probe ran the CLI
    assert not converter_built
    for heavy in (*HEAVY, *HELP_NEEDS_NONE):
        assert heavy not in modules, f"flume --help imported {heavy}"


def test_a_command_s_help_imports_none_either() -> None:
    """``flume launch --help`` is answered from the option declarations alone."""
    modules, converter_built = loaded("launch", "--help")
    assert not converter_built
    for heavy in (*HEAVY, *HELP_NEEDS_NONE):
        assert heavy not in modules, f"flume launch --help imported {heavy}"


def test_status_with_no_places_reads_nothing_and_imports_none_either(tmp_path: Path) -> None:
    """A host with no repository registered and no supervisor: status answers at once."""
    modules, converter_built = loaded("status", state=tmp_path / "state")
    assert not converter_built
    for heavy in (*HEAVY, "attrs"):
        assert heavy not in modules, f"flume status imported {heavy}"
    modules, _ = loaded("status", "--json", state=tmp_path / "state")
    assert "cattrs" not in modules
    assert "flume.core.place" not in modules


def test_an_agent_s_command_outside_any_place_is_refused_before_loading_the_rules(
    tmp_path: Path,
) -> None:
    """``flume submit`` and ``flume needs`` in a folder in no place: no git, codec or rules."""
    for argv in (["submit"], ["needs", "the API key"]):
        modules, converter_built = loaded(*argv, state=tmp_path / "state", cwd=tmp_path)
        assert not converter_built
        for heavy in (*HEAVY, "attrs", "flume.core.observations", "flume.shell.tools.git"):
            assert heavy not in modules, f"flume {argv[0]} imported {heavy}"


def test_the_fleet_s_help_imports_no_temporal() -> None:
    """``flume fleet --help`` and ``flume fleet tell --help`` load no Temporal SDK."""
    for argv in (["fleet", "--help"], ["fleet", "tell", "--help"]):
        modules, _ = loaded(*argv)
        assert "flume.cli.fleet_commands" in modules
        for heavy in HEAVY:
            assert heavy not in modules, f"flume {' '.join(argv)} imported {heavy}"


def test_the_probe_sees_what_a_command_does_import() -> None:
    """The check can fail: ``flume simulate --json`` builds the converter, loading cattrs."""
    modules, converter_built = loaded("simulate", "--json", str(SCENARIO))
    assert converter_built
    assert "cattrs" in modules


def test_status_answered_by_the_running_supervisor_decodes_no_place(host: Path) -> None:
    """With the supervisor running, status asks it and prints: no attrs, rules or journal."""
    repo = repository(host / "repo")
    place(repo, "fix", "typo")
    assert client.ensure(wait=30.0) is not None
    for argv in (["status"], ["status", "--json"]):
        modules, converter_built = loaded(*argv)
        assert "flume.shell.supervisor.client" in modules  # it asked the supervisor
        assert not converter_built
        for heavy in (*HEAVY, "attrs", "flume.core.place", "flume.core.status"):
            assert heavy not in modules, f"flume {' '.join(argv)} imported {heavy}"


def test_a_launch_handed_to_the_running_supervisor_loads_no_attrs(host: Path) -> None:
    """``flume launch`` handed over builds its words and waits: no attrs, rules, git or journal.

    attrs alone was a tenth of the command's start-up, end to end against a bare
    ``git worktree add`` (bench/launch.py).
    """
    repo = repository(host / "repo")
    assert client.ensure(wait=30.0) is not None
    argv = ("launch", "--repository", str(repo), "--kind", "fix", "--name", "quick")
    modules, converter_built = loaded(
        *argv, "--brief", "Mend it.", "--agent", "test", "--panes", "print"
    )
    assert "flume.shell.supervisor.handover" in modules  # it handed the launch over
    assert not converter_built
    for heavy in (*HEAVY, "attrs", "flume.core.place", "flume.shell.tools.git"):
        assert heavy not in modules, f"flume launch imported {heavy}"
    journal = places.journals_dir(repo) / "fix--quick" / places.JOURNAL
    assert journal.is_file()  # and the supervisor launched it
