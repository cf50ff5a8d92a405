"""Recording the wire: every frame a check sends and receives, on every connection it opens.

:class:`Transcript` is the ordered record of one check's frames across all of its connections,
kept as bytes and shown when a check fails.

What it deliberately does not know: JSON-RPC or MCPL (decoding frames is the reader's).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Final

import anyio

from switchboard.transport import Link

from .outcomes import Direction, FrameRecord

__all__ = ["STDERR_TAIL", "FrameObserver", "RecordingLink", "Transcript"]

STDERR_TAIL: Final = 20
"""How many of the target's last stderr lines a transcript keeps."""

FrameObserver = Callable[[bytes, int], None]
"""Called with each received frame and its wire position (1 for the first frame)."""


class Transcript:
    """The frames of one check, in the order they crossed the wire.

    What it knows:

    - :class:`Transcript`, the ordered record of one check's frames across all of its connections,
      with timestamps relative to the start of the check, and the last :data:`STDERR_TAIL` lines the
      target wrote to stderr meanwhile; it is the evidence a failed check carries in the report;
    - :class:`RecordingLink`, a :class:`~switchboard.transport.Link` wrapper that records each frame
      as it passes, numbers the frames it receives (their *wire position*, so a check can ask "did
      this arrive after that receipt?"), lets an observer see each received frame before the peer
      decodes it, and lets the kit write raw bytes (malformed JSON on purpose) without interleaving
      them with the peer's own writes.

    Args:
        started: the ``anyio.current_time()`` at which the check started.
    """

    __slots__ = ("_connections", "_frames", "_started", "_stderr")

    def __init__(self, started: float) -> None:
        self._started = started
        self._frames: list[FrameRecord] = []
        self._connections = 0
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL)

    def note_stderr(self, connection: int, line: str) -> None:
        """Keep one line the target wrote to stderr on ``connection`` (only the last few)."""
        self._stderr.append(f"[{connection}] {line}")

    @property
    def stderr_tail(self) -> tuple[str, ...]:
        """The target's last stderr lines, oldest first, each prefixed with its connection."""
        return tuple(self._stderr)

    def new_connection(self) -> int:
        """Number a new connection of this check (1, 2, ...)."""
        self._connections += 1
        return self._connections

    def record(self, connection: int, direction: Direction, frame: bytes) -> None:
        """Append one frame."""
        text = frame.decode("utf-8", "replace")
        self._frames.append(
            FrameRecord(connection, direction, anyio.current_time() - self._started, text)
        )

    @property
    def frames(self) -> tuple[FrameRecord, ...]:
        """Every frame so far, in order."""
        return tuple(self._frames)

    def __len__(self) -> int:
        return len(self._frames)


class RecordingLink:
    """A link that records what passes through it into a :class:`Transcript`.

    Args:
        inner: the link to the server.
        transcript: where frames are recorded.
        connection: this connection's number in the transcript.
        observer: called with every received frame and its wire position.
    """

    __slots__ = ("_connection", "_inner", "_lock", "_observer", "_received", "_transcript")

    def __init__(
        self,
        inner: Link,
        transcript: Transcript,
        connection: int,
        observer: FrameObserver | None = None,
    ) -> None:
        self._inner = inner
        self._transcript = transcript
        self._connection = connection
        self._observer = observer
        self._received = 0
        self._lock = anyio.Lock()

    @property
    def description(self) -> str:
        """The wrapped link's description."""
        return self._inner.description

    @property
    def connection(self) -> int:
        """This connection's number in the transcript."""
        return self._connection

    @property
    def received(self) -> int:
        """How many frames have been received so far (the last one's wire position)."""
        return self._received

    def set_observer(self, observer: FrameObserver) -> None:
        """Install the observer of received frames."""
        self._observer = observer

    async def send(self, frame: bytes) -> None:
        """Record and send one frame."""
        async with self._lock:
            self._transcript.record(self._connection, "sent", frame)
            await self._inner.send(frame)

    async def send_many(self, frames: Sequence[bytes]) -> None:
        """Record and send several frames (in one write when the inner link can)."""
        async with self._lock:
            for frame in frames:
                self._transcript.record(self._connection, "sent", frame)
            send_many = getattr(self._inner, "send_many", None)
            if send_many is not None:
                await send_many(frames)
            else:
                for frame in frames:
                    await self._inner.send(frame)

    async def send_raw(self, data: bytes) -> None:
        """Send ``data`` as one frame exactly as given (it need not be JSON)."""
        await self.send(data)

    async def receive(self) -> bytes:
        """Receive, record and observe one frame."""
        frame = await self._inner.receive()
        self._received += 1
        self._transcript.record(self._connection, "received", frame)
        if self._observer is not None:
            self._observer(frame, self._received)
        return frame

    async def aclose(self) -> None:
        """Close the wrapped link."""
        await self._inner.aclose()
