"""Storage outages told on the host's event bus: :class:`StorageWatch`.

What this module knows: the message store calls its storage listeners once when its disk
starts refusing writes (with the cause: ``database or disk is full``, a disk I/O error, a
read-only file) and once when a write succeeds again (with None), see
:meth:`switchboard.store.Batches.watch_storage`. :class:`StorageWatch` is such a listener:
it turns the first into one :class:`~switchboard.events.StorageFailed` and the second into
one :class:`~switchboard.events.StorageRecovered` with how long the outage lasted. The log
lines (``storage_failed`` ERROR, ``storage_recovered`` INFO) are written by
:func:`~switchboard.events.log_event`, so an outage costs two lines however many writes
it refused (the writes themselves are logged rate-limited by the store).

What it deliberately does not know: what is refused meanwhile (the incoming handler answers
``-32603`` with ``data.reason = "storage-unavailable"``; the agent's tools get the
``storage-unavailable`` refusal), or how the status surface shows it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from switchboard.events.bus import EventBus
from switchboard.events.kinds import StorageFailed, StorageRecovered

__all__ = ["StorageWatch"]


class StorageWatch:
    """Tells storage outages and recoveries on the bus (see the module docstring).

    Args:
        events: the host's event bus.
        clock: a monotonic clock in seconds (how long an outage lasted).
    """

    __slots__ = ("_cause", "_clock", "_events", "_since")

    def __init__(self, events: EventBus, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._events = events
        self._clock = clock
        self._cause: str | None = None
        self._since = 0.0

    @property
    def cause(self) -> str | None:
        """What the storage said while it refuses writes; None while it takes them."""
        return self._cause

    def __call__(self, problem: str | None) -> None:
        """The store's storage listener: ``problem`` is the cause, or None on recovery."""
        if problem is not None:
            if self._cause is None:
                self._cause, self._since = problem, self._clock()
                self._events.emit(StorageFailed(problem))
            return
        if self._cause is not None:
            cause, self._cause = self._cause, None
            self._events.emit(StorageRecovered(cause, self._clock() - self._since))
