"""Per-channel ordering of lifecycle work: one request run at a time per channel, one decision
at a time per channel, every channel independent of the others.

What this module knows:

- :class:`LifecycleQueue`: the queue of ``channels/open``/``channels/close`` runs of each
  channel (channel-registry.md §5.6, ARCHITECTURE.md §5). A run holds its channel's lock for
  its whole convergence run, round trips included; runs of different channels proceed in
  parallel. :meth:`~LifecycleQueue.pending` says whether work is queued or running for a
  channel (``hasPendingLifecycle``), and :meth:`~LifecycleQueue.settled` waits until none is
  (the first half of ``waitForOpenChannel``). A channel with no work holds no memory.
- :class:`DecisionGate`: the channels with a decision between its proposal and its apply. A
  decision is proposed against the book as it stands, so a second decision on the same channel
  must not be proposed until the first one's event is applied (else it would be judged against
  a stale record, and the explicit-open guard could be bypassed). Taking the gate never awaits
  when the channel is free, so a batch (an admission) can take many channels at once.

What it deliberately does not know: what a run or a decision does, the wire, the store.
Decisions deliberately do not wait for runs: a decision made while a request is in flight is
how a run learns it was overtaken.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

import anyio

from switchboard.channels import ChannelRef

__all__ = ["DecisionGate", "LifecycleQueue"]


class _Slot:
    """One channel's queue: its lock, how many runs hold or wait for it, and its idle event."""

    __slots__ = ("idle", "lock", "users")

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.users = 0
        self.idle = anyio.Event()


class LifecycleQueue:
    """A FIFO lock per channel, made on first use and dropped when its last run ends."""

    __slots__ = ("_slots",)

    def __init__(self) -> None:
        self._slots: dict[ChannelRef, _Slot] = {}

    def pending(self, ref: ChannelRef) -> bool:
        """Whether lifecycle work is queued or running for ``ref``."""
        return ref in self._slots

    def __len__(self) -> int:
        """How many channels have work queued or running."""
        return len(self._slots)

    @asynccontextmanager
    async def hold(self, ref: ChannelRef) -> AsyncIterator[None]:
        """Run the body as ``ref``'s only lifecycle run (runs wait in arrival order)."""
        slot = self._slots.get(ref)
        if slot is None:
            slot = self._slots[ref] = _Slot()
        slot.users += 1
        try:
            async with slot.lock:
                yield
        finally:
            slot.users -= 1
            if slot.users == 0:
                del self._slots[ref]
                slot.idle.set()

    async def settled(self, ref: ChannelRef) -> None:
        """Wait until no lifecycle work is queued or running for ``ref``.

        Work queued while this waits is waited for too; returns at once when there is none.
        """
        while (slot := self._slots.get(ref)) is not None:
            await slot.idle.wait()


class DecisionGate:
    """The channels whose decision is between its proposal and its apply."""

    __slots__ = ("_busy",)

    def __init__(self) -> None:
        self._busy: dict[ChannelRef, anyio.Event] = {}

    def busy(self, ref: ChannelRef) -> bool:
        """Whether a decision on ``ref`` is being recorded."""
        return ref in self._busy

    async def wait_free(self, refs: Iterable[ChannelRef]) -> None:
        """Return once none of ``refs`` is busy; never awaits when none is.

        The caller takes them with :meth:`take` before its next await, so nothing can slip in.
        """
        wanted = tuple(refs)
        while True:
            waiting = next((self._busy[r] for r in wanted if r in self._busy), None)
            if waiting is None:
                return
            await waiting.wait()

    def take(self, refs: Iterable[ChannelRef]) -> None:
        """Mark ``refs`` busy (they must be free: see :meth:`wait_free`)."""
        for ref in refs:
            if ref in self._busy:
                raise RuntimeError(f"a decision on {ref!r} is already being recorded")
            self._busy[ref] = anyio.Event()

    def release(self, refs: Iterable[ChannelRef]) -> None:
        """Free ``refs`` and wake whoever waits for them."""
        for ref in refs:
            event = self._busy.pop(ref, None)
            if event is not None:
                event.set()
