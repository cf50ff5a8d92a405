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
from collections.abc import Awaitable, Callable, Collection
from dataclasses import asdict, dataclass
from functools import partial
from typing import Final, TypeVar

import anyio
import structlog

from switchboard.store.records import StoreClosedError, StoreError
from switchboard.store.retention import (
    DEFAULT_INTERVAL,
    Chunk,
    Floor,
    PassReport,
    RetentionPolicy,
    RetentionSummary,
)
from switchboard.store.sqlite.message_store import MessageStore

__all__ = [
    "DEFAULT_INTERVAL",
    "Chunk",
    "Floor",
    "PassReport",
    "RetentionPolicy",
    "RetentionSummary",
    "RetentionTask",
    "Usage",
    "prune_chunk",
    "usage",
    "vacuum_chunk",
]

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


def prune_chunk(
    conn: sqlite3.Connection,
    *,
    after_seq: int,
    upto_seq: int,
    before: float | None,
    keep_servers: Collection[str] = (),
    max_rows: int = 1000,
    max_bytes: int = 256 * 1024,
    want_bytes: int | None = None,
) -> Chunk:
    """Delete, in one transaction, the oldest batch rows above ``after_seq`` that may go.

    A row may go when its last seq is at most ``upto_seq``, it was received before ``before``
    (any age when None), and its server is not in ``keep_servers`` (a kept row is passed over).
    The scan stops at the first row that may not go for its seq or age, after ``max_rows`` rows
    or ``max_bytes`` of bodies, or once ``want_bytes`` of bodies are deleted.

    Raises:
        sqlite3.Error: SQLite refused (the transaction was rolled back).
    """
    kept = frozenset(keep_servers)
    conn.execute("BEGIN IMMEDIATE")
    try:
        rows = conn.execute(_SELECT_HEAD, (after_seq, max_rows)).fetchall()
        doomed: list[int] = []
        messages = nbytes = 0
        scanned = after_seq
        stopped = False
        for first_seq, count, server_id, received_at, size in rows:
            if first_seq + count - 1 > upto_seq:
                stopped = True
                break
            young = before is not None and received_at >= before
            if young and server_id not in kept:  # a kept row's age stops nothing
                stopped = True
                break
            if doomed and (
                nbytes >= max_bytes or (want_bytes is not None and nbytes >= want_bytes)
            ):
                break
            scanned = first_seq
            if server_id in kept:
                continue
            doomed.append(first_seq)
            messages += count
            nbytes += size
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
    enough = want_bytes is not None and nbytes >= want_bytes
    more = (
        not stopped
        and not enough
        and scanned != after_seq
        and (len(rows) == max_rows or nbytes >= max_bytes)
    )
    return Chunk(len(doomed), messages, nbytes, scanned, more)


def vacuum_chunk(conn: sqlite3.Connection, pages: int) -> int:
    """Give up to ``pages`` free pages back to the file system (incremental auto-vacuum only;
    a no-op otherwise) and return how many free pages remain."""
    # executescript steps the pragma to its end; execute() would free one page only.
    conn.executescript(f"PRAGMA incremental_vacuum({int(pages)});")
    return int(conn.execute("PRAGMA freelist_count").fetchone()[0])


@dataclass(slots=True)
class _Totals:
    passes: int = 0
    messages: int = 0
    bytes_freed: int = 0
    last: PassReport | None = None


class RetentionTask:
    """Runs retention passes over ``store`` every ``policy.interval`` seconds.

    What it knows: the batch rows of the message store (:mod:`switchboard.store.sqlite.schema`), how
    to delete a prefix of them in one short transaction, how much of the file is in use, how to give
    free pages back (incremental vacuum), and a small scheduler that runs a pass every ``interval``
    seconds.

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

    def __init__(
        self,
        store: MessageStore,
        policy: RetentionPolicy,
        floor: Callable[[], Awaitable[Floor]],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._policy = policy
        self._floor = floor
        self._clock = clock
        self._scanned = 0  # rows at or below this first_seq are gone or kept
        self._longest = 0.0  # the longest chunk of the pass running, in ms
        self._totals = _Totals()

    @property
    def policy(self) -> RetentionPolicy:
        """The policy it applies."""
        return self._policy

    async def run(self) -> None:
        """Run a pass, wait ``interval`` seconds, and again, until cancelled or the store
        closes. A pass that fails is logged and the next one tries again."""
        if not self._policy.enabled:
            return
        log.info(
            "retention_started",
            retain_seconds=self._policy.retain,
            max_size_bytes=self._policy.max_size,
            interval_seconds=self._policy.interval,
        )
        while True:
            try:
                await self.run_pass()
            except StoreClosedError:
                return
            except StoreError as exc:
                log.warning("retention_pass_failed", error=str(exc))
            await anyio.sleep(self._policy.interval)

    async def run_pass(self) -> PassReport:
        """Delete what the policy allows now, chunk by chunk, and report it.

        Raises:
            StoreError: the store refused a chunk (what was committed before stays deleted).
        """
        policy, store = self._policy, self._store
        started = time.perf_counter()
        at = self._clock()
        self._longest = 0.0
        floor = await self._floor()
        upto, held_by = floor.seq, floor.held_by
        window_top = store.latest_seq - policy.keep_newest
        if window_top < upto:
            upto, held_by = window_top, "the duplicate window (the newest messages)"
        before = await store.maintain(usage)
        rows = messages = 0
        try:
            if policy.retain is not None:
                r, m = await self._prune(upto, at - policy.retain, None)
                rows, messages = rows + r, messages + m
            if policy.max_size is not None:
                r, m = await self._cap(upto, policy.max_size)
                rows, messages = rows + r, messages + m
            if rows and before.auto_vacuum == 2:
                vacuum = partial(vacuum_chunk, pages=policy.vacuum_pages)
                while await self._timed(vacuum, writes=policy.vacuum_pages * before.page_size):
                    pass
        except StoreError as exc:
            self._record(started, at, rows, messages, before, before, upto, held_by, str(exc))
            raise
        after = await store.maintain(usage)
        return self._record(started, at, rows, messages, before, after, upto, held_by, None)

    async def _prune(self, upto: int, before: float | None, want: int | None) -> tuple[int, int]:
        policy = self._policy
        rows = messages = 0
        while True:
            chunk = await self._timed(
                partial(
                    prune_chunk,
                    after_seq=self._scanned,
                    upto_seq=upto,
                    before=before,
                    keep_servers=policy.keep_servers,
                    max_rows=policy.chunk_rows,
                    max_bytes=policy.chunk_bytes,
                    want_bytes=want,
                ),
                writes=policy.chunk_bytes,
            )
            self._scanned = chunk.scanned_to
            rows += chunk.rows
            messages += chunk.messages
            if want is not None:
                want -= chunk.body_bytes
                if want <= 0:
                    return rows, messages
            if not chunk.more:
                return rows, messages

    async def _timed(self, work: Callable[[sqlite3.Connection], _R], *, writes: int) -> _R:
        """Run ``work`` on the writer thread, and keep the longest time one took there."""

        def timed(conn: sqlite3.Connection) -> tuple[_R, float]:
            began = time.perf_counter()
            result = work(conn)
            return result, (time.perf_counter() - began) * 1000

        result, took = await self._store.maintain(timed, writes=writes)
        self._longest = max(self._longest, took)
        # Leave the writer to ingest for as long as the chunk held it: a pass takes at most
        # half of the writer's time, however much it has to delete.
        await anyio.sleep(took / 1000)
        return result

    async def _cap(self, upto: int, max_size: int) -> tuple[int, int]:
        rows = messages = 0
        while True:
            now = await self._store.maintain(usage)
            excess = now.used_bytes - max_size
            if excess <= 0:
                return rows, messages
            r, m = await self._prune(upto, None, excess)
            if r == 0:  # nothing more may go: the cap waits for acknowledgements
                return rows, messages
            rows, messages = rows + r, messages + m

    def _record(
        self,
        started: float,
        at: float,
        rows: int,
        messages: int,
        before: Usage,
        after: Usage,
        floor: int,
        held_by: str,
        error: str | None,
    ) -> PassReport:
        took_ms = round((time.perf_counter() - started) * 1000, 1)
        freed = max(before.used_bytes - after.used_bytes, 0)
        report = PassReport(
            at=at,
            took_ms=took_ms,
            rows=rows,
            messages=messages,
            bytes_freed=freed,
            file_bytes=after.file_bytes,
            used_bytes=after.used_bytes,
            floor=floor,
            held_by=held_by,
            longest_chunk_ms=round(self._longest, 1),
            error=error,
        )
        totals = self._totals
        totals.passes += 1
        totals.messages += messages
        totals.bytes_freed += freed
        totals.last = report
        fields = {
            "rows": rows,
            "messages": messages,
            "bytes_freed": freed,
            "file_bytes": after.file_bytes,
            "took_ms": took_ms,
            "longest_chunk_ms": round(self._longest, 1),
            "floor": floor,
            "held_by": held_by,
        }
        if messages:
            log.info("retention_pass", **fields)
        else:
            log.debug("retention_pass", **fields)
        return report

    def last_pass(self) -> RetentionSummary:
        """A JSON-ready summary for the status surface: the settings, how many passes ran,
        what they deleted in total, and the last pass (None before the first)."""
        policy, totals = self._policy, self._totals
        return {
            "enabled": policy.enabled,
            "retain_seconds": policy.retain,
            "max_size_bytes": policy.max_size,
            "interval_seconds": policy.interval,
            "passes": totals.passes,
            "deleted_messages": totals.messages,
            "bytes_freed": totals.bytes_freed,
            "last": None if totals.last is None else asdict(totals.last),
        }
