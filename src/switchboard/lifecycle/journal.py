"""The host's one path for decisions: append to the durable log, then apply to every book.

:class:`DecisionJournal` appends a batch of decision events *before* any memory changes, and
only once it committed applies them to every part (the lifecycle book, the tune-out state), in
commit order; a failed append is a decision not made. Snapshots every ``snapshot_every``
events keep start-up short. Why the apply runs in the commit future's callback: futures resolve
in commit order, so applies happen in log order even with many decisions in flight.

What it deliberately does not know: the rules that decide (the books' ``propose``), channels,
connectors and the wire.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import anyio
import structlog

from switchboard.lifecycle.rules.events import DecisionEvent, decode_events
from switchboard.refusals.errors import HostError
from switchboard.store import LoadedLog, StoreError

__all__ = [
    "DEFAULT_SNAPSHOT_EVERY",
    "DecisionJournal",
    "DecisionNotRecorded",
    "DecisionSink",
    "JournalPart",
    "JournalRecord",
    "Restored",
]

log = structlog.get_logger(__name__)

DEFAULT_SNAPSHOT_EVERY = 10_000
"""Applied events between two snapshots, unless the store config says otherwise."""


class DecisionNotRecorded(HostError):
    """The log did not take a decision: it was not made, and nothing changed."""


class DecisionSink(Protocol):
    """What the journal needs of the decision log (a ``DecisionLogProtocol``)."""

    @property
    def latest_seq(self) -> int: ...

    def append(self, events: Sequence[Mapping[str, Any]]) -> Awaitable[int]: ...

    def snapshot(
        self, state: Mapping[str, Any], upto_seq: int, *, compact: bool = True
    ) -> Awaitable[None]: ...

    async def load(self) -> LoadedLog: ...


class JournalRecord(Protocol):
    """Anything the journal logs: a decision event, or a part's own record kind."""

    def to_json(self) -> dict[str, object]: ...


class JournalPart(Protocol):
    """A book kept from the journal (see :class:`DecisionJournal` for the contract)."""

    def apply(self, event: Any) -> object: ...

    def take_snapshot(self) -> object: ...

    def restore_snapshot(self, state: object | None) -> None: ...


@dataclass(frozen=True, slots=True)
class Restored:
    """What :meth:`DecisionJournal.restore` read.

    Attributes:
        snapshot_seq: The seq the snapshot covered (0 without one).
        events: Events replayed after the snapshot.
        skipped: Records after the snapshot that were not well-formed events.
        seconds: How long the restore took.
        tail: Every record logged after the snapshot, as stored (parts that keep records of
            their own beside decision events read them here instead of loading the log again).
    """

    snapshot_seq: int
    events: int
    skipped: int
    seconds: float
    tail: tuple[Mapping[str, Any], ...] = ()


class DecisionJournal:
    """Appends decisions to a log, then applies them to every part, in log order.

    What it knows:

    - :class:`DecisionJournal` turns decision events (:mod:`switchboard.lifecycle.rules.events`)
      into log records and back. :meth:`~DecisionJournal.record` appends a batch *before* any memory
      changes; only once the batch has committed does it apply each event to every part, in commit
      order. A failed append raises :class:`DecisionNotRecorded`: the decision was not made, memory
      is untouched, and the caller says so.
    - Snapshots: every ``snapshot_every`` applied events it stores a snapshot of every part (and the
      log compacts the rows it covers), so start-up reads one snapshot plus a short tail.
    - :meth:`~DecisionJournal.restore`: the latest snapshot, then the events after it; a tail longer
      than ``snapshot_every`` is snapshotted at once, so it is replayed only once.

    The contract for a book kept from the journal (the lifecycle book is the part ``"lifecycle"``,
    the tune-out state the part ``"tuneouts"``): implement :class:`JournalPart` and be among the
    ``parts`` the journal is constructed with (the composition root builds the books first, then the
    journal, then whatever records through it). Then

    - ``apply(event)`` is called for every committed event, in log order, whatever its kind (a part
      ignores the kinds it does not keep). It must not raise and must not await.
    - ``take_snapshot()`` returns the part's whole state as a JSON value, and
      ``restore_snapshot(state)`` rebuilds the part from it, in place (``None``: the snapshot had no
      part of this name, or there was no snapshot: start empty), so that whoever was handed the part
      at construction reads the restored state. They are called only between applies, so a snapshot
      and its ``upto_seq`` always agree.
    - Every decision event goes through :meth:`DecisionJournal.record`; appending to the
      ``DecisionLog`` directly would leave memory and snapshots behind the log.

    Why the apply runs in the commit future's callback: asyncio runs a future's callbacks in the
    order they were added and futures resolve in commit order, so applies happen in log order even
    when many decisions are in flight (which is what lets the log group-commit them), and the
    caller's task resumes only after its own events are applied. The wait for the commit is shielded
    from cancellation (it is bounded by one commit): a caller returns only once its batch is applied
    or refused, and a write that committed is always applied.

    Args:
        sink: The durable log, or None to keep decisions in memory only (they apply at once).
        parts: The books kept from the journal, by name (their key in snapshots); each event
            is applied to them in this order.
        snapshot_every: Applied events between two snapshots.
    """

    def __init__(
        self,
        sink: DecisionSink | None,
        *,
        parts: Mapping[str, JournalPart],
        snapshot_every: int = DEFAULT_SNAPSHOT_EVERY,
    ) -> None:
        if snapshot_every < 1:
            raise ValueError("snapshot_every must be at least 1")
        self._sink = sink
        self._parts: dict[str, JournalPart] = dict(parts)
        self.snapshot_every = snapshot_every
        self._since_snapshot = 0
        self._snapshotting = False
        #: The highest seq applied to memory (0 before any, and always 0 without a log).
        self.applied_seq = 0
        #: Snapshots stored since this journal was made.
        self.snapshots = 0
        #: What the last :meth:`restore` read (None before one).
        self.restored: Restored | None = None

    @property
    def durable(self) -> bool:
        """Whether decisions go to a durable log."""
        return self._sink is not None

    async def record(self, events: Sequence[JournalRecord]) -> int:
        """Append ``events`` as one batch; once committed, apply each to every part.

        A batch may mix decision events with a part's own records (anything with
        ``to_json()``); every part ignores the kinds it does not keep. On restore only decision
        events are decoded for the parts; a part with records of its own reads them back from
        the log itself.

        Returns:
            The batch's last seq (0 without a log).

        Raises:
            DecisionNotRecorded: The log refused the batch; nothing of it is stored or applied.
        """
        if not events:
            return self.applied_seq
        sink = self._sink
        if sink is None:
            self._apply(events)
            return 0
        batch = tuple(events)
        try:
            waiter = sink.append([event.to_json() for event in batch])
        except StoreError as exc:
            raise DecisionNotRecorded(str(exc)) from exc
        try:
            # Shielded: a caller holding a channel's decision gate keeps it until its event
            # is applied, so the next decision is never proposed against a stale record.
            with anyio.CancelScope(shield=True):
                if isinstance(waiter, asyncio.Future):
                    waiter.add_done_callback(partial(self._committed, batch))
                    committed: int = await waiter
                    return committed
                seq = await waiter
        except StoreError as exc:
            raise DecisionNotRecorded(str(exc)) from exc
        self._applied(batch, seq)
        return seq

    def _committed(self, batch: tuple[JournalRecord, ...], done: asyncio.Future[int]) -> None:
        """The log's future finished (event loop callback): apply the batch if it committed."""
        if done.cancelled() or done.exception() is not None:
            return
        self._applied(batch, done.result())

    def _applied(self, batch: Sequence[JournalRecord], seq: int) -> None:
        self._apply(batch)
        self.applied_seq = max(self.applied_seq, seq)
        self._since_snapshot += len(batch)
        if self._since_snapshot >= self.snapshot_every and not self._snapshotting:
            self.take_snapshot()

    def _apply(self, batch: Sequence[JournalRecord] | Sequence[DecisionEvent]) -> None:
        for part in self._parts.values():
            apply = part.apply
            for event in batch:
                apply(event)

    def take_snapshot(self) -> Awaitable[None] | None:
        """Store a snapshot of every part as of :attr:`applied_seq` now.

        Returns:
            The log's awaitable, or None when there is nothing to snapshot (no log, nothing
            applied yet) or the log refused at once (logged; a later snapshot tries again).
        """
        sink = self._sink
        if sink is None or self.applied_seq == 0:
            return None
        state = {name: part.take_snapshot() for name, part in self._parts.items()}
        try:
            waiter = sink.snapshot(state, self.applied_seq)
        except StoreError as exc:
            log.warning("decision_snapshot_refused", error=str(exc))
            return None
        self._since_snapshot = 0
        if isinstance(waiter, asyncio.Future):
            self._snapshotting = True
            waiter.add_done_callback(self._snapshot_done)
        return waiter

    def _snapshot_done(self, done: asyncio.Future[None]) -> None:
        self._snapshotting = False
        if done.cancelled():
            return
        error = done.exception()
        if error is None:
            self.snapshots += 1
        else:
            log.warning("decision_snapshot_failed", error=str(error))

    async def restore(self) -> Restored:
        """Rebuild every part: its snapshot part, then the events logged after the snapshot.

        Raises:
            StoreError: The log could not be read.
        """
        started = time.perf_counter()
        sink = self._sink
        if sink is None:
            for part in self._parts.values():
                part.restore_snapshot(None)
            return Restored(0, 0, 0, time.perf_counter() - started)
        loaded = await sink.load()
        snapshot = loaded.snapshot
        state: Mapping[str, Any] = snapshot.state if snapshot is not None else {}
        for name, part in self._parts.items():
            part.restore_snapshot(state.get(name))
        events = list(decode_events(loaded.tail))
        self._apply(events)
        upto = snapshot.upto_seq if snapshot is not None else 0
        self.applied_seq = max(sink.latest_seq, upto)
        self._since_snapshot = len(loaded.tail)
        if self._since_snapshot >= self.snapshot_every:
            self.take_snapshot()  # a long tail (a log never compacted) is replayed only once
        seconds = time.perf_counter() - started
        skipped = len(loaded.tail) - len(events)
        self.restored = Restored(upto, len(events), skipped, seconds, tuple(loaded.tail))
        log.info(
            "decisions_restored",
            snapshot_seq=upto,
            events=len(events),
            skipped=skipped,
            seconds=round(seconds, 3),
        )
        return self.restored
