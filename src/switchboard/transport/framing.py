"""Newline-delimited framing, sans-I/O: bytes in, frames out.

:class:`NdjsonDecoder` splits a byte stream into frames on ``b"\\n"``, drops one trailing
``b"\\r"`` per line (CRLF senders), and skips blank lines. A line longer than ``max_frame``
is never buffered whole: the decoder reports it once with a :class:`FrameTooLarge` marker
and discards the rest of it up to its newline. The output for a given byte stream does not
depend on how the stream is cut into chunks.

This module knows bytes and newlines only. It does not know JSON, JSON-RPC, sockets or
event loops; stdio, TCP and the connector-side stdio link all feed it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_MAX_FRAME", "FrameTooLarge", "NdjsonDecoder", "encode_frames"]

DEFAULT_MAX_FRAME = 16 * 1024 * 1024
"""16 MiB: the default largest frame a link accepts."""


@dataclass(frozen=True, slots=True)
class FrameTooLarge:
    """Marker in the decoder's output where an oversized line was discarded."""

    limit: int


class NdjsonDecoder:
    """Incremental NDJSON splitter.

    Theory of operation: ``_buffer`` holds the start of an unfinished line and is never longer
    than ``max_frame + 1`` (the ``+ 1`` leaves room for a ``\\r`` that a later newline would
    strip, so the verdict on a line does not depend on where a chunk boundary fell). When the
    unfinished line grows past that, the marker is emitted at once and ``_discarding`` is set
    until the line's newline arrives.

    Args:
        max_frame: the longest frame, in bytes, excluding the newline and a trailing ``\\r``.
    """

    __slots__ = ("_buffer", "_discarding", "_max_frame")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        if max_frame < 1:
            raise ValueError("max_frame must be positive")
        self._max_frame = max_frame
        self._buffer = bytearray()
        self._discarding = False

    @property
    def max_frame(self) -> int:
        """The largest frame accepted, in bytes."""
        return self._max_frame

    @property
    def buffered(self) -> int:
        """Bytes of an unfinished line held back (0 while discarding)."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes | FrameTooLarge]:
        """Consume ``data``; return the frames (and oversize markers) it completes, in order."""
        out: list[bytes | FrameTooLarge] = []
        newline = data.find(b"\n")
        if newline < 0:
            self._hold(data, out)
            return out
        # The first newline ends whatever was pending from earlier chunks.
        if self._discarding:
            self._discarding = False
        elif self._buffer:
            self._buffer += data[:newline]
            self._emit(bytes(self._buffer), out)
            self._buffer.clear()
        else:
            self._emit(data[:newline], out)
        start = newline + 1
        newline = data.find(b"\n", start)
        while newline >= 0:
            self._emit(data[start:newline], out)
            start = newline + 1
            newline = data.find(b"\n", start)
        if start < len(data):
            self._hold(data[start:], out)
        return out

    def finish(self) -> list[bytes | FrameTooLarge]:
        """End of stream: return a final line that had no newline, if any, and reset."""
        out: list[bytes | FrameTooLarge] = []
        if self._buffer:
            self._emit(bytes(self._buffer), out)
            self._buffer.clear()
        self._discarding = False
        return out

    def _hold(self, data: bytes, out: list[bytes | FrameTooLarge]) -> None:
        """Keep the start of an unfinished line, or give up on it when it is too long."""
        if self._discarding:
            return
        if len(self._buffer) + len(data) > self._max_frame + 1:
            self._buffer.clear()
            self._discarding = True
            out.append(FrameTooLarge(self._max_frame))
        else:
            self._buffer += data

    def _emit(self, line: bytes, out: list[bytes | FrameTooLarge]) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line or line.isspace():
            return
        if len(line) > self._max_frame:
            out.append(FrameTooLarge(self._max_frame))
        else:
            out.append(line)


def encode_frames(frames: list[bytes] | tuple[bytes, ...]) -> bytes:
    """Serialize frames for an NDJSON stream: each followed by a newline, in one buffer."""
    if len(frames) == 1:
        return frames[0] + b"\n"
    return b"\n".join(frames) + b"\n"
