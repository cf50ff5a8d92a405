"""The SQLite message store as the event loop sees it: :class:`MessageStore`.

What this module knows: the asyncio event loop (the application runs anyio on its asyncio
backend, and this class needs it), futures for submitted batches, waking inbox readers, and
dispatching reads to a worker thread. It ties together the on-disk format
(:mod:`switchboard.store.schema`) and the writer thread (:mod:`switchboard.store.writer`).

What it deliberately does not know: MCPL, channels, agents' tools, or the host. It stores
records and answers with sequence numbers; deciding what to accept is the caller's business.

Threads: the event loop thread runs every public method. One writer thread owns the write
connection. Reads run on anyio worker threads, one at a time, over a separate read-only
connection (WAL lets them proceed while the writer commits). After each group commit the writer
makes one ``loop.call_soon_threadsafe`` call; that one callback resolves every future of the
group, updates ``latest_seq`` and the cursor cache, and wakes :meth:`MessageStore.wait_for_new`.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Awaitable, Sequence
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.to_thread
import structlog

from switchboard.store.records import (
    AppendResult,
    IncomingRecord,
    StoreClosedError,
    StoredMessage,
    StoreError,
)
from switchboard.store.schema import (
    SELECT_AFTER,
    SELECT_COUNT,
    Synchronous,
    decode_row,
    encode_rows,
    load_state,
    open_reader,
    open_writer,
)
from switchboard.store.writer import AppendJob, CursorJob, GroupWriter, Job

__all__ = ["MessageStore"]

log = structlog.get_logger(__name__)

_Waiter = asyncio.Future[Any]


class MessageStore:
    """Durable inboxes in one SQLite file (WAL), written by one thread with group commit.

    Open it with :meth:`open` and close it with :meth:`aclose`, or use it as an async context
    manager over the opened store::

        async with await MessageStore.open(path) as store:
            results = await store.append(records, received_at=now)

    Durability: a batch's awaitable completes after its transaction committed. With
    ``synchronous="normal"`` (the default) committed data is in the WAL file and survives the
    process being killed (SIGKILL, crash, OOM); the most recent commits can be lost only if the
    machine loses power or the OS crashes. ``synchronous="full"`` syncs the WAL on every commit
    and survives power loss too, at a cost in throughput.

    The store must be used from the event loop thread it was opened on (asyncio backend).
    Cancelling a caller that awaits a write does not cancel the write: it may still commit.
    The writer thread is a daemon: a process that exits without :meth:`aclose` loses only
    batches that were submitted but not yet committed, i.e. never acknowledged.
    """

    def __init__(
        self,
        *,
        writer_conn: sqlite3.Connection,
        reader_conn: sqlite3.Connection,
        latest_seq: int,
        cursors: dict[str, int],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        """Wrap already-open connections; use :meth:`open` instead of calling this."""
        self._loop = loop
        self._latest = latest_seq
        self._cursors = cursors
        self._reader = reader_conn
        self._read_limiter = anyio.CapacityLimiter(1)
        self._new: asyncio.Event | None = None  # created only while someone waits
        self._closed = False
        self._writer: GroupWriter[_Waiter] = GroupWriter(
            writer_conn, latest_seq, self._group_done_from_thread
        )
        self._writer.start()

    @classmethod
    async def open(
        cls, path: str | os.PathLike[str], *, synchronous: Synchronous = "normal"
    ) -> MessageStore:
        """Open (creating or upgrading) the store at ``path`` and start its writer thread.

        Reopening a file after a clean close or after the process was killed restores every
        committed message and cursor, and ``latest_seq``.

        Args:
            path: the database file (its ``-wal`` and ``-shm`` companions live beside it).
            synchronous: ``"normal"`` survives a process crash; ``"full"`` also survives
                power loss. See the class docstring.

        Raises:
            StoreError: the file cannot be opened or has a newer schema.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError as exc:
            raise StoreError("MessageStore needs anyio's asyncio backend") from exc
        writer_conn = await anyio.to_thread.run_sync(open_writer, path, synchronous)
        try:
            latest, cursors = await anyio.to_thread.run_sync(load_state, writer_conn)
            reader_conn = await anyio.to_thread.run_sync(open_reader, path)
        except BaseException as exc:
            writer_conn.close()
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"cannot load message store {os.fspath(path)!r}") from exc
            raise
        log.debug("store_opened", path=os.fspath(path), latest_seq=latest, cursors=len(cursors))
        return cls(
            writer_conn=writer_conn,
            reader_conn=reader_conn,
            latest_seq=latest,
            cursors=cursors,
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

    def submit(
        self, records: Sequence[IncomingRecord], *, received_at: float | None = None
    ) -> Awaitable[list[AppendResult]]:
        """Queue a batch for the writer now and return an awaitable for its commit.

        This is synchronous so that callers keep arrival order without awaiting: batches are
        committed in the order of ``submit`` calls. The awaitable completes with one
        :class:`AppendResult` per record, in record order, after the batch is committed.

        Args:
            records: the batch (may be empty).
            received_at: unix seconds at which the host accepted the batch; the store reads
                the clock only when this is None.

        Raises:
            StoreError: (at once) a record cannot be encoded; nothing of the batch is queued.
            StoreClosedError: (at once) the store is closed.

        The awaitable raises :class:`StoreError` if the batch could not be committed.
        """
        if self._closed or self._writer.stopped:
            raise StoreClosedError("the message store is closed")
        waiter: asyncio.Future[list[AppendResult]] = self._loop.create_future()
        if not records:
            waiter.set_result([])
            return waiter
        rows = encode_rows(records, time.time() if received_at is None else received_at)
        self._writer.put(AppendJob(rows, waiter))
        return waiter

    async def append(
        self, records: Sequence[IncomingRecord], *, received_at: float | None = None
    ) -> list[AppendResult]:
        """Submit a batch and wait until it is committed; see :meth:`submit`."""
        return await self.submit(records, received_at=received_at)

    async def read(self, after_seq: int, limit: int = 100) -> list[StoredMessage]:
        """Up to ``limit`` messages with ``seq > after_seq``, in seq order.

        Returns at once, without a thread hop, when nothing newer than ``after_seq`` has been
        committed. Every message whose commit has been reported is visible.

        Raises:
            ValueError: ``limit`` is less than 1.
            StoreError: the database could not be read.
        """
        self._check_open()
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        if after_seq >= self._latest:
            return []
        return await anyio.to_thread.run_sync(
            self._read_sync, after_seq, limit, limiter=self._read_limiter
        )

    def _read_sync(self, after_seq: int, limit: int) -> list[StoredMessage]:
        try:
            rows = self._reader.execute(SELECT_AFTER, (after_seq, limit)).fetchall()
            return [decode_row(row) for row in rows]
        except (sqlite3.Error, ValueError) as exc:  # orjson.JSONDecodeError is a ValueError
            raise StoreError(f"cannot read messages after {after_seq}: {exc}") from exc

    async def wait_for_new(self, after_seq: int, timeout: float) -> bool:  # noqa: ASYNC109
        """Wait until a message with ``seq > after_seq`` is committed.

        Woken by commits (no polling). Returns True at once if one already is, True as soon as
        one is, and False when ``timeout`` seconds pass first. The deadline is a parameter, not
        an enclosing cancel scope, because running out of time is an ordinary answer here.

        Raises:
            StoreClosedError: the store was closed while waiting with nothing new.
        """
        if self._latest > after_seq:
            return True
        with anyio.move_on_after(timeout):
            while self._latest <= after_seq:
                self._check_open()
                if self._new is None:
                    self._new = asyncio.Event()
                await self._new.wait()
        return self._latest > after_seq

    async def get_cursor(self, agent: str) -> int:
        """The last seq ``agent`` consumed, 0 if it never set one (served from memory)."""
        self._check_open()
        return self._cursors.get(agent, 0)

    async def set_cursor(self, agent: str, seq: int) -> None:
        """Durably record that ``agent`` consumed everything up to ``seq``.

        Raises:
            ValueError: ``seq`` is negative or beyond :attr:`latest_seq`.
            StoreError: the cursor could not be committed.
        """
        self._check_open()
        if not 0 <= seq <= self._latest:
            raise ValueError(f"cursor {seq} is outside 0..{self._latest}")
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._writer.put(CursorJob(agent, seq, waiter))
        await waiter

    async def count(self) -> int:
        """How many messages are stored (a full count; for tests and operations)."""
        self._check_open()
        return await anyio.to_thread.run_sync(self._count_sync, limiter=self._read_limiter)

    def _count_sync(self) -> int:
        try:
            return int(self._reader.execute(SELECT_COUNT).fetchone()[0])
        except sqlite3.Error as exc:
            raise StoreError(f"cannot count messages: {exc}") from exc

    async def aclose(self) -> None:
        """Commit everything already submitted, stop the writer and close the connections.

        Every awaitable returned by :meth:`submit` before this call completes. Waiters in
        :meth:`wait_for_new` get :class:`StoreClosedError`. Closing twice is harmless.
        """
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            self._writer.stop()
            await anyio.to_thread.run_sync(self._writer.join)
            await anyio.to_thread.run_sync(self._reader.close, limiter=self._read_limiter)
        self._wake_waiters()
        log.debug("store_closed", latest_seq=self._latest)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the message store is closed")

    def _group_done_from_thread(self, jobs: list[Job[_Waiter]], latest: int) -> None:
        """Runs on the writer thread: one event-loop wake-up per group commit."""
        self._loop.call_soon_threadsafe(self._complete, jobs, latest)

    def _complete(self, jobs: list[Job[_Waiter]], latest: int) -> None:
        """Runs on the event loop: resolve the group's futures and wake waiters."""
        for job in jobs:
            waiter = job.waiter
            if isinstance(job, CursorJob) and job.error is None:
                self._cursors[job.agent] = job.seq  # committed, even if its caller went away
            if waiter.done():  # the caller was cancelled; the write stands
                continue
            if job.error is not None:
                waiter.set_exception(job.error)
            elif isinstance(job, AppendJob):
                waiter.set_result(job.results)
            else:
                waiter.set_result(None)
        if latest > self._latest:
            self._latest = latest
            self._wake_waiters()

    def _wake_waiters(self) -> None:
        event, self._new = self._new, None
        if event is not None:
            event.set()
