"""Links over WebSocket: one JSON-RPC message per text frame.

:func:`dial_websocket` connects with the ``websockets`` asyncio client and yields a link;
:func:`websocket_link_from_connection` wraps a connection accepted by
``websockets.asyncio.server.serve``. Frames travel as text messages without a decode and
re-encode (``send(..., text=True)``, ``recv(decode=False)``).

**asyncio only** (``websockets`` has no anyio front-end). Oversized messages are refused by
``websockets`` itself (``max_size``): it closes the connection with code 1009, so on this
transport an oversized frame ends the link, unlike NDJSON links where it is skipped.

This module knows WebSocket connections; not JSON-RPC, not MCPL paths.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from websockets.asyncio.client import connect
from websockets.asyncio.connection import Connection
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from switchboard.transport.errors import LinkClosedError
from switchboard.transport.framing import DEFAULT_MAX_FRAME
from switchboard.transport.link import NamedLink

__all__ = ["WebSocketLink", "dial_websocket", "websocket_link_from_connection"]


def _close_reason(exc: ConnectionClosed) -> str:
    """The close code that ended the connection, whichever side sent it first."""
    frame = exc.rcvd if exc.rcvd_then_sent or exc.sent is None else exc.sent
    if frame is None:
        return "closed without a close frame"
    return f"close code {frame.code}" + (f": {frame.reason}" if frame.reason else "")


class WebSocketLink(NamedLink):
    """A link over one ``websockets`` asyncio connection (client or server side)."""

    def __init__(self, connection: Connection, *, description: str) -> None:
        super().__init__(description)
        self._connection = connection

    async def send(self, frame: bytes) -> None:
        """Send one frame as a text message."""
        self._check_open()
        try:
            await self._connection.send(frame, text=True)
        except ConnectionClosed as exc:
            raise self._closed_error(_close_reason(exc)) from exc

    async def receive(self) -> bytes:
        """Return the next message, undecoded."""
        self._check_open()
        try:
            message = await self._connection.recv(decode=False)
        except ConnectionClosed as exc:
            raise self._closed_error(_close_reason(exc)) from exc
        return message if isinstance(message, bytes) else message.encode()

    async def aclose(self) -> None:
        """Close the connection with a normal closure; idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._connection.close()


def websocket_link_from_connection(connection: Connection) -> WebSocketLink:
    """Wrap a server-side connection (the argument of a ``serve`` handler) as a link."""
    address = connection.remote_address
    where = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)
    return WebSocketLink(connection, description=f"ws:{where}")


@asynccontextmanager
async def dial_websocket(
    url: str, *, max_frame: int = DEFAULT_MAX_FRAME
) -> AsyncIterator[WebSocketLink]:
    """Connect to ``url`` (``ws://`` or ``wss://``) and yield a link; closes on exit.

    Raises:
        LinkClosedError: the connection or the opening handshake failed.
    """
    try:
        connection = await connect(url, max_size=max_frame)
    except (OSError, InvalidHandshake, InvalidURI, TimeoutError) as exc:
        raise LinkClosedError(f"could not connect to {url}: {exc}") from exc
    link = WebSocketLink(connection, description=f"ws:{url}")
    try:
        yield link
    finally:
        await link.aclose()
