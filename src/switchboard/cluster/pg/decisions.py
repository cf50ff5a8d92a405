"""The decision log in PostgreSQL: :class:`PgDecisionLog`.

Batches of events under their own counter row (``decision_head``), so every instance appends to
one log in commit order; one snapshot row; each change bumps ``versions('decisions')`` in the
same transaction. Appends, snapshots and reads run one at a time, in the order they were
queued, on a connection of their own (so a read never runs inside a write's transaction).

What it deliberately does not know: what a decision means (events are opaque JSON objects).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Final, TypeVar

import orjson
import psycopg

from switchboard.cluster.pg.schema import SYNCHRONOUS_COMMIT
from switchboard.store.records import (
    LoadedLog,
    Snapshot,
    StorageUnavailableError,
    StoreClosedError,
    StoreError,
)

__all__ = ["PgDecisionLog", "bump_version"]

T = TypeVar("T")

_BUMP: Final = (
    "INSERT INTO versions (name, version) VALUES (%s, 1) ON CONFLICT (name) "
    "DO UPDATE SET version = versions.version + 1"
)
_LATEST: Final = (
    "SELECT greatest((SELECT next_seq - 1 FROM decision_head WHERE id = 1), "
    "coalesce((SELECT upto_seq FROM decision_snapshot WHERE id = 1), 0))"
)
_ENCODE_ERRORS: Final = (orjson.JSONEncodeError, TypeError)


async def bump_version(conn: psycopg.AsyncConnection[Any], name: str) -> None:
    """Raise the version row ``name`` (inside the caller's transaction)."""
    await conn.execute(_BUMP, (name,))


def _error(exc: psycopg.Error, doing: str) -> StoreError:
    if isinstance(exc, psycopg.OperationalError):
        return StorageUnavailableError(str(exc).strip().splitlines()[0] if str(exc) else doing)
    return StoreError(f"cannot {doing}: {exc}")


class PgDecisionLog:
    """An append-only log of decision events shared by every instance, with snapshots.

    ``append`` and ``snapshot`` queue their write at once (calls commit in call order); the
    awaitable completes once committed. A batch's events take consecutive seqs from the
    shared counter; :attr:`latest_seq` is the end of the log as this instance last saw it.
    Commits wait for the WAL flush (``synchronous_commit = on``): a decision is durable
    before it is true.
    """

    def __init__(self, url: str, conn: psycopg.AsyncConnection[Any], latest: int) -> None:
        self._url = url
        self._conn = conn
        self._latest = latest
        self._closed = False
        self._tail: asyncio.Future[Any] | None = None

    @classmethod
    async def open(cls, url: str) -> PgDecisionLog:
        """Open the log in the (migrated) database at ``url``.

        Raises:
            StoreError: the database does not answer.
        """
        try:
            conn = await cls._connect(url)
            cur = await conn.execute(_LATEST)
            row = await cur.fetchone()
        except psycopg.Error as exc:
            raise _error(exc, "open the decision log") from exc
        return cls(url, conn, int(row[0]) if row is not None else 0)

    @staticmethod
    async def _connect(url: str) -> psycopg.AsyncConnection[Any]:
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, prepare_threshold=None, connect_timeout=5
        )
        await conn.execute(f"SET synchronous_commit = {SYNCHRONOUS_COMMIT['full']}")
        return conn

    @property
    def latest_seq(self) -> int:
        return self._latest

    def append(self, events: Sequence[Mapping[str, Any]]) -> Awaitable[int]:
        """Queue a batch of events now; the awaitable gives its last seq once committed."""
        self._check_open()
        if not events:
            done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            done.set_result(self._latest)
            return done
        batch = list(events)
        if not all(type(event) is dict for event in batch):
            raise StoreError("every decision event must be a JSON object (a dict)")
        body = _encode(batch, "event")
        return self._queue(self._append(len(batch), body))

    def snapshot(
        self, state: Mapping[str, Any], upto_seq: int, *, compact: bool = True
    ) -> Awaitable[None]:
        """Queue storing ``state`` as the log up to ``upto_seq`` (``compact``: drop the
        batches it covers)."""
        self._check_open()
        body = _encode(dict(state), "snapshot")
        return self._queue(self._snapshot(upto_seq, body, compact))

    def _queue(self, work: Awaitable[T]) -> asyncio.Future[T]:
        before = self._tail

        async def in_turn() -> T:
            if before is not None:
                await asyncio.gather(before, return_exceptions=True)
            return await work

        task = asyncio.ensure_future(in_turn())
        self._tail = task
        # A caller cancelled while it waits does not cancel the write (it may still commit).
        return asyncio.shield(task)

    async def _transaction_conn(self) -> psycopg.AsyncConnection[Any]:
        if self._conn.closed or self._conn.broken:
            self._conn = await self._connect(self._url)
        return self._conn

    async def _append(self, count: int, body: bytes) -> int:
        try:
            conn = await self._transaction_conn()
            async with conn.transaction():
                cur = await conn.execute(
                    "UPDATE decision_head SET next_seq = next_seq + %s WHERE id = 1 "
                    "RETURNING next_seq - %s",
                    (count, count),
                )
                row = await cur.fetchone()
                assert row is not None
                first = int(row[0])
                await conn.execute(
                    "INSERT INTO decision_batches (first_seq, count, body) VALUES (%s, %s, %s)",
                    (first, count, body),
                )
                await bump_version(conn, "decisions")
        except psycopg.Error as exc:
            raise _error(exc, "append decision events") from exc
        last = first + count - 1
        self._latest = max(self._latest, last)
        return last

    async def _snapshot(self, upto_seq: int, body: bytes, compact: bool) -> None:
        try:
            conn = await self._transaction_conn()
            async with conn.transaction():
                cur = await conn.execute(
                    "SELECT (SELECT next_seq - 1 FROM decision_head WHERE id = 1), "
                    "coalesce((SELECT upto_seq FROM decision_snapshot WHERE id = 1 FOR UPDATE), 0)"
                )
                row = await cur.fetchone()
                assert row is not None
                end, kept = int(row[0]), int(row[1])
                if not kept <= upto_seq <= end:
                    raise StoreError(f"a snapshot at {upto_seq} is outside {kept}..{end}")
                await conn.execute(
                    "INSERT INTO decision_snapshot (id, upto_seq, body) VALUES (1, %s, %s) "
                    "ON CONFLICT (id) DO UPDATE SET upto_seq = excluded.upto_seq, "
                    "body = excluded.body",
                    (upto_seq, body),
                )
                if compact:
                    await conn.execute(
                        "DELETE FROM decision_batches WHERE first_seq + count - 1 <= %s",
                        (upto_seq,),
                    )
                await bump_version(conn, "decisions")
        except psycopg.Error as exc:
            raise _error(exc, "store the decision snapshot") from exc

    async def read_all(self, after_seq: int = 0) -> list[dict[str, Any]]:
        """Every retained event with ``seq > after_seq``, in seq order."""
        self._check_open()
        return await self._queue(self._read_all(after_seq))

    async def _read_all(self, after_seq: int) -> list[dict[str, Any]]:
        try:
            return await self._events_after(await self._transaction_conn(), after_seq)
        except psycopg.Error as exc:
            raise _error(exc, f"read decision events after {after_seq}") from exc

    async def _events_after(
        self, conn: psycopg.AsyncConnection[Any], after_seq: int
    ) -> list[dict[str, Any]]:
        start = max(after_seq, 0) + 1
        cur = await conn.execute(
            "SELECT first_seq, body FROM decision_batches WHERE first_seq >= "
            "coalesce((SELECT first_seq FROM decision_batches WHERE first_seq <= %s "
            "ORDER BY first_seq DESC LIMIT 1), 0) ORDER BY first_seq",
            (start,),
        )
        events: list[dict[str, Any]] = []
        for first_seq, body in await cur.fetchall():
            decoded = orjson.loads(bytes(body))
            if first_seq < start:
                decoded = decoded[start - first_seq :]
            events.extend(decoded)
        return events

    async def load(self) -> LoadedLog:
        """The latest snapshot and every event after it (read in one snapshot of the
        database, so a compaction between the two reads cannot lose events)."""
        self._check_open()
        return await self._queue(self._load())

    async def _load(self) -> LoadedLog:
        try:
            conn = await self._transaction_conn()
            async with conn.transaction():
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                cur = await conn.execute(
                    "SELECT upto_seq, body FROM decision_snapshot WHERE id = 1"
                )
                row = await cur.fetchone()
                snapshot: Snapshot | None = None
                if row is not None:
                    state = orjson.loads(bytes(row[1]))
                    if not isinstance(state, dict):
                        raise StoreError("the decision log snapshot is not a JSON object")
                    snapshot = Snapshot(int(row[0]), state)
                tail = await self._events_after(conn, snapshot.upto_seq if snapshot else 0)
                cur = await conn.execute(_LATEST)
                end = await cur.fetchone()
        except psycopg.Error as exc:
            raise _error(exc, "load the decision log") from exc
        if end is not None:
            self._latest = max(self._latest, int(end[0]))
        return LoadedLog(snapshot, tail)

    async def aclose(self) -> None:
        """Commit everything already queued, then close the connection."""
        if self._closed:
            return
        self._closed = True
        if self._tail is not None:
            await asyncio.gather(self._tail, return_exceptions=True)
        await self._conn.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the decision log is closed")


def _encode(value: object, what: str) -> bytes:
    try:
        return orjson.dumps(value)
    except _ENCODE_ERRORS as exc:
        raise StoreError(f"the {what} cannot be encoded as JSON: {exc}") from exc
