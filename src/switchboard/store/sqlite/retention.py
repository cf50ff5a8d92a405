"""Retention: deleting old, fully acknowledged messages in the background, in small chunks.

:class:`RetentionTask` runs a pass every ``interval`` seconds under a :class:`RetentionPolicy`
(an age, a size cap): it deletes a prefix of the batch rows at or below the floor nobody still
owes, one short transaction at a time through the writer, and gives free pages back
(docs/operations.md, "Retention").

What it deliberately does not know: agents, tune-outs or mail (the floor is asked of a
callback).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Final, TypeVar

import anyio
import structlog

from switchboard.store.retention import (
    Chunk,
    ChunkBounds,
    Floor,
    RetentionPasses,
    RetentionPolicy,
    scan_head,
)
from switchboard.store.sqlite.message_store import MessageStore

__all__ = ["RetentionTask", "Usage", "prune_chunk", "usage", "vacuum_chunk"]

log = structlog.get_logger(__name__)

_R = TypeVar("_R")

_SELECT_HEAD: Final = (
    "SELECT first_seq, count, server_id, received_at, length(body) FROM batches "
    "WHERE first_seq > ? ORDER BY first_seq LIMIT ?"
)


@dataclass(frozen=True, slots=True)
class Usage:
    """How much of the store file is in use (SQLite's page counts)."""

    page_size: int
    page_count: int
    freelist_count: int
    auto_vacuum: int  # 0 none, 1 full, 2 incremental

    @property
    def used_bytes(self) -> int:
        """Bytes of pages holding data (the file less its free pages)."""
        return (self.page_count - self.freelist_count) * self.page_size

    @property
    def file_bytes(self) -> int:
        """Bytes of the database file (without its WAL)."""
        return self.page_count * self.page_size


def usage(conn: sqlite3.Connection) -> Usage:
    """The file's page size, page count, free pages and auto-vacuum mode."""

    def one(pragma: str) -> int:
        return int(conn.execute(f"PRAGMA {pragma}").fetchone()[0])

    return Usage(one("page_size"), one("page_count"), one("freelist_count"), one("auto_vacuum"))


def prune_chunk(conn: sqlite3.Connection, bounds: ChunkBounds) -> Chunk:
    """Delete, in one transaction, the oldest batch rows that ``bounds`` lets go.

    Which rows may go is :func:`~switchboard.store.retention.scan_head`'s rule, over at most
    ``max_rows`` rows, with the bodies' lengths as their sizes.

    Raises:
        sqlite3.Error: SQLite refused (the transaction was rolled back).
    """
    kept = bounds["keep_servers"]
    conn.execute("BEGIN IMMEDIATE")
    try:
        rows = conn.execute(_SELECT_HEAD, (bounds["after_seq"], bounds["max_rows"])).fetchall()
        doomed, chunk = scan_head(rows, bounds)
        if doomed:
            sql = "DELETE FROM batches WHERE first_seq BETWEEN ? AND ?"
            params: list[object] = [doomed[0], doomed[-1]]
            if kept:
                sql += f" AND server_id NOT IN ({', '.join('?' * len(kept))})"
                params.extend(sorted(kept))
            conn.execute(sql, params)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return chunk


def vacuum_chunk(conn: sqlite3.Connection, pages: int) -> int:
    """Give up to ``pages`` free pages back to the file system (incremental auto-vacuum only;
    a no-op otherwise) and return how many free pages remain."""
    # executescript steps the pragma to its end; execute() would free one page only.
    conn.executescript(f"PRAGMA incremental_vacuum({int(pages)});")
    return int(conn.execute("PRAGMA freelist_count").fetchone()[0])


class RetentionTask(RetentionPasses[Usage]):
    """Runs retention passes over ``store`` every ``policy.interval`` seconds.

    What it knows: the batch rows of the message store (:mod:`switchboard.store.sqlite.schema`), how
    to delete a prefix of them in one short transaction, how much of the file is in use and how to
    give free pages back (incremental vacuum); the schedule and the pass are the backends' shared
    :class:`~switchboard.store.retention.RetentionPasses`.

    The rules of a pass (docs/operations.md, "Retention"):

    * **Eligible** rows are a prefix of the store in seq order: a batch row goes only when its last
      seq is at or below the floor, below ``latest_seq - keep_newest`` (the newest ``keep_newest``
      messages, the duplicate window, always stay, so duplicate detection is the same after a
      restart), and its server is not kept.
    * **Age** (``retain``): rows received before ``now - retain`` go, oldest first; the scan stops
      at the first row that is too young (``received_at`` follows commit order, so the rest are
      younger; a row received out of order is kept until the rows before it go).
    * **Size** (``max_size``): while the pages in use exceed it, the oldest eligible rows go.
    * **Chunks**: each chunk is one transaction of at most ``chunk_rows`` rows and ``chunk_bytes``
      of bodies, run on the store's writer thread (:meth:`MessageStore.maintain`) between two group
      commits, so ingest never waits for a lock held by retention, and waits at most one chunk for
      the thread. After each chunk the pass pauses as long as the chunk took, so it uses at most
      half of the writer's time.
    * **Pages**: deleted rows' pages go to SQLite's free list and are reused by later writes, so the
      file stops growing. When the file was created with ``auto_vacuum = INCREMENTAL`` (every file
      this version creates), free pages are also given back to the file system, ``vacuum_pages``
      pages per chunk.

    A pass is logged at INFO (``retention_pass``) only when it deleted something, else at DEBUG;
    :meth:`RetentionTask.last_pass` is the summary a status surface reads.

    Args:
        store: The open message store.
        policy: What to delete (see :class:`RetentionPolicy`).
        floor: Asked at the start of every pass for the highest seq nobody still owes.
        clock: Unix seconds (the age cut-off); injectable for tests.
    """

    _log = log

    def __init__(
        self,
        store: MessageStore,
        policy: RetentionPolicy,
        floor: Callable[[], Awaitable[Floor]],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(policy, floor, clock=clock)
        self._store = store

    def _latest_seq(self) -> int:
        return self._store.latest_seq

    async def _usage(self) -> Usage:
        return await self._store.maintain(usage)

    async def _delete_chunk(self, bounds: ChunkBounds) -> tuple[Chunk, float]:
        return await self._timed(
            partial(prune_chunk, bounds=bounds), writes=self._policy.chunk_bytes
        )

    async def _pause(self, took: float, *, last: bool) -> None:
        # After the last chunk too: the writer's next job (a vacuum chunk, a measure) would
        # otherwise hold it again at once.
        await anyio.sleep(took)

    async def _tidy(self, before: Usage) -> None:
        if before.auto_vacuum != 2:
            return
        pages = self._policy.vacuum_pages
        vacuum = partial(vacuum_chunk, pages=pages)
        while True:
            left, took = await self._timed(vacuum, writes=pages * before.page_size)
            self._longest = max(self._longest, took * 1000)
            # Leave the writer to ingest for as long as the chunk held it.
            await anyio.sleep(took)
            if not left:
                return

    async def _timed(
        self, work: Callable[[sqlite3.Connection], _R], *, writes: int
    ) -> tuple[_R, float]:
        """Run ``work`` on the writer thread; answer its result and the seconds it took there."""

        def timed(conn: sqlite3.Connection) -> tuple[_R, float]:
            began = time.perf_counter()
            result = work(conn)
            return result, time.perf_counter() - began

        return await self._store.maintain(timed, writes=writes)
