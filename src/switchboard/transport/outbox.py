"""The outbound side of a peer: one write lock, a queue, and batching.

Frames reach the link in order: a request on a link that writes at once joins the others of
the event loop's turn in one write, a notification writes its own frame, and answers join the
queue the writer drains; so a burst of requests costs one write, not one each.

What it deliberately does not know: what the frames mean.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import anyio

from switchboard.transport.link import Link
from switchboard.transport.pending import new_event

__all__ = ["Outbox"]

# Past this many queued frames, callers wait for the writer (backpressure).
HIGH_WATER = 512


class Outbox:
    """Queue and write frames to ``link``; all failures surface as the link's exceptions.

    Frames reach the link three ways. A caller of ``request`` on a link that writes at once (a
    child's stdin) queues its frame to leave at the end of the event loop's turn, with the others of
    that turn, in one write (no task switch); a caller of ``notify`` writes its own frame at once
    when nothing is queued and no write is under way; otherwise its frame is queued. The dispatcher
    queues its answers without waking anyone and flushes when its inbox runs dry, so the answers to
    a burst of requests leave in one write. The writer task flushes whatever is queued whenever it
    is woken. An answer settled from a callback while nothing else is in flight is written from that
    callback (``write_now``) when the link can write without waiting.

    Theory of operation: only the writer task, the dispatcher, ``write_now`` (synchronous, never
    while a flush holds the lock) and the end-of-turn callback (which calls ``write_now`` or wakes
    the writer) ever write queued frames, and none is cancelled while the peer runs, so a frame once
    queued is never lost to somebody else's cancellation; a caller writing directly writes only its
    own frame. ``flush`` takes the whole queue and writes it with ``send_many`` when the link has
    it.

    This module knows frames and the link's write side; not what the frames say.
    """

    def __init__(self, link: Link) -> None:
        self._link = link
        self._send_many: Callable[[list[bytes]], Awaitable[None]] | None = getattr(
            link, "send_many", None
        )
        self._try_write: Callable[[list[bytes]], bool] | None = getattr(link, "try_write", None)
        self._writes_at_once = self._try_write is not None and bool(
            getattr(link, "writes_at_once", False)
        )
        self._flush_due = False  # a _flush_turn is scheduled
        self._frames: list[bytes] = []
        self._lock = anyio.Lock(fast_acquire=True)
        self._ready = anyio.Event()
        self._drained = anyio.Event()

    def __len__(self) -> int:
        return len(self._frames)

    def put(self, frame: bytes, *, wake: bool = True) -> None:
        """Queue a frame; ``wake=False`` leaves it for whoever flushes next."""
        self._frames.append(frame)
        if wake:
            self._ready.set()

    def write_now(self) -> bool:
        """Write what is queued from the caller, with no task switch, if the link can and no
        write is under way; True if the queue was written. Otherwise nothing happens and the
        caller wakes the writer."""
        frames = self._frames
        try_write = self._try_write
        if not frames or try_write is None or self._lock.locked():
            return False
        if not try_write(frames):
            return False
        self._frames = []
        drained = self._drained
        self._drained = new_event()
        drained.set()
        return True

    def wake(self) -> None:
        """Let the writer task send what is queued."""
        self._ready.set()

    def clear(self) -> None:
        """Drop what is queued (the link is gone)."""
        self._frames.clear()

    async def emptied(self) -> None:
        """Return once nothing is queued (the writer or the dispatcher took it all)."""
        while self._frames:
            await self._drained.wait()

    async def wait_for_frames(self) -> None:
        """Return once something is queued and the writer was woken for it."""
        while not self._frames:
            ready = new_event()
            self._ready = ready
            await ready.wait()

    def try_send_own(self, frame: bytes) -> bool:
        """Queue a caller's frame to leave at the end of this turn of the event loop, with
        every other frame queued by then, in one write. True if it was taken, which it is when
        the link writes at once, no write is under way and the queue has room; else nothing
        happened.

        Why not write it at once: callers woken by one read of answers each send their next
        request in the same turn, and a write is a system call (about a fifth of a confirmed
        publish's time); the turn's frames leave in one. Order holds: the frame is
        queued behind what was queued before it, and :meth:`send_own` queues behind it.
        """
        if not self._writes_at_once or self._lock.locked() or len(self._frames) >= HIGH_WATER:
            return False
        self._frames.append(frame)
        if not self._flush_due:
            self._flush_due = True
            asyncio.get_running_loop().call_soon(self._flush_turn)
        return True

    def _flush_turn(self) -> None:
        """At the end of a turn: write the queue at once, or leave it to the writer task."""
        self._flush_due = False
        try:
            if not self._frames or self.write_now():
                return
        except Exception:  # the writer task meets the failure again, and reports it
            pass
        self.wake()

    async def send_own(self, frame: bytes) -> None:
        """Write a caller's frame now if the way is clear, else queue it for the writer."""
        if not self._frames and not self._lock.locked():
            try_write = self._try_write
            if try_write is not None and try_write([frame]):
                return  # written at once: no lock, no task switch
            async with self._lock:
                await self._link.send(frame)
            return
        while len(self._frames) >= HIGH_WATER:
            await self._drained.wait()
        self.put(frame)

    async def flush(self) -> None:
        """Write everything queued, in order, batching where the link allows."""
        async with self._lock:
            while self._frames:
                frames = self._frames
                self._frames = []
                try_write = self._try_write
                if try_write is not None and try_write(frames):
                    continue  # the link took them without waiting
                if len(frames) > 1 and self._send_many is not None:
                    await self._send_many(frames)
                else:
                    for frame in frames:
                        await self._link.send(frame)
            drained = self._drained
            self._drained = new_event()
            drained.set()
