"""The connector side of stdio: a link over this process's own stdin and stdout.

**asyncio only.** :func:`stdio_server_link` connects fd 0 and fd 1 to the running asyncio
loop with ``connect_read_pipe`` / ``connect_write_pipe``, wrapped as anyio byte streams and
framed by ``NdjsonStreamLink``. That is the benchmark path: no worker thread per line
(``anyio.wrap_file`` and the MCP SDK's ``stdio_server`` pay one), reads of up to 256 KiB, and
writes that go straight to the pipe unless it is full. When a descriptor is not something
the loop can watch (a regular file, ``/dev/null``) it falls back to anyio's threaded file
streams, which are correct but slow.

The descriptors are duplicated first, so closing the link leaves fd 0 and fd 1 open; they
are set non-blocking while the link is open (that flag is shared with anyone else using
them) and set back afterwards.

This module knows file descriptors and asyncio pipe transports; not framing, not JSON-RPC.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import IO, cast

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.file import FileReadStream, FileWriteStream

from switchboard.transport.framing import DEFAULT_MAX_FRAME
from switchboard.transport.stream_link import NdjsonStreamLink

__all__ = ["stdio_server_link"]

# Stop reading from the pipe while this much is buffered and unread (backpressure).
_READ_HIGH_WATER = 4 * 1024 * 1024


class _Waker:
    """One waiter a pipe protocol's callbacks wake (a read or a drain waiting for the pipe)."""

    def __init__(self) -> None:
        self._waiter: asyncio.Future[None] | None = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._waiter = waiter
        try:
            await waiter
        finally:
            self._waiter = None


class _ReadProtocol(_Waker, asyncio.Protocol):
    """Collects chunks from a read pipe; wakes one waiter."""

    def __init__(self) -> None:
        super().__init__()
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.eof = False
        self.paused = False
        self.transport: asyncio.ReadTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.ReadTransport, transport)

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.buffered += len(data)
        if self.buffered > _READ_HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool | None:
        self.eof = True
        self._wake()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self._wake()


class _PipeReceiveStream(ByteReceiveStream):
    def __init__(self, protocol: _ReadProtocol, transport: asyncio.ReadTransport) -> None:
        self._protocol = protocol
        self._transport = transport
        self._closed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        protocol = self._protocol
        while not protocol.chunks:
            if self._closed:
                raise anyio.ClosedResourceError
            if protocol.eof:
                raise anyio.EndOfStream
            await protocol.wait()
        chunk = protocol.chunks.popleft()
        if len(chunk) > max_bytes:
            protocol.chunks.appendleft(chunk[max_bytes:])
            chunk = chunk[:max_bytes]
        protocol.buffered -= len(chunk)
        if protocol.paused and protocol.buffered <= _READ_HIGH_WATER // 4:
            protocol.paused = False
            self._transport.resume_reading()
        return chunk

    async def aclose(self) -> None:
        self._closed = True
        self._transport.close()
        self._protocol.eof = True
        self._protocol._wake()


class _WriteProtocol(_Waker, asyncio.BaseProtocol):
    """Tracks flow control and loss of a write pipe."""

    def __init__(self) -> None:
        super().__init__()
        self.paused = False
        self.lost = False

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._wake()

    async def drain(self) -> None:
        while self.paused and not self.lost:
            await self.wait()


class _PipeSendStream(ByteSendStream):
    def __init__(self, protocol: _WriteProtocol, transport: asyncio.WriteTransport) -> None:
        self._protocol = protocol
        self._transport = transport
        self._closed = False

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._protocol.lost or self._transport.is_closing():
            raise anyio.BrokenResourceError
        self._transport.write(item)
        if self._protocol.paused:
            await self._protocol.drain()
            if self._protocol.lost:
                raise anyio.BrokenResourceError

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._transport.close()


def _dup(fd: int, mode: str) -> IO[bytes]:
    return cast(IO[bytes], os.fdopen(os.dup(fd), mode, buffering=0))


async def _open_receive(loop: asyncio.AbstractEventLoop, fd: int) -> ByteReceiveStream:
    pipe = _dup(fd, "rb")
    protocol = _ReadProtocol()
    try:
        transport, _ = await loop.connect_read_pipe(lambda: protocol, pipe)
    except (ValueError, OSError):  # not pollable: read it in a worker thread
        os.set_blocking(pipe.fileno(), True)
        return FileReadStream(pipe)
    return _PipeReceiveStream(protocol, transport)


async def _open_send(loop: asyncio.AbstractEventLoop, fd: int) -> ByteSendStream:
    pipe = _dup(fd, "wb")
    protocol = _WriteProtocol()
    try:
        transport, _ = await loop.connect_write_pipe(lambda: protocol, pipe)
    except (ValueError, OSError):  # not pollable: write it from a worker thread
        os.set_blocking(pipe.fileno(), True)
        return FileWriteStream(pipe)
    return _PipeSendStream(protocol, transport)


@asynccontextmanager
async def stdio_server_link(
    max_frame: int = DEFAULT_MAX_FRAME, *, stdin_fd: int = 0, stdout_fd: int = 1
) -> AsyncIterator[NdjsonStreamLink]:
    """Yield a link over this process's stdin and stdout (asyncio only).

    Args:
        max_frame: the largest inbound frame accepted, in bytes.
        stdin_fd: the descriptor to read (default 0).
        stdout_fd: the descriptor to write (default 1).

    Raises:
        RuntimeError: not running on an asyncio event loop.
    """
    loop = asyncio.get_running_loop()
    blocking = {fd: os.get_blocking(fd) for fd in (stdin_fd, stdout_fd)}
    receive_stream = await _open_receive(loop, stdin_fd)
    try:
        send_stream = await _open_send(loop, stdout_fd)
    except BaseException:
        await receive_stream.aclose()
        raise
    link = NdjsonStreamLink(
        receive_stream, send_stream, description="stdio:self", max_frame=max_frame
    )
    try:
        yield link
    finally:
        await link.aclose()
        for fd, was_blocking in blocking.items():
            with contextlib.suppress(OSError):  # closed by someone else: nothing to restore
                os.set_blocking(fd, was_blocking)
