"""Watching what a process under test writes to stderr, for the tail a failed check shows.

What this module knows: how to read a spawned process's stderr as lines (cut at
:data:`STDERR_MAX_LINE` bytes, undecodable bytes replaced) and hand each to a callback while
a check runs, and how to finish: end the process first (the caller says how), then let the
rest of its stderr drain for a moment, then stop reading. Both suites use it, the server
suite for a spawned connector and the host suite for the host it starts, so every failure
shows the target's last stderr lines the same way (:class:`~.transcript.Transcript` keeps
them; :mod:`.runner` attaches them to a failed result).

What it deliberately does not know: how the process was started or is ended, what the lines
say, or how many of them a report keeps.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream

from switchboard.transport import FrameTooLarge, NdjsonDecoder

__all__ = ["STDERR_DRAIN", "STDERR_MAX_LINE", "StderrLine", "watching_stderr"]

StderrLine = Callable[[str], None]
"""Called with each line the process writes to stderr."""

STDERR_MAX_LINE: Final = 16 * 1024
"""The longest stderr line kept whole (a longer one is reported by its length)."""

STDERR_DRAIN: Final = 0.5
"""Seconds the rest of stderr may drain after the process was ended."""


async def _read_lines(stream: ByteReceiveStream, on_line: StderrLine, done: anyio.Event) -> None:
    decoder = NdjsonDecoder(STDERR_MAX_LINE)

    def hand_out(lines: list[bytes | FrameTooLarge]) -> None:
        for line in lines:
            if isinstance(line, FrameTooLarge):
                on_line(f"<a stderr line longer than {line.limit} bytes>")
            else:
                on_line(line.decode("utf-8", "replace"))

    try:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for chunk in stream:
                hand_out(decoder.feed(chunk))
        hand_out(decoder.finish())
    finally:
        done.set()


@asynccontextmanager
async def watching_stderr(
    stream: ByteReceiveStream,
    on_line: StderrLine,
    *,
    stop: Callable[[], Awaitable[None]],
    drain: float = STDERR_DRAIN,
) -> AsyncIterator[None]:
    """Hand each line of ``stream`` to ``on_line`` while the body runs.

    On exit, whatever the body did, ``stop()`` ends the process (shielded from
    cancellation), then the lines still in the pipe get up to ``drain`` seconds to arrive,
    then reading stops. An exception from the body reaches the caller as itself, not wrapped
    in an exception group (the reader's task group is entered by hand for that).

    Args:
        stream: the process's stderr pipe.
        on_line: called with each line, without its line ending.
        stop: ends the process (and so closes the pipe's writing end).
        drain: seconds to wait for the last lines after ``stop()``.
    """
    drained = anyio.Event()
    reader = anyio.create_task_group()
    await reader.__aenter__()
    try:
        reader.start_soon(_read_lines, stream, on_line, drained)
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await stop()
                with anyio.move_on_after(drain):
                    await drained.wait()
    finally:
        reader.cancel_scope.cancel()
        await reader.__aexit__(None, None, None)
