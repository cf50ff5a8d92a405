"""The decision log on disk and its writer thread: sequence numbers, group commit, snapshots.

The log's two tables (created on first open), one connection owned by one thread, and how the
queued appends of a moment commit as one row in one transaction; a snapshot replaces the last
one and may compact what it covers.

What it deliberately does not know: what an event means, asyncio.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeAlias, TypeVar

import orjson
import structlog

from switchboard.store.group_thread import GroupThread, as_store_error, write_isolated
from switchboard.store.records import StoreClosedError, StoreError

__all__ = [
    "AppendEvents",
    "EventJob",
    "EventLogWriter",
    "TakeSnapshot",
    "ensure_tables",
    "join_bodies",
    "latest_seq",
    "read_events_after",
    "read_snapshot",
    "snapshot_seq",
]

log = structlog.get_logger(__name__)

W = TypeVar("W")

_CREATE: Final = (
    """
    CREATE TABLE IF NOT EXISTS decision_batches (
        first_seq INTEGER PRIMARY KEY,
        count INTEGER NOT NULL,
        body BLOB NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS decision_snapshot (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        upto_seq INTEGER NOT NULL,
        body BLOB NOT NULL
    )
    """,
)
_INSERT: Final = "INSERT INTO decision_batches (first_seq, count, body) VALUES (?, ?, ?)"
_SELECT_LATEST: Final = (
    "SELECT first_seq + count - 1 FROM decision_batches ORDER BY first_seq DESC LIMIT 1"
)
_SELECT_FROM: Final = (
    "SELECT first_seq, body FROM decision_batches WHERE first_seq >= "
    "coalesce((SELECT first_seq FROM decision_batches WHERE first_seq <= ? "
    "ORDER BY first_seq DESC LIMIT 1), 0) ORDER BY first_seq"
)
_SELECT_SNAPSHOT: Final = "SELECT upto_seq, body FROM decision_snapshot WHERE id = 1"
_UPSERT_SNAPSHOT: Final = (
    "INSERT INTO decision_snapshot (id, upto_seq, body) VALUES (1, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET upto_seq = excluded.upto_seq, body = excluded.body"
)
_DELETE_COVERED: Final = "DELETE FROM decision_batches WHERE first_seq + count - 1 <= ?"


@dataclass(slots=True, eq=False)
class AppendEvents(Generic[W]):
    """One appended batch: ``count`` events encoded by the caller as one JSON array ``body``.

    ``last_seq`` is set once committed, ``error`` once refused.
    """

    count: int
    body: bytes
    waiter: W
    last_seq: int = 0
    error: StoreError | None = None


@dataclass(slots=True, eq=False)
class TakeSnapshot(Generic[W]):
    """Store ``body`` (the caller's encoded state) as of ``upto_seq``; compact if asked."""

    upto_seq: int
    body: bytes
    compact: bool
    waiter: W
    done: bool = False
    error: StoreError | None = None


EventJob: TypeAlias = AppendEvents[W] | TakeSnapshot[W]


def join_bodies(bodies: list[bytes]) -> bytes:
    """One JSON array holding the items of several encoded non-empty JSON arrays, in order."""
    if len(bodies) == 1:
        return bodies[0]
    return b"[" + b",".join([body[1:-1] for body in bodies]) + b"]"


class EventLogWriter(GroupThread["EventJob[W]"], Generic[W]):
    """Owns the log's write connection and the thread that commits queued jobs in groups.

    Args:
        conn: an open, migrated connection in autocommit mode; the writer closes it at the end.
        latest_seq: the highest seq already logged.
        snapshot_seq: the seq of the stored snapshot (0 when none); an older one is refused.
        on_group_done: called from the writer thread once per group with the finished jobs. It
            must be cheap and thread-safe (schedule, don't work).
        max_group_events: stop draining the queue into one group past this many events.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        latest_seq: int,
        snapshot_seq: int,
        on_group_done: Callable[[list[EventJob[W]]], None],
        *,
        max_group_events: int = 10_000,
    ) -> None:
        super().__init__(
            conn,
            name="switchboard-eventlog-writer",
            label="eventlog",
            max_group_weight=max_group_events,
        )
        self._latest = latest_seq
        self._snapshot_seq = snapshot_seq
        self._on_group_done = on_group_done

    def _weight(self, job: EventJob[W]) -> int:
        return job.count if isinstance(job, AppendEvents) else 1

    def _process(self, group: list[EventJob[W]]) -> None:
        """Runs of appends commit as one row each; a snapshot commits where it was queued."""
        run: list[AppendEvents[W]] = []
        for job in group:
            if isinstance(job, AppendEvents):
                run.append(job)
                continue
            if run:
                write_isolated(run, self._append, label="eventlog")
                run = []
            try:
                self._snapshot(job)
            except Exception as exc:
                job.error = as_store_error(exc, label="eventlog")
        if run:
            write_isolated(run, self._append, label="eventlog")

    def _append(self, jobs: list[AppendEvents[W]]) -> None:
        first = self._latest + 1
        count = sum(job.count for job in jobs)
        body = join_bodies([job.body for job in jobs])
        self._conn.execute(_INSERT, (first, count, body))  # autocommit: its own transaction
        seq = self._latest
        for job in jobs:
            seq += job.count
            job.last_seq = seq
        self._latest = seq

    def _snapshot(self, job: TakeSnapshot[W]) -> None:
        if not self._snapshot_seq <= job.upto_seq <= self._latest:
            raise StoreError(
                f"a snapshot at {job.upto_seq} is outside {self._snapshot_seq}..{self._latest}"
            )
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(_UPSERT_SNAPSHOT, (job.upto_seq, job.body))
            if job.compact:
                conn.execute(_DELETE_COVERED, (job.upto_seq,))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._snapshot_seq = job.upto_seq
        job.done = True

    def _notify(self, group: list[EventJob[W]]) -> None:
        try:
            self._on_group_done(group)
        except Exception:
            log.exception("eventlog_group_done_callback_failed")

    def _fail(self, jobs: list[EventJob[W]]) -> None:
        pending = [job for job in jobs if job.error is None and not _finished(job)]
        if not pending:
            return
        for job in pending:
            job.error = StoreClosedError("the decision log writer stopped before this write")
        self._notify(pending)


def _finished(job: EventJob[Any]) -> bool:
    return job.done if isinstance(job, TakeSnapshot) else job.last_seq > 0


def ensure_tables(conn: sqlite3.Connection) -> None:
    """Create the log's tables if the file does not have them yet (one transaction)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _CREATE:
            conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def latest_seq(conn: sqlite3.Connection) -> int:
    """The highest logged seq: the last row's, else the snapshot's, else 0."""
    row = conn.execute(_SELECT_LATEST).fetchone()
    if row is not None:
        return int(row[0])
    return snapshot_seq(conn)


def snapshot_seq(conn: sqlite3.Connection) -> int:
    """The stored snapshot's seq, 0 when none was taken (the state is not read)."""
    row = conn.execute("SELECT upto_seq FROM decision_snapshot WHERE id = 1").fetchone()
    return int(row[0]) if row is not None else 0


def read_snapshot(conn: sqlite3.Connection) -> tuple[int, dict[str, Any]] | None:
    """The stored snapshot as ``(upto_seq, state)``, or None when none was taken."""
    row = conn.execute(_SELECT_SNAPSHOT).fetchone()
    if row is None:
        return None
    state = orjson.loads(row[1])
    if not isinstance(state, dict):
        raise StoreError("the decision log snapshot is not a JSON object")
    return int(row[0]), state


def read_events_after(conn: sqlite3.Connection, after_seq: int) -> list[dict[str, Any]]:
    """Every retained event with ``seq > after_seq``, in seq order (rows decoded whole)."""
    start = max(after_seq, 0) + 1
    events: list[dict[str, Any]] = []
    cursor = conn.execute(_SELECT_FROM, (start,))
    try:
        loads = orjson.loads
        for first_seq, body in cursor:
            decoded = loads(body)
            if first_seq < start:
                decoded = decoded[start - first_seq :]
            events.extend(decoded)
    finally:
        cursor.close()
    return events
