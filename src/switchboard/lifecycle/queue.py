"""Per-channel ordering of lifecycle work: one request run at a time per channel, one decision
at a time per channel, every channel independent of the others.

:class:`LifecycleQueue` serialises the ``channels/open``/``channels/close`` runs of each channel
(channel-registry.md §5.6); :class:`DecisionGate` holds a channel from a decision's proposal to
its apply. Decisions deliberately do not wait for runs: a decision made while a request is in
flight is what the next step of that run converges to.

What it deliberately does not know: what a run or a decision does, the wire, the store.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import asynccontextmanager
from itertools import repeat

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
    """A FIFO lock per channel, made on first use and dropped when its last run ends.

    What it knows:

    - :class:`LifecycleQueue`: the queue of ``channels/open``/``channels/close`` runs of each
      channel (channel-registry.md §5.6, ARCHITECTURE.md §5). A run holds its channel's lock for its
      whole convergence run, round trips included; runs of different channels proceed in parallel.
      :meth:`~LifecycleQueue.pending` says whether work is queued or running for a channel
      (``hasPendingLifecycle``), and :meth:`~LifecycleQueue.settled` waits until none is (the first
      half of ``waitForOpenChannel``). A channel with no work holds no memory.
    - :class:`DecisionGate`: the channels with a decision between its proposal and its apply. A
      decision is proposed against the book as it stands, so a second decision on the same channel
      must not be proposed until the first one's event is applied (else it would be judged against a
      stale record, and the explicit-open guard could be bypassed). Taking the gate never awaits
      when the channel is free, so a batch (an admission) can take many channels at once.
    """

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


class _Batch:
    """The channels one take marked busy: how many are still held, and the event set when
    the last of them is released."""

    __slots__ = ("event", "held")

    def __init__(self, held: int) -> None:
        self.held = held
        self.event = anyio.Event()


class DecisionGate:
    """The channels whose decision is between its proposal and its apply.

    Kept as ``server id -> {channel id -> batch}``: a batch taken at once shares one
    :class:`_Batch` (one event for an admission of 100,000 channels, not 100,000), and the
    admission of one server's channels is taken, waited for and released by their ids
    (:meth:`take_channels`), whose string hashes are already known, without building a
    :class:`ChannelRef` for each first. A batch's event is set when its
    last channel is released.
    """

    __slots__ = ("_busy",)

    def __init__(self) -> None:
        self._busy: dict[str, dict[str, _Batch]] = {}

    def busy(self, ref: ChannelRef) -> bool:
        """Whether a decision on ``ref`` is being recorded."""
        held = self._busy.get(ref[0])
        return held is not None and ref[1] in held

    async def wait_free(self, refs: Iterable[ChannelRef]) -> None:
        """Return once none of ``refs`` is busy; never awaits when none is.

        The caller takes them with :meth:`take` before its next await, so nothing can slip in.
        """
        if not self._busy:
            return
        wanted = refs if isinstance(refs, list | tuple) else tuple(refs)
        while (batch := self._holder(wanted)) is not None:
            await batch.event.wait()

    def _holder(self, refs: Sequence[ChannelRef]) -> _Batch | None:
        busy = self._busy
        for server_id, channel_id in refs:
            held = busy.get(server_id)
            if held is not None:
                batch = held.get(channel_id)
                if batch is not None:
                    return batch
        return None

    async def wait_free_channels(self, server_id: str, channel_ids: Collection[str]) -> None:
        """:meth:`wait_free` of ``server_id``'s ``channel_ids``."""
        while (held := self._busy.get(server_id)) and not held.keys().isdisjoint(channel_ids):
            await next(held[c] for c in channel_ids if c in held).event.wait()

    def take(self, refs: Iterable[ChannelRef]) -> None:
        """Mark ``refs`` busy (they must be free: see :meth:`wait_free`)."""
        taken = list(refs)
        by_server: dict[str, list[str]] = {}
        for server_id, channel_id in taken:
            by_server.setdefault(server_id, []).append(channel_id)
        self._check_free(by_server)
        batch = _Batch(len(taken))
        for server_id, channel_ids in by_server.items():
            self._busy.setdefault(server_id, {}).update(zip(channel_ids, repeat(batch)))

    def take_channels(self, server_id: str, channel_ids: Collection[str]) -> None:
        """:meth:`take` of ``server_id``'s ``channel_ids`` (distinct, e.g. a dict's keys)."""
        self._check_free({server_id: channel_ids})
        batch = _Batch(len(channel_ids))
        held = self._busy.get(server_id)
        if held is None:
            self._busy[server_id] = dict.fromkeys(channel_ids, batch)
        else:
            held.update(zip(channel_ids, repeat(batch)))

    def _check_free(self, by_server: Mapping[str, Collection[str]]) -> None:
        """Raise unless every channel is free and named once."""
        for server_id, channel_ids in by_server.items():
            held = self._busy.get(server_id, {})
            distinct = isinstance(channel_ids, Mapping | AbstractSet)  # e.g. a dict of ids
            if (distinct or len(set(channel_ids)) == len(channel_ids)) and held.keys().isdisjoint(
                channel_ids
            ):
                continue
            seen: set[str] = set()
            for channel_id in channel_ids:
                if channel_id in held or channel_id in seen:
                    ref = ChannelRef(server_id, channel_id)
                    raise RuntimeError(f"a decision on {ref!r} is already being recorded")
                seen.add(channel_id)

    def release(self, refs: Iterable[ChannelRef]) -> None:
        """Free ``refs`` and wake whoever waits for them (once a batch's last one is free)."""
        by_server: dict[str, list[str]] = {}
        for server_id, channel_id in refs:
            by_server.setdefault(server_id, []).append(channel_id)
        for server_id, channel_ids in by_server.items():
            self.release_channels(server_id, channel_ids)

    def release_channels(self, server_id: str, channel_ids: Iterable[str]) -> None:
        """:meth:`release` of ``server_id``'s ``channel_ids``."""
        held = self._busy.get(server_id)
        if held is None:
            return
        freed = Counter(map(held.pop, channel_ids, repeat(None)))
        if not held:
            del self._busy[server_id]
        for batch, n in freed.items():
            if batch is not None:
                batch.held -= n
                if batch.held <= 0:
                    batch.event.set()
