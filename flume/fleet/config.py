"""A host's ``[fleet]`` configuration: where its fleet's Temporal is, and what the host gives it.

The host's config file is ``$XDG_CONFIG_HOME/flume/config.toml`` (``~/.config/flume/config.toml``),
or the file ``--config`` names. The form (every key optional)::

    [fleet]
    address = "127.0.0.1:7233"   # the fleet's Temporal frontend
    namespace = "default"
    queue = "flume"              # the task queues' prefix: one fleet's hosts share it
    host = "build-3"             # this host's name in the fleet (default: hostname-<host id>)
    slots = 2                    # at most this many fleet places live on this host at once
    heartbeat = 10               # seconds without a heartbeat before a host is taken as lost
    relaunch = false             # carry a lost host's places again elsewhere (launch default)
    tls_cert = "/etc/flume/client.pem"   # TLS to Temporal: a client certificate and its key,
    tls_key = "/etc/flume/client.key"    # given together,
    tls_ca = "/etc/flume/ca.pem"         # and the server's root CA (alone: TLS, no client cert)

A malformed file is a :class:`UsageError` naming the file, the line and how to mend it, as a
repository's ``.flume.toml`` is. Nothing here talks to Temporal.
"""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import tomllib
from pathlib import Path
from typing import Any

from flume.core.errors import Problem, UsageError
from flume.shell.store import places

#: The keys ``[fleet]`` takes, with the type each must have.
KEYS: dict[str, tuple[type, ...]] = {
    "address": (str,),
    "namespace": (str,),
    "queue": (str,),
    "host": (str,),
    "slots": (int,),
    "heartbeat": (int, float),
    "relaunch": (bool,),
    "tls_cert": (str,),
    "tls_key": (str,),
    "tls_ca": (str,),
}
#: A name safe in a task queue's name and in a person's command line.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_ADDRESS = re.compile(r"[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}")
#: The least heartbeat window: a host's worker heartbeats each place once a second.
MIN_HEARTBEAT = 3.0


@dataclasses.dataclass(frozen=True)
class Fleet:
    """A host's fleet settings, each as ``[fleet]`` gave it or its default."""

    address: str = "127.0.0.1:7233"
    namespace: str = "default"
    queue: str = "flume"
    #: This host's name; empty: :func:`host_name` makes one from the machine's and flume's.
    host: str = ""
    slots: int = 2
    heartbeat: float = 10.0
    relaunch: bool = False
    tls_cert: str = ""
    tls_key: str = ""
    tls_ca: str = ""
    #: The file it was read from, to name in messages; empty: none was there.
    source: str = ""


def default_path() -> Path:
    """``$XDG_CONFIG_HOME/flume/config.toml``, else ``~/.config/flume/config.toml``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "flume" / "config.toml"


def _line(lines: list[str], pattern: str) -> int | None:
    regex = re.compile(pattern)
    return next((number for number, text in enumerate(lines, 1) if regex.search(text)), None)


def load(path: Path | None = None) -> Fleet:
    """The ``[fleet]`` of the host's config file (``path``, else :func:`default_path`).

    A file that is not there gives the defaults when no ``path`` was named, and an error when
    one was. Any key misspelt or of the wrong kind is named with its line, all at once.
    """
    where = path or default_path()
    try:
        text = where.read_text(encoding="utf-8")
    except FileNotFoundError:
        if path is None:
            return Fleet()
        raise UsageError.one(
            "config",
            f"{where} does not exist",
            "name the host's config file, or leave --config out",
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError.one(
            "config", f"{where} cannot be read: {error}", "make it a readable UTF-8 TOML file"
        ) from error
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise UsageError.one(
            str(where), f"is not valid TOML: {error}", "mend the TOML at the line named"
        ) from error
    fleet = table.get("fleet", {})
    lines = text.splitlines()
    header = _line(lines, r"^\s*\[fleet\]") or 1
    if not isinstance(fleet, dict):
        raise UsageError.one(
            f"{where}:{header}", "fleet is not a table", "write it as a [fleet] table"
        )
    problems = list(_problems(where, lines, header, fleet))
    if problems:
        raise UsageError(tuple(problems))
    values: dict[str, Any] = {key: fleet[key] for key in KEYS if key in fleet}
    if "heartbeat" in values:
        values["heartbeat"] = float(values["heartbeat"])
    return Fleet(**values, source=str(where))


def _problems(where: Path, lines: list[str], header: int, fleet: dict[str, Any]) -> list[Problem]:
    """Each key of ``[fleet]`` that is unknown, of the wrong kind or out of range."""
    found: list[Problem] = []

    def at(key: str) -> str:
        pattern = r"^\s*" + re.escape(key) + r"\s*="
        return f"{where}:{_line(lines, pattern) or header}"

    for key, value in fleet.items():
        if key not in KEYS:
            known = ", ".join(KEYS)
            found.append(Problem(at(key), f"[fleet] has no key {key!r}", f"use one of: {known}"))
            continue
        types = KEYS[key]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            kinds = " or ".join("a number" if t is float else t.__name__ for t in types)
            found.append(
                Problem(at(key), f"{key} is {value!r}, not {kinds}", f"give {key} as {kinds}")
            )
    if found:
        return found
    if "slots" in fleet and not 1 <= fleet["slots"] <= 256:
        found.append(Problem(at("slots"), f"slots is {fleet['slots']}", "give 1 to 256 slots"))
    if "heartbeat" in fleet and not MIN_HEARTBEAT <= fleet["heartbeat"] <= 3600:
        found.append(
            Problem(
                at("heartbeat"),
                f"heartbeat is {fleet['heartbeat']} seconds",
                f"give {MIN_HEARTBEAT:g} to 3600 seconds",
            )
        )
    found.extend(
        Problem(
            at(key),
            f"{key} {fleet[key]!r} is no name",
            "use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
        for key in ("host", "queue")
        if key in fleet and not _NAME.fullmatch(fleet[key])
    )
    if "address" in fleet and not _ADDRESS.fullmatch(fleet["address"]):
        found.append(
            Problem(
                at("address"),
                f"address {fleet['address']!r} is no host:port",
                "write it as host:port",
            )
        )
    if ("tls_cert" in fleet) != ("tls_key" in fleet):
        given = "tls_cert" if "tls_cert" in fleet else "tls_key"
        found.append(
            Problem(at(given), f"{given} is given alone", "give tls_cert and tls_key together")
        )
    found.extend(
        Problem(at(key), f"{key} {fleet[key]!r} is no file", "name a readable PEM file")
        for key in ("tls_cert", "tls_key", "tls_ca")
        if key in fleet and not (where.parent / fleet[key]).is_file()
    )
    return found


def overridden(fleet: Fleet, **given: Any) -> Fleet:  # noqa: ANN401 (a setting's value)
    """``fleet`` with the command line's settings laid over it (each None is left as it was)."""
    problems: list[Problem] = []
    if given.get("slots") is not None and not 1 <= given["slots"] <= 256:
        problems.append(Problem("--slots", f"--slots is {given['slots']}", "give 1 to 256 slots"))
    if given.get("host") is not None and not _NAME.fullmatch(given["host"]):
        problems.append(
            Problem("--host", f"--host {given['host']!r} is no name", "use letters, digits, . _ -")
        )
    if given.get("address") is not None and not _ADDRESS.fullmatch(given["address"]):
        problems.append(
            Problem("--address", f"--address {given['address']!r} is no host:port", "host:port")
        )
    if problems:
        raise UsageError(tuple(problems))
    return dataclasses.replace(
        fleet, **{key: value for key, value in given.items() if value is not None}
    )


def host_name(fleet: Fleet, host_id: str | None = None) -> str:
    """This host's name in the fleet: ``[fleet] host``, else the machine's name and flume's id.

    flume's id is the one a launch records (``host_id``, else made now in the state folder).
    """
    if fleet.host:
        return fleet.host
    if host_id is None:
        host_id = places.host().id
    machine = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname()).strip("-.") or "host"
    return f"{machine[:40]}-{host_id[:8]}"


def tls_paths(fleet: Fleet) -> tuple[Path | None, Path | None, Path | None]:
    """The TLS files (certificate, key, root CA), relative to the config file's folder."""
    folder = Path(fleet.source).parent if fleet.source else Path()

    def path(value: str) -> Path | None:
        return (folder / value) if value else None

    return path(fleet.tls_cert), path(fleet.tls_key), path(fleet.tls_ca)
