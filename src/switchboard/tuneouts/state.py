"""What the host holds in memory about tune-outs, and how it is rebuilt after a restart.

:class:`TuneOutState` is a decision-journal part (``"tuneouts"``) holding the epochs in effect
and the owed backlogs; the journal applies every committed record to it in log order, and it
answers whether a tune-out covers a channel.

What it deliberately does not know: how decisions are made, the inbox, names and the clock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import anyio
import structlog

from switchboard.channels import ChannelRef
from switchboard.lifecycle.rules.events import TuneOutStarted, TuneOutWake, decode_event
from switchboard.tuneouts.records import Delivered, OwedBacklogs, Settled, decode_host_record
from switchboard.tuneouts.rules.epochs import TuneOutBook

__all__ = ["DecisionRecorder", "TuneOutState"]

log = structlog.get_logger(__name__)


class DecisionRecorder(Protocol):
    """The journal's recording verb: append a batch, apply it to every part once committed.

    The batch may hold this module's host records beside decision events; every part ignores
    the kinds it does not keep. Raises ``DecisionNotRecorded`` when the log refused it.
    """

    async def record(self, events: Sequence[Any]) -> int: ...


class TuneOutState:
    """The tune-out book and the owed backlogs, kept from the decision journal.

    What it knows: :class:`TuneOutState`, a decision-journal part
    (:mod:`~switchboard.lifecycle.journal`, as ``"tuneouts"``) holding the
    :class:`~switchboard.tuneouts.rules.epochs.TuneOutBook` (the epochs in effect, with their wake
    counts) and the :class:`~switchboard.tuneouts.records.OwedBacklogs` (ended epochs whose backlog
    is owed, or whose withheld range the owner's cursor has not passed). The journal applies every
    committed record to it in log order: decision events change the book, the host's own records
    (``tune-out-settled``, ``tune-out-delivered``) change the owed backlogs, anything else is
    ignored. Its snapshot is a list of records that replay to the same state. It is built before the
    journal and the lifecycle, which asks it whether a tune-out covers a channel
    (:meth:`TuneOutState.covers`).

    :class:`DecisionRecorder` is what the tune-out host needs of the journal: one verb that appends
    a batch and applies it to every part once committed.

    Replay after a restart: the journal restores the snapshot, then applies the decision events
    logged after it (wakes of stale epochs are ignored by the book). It decodes decision events
    only, so :meth:`TuneOutState.restore_owed` applies the host records of the tail it read, then
    forgets the delivered epochs whose range each owner's cursor has passed.
    """

    def __init__(self) -> None:
        self.book = TuneOutBook()
        self.owed = OwedBacklogs()
        #: Set on every change of the book (the expiry timer waits on it).
        self.wakeup: anyio.Event | None = None

    def changed(self) -> None:
        """Wake whoever waits for a change."""
        if self.wakeup is not None:
            self.wakeup.set()

    def covers(self, ref: ChannelRef) -> bool:
        """Whether any epoch in effect covers ``ref`` (a machine close of it is refused)."""
        return self.book.covers(ref)

    # -- journal part ------------------------------------------------------------------------

    def apply(self, event: object) -> object:
        """Apply one committed record (the journal calls this, in log order).

        Returns:
            For a decision event, the epoch it ended or replaced (its backlog is due), or None.
        """
        if isinstance(event, Settled):
            self.owed.keep(event)
            return None
        if isinstance(event, Delivered):
            self.owed.mark_delivered(event.epoch_id)
            return None
        gone = self.book.apply(event)  # type: ignore[arg-type]  # unknown kinds change nothing
        self.changed()
        return gone

    def take_snapshot(self) -> object:
        """The whole state, as log records that replay to it."""
        out: list[dict[str, object]] = []
        for held in self.book.epochs():
            epoch = held.epoch
            out.append(TuneOutStarted(epoch, held.source, held.resume).to_json())
            if held.wake_count:
                out.append(TuneOutWake(epoch.epoch_id, held.wake_count, epoch.started_at).to_json())
        return {"records": out + self.owed.records()}

    def restore_snapshot(self, state: object | None) -> None:
        """Start over from :meth:`take_snapshot`'s form (None: empty)."""
        records = state.get("records") if isinstance(state, dict) else None
        self.book, self.owed = TuneOutBook(), OwedBacklogs()
        self.fold(records if isinstance(records, list) else ())

    def fold(self, records: Iterable[object]) -> None:
        """Apply raw log records in order (junk is skipped)."""
        for data in records:
            event = decode_event(data)
            if event is not None:
                self.book.apply(event)
                continue
            host = decode_host_record(data)
            if host is not None:
                self.apply(host)

    async def restore_owed(
        self, tail: Sequence[Mapping[str, Any]], cursor: Callable[[str], Awaitable[int]]
    ) -> None:
        """Apply the host records logged after the snapshot (``tail``); then forget, per
        owner, the delivered epochs whose range ``cursor(owner)`` has passed."""
        for data in tail:
            host = decode_host_record(data)
            if host is not None:
                self.apply(host)
        for owner in self.owed.owners():
            self.owed.forget_passed(owner, await cursor(owner))
        log.debug("tuneouts_restored", epochs=len(self.book), owed=len(self.owed))
