"""Open the link a connector config names: a spawned stdio process, TCP, or WebSocket.

It also tells a permanent failure from a transient one (:func:`permanent_failure`): a program
or ``cwd`` that is missing (checked before each spawn by
:func:`switchboard.config.check.spawn_problem`, naming the path) or a URL that cannot be dialed
will not mend by retrying, while a refused connection or a child that exited may.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

from switchboard.config import ConnectorConfig
from switchboard.config.check import program_argv, spawn_problem
from switchboard.refusals.errors import HostError
from switchboard.transport import Link, SpawnError, dial_tcp, dial_websocket, spawn_stdio

__all__ = ["LinkConfigError", "open_link", "permanent_failure"]


class LinkConfigError(HostError):
    """The connector cannot be reached as configured: its ``url`` is not one Switchboard can
    dial, or its program or ``cwd`` is missing. Retrying cannot help."""


def permanent_failure(exc: BaseException) -> bool:
    """Whether ``exc`` (raised by opening or serving a link) is one retrying cannot mend."""
    return isinstance(exc, LinkConfigError) or (isinstance(exc, SpawnError) and exc.permanent)


@asynccontextmanager
async def open_link(config: ConnectorConfig) -> AsyncIterator[Link]:
    """Spawn or dial the connector and yield its link; closing the context ends it."""
    if config.command is not None:
        problem = spawn_problem(config)
        if problem is not None:
            raise LinkConfigError(problem)
        async with spawn_stdio(
            program_argv(config),
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
