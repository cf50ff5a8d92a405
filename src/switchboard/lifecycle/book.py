"""The lifecycle book as a decision-journal part, and the JSON value a snapshot stores for it.

The snapshot form of a :class:`~switchboard.lifecycle.rules.book.LifecycleBook` (its records by
channel), and how the book is rebuilt from it by applying, per record, the one event that
writes exactly that record: so replay and snapshots share one path into memory.

What it deliberately does not know: the log, when snapshots are taken, other books.
"""

from __future__ import annotations

from collections.abc import Mapping

from switchboard.channels import ChannelRef
from switchboard.lifecycle.rules.book import LifecycleBook
from switchboard.lifecycle.rules.decisions import (
    DecodeError,
    DesiredRecord,
    DesiredState,
    TuneOutEpoch,
    TuneOutScope,
)
from switchboard.lifecycle.rules.events import DecisionEvent, DesiredStateSet, TuneOutStarted

__all__ = ["LifecycleBookPart", "book_snapshot", "restore_book"]


class LifecycleBookPart:
    """The lifecycle book as a journal part.

    What it knows: the snapshot form of a :class:`~switchboard.lifecycle.rules.book.LifecycleBook`,
    ``{"records": [[serverId, channelId, record], ...]}`` with each record in
    :meth:`~switchboard.lifecycle.rules.decisions.DesiredRecord.to_json` form, and how to rebuild
    the book from it by applying, per record, the one event that writes exactly that record (a
    ``tuned-out`` record is rebuilt from a one-channel ``tune-out-started`` carrying its epoch id,
    owner, source and time; the epoch's other terms live in the tune-out book's own snapshot part).
    Junk entries are skipped, as replay skips junk events.

    :class:`LifecycleBookPart` is how the book joins the
    :class:`~switchboard.lifecycle.journal.DecisionJournal` (as ``"lifecycle"``): it applies
    committed events to the book and restores the book *in place*, so every part that was handed the
    book at construction keeps reading the live one.
    """

    __slots__ = ("_book",)

    def __init__(self, book: LifecycleBook) -> None:
        self._book = book

    def apply(self, event: DecisionEvent) -> object:
        """Apply one committed event to the book (called by the journal only)."""
        return self._book.apply(event)

    def take_snapshot(self) -> object:
        """The book as a JSON value (:func:`book_snapshot`)."""
        return book_snapshot(self._book)

    def restore_snapshot(self, state: object | None) -> None:
        """Rebuild the book from :meth:`take_snapshot`'s value (None: start empty)."""
        restore_book(self._book, state)


def book_snapshot(book: LifecycleBook) -> dict[str, object]:
    """Every record of ``book``, as ``[serverId, channelId, record]`` triples."""
    return {"records": [[r.server_id, r.channel_id, d.to_json()] for r, d in book.items()]}


def restore_book(book: LifecycleBook, state: object | None) -> None:
    """Make ``book`` hold exactly the records of :func:`book_snapshot`'s value (none for None
    or junk)."""
    book.clear()
    rows = state.get("records") if isinstance(state, Mapping) else None
    for row in rows if isinstance(rows, list) else ():
        if not (isinstance(row, list) and len(row) == 3):
            continue
        server_id, channel_id, data = row
        if not (isinstance(server_id, str) and isinstance(channel_id, str)):
            continue
        if not isinstance(data, Mapping):
            continue
        try:
            record = DesiredRecord.from_json(data)
        except DecodeError:
            continue
        book.apply(_event_making(ChannelRef(server_id, channel_id), record))


def _event_making(ref: ChannelRef, record: DesiredRecord) -> DecisionEvent:
    """An event whose apply rebuilds ``record`` exactly (for restoring a snapshot)."""
    if record.state is DesiredState.TUNED_OUT and record.epoch_id is not None:
        epoch = TuneOutEpoch(
            record.epoch_id, record.by_agent or "", TuneOutScope(ref), record.decided_at, 0
        )
        return TuneOutStarted(epoch, record.source)
    return DesiredStateSet(ref, record.state, record.source, record.decided_at, record.by_agent)
