"""The fleet's bad input: a host's ``[fleet]`` malformed, a fleet launch refused, no Temporal.

Each is a clear message naming what is wrong (a config's file and line) and how to mend it,
exit status 2 (1 where Temporal does not answer), and nothing started: no workflow, no branch,
no journal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip(
    "temporalio", reason="the fleet's tests need flume's fleet extra: pip install '.[fleet]'"
)

from flume.core.errors import UsageError
from flume.fleet import config
from tests.integration.fleet_kit import Make, name


def write(tmp_path: Path, text: str) -> Path:
    """A host config file holding ``text``."""
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "line", "said"),
    [
        ('[fleet]\naddress = "x:1"\nslot = 2\n', 3, "[fleet] has no key 'slot'"),
        ("[fleet]\n\nslots = 0\n", 3, "slots is 0"),
        ('[fleet]\nslots = "two"\n', 2, "slots is 'two', not int"),
        ("[fleet]\nheartbeat = 1\n", 2, "heartbeat is 1 seconds"),
        ('[fleet]\nhost = "a b"\n', 2, "host 'a b' is no name"),
        ('[fleet]\naddress = "nowhere"\n', 2, "address 'nowhere' is no host:port"),
        ('[fleet]\ntls_cert = "c.pem"\n', 2, "tls_cert is given alone"),
        ("[fleet]\nrelaunch = 1\n", 2, "relaunch is 1, not bool"),
    ],
)
def test_a_malformed_fleet_table_names_its_file_and_line(
    tmp_path: Path, text: str, line: int, said: str
) -> None:
    """Each mistake in ``[fleet]`` is named at its line, with how to mend it."""
    path = write(tmp_path, text)
    with pytest.raises(UsageError) as raised:
        config.load(path)
    (problem,) = [each for each in raised.value.problems if said in each.what]
    assert problem.field == f"{path}:{line}"
    assert problem.mend
    assert raised.value.exit_status == 2


def test_no_config_file_is_the_defaults_and_a_named_missing_one_an_error(tmp_path: Path) -> None:
    """Absent, the defaults; named with --config and absent, an error."""
    assert config.load(None) == config.Fleet()
    with pytest.raises(UsageError, match="does not exist"):
        config.load(tmp_path / "nowhere.toml")
    with pytest.raises(UsageError, match="is not valid TOML"):
        config.load(write(tmp_path, "[fleet\n"))


@pytest.mark.processes
def test_a_bad_fleet_launch_is_refused_whole_and_starts_nothing(fleet_of: Make) -> None:
    """A bad name, an unknown kind, a missing base: exit 2, named, no workflow, nothing made."""
    fleet = fleet_of(hosts=1)
    (host,) = fleet.hosts
    before = set(fleet.runs())
    cases = [
        (["--kind", "fix", "--name", "bad name"], "holds a space"),
        (["--kind", "nope", "--name", name("k")], "nope"),
        (["--kind", "fix", "--name", name("b"), "--base", "nowhere"], "nowhere"),
        (["--kind", "fix", "--name", name("r"), "--relaunch", "--repository", "/"], ""),
    ]
    for args, said in cases:
        ran = host.flume("launch", "--fleet", "--brief", "Mend it.", "--agent", "test", *args)
        assert ran.returncode == 2, (args, ran.stderr)
        assert said in ran.stderr
        assert ran.stderr.startswith("flume: ")
    assert set(fleet.runs()) == before
    branches = host.flume("status", "--json")
    assert json.loads(branches.stdout)["places"] == []
    no_fleet = host.flume("launch", "--kind", "fix", "--name", "x", "--brief", "B", "--relaunch")
    assert no_fleet.returncode == 2
    assert "--relaunch is given without --fleet" in no_fleet.stderr


@pytest.mark.processes
def test_a_fleet_whose_temporal_does_not_answer_is_named_with_the_way_out(
    fleet_of: Make,
) -> None:
    """Status --fleet and launch --fleet with Temporal gone: exit 1, its address named."""
    fleet = fleet_of(hosts=1)
    (host,) = fleet.hosts
    settings = host.folder / "config" / "flume" / "config.toml"
    settings.write_text('[fleet]\naddress = "127.0.0.1:9"\n', encoding="utf-8")
    ran = host.flume("status", "--fleet")
    assert ran.returncode == 1, ran.stderr
    assert "127.0.0.1:9" in ran.stderr
    assert "does not answer" in ran.stderr
    ran = host.flume(
        "launch", "--fleet", "--kind", "fix", "--name", name("gone"), "--brief", "B.",
        "--agent", "test",
    )  # fmt: skip
    assert ran.returncode == 1, ran.stderr
    assert "does not answer" in ran.stderr
    assert json.loads(host.flume("status", "--json").stdout)["places"] == []
