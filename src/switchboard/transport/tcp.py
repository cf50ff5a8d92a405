"""NDJSON links over TCP: dial a connector, or wrap a connection someone accepted.

:func:`dial_tcp` connects and yields a link; :func:`tcp_link_from_stream` wraps an accepted
anyio stream (from ``anyio.create_tcp_listener``). Framing is ``NdjsonDecoder``'s, through
``NdjsonStreamLink``; anyio sets ``TCP_NODELAY`` on both kinds of socket.

This module knows addresses and sockets; not framing, not JSON-RPC, not who dials whom in
MCPL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.abc import ByteStream, SocketAttribute

from switchboard.transport.errors import LinkClosedError
from switchboard.transport.framing import DEFAULT_MAX_FRAME
from switchboard.transport.stream_link import NdjsonStreamLink

__all__ = ["dial_tcp", "tcp_link_from_stream"]


def _remote_address(stream: ByteStream) -> str:
    address = stream.extra(SocketAttribute.remote_address, None)
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return "unknown"


def tcp_link_from_stream(
    stream: ByteStream, *, max_frame: int = DEFAULT_MAX_FRAME, description: str | None = None
) -> NdjsonStreamLink:
    """Wrap a connected byte stream (normally an accepted ``SocketStream``) as a link.

    Args:
        stream: the connection; the link owns it and closes it.
        max_frame: the largest inbound frame accepted, in bytes.
        description: for logs; defaults to ``tcp:<remote host>:<remote port>``.
    """
    return NdjsonStreamLink(
        stream,
        stream,
        description=description or f"tcp:{_remote_address(stream)}",
        max_frame=max_frame,
    )


@asynccontextmanager
async def dial_tcp(
    host: str, port: int, *, max_frame: int = DEFAULT_MAX_FRAME
) -> AsyncIterator[NdjsonStreamLink]:
    """Connect to ``host:port`` and yield a link; the connection closes on exit.

    Raises:
        LinkClosedError: the connection could not be made.
    """
    try:
        stream = await anyio.connect_tcp(host, port)
    except OSError as exc:
        raise LinkClosedError(f"could not connect to tcp:{host}:{port}: {exc}") from exc
    link = tcp_link_from_stream(stream, max_frame=max_frame, description=f"tcp:{host}:{port}")
    try:
        yield link
    finally:
        await link.aclose()
