"""The message-level boundary between a byte transport and the JSON-RPC peer.

A :class:`Link` moves whole frames: one serialized JSON message per ``send``, one per
``receive``. The link owns framing (a newline on stdio and TCP, a WebSocket message on
WebSocket); the peer never sees it. Links raise :class:`LinkClosedError` for every kind of
end (EOF, a broken pipe, a reset, a local close) and :class:`FrameTooLargeError` for an
inbound frame over the limit, after which the link is still usable.

This module knows nothing about JSON-RPC, message contents or which transport is underneath;
links know nothing about requests, ids or ordering.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from switchboard.transport.errors import LinkClosedError

__all__ = ["BatchLink", "Link", "NamedLink"]


@runtime_checkable
class Link(Protocol):
    """A bidirectional, message-framed link.

    ``send`` may be called by one task at a time and ``receive`` by one task at a time (the
    peer guarantees both); the two may run concurrently.
    """

    @property
    def description(self) -> str:
        """Say what is at the other end, for logs (``"stdio:discord[pid 123]"``)."""
        ...

    async def send(self, frame: bytes) -> None:
        """Send one serialized JSON message (no trailing newline).

        Raises:
            LinkClosedError: the link is closed or broken.
        """
        ...

    async def receive(self) -> bytes:
        """Return the next inbound frame.

        Raises:
            LinkClosedError: at EOF or after the link was closed.
            FrameTooLargeError: the next frame was too large and was discarded.
        """
        ...

    async def aclose(self) -> None:
        """Close the link; idempotent. Pending ``receive`` calls raise ``LinkClosedError``."""
        ...


@runtime_checkable
class BatchLink(Link, Protocol):
    """A link that can write several frames with one write (NDJSON links do)."""

    async def send_many(self, frames: Sequence[bytes]) -> None:
        """Send ``frames`` in order with a single write.

        Raises:
            LinkClosedError: the link is closed or broken.
        """
        ...


class NamedLink:
    """What links that wrap one connection share: a description and their closed errors."""

    def __init__(self, description: str) -> None:
        self._description = description
        self._closed = False

    @property
    def description(self) -> str:
        """What is at the other end, for logs."""
        return self._description

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._description}>"

    def _closed_error(self, what: str) -> LinkClosedError:
        return LinkClosedError(f"link {self._description} is closed ({what})")

    def _check_open(self) -> None:
        if self._closed:
            raise self._closed_error("closed locally")
