"""Connecting to the fleet's Temporal, with the errors a person can act on."""

from __future__ import annotations

import asyncio
import os

from temporalio.client import Client, TLSConfig

from flume.core.errors import refused
from flume.fleet.config import Fleet, tls_paths

#: How long a command waits for Temporal to answer before it says it cannot reach it.
CONNECT_SECONDS = 10.0


def tls_of(fleet: Fleet) -> TLSConfig | bool:
    """The TLS settings the config names, or False for plain gRPC on a trusted network."""
    cert, key, ca = tls_paths(fleet)
    if cert is None and ca is None:
        return False
    return TLSConfig(
        server_root_ca_cert=ca.read_bytes() if ca is not None else None,
        client_cert=cert.read_bytes() if cert is not None else None,
        client_private_key=key.read_bytes() if key is not None else None,
    )


async def connect(fleet: Fleet, identity: str = "") -> Client:
    """A client of the fleet's Temporal; a refusal (exit 1) naming it when it does not answer."""
    try:
        return await asyncio.wait_for(
            Client.connect(
                fleet.address,
                namespace=fleet.namespace,
                tls=tls_of(fleet),
                identity=identity or f"flume@{os.getpid()}",
            ),
            timeout=CONNECT_SECONDS,
        )
    except (RuntimeError, OSError, TimeoutError) as error:
        where = f" ({fleet.source})" if fleet.source else ""
        raise refused(
            "fleet",
            f"the fleet's Temporal at {fleet.address}, namespace {fleet.namespace}, does not "
            f"answer: {error}",
            f"start it, or name where it runs in [fleet] address of the host's config{where}",
        ) from error
