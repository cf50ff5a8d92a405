"""The durable decision event log as the event loop sees it: :class:`DecisionLog`.

It lives in the message store's SQLite file in two tables of its own, with its own write
connection and writer thread (:mod:`.eventlog_writer`); appends and snapshots are futures that
complete once committed, and reads run on a worker thread.

What it deliberately does not know: what a decision means (events are opaque JSON objects).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Awaitable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.to_thread
import orjson
import structlog

from switchboard.store.records import LoadedLog, Snapshot, StoreClosedError, StoreError
from switchboard.store.sqlite.eventlog_writer import (
    AppendEvents,
    EventJob,
    EventLogWriter,
    TakeSnapshot,
    ensure_tables,
    latest_seq,
    read_events_after,
    read_snapshot,
    snapshot_seq,
)
from switchboard.store.sqlite.schema import Synchronous, open_reader, open_writer

__all__ = ["DecisionLog"]

log = structlog.get_logger(__name__)

_Waiter = asyncio.Future[Any]
_ENCODE_ERRORS = (orjson.JSONEncodeError, TypeError)


class DecisionLog:
    """An append-only log of decision events in the store's SQLite file, with snapshots.

    What it knows: the asyncio event loop, futures for appended batches and snapshots, and
    dispatching reads to a worker thread. It lives in the message store's SQLite file (WAL) in two
    tables of its own, but has its own write connection, opened with the same pragmas, and its own
    writer thread (:mod:`switchboard.store.sqlite.eventlog_writer`); SQLite serialises the two
    writers.

    The contract the caller builds on: append each decision *before* changing memory; when the
    awaitable raises :class:`StoreError` the decision was not made (nothing of the batch is stored)
    and the caller says so. On start, :meth:`DecisionLog.load` returns the latest snapshot and the
    events after it, which rebuild the desired states, tune-out epochs and wake counts.

    Open it with :meth:`open` and close it with :meth:`aclose`, or use it as an async context
    manager: ``async with await DecisionLog.open(path) as decisions: ...``. Open it after (or
    before), not concurrently with, a :class:`MessageStore` on the same file: both may upgrade
    the schema at open.

    Durability: :meth:`append`'s awaitable completes once the batch's transaction committed.
    With ``synchronous="full"`` (the default: decisions are few and each one matters) the WAL is
    synced on every commit, so a committed decision survives a process crash and power loss;
    ``"normal"`` survives a process crash (SIGKILL, OOM) only, and is faster.

    Group commit: batches queued while the writer is busy commit together as one row in one
    transaction; if that fails, each is retried alone, so a refused batch fails only itself.

    Compaction: :meth:`snapshot` stores the caller's compacted state and (by default) deletes
    the stored rows it covers, so start-up reads one snapshot plus a short tail.

    Use it from the event loop thread it was opened on (asyncio backend). Cancelling a caller
    that awaits a write does not cancel the write: it may still commit.
    """

    def __init__(
        self,
        *,
        writer_conn: sqlite3.Connection,
        reader_conn: sqlite3.Connection,
        latest: int,
        snapshot_seq: int,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        """Wrap already-open connections; use :meth:`open` instead of calling this."""
        self._loop = loop
        self._latest = latest
        self._reader = reader_conn
        self._read_limiter = anyio.CapacityLimiter(1)
        self._closed = False
        self._writer: EventLogWriter[_Waiter] = EventLogWriter(
            writer_conn, latest, snapshot_seq, self._group_done_from_thread
        )
        self._writer.start()

    @classmethod
    async def open(
        cls, path: str | os.PathLike[str], *, synchronous: Synchronous = "full"
    ) -> DecisionLog:
        """Open (creating or upgrading) the log in the database at ``path``.

        Raises:
            StoreError: the file cannot be opened or read, or has a newer schema.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError as exc:
            raise StoreError("DecisionLog needs anyio's asyncio backend") from exc
        writer_conn = await anyio.to_thread.run_sync(open_writer, path, synchronous)
        try:
            latest, snapshot_seq = await anyio.to_thread.run_sync(_positions, writer_conn)
            reader_conn = await anyio.to_thread.run_sync(open_reader, path)
        except BaseException as exc:
            writer_conn.close()
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"cannot load decision log {os.fspath(path)!r}") from exc
            raise
        log.debug("eventlog_opened", path=os.fspath(path), latest_seq=latest)
        return cls(
            writer_conn=writer_conn,
            reader_conn=reader_conn,
            latest=latest,
            snapshot_seq=snapshot_seq,
            loop=loop,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def latest_seq(self) -> int:
        """The highest committed seq (0 when empty); updated when a commit is reported."""
        return self._latest

    def append(self, events: Sequence[Mapping[str, Any]]) -> Awaitable[int]:
        """Queue a batch of events now; the awaitable gives the batch's last seq once committed.

        Synchronous, so callers keep decision order without awaiting: batches commit in the
        order of ``append`` calls and a batch's events take consecutive seqs in order. An empty
        batch completes at once with :attr:`latest_seq`.

        Raises:
            StoreError: (at once) an event is not a dict or cannot be encoded as JSON;
                nothing is queued. (From
                the awaitable) the batch was not committed: none of its events is stored.
            StoreClosedError: (at once) the log is closed.
        """
        if self._closed or self._writer.stopped:
            raise StoreClosedError("the decision log is closed")
        waiter: asyncio.Future[int] = self._loop.create_future()
        if not events:
            waiter.set_result(self._latest)
            return waiter
        batch = list(events)
        if not all(type(event) is dict for event in batch):
            raise StoreError("every decision event must be a JSON object (a dict)")
        body = _encode(batch, "event")
        self._writer.put(AppendEvents(len(events), body, waiter))
        return waiter

    def snapshot(
        self, state: Mapping[str, Any], upto_seq: int, *, compact: bool = True
    ) -> Awaitable[None]:
        """Queue storing ``state`` as the compacted log up to and including ``upto_seq``.

        ``state`` replaces any earlier snapshot. With ``compact`` the stored batches holding
        only events up to ``upto_seq`` are deleted in the same transaction (:meth:`read_all`
        then no longer returns them). The snapshot commits in queue order with appends.

        Raises:
            StoreError: (at once) ``state`` cannot be encoded. (From the awaitable) it was not
                stored, e.g. ``upto_seq`` is beyond the log's end or before the last snapshot.
            StoreClosedError: (at once) the log is closed.
        """
        if self._closed or self._writer.stopped:
            raise StoreClosedError("the decision log is closed")
        body = _encode(dict(state), "snapshot")
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._writer.put(TakeSnapshot(upto_seq, body, compact, waiter))
        return waiter

    async def read_all(self, after_seq: int = 0) -> list[dict[str, Any]]:
        """Every retained event with ``seq > after_seq``, in seq order.

        Raises:
            StoreError: the database could not be read.
        """
        self._check_open()
        return await anyio.to_thread.run_sync(
            _read_after, self._reader, after_seq, limiter=self._read_limiter
        )

    async def load(self) -> LoadedLog:
        """The latest snapshot and every event after it: what start-up replays.

        Raises:
            StoreError: the database could not be read.
        """
        self._check_open()
        return await anyio.to_thread.run_sync(_load, self._reader, limiter=self._read_limiter)

    async def aclose(self) -> None:
        """Commit everything already queued, stop the writer and close the connections."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            self._writer.stop()
            await anyio.to_thread.run_sync(self._writer.join)
            await anyio.to_thread.run_sync(self._reader.close, limiter=self._read_limiter)
        log.debug("eventlog_closed", latest_seq=self._latest)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the decision log is closed")

    def _group_done_from_thread(self, jobs: list[EventJob[_Waiter]]) -> None:
        """Runs on the writer thread: one event-loop wake-up per group commit."""
        self._loop.call_soon_threadsafe(self._complete, jobs)

    def _complete(self, jobs: list[EventJob[_Waiter]]) -> None:
        """Runs on the event loop: resolve the group's futures."""
        for job in jobs:
            if isinstance(job, AppendEvents) and job.error is None:
                self._latest = max(self._latest, job.last_seq)
            waiter = job.waiter
            if waiter.done():  # the caller was cancelled; the write stands
                continue
            if job.error is not None:
                waiter.set_exception(job.error)
            elif isinstance(job, AppendEvents):
                waiter.set_result(job.last_seq)
            else:
                waiter.set_result(None)


def _encode(value: object, what: str) -> bytes:
    try:
        return orjson.dumps(value)
    except _ENCODE_ERRORS as exc:
        raise StoreError(f"the {what} cannot be encoded as JSON: {exc}") from exc


def _positions(conn: sqlite3.Connection) -> tuple[int, int]:
    ensure_tables(conn)
    return latest_seq(conn), snapshot_seq(conn)


def _read_after(conn: sqlite3.Connection, after_seq: int) -> list[dict[str, Any]]:
    try:
        return read_events_after(conn, after_seq)
    except (sqlite3.Error, orjson.JSONDecodeError) as exc:
        raise StoreError(f"cannot read decision events after {after_seq}: {exc}") from exc


def _load(conn: sqlite3.Connection) -> LoadedLog:
    try:
        found = read_snapshot(conn)
        snapshot = Snapshot(found[0], found[1]) if found is not None else None
        tail = read_events_after(conn, snapshot.upto_seq if snapshot is not None else 0)
    except (sqlite3.Error, orjson.JSONDecodeError) as exc:
        raise StoreError(f"cannot load the decision log: {exc}") from exc
    return LoadedLog(snapshot, tail)
