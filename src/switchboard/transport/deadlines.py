"""Deadlines of outstanding requests, sans-I/O: which ones have expired by a given time.

:class:`DeadlineQueue` lets one timer task serve every outbound request of a peer, instead
of one cancel scope per request (which costs more than the rest of a request together).
Adding and discarding are O(1) amortized; the timer asks :meth:`DeadlineQueue.next_deadline`
when to wake and :meth:`DeadlineQueue.expire` what to fail.

Theory of operation: a heap of ``(deadline, key)`` with lazy deletion. A discarded key stays
in the heap until it reaches the top or the heap is compacted; compaction (rebuilding from
the live keys) runs when stale entries outnumber live ones by a margin, so memory stays
proportional to the live requests and the rebuild cost is spread over many additions.

This module knows numbers and keys; not clocks, tasks or requests.
"""

from __future__ import annotations

import heapq

__all__ = ["DeadlineQueue"]

_COMPACT_SLACK = 1024


class DeadlineQueue:
    """Keys with deadlines; keys must be unique for the queue's lifetime (request ids are)."""

    __slots__ = ("_heap", "_live")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int]] = []
        self._live: dict[int, float] = {}

    def __len__(self) -> int:
        return len(self._live)

    def add(self, key: int, deadline: float) -> bool:
        """Track ``key`` until ``deadline``; return True if it is now the earliest one."""
        self._live[key] = deadline
        heap = self._heap
        heapq.heappush(heap, (deadline, key))
        if len(heap) > 2 * len(self._live) + _COMPACT_SLACK:
            self._compact()
        return heap[0][0] >= deadline

    def discard(self, key: int) -> None:
        """Stop tracking ``key`` (it got its answer or its caller gave up)."""
        self._live.pop(key, None)

    def next_deadline(self) -> float | None:
        """The earliest live deadline, or ``None`` when nothing is tracked."""
        heap = self._heap
        live = self._live
        while heap and heap[0][1] not in live:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def expire(self, now: float) -> list[int]:
        """Remove and return the keys whose deadline is at or before ``now``, earliest first."""
        heap = self._heap
        live = self._live
        expired: list[int] = []
        while heap and heap[0][0] <= now:
            _, key = heapq.heappop(heap)
            if live.pop(key, None) is not None:
                expired.append(key)
        return expired

    def _compact(self) -> None:
        self._heap = [(deadline, key) for key, deadline in self._live.items()]
        heapq.heapify(self._heap)
