"""An in-process pair of connected links on anyio memory object streams.

:func:`memory_link_pair` returns two :class:`MemoryLink` ends; what one sends the other
receives, frame for frame. It is real API (tests, the embedded default, in-process
connectors), not a test double: it enforces ``max_frame`` and reports closure exactly as the
byte-stream links do.

It knows nothing of JSON-RPC and does no framing; a frame is just ``bytes``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import count

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from switchboard.transport.errors import FrameTooLargeError
from switchboard.transport.framing import DEFAULT_MAX_FRAME
from switchboard.transport.link import NamedLink

__all__ = ["MemoryLink", "memory_link_pair"]

_pair_numbers = count(1)


class MemoryLink(NamedLink):
    """One end of an in-memory link; build with :func:`memory_link_pair`."""

    def __init__(
        self,
        send_stream: MemoryObjectSendStream[bytes],
        receive_stream: MemoryObjectReceiveStream[bytes],
        *,
        description: str,
        max_frame: int,
    ) -> None:
        super().__init__(description)
        self._tx = send_stream
        self._rx = receive_stream
        self._max_frame = max_frame

    async def send(self, frame: bytes) -> None:
        """Hand one frame to the other end (waits while its buffer is full)."""
        self._check_open()
        try:
            await self._tx.send(frame)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise self._closed_error("the other end is closed") from exc

    async def send_many(self, frames: Sequence[bytes]) -> None:
        """Hand several frames to the other end, in order."""
        for frame in frames:
            await self.send(frame)

    async def receive(self) -> bytes:
        """Return the next frame from the other end."""
        try:
            # Taking a waiting frame directly skips the checkpoint receive() would add.
            frame = self._rx.receive_nowait()
        except anyio.WouldBlock:
            try:
                frame = await self._rx.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                raise self._closed_error("end of stream") from None
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise self._closed_error("end of stream") from None
        if len(frame) > self._max_frame:
            raise FrameTooLargeError(self._max_frame)
        return frame

    async def aclose(self) -> None:
        """Close this end; the other end's ``receive`` then raises ``LinkClosedError``."""
        if self._closed:
            return
        self._closed = True
        self._tx.close()
        self._rx.close()


def memory_link_pair(
    max_frame: int = DEFAULT_MAX_FRAME, *, buffer: int = 1024
) -> tuple[MemoryLink, MemoryLink]:
    """Create two connected links.

    Args:
        max_frame: the largest frame either end accepts, in bytes.
        buffer: frames held in each direction before ``send`` waits for the reader.

    Returns:
        ``(a, b)``: what ``a`` sends, ``b`` receives, and the other way round.
    """
    number = next(_pair_numbers)
    a_to_b_tx, a_to_b_rx = anyio.create_memory_object_stream[bytes](buffer)
    b_to_a_tx, b_to_a_rx = anyio.create_memory_object_stream[bytes](buffer)
    a = MemoryLink(a_to_b_tx, b_to_a_rx, description=f"memory:{number}a", max_frame=max_frame)
    b = MemoryLink(b_to_a_tx, a_to_b_rx, description=f"memory:{number}b", max_frame=max_frame)
    return a, b
