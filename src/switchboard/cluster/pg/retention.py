"""Retention on PostgreSQL: deleting old, fully acknowledged batch rows in small chunks.

:class:`PgRetentionTask` applies the same
:class:`~switchboard.store.sqlite.retention.RetentionPolicy` with the same floor as SQLite's
:class:`~switchboard.store.sqlite.retention.RetentionTask`
(docs/operations.md, "Retention"); what differs is how a chunk is deleted and what ``max_size``
measures (see the class).

What it deliberately does not know: agents, tune-outs, mail or leases (the floor is asked of a
callback; in cluster mode the node runs it only while this instance holds ``@job:retention``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, Final

import anyio
import psycopg
import structlog

from switchboard.cluster.pg.message_store import PgMessageStore
from switchboard.store.records import StoreClosedError, StoreError
from switchboard.store.retention import (
    Chunk,
    Floor,
    PassReport,
    RetentionPolicy,
    RetentionSummary,
)

__all__ = ["ROW_OVERHEAD", "PgRetentionTask", "PgUsage", "prune_chunk"]

log = structlog.get_logger(__name__)

ROW_OVERHEAD: Final = 56
"""Bytes a batch row takes besides its body and server id: the tuple header (24), its line
pointer (4) and the fixed-width columns (first_seq, count, epoch, received_at: 28, aligned)."""

#: What one row counts towards ``max_size``: its body as stored (compressed or not, in the
#: table or its TOAST table; ``pg_column_size`` reads the stored size, it does not unpack).
_ROW_BYTES: Final = f"(pg_column_size(body) + octet_length(server_id) + {ROW_OVERHEAD})"
_HEAD_ROWS: Final = (
    f"SELECT first_seq, count, server_id, received_at, {_ROW_BYTES} FROM batches "
    "WHERE first_seq > %s ORDER BY first_seq LIMIT %s"
)
_DELETE: Final = (
    "DELETE FROM batches WHERE first_seq BETWEEN %s AND %s AND NOT (server_id = ANY(%s::text[]))"
)
# Rows above ``after`` only (an index range scan): committed rows are never changed, and a row
# committed later has a higher first_seq, so the rows counted once need not be read again.
_COUNT_ROWS: Final = (
    f"SELECT coalesce(sum({_ROW_BYTES}), 0), max(first_seq) FROM batches WHERE first_seq > %s"
)
_DISK: Final = "SELECT pg_total_relation_size('batches')"
_LEAST_CURSOR: Final = "SELECT agent, seq FROM cursors ORDER BY seq, agent LIMIT 1"


@dataclass(frozen=True, slots=True)
class PgUsage:
    """What the batch rows take.

    Attributes:
        used_bytes: The rows' bytes as ``max_size`` counts them (:data:`ROW_OVERHEAD`).
        file_bytes: ``pg_total_relation_size('batches')``: the table, its TOAST table and its
            indexes on disk, free space inside them included.
    """

    used_bytes: int
    file_bytes: int


async def prune_chunk(
    conn: psycopg.AsyncConnection[Any],
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

    The rules of SQLite's :func:`~switchboard.store.sqlite.retention.prune_chunk`: a row may go
    when its last seq is at most ``upto_seq``, it was received before ``before`` (any age when
    None), and its server is not in ``keep_servers`` (a kept row is passed over). The scan
    stops at the first row that may not go for its seq or age, after ``max_rows`` rows or
    ``max_bytes`` (as ``max_size`` counts them), or once ``want_bytes`` are deleted. Both
    statements walk the primary key from ``after_seq``: no scan of the table.

    Raises:
        psycopg.Error: PostgreSQL refused (the transaction was rolled back).
    """
    kept = sorted(set(keep_servers))
    async with conn.transaction():
        cur = await conn.execute(_HEAD_ROWS, (after_seq, max_rows))
        rows = await cur.fetchall()
        first = last = None
        messages = nbytes = deleted = 0
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
            if deleted and (
                nbytes >= max_bytes or (want_bytes is not None and nbytes >= want_bytes)
            ):
                break
            scanned = first_seq
            if server_id in kept:
                continue
            first = first_seq if first is None else first
            last = first_seq
            deleted += 1
            messages += count
            nbytes += size
        if first is not None:
            await conn.execute(_DELETE, (first, last, kept))
    enough = want_bytes is not None and nbytes >= want_bytes
    more = (
        not stopped
        and not enough
        and scanned != after_seq
        and (len(rows) == max_rows or nbytes >= max_bytes)
    )
    return Chunk(deleted, messages, nbytes, scanned, more)


class PgRetentionTask:
    """Runs retention passes over a :class:`PgMessageStore` every ``policy.interval`` seconds.

    The rules are SQLite's (:class:`~switchboard.store.sqlite.retention.RetentionTask`): only a
    prefix of the rows in seq order at or below the floor and below the duplicate window goes;
    ``retain`` deletes what is older, stopping at the first row too young; ``max_size`` then
    deletes the oldest of what may go while the rows exceed it; mail is never deleted; after
    each chunk the pass pauses as long as the chunk took. What differs on PostgreSQL:

    * **Chunks** run on a connection of the store's read pool, not on its writer: a DELETE of
      old rows takes row locks on those rows only, which no commit of new rows waits for, so
      ingest does not queue behind retention at all (it shares the server's I/O).
    * **``max_size``** counts the bytes of the rows (each body as stored, compressed or not,
      plus its server id and :data:`ROW_OVERHEAD`), not the files: PostgreSQL frees a deleted
      row's space only for reuse after ``VACUUM``, and rarely gives it back to the file system,
      so ``pg_total_relation_size`` does not drop after a pass and cannot be what a pass
      drives down. The rows are counted once per run (a read of the whole table at the first
      pass), then only the new rows above the highest seq counted (a range of the primary key).
    * **Space**: after a pass that deleted something it runs ``VACUUM batches`` (when
      ``vacuum``), which takes no lock that ingest or reads wait for, so the freed space is
      reused by new rows at once instead of when autovacuum comes by; the files then stop
      growing, and do not shrink (``VACUUM FULL`` would, under an exclusive lock).
    * **The floor** in cluster mode (``every_cursor``) is also held by every row of the shared
      ``cursors`` table: an agent served by another instance (a task agent made there) is not
      in this instance's roster, but its cursor row is.

    Args:
        store: The open message store.
        policy: What to delete (``vacuum_pages`` is not used here).
        floor: Asked at the start of every pass for the highest seq nobody still owes.
        clock: Unix seconds (the age cut-off); injectable for tests.
        every_cursor: Also hold the floor at the least cursor of the ``cursors`` table.
        vacuum: ``VACUUM batches`` after a pass that deleted something.
    """

    def __init__(
        self,
        store: PgMessageStore,
        policy: RetentionPolicy,
        floor: Callable[[], Awaitable[Floor]],
        *,
        clock: Callable[[], float] = time.time,
        every_cursor: bool = False,
        vacuum: bool = True,
    ) -> None:
        self._store = store
        self._policy = policy
        self._floor = floor
        self._clock = clock
        self._every_cursor = every_cursor
        self._vacuum = vacuum
        self._scanned = 0  # rows at or below this first_seq are gone or kept
        self._counted: tuple[int, int] | None = None  # (bytes of the rows up to seq, seq)
        self._longest = 0.0
        self._totals_passes = 0
        self._totals_messages = 0
        self._totals_freed = 0
        self._last: PassReport | None = None

    @property
    def policy(self) -> RetentionPolicy:
        """The policy it applies."""
        return self._policy

    async def run(self) -> None:
        """Run a pass, wait ``interval`` seconds, and again, until cancelled or the store
        closes. A pass that fails is logged and the next one tries again."""
        if not self._policy.enabled:
            return
        # Another instance may have held the job meanwhile: count the rows afresh.
        self._counted = None
        log.info(
            "retention_started",
            backend="postgres",
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
            StoreError: the database refused a chunk (what was committed before stays deleted).
        """
        policy, store = self._policy, self._store
        started = time.perf_counter()
        at = self._clock()
        self._longest = 0.0
        floor = await self._floor()
        if self._every_cursor:
            floor = min(floor, await store.maintain(_least_cursor, "read the cursors"), key=_seq)
        upto, held_by = floor.seq, floor.held_by
        window_top = store.latest_seq - policy.keep_newest
        if window_top < upto:
            upto, held_by = window_top, "the duplicate window (the newest messages)"
        before = await self._usage()
        rows = messages = 0
        vacuum_ms = 0.0
        try:
            if policy.retain is not None:
                r, m = await self._prune(upto, at - policy.retain, None)
                rows, messages = rows + r, messages + m
            if policy.max_size is not None:
                r, m = await self._cap(upto, policy.max_size)
                rows, messages = rows + r, messages + m
            if rows and self._vacuum:
                began = time.perf_counter()
                await store.maintain(_vacuum, "vacuum the batch rows")
                vacuum_ms = (time.perf_counter() - began) * 1000
        except StoreError as exc:
            self._record(started, at, rows, messages, before, before, upto, held_by, str(exc))
            raise
        after = await self._usage()
        report = self._record(started, at, rows, messages, before, after, upto, held_by, None)
        if vacuum_ms:
            log.debug("retention_vacuum", took_ms=round(vacuum_ms, 1))
        return report

    async def _usage(self) -> PgUsage:
        counted = self._counted or (0, 0)

        async def measure(conn: psycopg.AsyncConnection[Any]) -> tuple[PgUsage, int]:
            cur = await conn.execute(_COUNT_ROWS, (counted[1],))
            row = await cur.fetchone()
            cur = await conn.execute(_DISK)
            disk = await cur.fetchone()
            assert row is not None
            assert disk is not None
            top = counted[1] if row[1] is None else int(row[1])
            return PgUsage(counted[0] + int(row[0]), int(disk[0])), top

        found, top = await self._store.maintain(measure, "measure the batch rows")
        self._counted = (found.used_bytes, top)
        return found

    async def _prune(self, upto: int, before: float | None, want: int | None) -> tuple[int, int]:
        policy = self._policy
        rows = messages = 0
        while True:
            chunk_of = partial(
                prune_chunk,
                after_seq=self._scanned,
                upto_seq=upto,
                before=before,
                keep_servers=policy.keep_servers,
                max_rows=policy.chunk_rows,
                max_bytes=policy.chunk_bytes,
                want_bytes=want,
            )

            began = time.perf_counter()
            chunk = await self._store.maintain(chunk_of, "delete old messages")
            took = time.perf_counter() - began
            self._longest = max(self._longest, took * 1000)
            self._scanned = chunk.scanned_to
            if self._counted is not None:
                self._counted = (self._counted[0] - chunk.body_bytes, self._counted[1])
            rows += chunk.rows
            messages += chunk.messages
            if want is not None:
                want -= chunk.body_bytes
                if want <= 0:
                    return rows, messages
            if not chunk.more:
                return rows, messages
            # Leave the database to ingest for as long as the chunk took: a pass uses at most
            # half of one connection's time, however much it has to delete.
            await anyio.sleep(took)

    async def _cap(self, upto: int, max_size: int) -> tuple[int, int]:
        rows = messages = 0
        while True:
            now = await self._usage()
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
        before: PgUsage,
        after: PgUsage,
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
        self._totals_passes += 1
        self._totals_messages += messages
        self._totals_freed += freed
        self._last = report
        fields = {
            "backend": "postgres",
            "rows": rows,
            "messages": messages,
            "bytes_freed": freed,
            "used_bytes": after.used_bytes,
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
        """A JSON-ready summary for the status surface (as SQLite's)."""
        policy = self._policy
        return {
            "enabled": policy.enabled,
            "retain_seconds": policy.retain,
            "max_size_bytes": policy.max_size,
            "interval_seconds": policy.interval,
            "passes": self._totals_passes,
            "deleted_messages": self._totals_messages,
            "bytes_freed": self._totals_freed,
            "last": None if self._last is None else asdict(self._last),
        }


def _seq(floor: Floor) -> int:
    return floor.seq


async def _least_cursor(conn: psycopg.AsyncConnection[Any]) -> Floor:
    """The least acknowledged cursor of the shared ``cursors`` table, as a floor (the head of
    an empty table holds nothing: the caller's floor is lower or equal)."""
    cur = await conn.execute(_LEAST_CURSOR)
    row = await cur.fetchone()
    if row is None:
        return Floor(2**62, "")
    agent, seq = str(row[0]), int(row[1])
    return Floor(seq, f"agent @{agent} (acknowledged up to {seq}, its cursor row)")


async def _vacuum(conn: psycopg.AsyncConnection[Any]) -> None:
    # The pool's connections are in autocommit mode, which VACUUM needs.
    await conn.execute("VACUUM batches")
