"""Open the link a connector config names: a spawned stdio process, TCP, or WebSocket."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

from switchboard.config import ConnectorConfig
from switchboard.host.errors import HostError
from switchboard.transport import Link, dial_tcp, dial_websocket, spawn_stdio


class LinkConfigError(HostError):
    """The connector's ``url`` is not one Switchboard can dial."""


@asynccontextmanager
async def open_link(config: ConnectorConfig) -> AsyncIterator[Link]:
    """Spawn or dial the connector and yield its link; closing the context ends it."""
    if config.command is not None:
        async with spawn_stdio(
            config.command,
            env=config.env or None,
            cwd=config.cwd,
            name=config.id,
            max_frame=config.max_frame_bytes,
        ) as link:
            yield link
        return
    url = config.url or ""
    parts = urlsplit(url)
    if parts.scheme == "tcp":
        if parts.hostname is None or parts.port is None:
            raise LinkConfigError(f"connector {config.id}: tcp URL needs host and port: {url}")
        async with dial_tcp(parts.hostname, parts.port, max_frame=config.max_frame_bytes) as link:
            yield link
    elif parts.scheme in ("ws", "wss"):
        async with dial_websocket(url, max_frame=config.max_frame_bytes) as link:
            yield link
    else:
        raise LinkConfigError(
            f"connector {config.id}: unsupported URL scheme {parts.scheme!r} (use tcp://, ws://, wss://)"
        )
