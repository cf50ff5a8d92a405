"""The on-disk format of the message store: schema, migrations, pragmas, SQL and row codec.

What this module knows: SQLite. It creates and upgrades the schema (versioned with
``PRAGMA user_version``), opens the writer and reader connections with the pragmas the store
relies on, holds every SQL statement the store runs, and turns records into rows and rows into
:class:`StoredMessage` values (JSON columns are encoded with orjson).

What it deliberately does not know: threads, the event loop, group commit, or who calls it.
Every function here is synchronous and runs on whatever thread calls it.

Schema version 1::

    messages(seq INTEGER PRIMARY KEY, server_id, channel_id, message_id, thread_id,
             author_id, author_name, ts, content, metadata, tags, received_at)
        UNIQUE INDEX messages_by_key (server_id, channel_id, message_id)
    cursors(agent TEXT PRIMARY KEY, seq)

``content``, ``metadata`` and ``tags`` are orjson-encoded JSON stored as BLOB (NULL for an
absent ``metadata``/``tags``). ``seq`` is the rowid: SQLite gives each inserted row the largest
rowid plus one, so one group's rows get consecutive sequence numbers in insertion order; the
writer checks this for every group instead of assuming it. A later concern (the event log)
adds its tables as a further entry in ``_MIGRATIONS``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any, Final, Literal

import orjson

from switchboard.store.records import IncomingRecord, StoredMessage, StoreError

__all__ = [
    "INSERT_MESSAGES",
    "SCHEMA_VERSION",
    "SELECT_AFTER",
    "SELECT_COUNT",
    "SEQ_OF_KEY",
    "UPSERT_CURSOR",
    "Row",
    "RowInserter",
    "Synchronous",
    "decode_row",
    "encode_rows",
    "load_state",
    "open_reader",
    "open_writer",
]

Synchronous = Literal["normal", "full"]

# One message as bound to INSERT_MESSAGES, in column order.
Row = tuple[str, str, str, str | None, str, str, str, bytes, bytes | None, bytes | None, float]

# Each entry upgrades the schema by one version: entry i takes user_version i to i + 1.
_MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    (
        """
        CREATE TABLE messages (
            seq INTEGER PRIMARY KEY,
            server_id TEXT NOT NULL,
            channel_id TEXT NOT NULL,
            message_id TEXT NOT NULL,
            thread_id TEXT,
            author_id TEXT NOT NULL,
            author_name TEXT NOT NULL,
            ts TEXT NOT NULL,
            content BLOB NOT NULL,
            metadata BLOB,
            tags BLOB,
            received_at REAL NOT NULL
        )
        """,
        "CREATE UNIQUE INDEX messages_by_key ON messages (server_id, channel_id, message_id)",
        "CREATE TABLE cursors (agent TEXT PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID",
    ),
)
SCHEMA_VERSION: Final = len(_MIGRATIONS)

# A larger checkpoint interval than SQLite's default (1000 pages) amortizes checkpoints over
# more commits; the WAL is truncated back to _JOURNAL_SIZE_LIMIT after each checkpoint.
_WAL_AUTOCHECKPOINT: Final = 4000
_JOURNAL_SIZE_LIMIT: Final = 64 * 1024 * 1024
_CACHE_KIB: Final = 64 * 1024
_BUSY_TIMEOUT_MS: Final = 5000

_COLUMNS: Final = (
    "server_id, channel_id, message_id, thread_id, author_id, author_name, ts, "
    "content, metadata, tags, received_at"
)
_ROW_PLACEHOLDERS: Final = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_ROW_WIDTH: Final = 11
# The one-row insert: the baseline in bench/bench_store.py (the writer uses RowInserter).
INSERT_MESSAGES: Final = f"INSERT OR IGNORE INTO messages ({_COLUMNS}) VALUES {_ROW_PLACEHOLDERS}"
# Rows per multi-row INSERT; a power of two so that any batch splits into few cached statements.
_MAX_ROWS_PER_STATEMENT: Final = 256
SEQ_OF_KEY: Final = (
    "SELECT seq FROM messages WHERE server_id = ? AND channel_id = ? AND message_id = ?"
)
SELECT_AFTER: Final = f"SELECT seq, {_COLUMNS} FROM messages WHERE seq > ? ORDER BY seq LIMIT ?"
SELECT_COUNT: Final = "SELECT count(*) FROM messages"
UPSERT_CURSOR: Final = (
    "INSERT INTO cursors (agent, seq) VALUES (?, ?) "
    "ON CONFLICT (agent) DO UPDATE SET seq = excluded.seq"
)


def open_writer(path: str | os.PathLike[str], synchronous: Synchronous) -> sqlite3.Connection:
    """Open (creating if needed) the database for writing and bring its schema up to date.

    The connection is in autocommit mode (the writer issues ``BEGIN IMMEDIATE``/``COMMIT``
    itself) and may be handed to another thread.

    Args:
        path: the database file.
        synchronous: ``"normal"`` (committed data survives a process crash) or ``"full"``
            (it also survives power loss).

    Raises:
        StoreError: the file cannot be opened, is not a database, or has a newer schema.
    """
    if synchronous not in ("normal", "full"):
        raise ValueError(f"synchronous must be 'normal' or 'full', not {synchronous!r}")
    try:
        conn = sqlite3.connect(os.fspath(path), isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open message store {os.fspath(path)!r}: {exc}") from exc
    try:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreError(f"cannot put {os.fspath(path)!r} in WAL mode (got {mode!r})")
        conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        conn.execute(f"PRAGMA wal_autocheckpoint = {_WAL_AUTOCHECKPOINT}")
        conn.execute(f"PRAGMA journal_size_limit = {_JOURNAL_SIZE_LIMIT}")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        _migrate(conn)
    except BaseException as exc:
        conn.close()
        if isinstance(exc, sqlite3.Error):
            raise StoreError(f"cannot open message store {os.fspath(path)!r}: {exc}") from exc
        raise
    return conn


def _migrate(conn: sqlite3.Connection) -> None:
    """Apply every migration the file has not seen yet, each in its own transaction."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"message store schema version {version} is newer than this code ({SCHEMA_VERSION})"
        )
    for target in range(version + 1, SCHEMA_VERSION + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _MIGRATIONS[target - 1]:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {target}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


class RowInserter:
    """Inserts message rows, in order, with a few multi-row ``INSERT OR IGNORE`` statements.

    One statement per row (``executemany``) costs a Python-to-SQLite round trip, a statement
    reset and a release and re-acquisition of the GIL per row; the last is what hurts when the
    event loop thread is busy. Here ``n`` rows take ``n // 256`` statements of 256 rows plus one
    per set bit of the remainder (50 rows: 32 + 16 + 2), so at most nine distinct statements
    exist and all stay in the connection's statement cache. Rows of one statement get their
    rowids in VALUES order, which is what the writer's sequence numbering relies on (and
    checks).

    Args:
        conn: the write connection; its bound-parameter limit caps the statement size.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        by_limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // _ROW_WIDTH
        most = min(_MAX_ROWS_PER_STATEMENT, by_limit)
        self._largest = 1 << (most.bit_length() - 1)
        self._sql: dict[int, str] = {}

    def insert(self, conn: sqlite3.Connection, rows: Sequence[Row]) -> tuple[int, int | None]:
        """Insert ``rows`` inside the caller's transaction.

        Returns:
            How many rows were new, and the connection's last inserted rowid after the last
            statement (the seq of the last row when every row was new).
        """
        inserted = 0
        last_rowid: int | None = None
        start, total = 0, len(rows)
        while start < total:
            size = min(self._largest, 1 << ((total - start).bit_length() - 1))
            chunk = rows[start : start + size]
            cursor = conn.execute(self._statement(size), list(chain.from_iterable(chunk)))
            inserted += cursor.rowcount
            last_rowid = cursor.lastrowid
            start += size
        return inserted, last_rowid

    def _statement(self, size: int) -> str:
        sql = self._sql.get(size)
        if sql is None:
            values = ", ".join([_ROW_PLACEHOLDERS] * size)
            sql = self._sql[size] = f"INSERT OR IGNORE INTO messages ({_COLUMNS}) VALUES {values}"
        return sql


def open_reader(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """Open a read-only connection to a database the writer has already set up.

    Raises:
        StoreError: the file cannot be opened.
    """
    uri = Path(os.fspath(path)).resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open message store {os.fspath(path)!r} for reading") from exc
    return conn


def load_state(conn: sqlite3.Connection) -> tuple[int, dict[str, int]]:
    """Return the highest stored seq (0 when empty) and every agent's cursor."""
    latest = conn.execute("SELECT max(seq) FROM messages").fetchone()[0]
    cursors = {
        str(agent): int(seq) for agent, seq in conn.execute("SELECT agent, seq FROM cursors")
    }
    return (int(latest) if latest is not None else 0), cursors


def encode_rows(records: Sequence[IncomingRecord], received_at: float) -> list[Row]:
    """Encode a batch for INSERT_MESSAGES.

    This runs on the caller's thread so that a record that cannot be encoded is refused before
    it is queued, and cannot fail the group it would have joined.

    Raises:
        StoreError: a record's content, metadata or tags are not JSON-serializable.
    """
    dumps = orjson.dumps
    try:
        return [
            (
                r.server_id,
                r.channel_id,
                r.message_id,
                r.thread_id,
                r.author_id,
                r.author_name,
                r.timestamp,
                dumps(r.content),
                None if r.metadata is None else dumps(r.metadata),
                None if r.tags is None else dumps(r.tags),
                received_at,
            )
            for r in records
        ]
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        raise StoreError(f"a record cannot be encoded as JSON: {exc}") from exc


def decode_row(row: Sequence[Any]) -> StoredMessage:
    """Turn one SELECT_AFTER row back into a :class:`StoredMessage`."""
    loads = orjson.loads
    (seq, server_id, channel_id, message_id, thread_id, author_id, author_name, ts,
     content, metadata, tags, received_at) = row  # fmt: skip
    return StoredMessage(
        seq=seq,
        server_id=server_id,
        channel_id=channel_id,
        message_id=message_id,
        thread_id=thread_id,
        author_id=author_id,
        author_name=author_name,
        timestamp=ts,
        content=loads(content),
        metadata=None if metadata is None else loads(metadata),
        tags=None if tags is None else loads(tags),
        received_at=received_at,
    )
