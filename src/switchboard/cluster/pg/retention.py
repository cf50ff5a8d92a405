"""Retention on PostgreSQL: deleting old, fully acknowledged batch rows in small chunks.

:class:`PgRetentionTask` applies the same
:class:`~switchboard.store.retention.RetentionPolicy` with the same floor and the same pass
(:class:`~switchboard.store.retention.RetentionPasses`) as SQLite's
:class:`~switchboard.store.sqlite.retention.RetentionTask` (docs/operations.md, "Retention");
what differs is how a chunk is deleted and what ``max_size`` measures (see the class).

What it deliberately does not know: agents, tune-outs, mail or leases (the floor is asked of a
callback; in cluster mode the node runs it only while this instance holds ``@job:retention``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar, Final

import psycopg
import structlog

from switchboard.cluster.pg.message_store import PgMessageStore
from switchboard.store.retention import (
    Chunk,
    ChunkBounds,
    Floor,
    PassReport,
    RetentionPasses,
    RetentionPolicy,
    scan_head,
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


async def prune_chunk(conn: psycopg.AsyncConnection[Any], bounds: ChunkBounds) -> Chunk:
    """Delete, in one transaction, the oldest batch rows that ``bounds`` lets go.

    Which rows may go is :func:`~switchboard.store.retention.scan_head`'s rule (SQLite's), over
    at most ``max_rows`` rows, with the sizes ``max_size`` counts. Both statements walk the
    primary key from ``after_seq``: no scan of the table.

    Raises:
        psycopg.Error: PostgreSQL refused (the transaction was rolled back).
    """
    kept = sorted(bounds["keep_servers"])
    async with conn.transaction():
        cur = await conn.execute(_HEAD_ROWS, (bounds["after_seq"], bounds["max_rows"]))
        doomed, chunk = scan_head(await cur.fetchall(), bounds)
        if doomed:
            await conn.execute(_DELETE, (doomed[0], doomed[-1], kept))
    return chunk


class PgRetentionTask(RetentionPasses[PgUsage]):
    """Runs retention passes over a :class:`PgMessageStore` every ``policy.interval`` seconds.

    The rules and the pass are SQLite's (:class:`~switchboard.store.retention.RetentionPasses`):
    only a prefix of the rows in seq order at or below the floor and below the duplicate window
    goes; ``retain`` deletes what is older, stopping at the first row too young; ``max_size``
    then deletes the oldest of what may go while the rows exceed it; mail is never deleted;
    between two chunks the pass pauses as long as the chunk took. What differs on PostgreSQL:

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

    _log = log
    _log_tags: ClassVar[Mapping[str, object]] = {"backend": "postgres"}

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
        super().__init__(policy, floor, clock=clock)
        self._store = store
        self._every_cursor = every_cursor
        self._vacuum = vacuum
        self._counted: tuple[int, int] | None = None  # (bytes of the rows up to seq, seq)
        self._vacuum_ms = 0.0  # the VACUUM of the pass running

    def _starting(self) -> None:
        # Another instance may have held the job meanwhile: count the rows afresh.
        self._counted = None

    async def run_pass(self) -> PassReport:
        """Delete what the policy allows now, chunk by chunk, and report it.

        Raises:
            StoreError: the database refused a chunk (what was committed before stays deleted).
        """
        self._vacuum_ms = 0.0
        report = await super().run_pass()
        if self._vacuum_ms:
            log.debug("retention_vacuum", took_ms=round(self._vacuum_ms, 1))
        return report

    async def _floor_now(self) -> Floor:
        floor = await self._floor()
        if self._every_cursor:
            cursors = await self._store.maintain(_least_cursor, "read the cursors")
            floor = min(floor, cursors, key=_seq)
        return floor

    def _latest_seq(self) -> int:
        return self._store.latest_seq

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

    async def _delete_chunk(self, bounds: ChunkBounds) -> tuple[Chunk, float]:
        began = time.perf_counter()
        chunk = await self._store.maintain(
            partial(prune_chunk, bounds=bounds), "delete old messages"
        )
        took = time.perf_counter() - began
        if self._counted is not None:
            self._counted = (self._counted[0] - chunk.body_bytes, self._counted[1])
        return chunk, took

    async def _tidy(self, before: PgUsage) -> None:
        if self._vacuum:
            began = time.perf_counter()
            await self._store.maintain(_vacuum, "vacuum the batch rows")
            self._vacuum_ms = (time.perf_counter() - began) * 1000

    def _usage_fields(self, after: PgUsage) -> dict[str, object]:
        return {"used_bytes": after.used_bytes, "file_bytes": after.file_bytes}


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
