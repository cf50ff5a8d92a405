"""An NDJSON :class:`~switchboard.transport.link.Link` over anyio byte streams.

:class:`NdjsonStreamLink` is the short pump shared by the subprocess stdio link and the TCP
link: it reads chunks, feeds them to :class:`~switchboard.transport.framing.NdjsonDecoder`,
hands out frames one at a time, and writes frames with a newline each (several in one
write with ``send_many``). It maps every stream failure to ``LinkClosedError``.

It knows nothing of processes, sockets or JSON; the transport modules build it from the
streams they own.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Sequence

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from switchboard.transport.errors import FrameTooLargeError, LinkClosedError
from switchboard.transport.framing import (
    DEFAULT_MAX_FRAME,
    FrameTooLarge,
    NdjsonDecoder,
    encode_frames,
)

__all__ = [
    "NdjsonStreamLink",
    "asyncio_read_transport",
    "asyncio_stream_writer",
    "asyncio_write_transport",
]

_READ_SIZE = 256 * 1024

# Every way an anyio byte stream (or the OS under it) says "this is over".
_STREAM_ENDED = (
    anyio.EndOfStream,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    ConnectionError,
    OSError,
)


class NdjsonStreamLink:
    """Newline-delimited frames over a receive stream and a send stream.

    Args:
        receive_stream: where inbound bytes come from.
        send_stream: where outbound bytes go (may be the same object as ``receive_stream``).
        description: what is at the other end, for logs.
        max_frame: the largest inbound frame accepted, in bytes.
    """

    def __init__(
        self,
        receive_stream: ByteReceiveStream,
        send_stream: ByteSendStream,
        *,
        description: str,
        max_frame: int = DEFAULT_MAX_FRAME,
    ) -> None:
        self._rx = receive_stream
        self._tx = send_stream
        self._description = description
        self._decoder = NdjsonDecoder(max_frame)
        self._ready: deque[bytes | FrameTooLarge] = deque()
        self._eof = False
        self._closed = False
        self._writer = asyncio_stream_writer(send_stream)
        self._write_now = _sync_writer(self._writer)

    @property
    def description(self) -> str:
        """What is at the other end."""
        return self._description

    @property
    def writes_at_once(self) -> bool:
        """Whether :meth:`try_write` can ever write (an asyncio stream, such as a child's
        stdin); where it cannot, it always answers False."""
        return self._write_now is not None

    def __repr__(self) -> str:
        return f"<NdjsonStreamLink {self._description}>"

    def _closed_error(self, what: str) -> LinkClosedError:
        return LinkClosedError(f"link {self._description} is closed ({what})")

    async def receive(self) -> bytes:
        """Return the next frame; see :meth:`Link.receive`."""
        ready = self._ready
        while not ready:
            if self._eof or self._closed:
                raise self._closed_error("end of stream")
            try:
                data = await self._rx.receive(_READ_SIZE)
            except _STREAM_ENDED:
                self._eof = True
                ready.extend(self._decoder.finish())
            else:
                ready.extend(self._decoder.feed(data))
        item = ready.popleft()
        if type(item) is bytes:
            return item
        assert isinstance(item, FrameTooLarge)
        raise FrameTooLargeError(item.limit)

    async def send(self, frame: bytes) -> None:
        """Write one frame and its newline."""
        await self._write(frame + b"\n")

    async def send_many(self, frames: Sequence[bytes]) -> None:
        """Write several frames, each with its newline, in one write."""
        if frames:
            await self._write(encode_frames(tuple(frames)))

    def try_write(self, frames: Sequence[bytes]) -> bool:
        """Write ``frames`` now, without a task switch, if the stream allows it.

        Only where the send stream is an asyncio stream (a child's stdin) and nothing written
        earlier is still buffered: one answer then leaves from the caller's callback instead
        of a turn of the event loop later, and the buffer never grows past that answer, so
        the flow control of :meth:`send` still holds. Returns False (nothing written) when
        the caller must use :meth:`send_many` instead.
        """
        write_now = self._write_now
        if write_now is None or self._closed or not frames:
            return False
        return write_now(encode_frames(tuple(frames)))

    async def written(self) -> None:
        """Return once what was written is (all but the transport's low-water mark) passed
        to the OS; at once on a stream that cannot tell (a socket, a memory stream), or
        when nothing is held back.

        On an asyncio stream (a child's stdin) this is the stream writer's ``drain``: a
        write that left more than its high-water mark buffered (a 4 MB answer in a 1 MiB
        pipe) waits until the child has read all but the low-water mark of it.
        """
        writer = self._writer
        if writer is None or self._closed:
            return
        with contextlib.suppress(*_STREAM_ENDED):
            await writer.drain()

    async def _write(self, data: bytes) -> None:
        if self._closed:
            raise self._closed_error("closed locally")
        try:
            await self._tx.send(data)
        except _STREAM_ENDED as exc:
            raise self._closed_error("write failed") from exc

    async def aclose(self) -> None:
        """Close both directions; idempotent."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            for stream in (self._tx, self._rx):
                with contextlib.suppress(*_STREAM_ENDED):
                    await stream.aclose()


def asyncio_stream_writer(stream: object) -> asyncio.StreamWriter | None:
    """The asyncio stream writer under an anyio send stream, or None.

    anyio wraps an asyncio :class:`~asyncio.StreamWriter` for a subprocess pipe (its
    ``_stream`` attribute, not public, hence the checks); any other stream (a socket, a
    memory stream) gets None. With :func:`asyncio_read_transport`, the only places
    Switchboard reaches under anyio's wrapper.
    """
    writer = getattr(stream, "_stream", None)
    return writer if isinstance(writer, asyncio.StreamWriter) else None


def asyncio_write_transport(stream: object) -> asyncio.WriteTransport | None:
    """The asyncio transport under an anyio send stream (see :func:`asyncio_stream_writer`),
    or None."""
    writer = asyncio_stream_writer(stream)
    if writer is None:
        return None
    transport = writer.transport
    return transport if isinstance(transport, asyncio.WriteTransport) else None


def asyncio_read_transport(stream: object) -> asyncio.ReadTransport | None:
    """The asyncio transport under an anyio receive stream (a child's stdout), or None.

    anyio wraps an :class:`asyncio.StreamReader` (its ``_stream``), whose transport is its
    ``_transport``: neither is public, hence the checks; any other stream gets None.
    """
    reader = getattr(stream, "_stream", None)
    if not isinstance(reader, asyncio.StreamReader):
        return None
    transport = getattr(reader, "_transport", None)
    return transport if isinstance(transport, asyncio.ReadTransport) else None


def _sync_writer(writer: asyncio.StreamWriter | None) -> Callable[[bytes], bool] | None:
    """A function writing to ``writer``'s transport at once, or None."""
    transport = writer.transport if writer is not None else None
    if not isinstance(transport, asyncio.WriteTransport):
        return None

    def write_now(data: bytes) -> bool:
        if transport.is_closing() or transport.get_write_buffer_size():
            return False
        try:
            transport.write(data)
        except (RuntimeError, OSError):  # closed under us: the async path reports it
            return False
        return True

    return write_now
