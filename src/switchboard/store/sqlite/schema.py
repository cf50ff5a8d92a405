"""The on-disk format of the message store: schema, migrations, pragmas, SQL and batch rows.

It creates and upgrades the schema (``PRAGMA user_version``), opens the writer and reader
connections with the pragmas the store relies on, holds every SQL statement the store runs,
writes one row per batch and reads rows back. The file is made with mode 0600.

What it deliberately does not know: threads, the event loop, group commit, or duplicates.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Final, Literal

from switchboard.store.records import StoredMessage, StoreError
from switchboard.store.wire import Key, StoredSlice, decode_body, keys_of, slice_batch

__all__ = [
    "INSERT_BATCH",
    "SCHEMA_VERSION",
    "UPSERT_CURSOR",
    "UPSERT_DELIVERED",
    "BatchInserter",
    "BatchRow",
    "Synchronous",
    "count_messages",
    "create_private",
    "load_state",
    "open_checkpointer",
    "open_reader",
    "open_writer",
    "read_after",
    "read_slices_after",
    "recent_keys",
]

Synchronous = Literal["normal", "full"]

# One batch as bound to INSERT_BATCH: (first_seq, count, server_id, received_at, body).
BatchRow = tuple[int, int, str, float, bytes]

# Each entry upgrades the schema by one version: entry i takes user_version i to i + 1.
_MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    (
        """
        CREATE TABLE batches (
            first_seq INTEGER PRIMARY KEY,
            count INTEGER NOT NULL,
            server_id TEXT NOT NULL,
            received_at REAL NOT NULL,
            body BLOB NOT NULL
        )
        """,
        "CREATE TABLE cursors (agent TEXT PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID",
    ),
    ("ALTER TABLE cursors ADD COLUMN delivered INTEGER NOT NULL DEFAULT 0",),
    # Version 3 changes no table: bodies may now be packed (zlib), which older code cannot
    # read, so the version tells it to refuse the file instead of failing on a batch.
    (),
)
SCHEMA_VERSION: Final = len(_MIGRATIONS)

# A batch body is several kilobytes: pages of 8 KiB (set when the file is created) need fewer
# overflow pages per row than SQLite's default 4 KiB, and write faster.
_PAGE_SIZE: Final = 8192
# The writer's own checkpoint, once the WAL holds this much (SQLite's default is 1000 pages), is
# the backstop of the background checkpoints (see switchboard.store.sqlite.checkpoint), which copy
# most
# pages before it. The WAL is truncated back to _JOURNAL_SIZE_LIMIT when it starts over.
_CHECKPOINT_BYTES: Final = 64 * 1024 * 1024
_JOURNAL_SIZE_LIMIT: Final = 64 * 1024 * 1024
_CACHE_KIB: Final = 64 * 1024
_BUSY_TIMEOUT_MS: Final = 5000

_COLUMNS: Final = "first_seq, count, server_id, received_at, body"
_ROW_PLACEHOLDERS: Final = "(?, ?, ?, ?, ?)"
# The one-row insert (the baseline in bench/bench_store.py; the writer uses BatchInserter).
INSERT_BATCH: Final = f"INSERT INTO batches ({_COLUMNS}) VALUES {_ROW_PLACEHOLDERS}"
# Up to this many rows go into one statement of exactly that many rows, run on its own (an
# autocommit statement is its own transaction); more are split into statements of this size.
_ROWS_PER_STATEMENT: Final = 64
# The batches from the one holding seq ? onwards (a range search on the primary key).
_SELECT_FROM: Final = (
    "SELECT first_seq, server_id, received_at, body FROM batches WHERE first_seq >= "
    "coalesce((SELECT first_seq FROM batches WHERE first_seq <= ? "
    "ORDER BY first_seq DESC LIMIT 1), 0) ORDER BY first_seq"
)
_SELECT_NEWEST_FIRST: Final = (
    "SELECT first_seq, count, server_id, body FROM batches ORDER BY first_seq DESC"
)
_SELECT_LATEST: Final = "SELECT first_seq + count - 1 FROM batches ORDER BY first_seq DESC LIMIT 1"
_SELECT_COUNT: Final = "SELECT coalesce(sum(count), 0) FROM batches"
# A position only moves forward: a late write of an older one changes nothing.
UPSERT_CURSOR: Final = (
    "INSERT INTO cursors (agent, seq) VALUES (?, ?) "
    "ON CONFLICT (agent) DO UPDATE SET seq = max(seq, excluded.seq)"
)
UPSERT_DELIVERED: Final = (
    "INSERT INTO cursors (agent, seq, delivered) VALUES (?, 0, ?) "
    "ON CONFLICT (agent) DO UPDATE SET delivered = max(delivered, excluded.delivered)"
)


def create_private(path: str | os.PathLike[str]) -> None:
    """Create the database file at ``path`` for its owner only (0600), whatever the umask.

    A missing folder above it is made too, 0700. A file or folder that exists keeps its mode.
    SQLite gives the ``-wal`` and ``-shm`` files the main file's mode. ``:memory:`` and URIs
    are left alone.

    Raises:
        OSError: the folder or the file cannot be made.
    """
    where = os.fspath(path)
    if where in ("", ":memory:") or where.startswith("file:"):
        return
    missing: list[Path] = []
    parent = Path(where).absolute().parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            continue
        os.chmod(folder, 0o700)
    try:
        fd = os.open(where, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def open_writer(path: str | os.PathLike[str], synchronous: Synchronous) -> sqlite3.Connection:
    """Open (creating if needed, see :func:`create_private`) the database for writing and bring
    its schema up to date.

    The connection is in autocommit mode (the writer issues ``BEGIN IMMEDIATE``/``COMMIT``
    itself when a write needs more than one statement) and may be handed to another thread.

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
        create_private(path)
        conn = sqlite3.connect(os.fspath(path), isolation_level=None, check_same_thread=False)
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(f"cannot open message store {os.fspath(path)!r}: {exc}") from exc
    try:
        conn.execute(f"PRAGMA page_size = {_PAGE_SIZE}")  # ignored unless the file is new
        # Lets retention give freed pages back to the file system
        # (switchboard.store.sqlite.retention).
        # Also ignored unless the file is new: an older file keeps NONE, and reuses freed pages.
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreError(f"cannot put {os.fspath(path)!r} in WAL mode (got {mode!r})")
        conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        conn.execute(f"PRAGMA wal_autocheckpoint = {_CHECKPOINT_BYTES // page_size}")
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


def open_checkpointer(path: str | os.PathLike[str], synchronous: Synchronous) -> sqlite3.Connection:
    """Open a connection for background checkpoints of a database the writer has set up.

    It syncs like the writer (a checkpoint syncs the WAL, then the database file).

    Raises:
        StoreError: the file cannot be opened.
    """
    try:
        conn = sqlite3.connect(os.fspath(path), isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open message store {os.fspath(path)!r} for checkpoints") from exc
    return conn


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


class BatchInserter:
    """Writes one group's batch rows atomically, with as few statements as it can.

    Every statement costs a Python-to-SQLite round trip and a release and re-acquisition of the
    GIL, and the last is what hurts when the event loop thread is busy. So a group of up to 64
    rows is one multi-row ``INSERT`` of exactly that many rows, run in autocommit mode: a
    single statement is its own transaction, so no ``BEGIN``/``COMMIT`` round trips either. A
    larger group is split into statements of 64 rows (and one for the rest) inside
    ``BEGIN IMMEDIATE``/``COMMIT``. At most 64 distinct statements exist; they stay in the
    connection's statement cache.
    """

    def __init__(self) -> None:
        self._sql: dict[int, str] = {}

    def insert(self, conn: sqlite3.Connection, rows: Sequence[BatchRow]) -> None:
        """Insert and commit ``rows``; on failure nothing of them is stored.

        Raises:
            sqlite3.Error: SQLite refused the write (it was rolled back).
        """
        total = len(rows)
        if total <= _ROWS_PER_STATEMENT:
            conn.execute(self._statement(total), list(chain.from_iterable(rows)))
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            for start in range(0, total, _ROWS_PER_STATEMENT):
                chunk = rows[start : start + _ROWS_PER_STATEMENT]
                conn.execute(self._statement(len(chunk)), list(chain.from_iterable(chunk)))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _statement(self, size: int) -> str:
        sql = self._sql.get(size)
        if sql is None:
            values = ", ".join([_ROW_PLACEHOLDERS] * size)
            sql = self._sql[size] = f"INSERT INTO batches ({_COLUMNS}) VALUES {values}"
        return sql


def load_state(conn: sqlite3.Connection) -> tuple[int, dict[str, int], dict[str, int]]:
    """Return the highest stored seq (0 when empty), every agent's acknowledged cursor and
    every agent's delivered mark."""
    latest = conn.execute(_SELECT_LATEST).fetchone()
    cursors: dict[str, int] = {}
    delivered: dict[str, int] = {}
    for agent, seq, handed in conn.execute("SELECT agent, seq, delivered FROM cursors"):
        cursors[str(agent)] = int(seq)
        delivered[str(agent)] = int(handed)
    return (int(latest[0]) if latest is not None else 0), cursors, delivered


def recent_keys(conn: sqlite3.Connection, window: int) -> list[tuple[int, list[Key]]]:
    """The keys of the newest batches that hold at least ``window`` messages, as
    ``(first_seq, keys)`` in ascending seq order (the input of ``DedupeIndex.rebuild``)."""
    found: list[tuple[int, list[Key]]] = []
    covered = 0
    cursor = conn.execute(_SELECT_NEWEST_FIRST)
    try:
        for first_seq, count, server_id, body in cursor:
            if covered >= window:
                break
            found.append((first_seq, keys_of(server_id, decode_body(body))))
            covered += count
    finally:
        cursor.close()
    found.reverse()
    return found


def read_after(
    conn: sqlite3.Connection, after_seq: int, limit: int, upto: int | None = None
) -> list[StoredMessage]:
    """Up to ``limit`` stored messages with ``after_seq < seq <= upto``, in seq order (see
    :func:`read_slices_after`)."""
    return [m for part in read_slices_after(conn, after_seq, limit, upto) for m in part.stored()]


def read_slices_after(
    conn: sqlite3.Connection, after_seq: int, limit: int, upto: int | None = None
) -> list[StoredSlice]:
    """Up to ``limit`` stored messages with ``after_seq < seq <= upto``, in seq order, as
    slices of their batches.

    Starts at the batch holding ``after_seq + 1`` and decodes batches until ``limit`` messages
    are found; only the batches it returns from are decoded. ``upto`` (no bound when None)
    keeps out rows committed after the caller decided what is visible: a read-only connection
    sees a commit as soon as SQLite made it, before the writer has reported it.

    Raises:
        StoreError: the database could not be read, or a stored batch could not be decoded.
    """
    start = max(after_seq, 0) + 1
    if upto is not None:
        limit = min(limit, upto - start + 1)
        if limit <= 0:
            return []
    found: list[StoredSlice] = []
    taken = 0
    try:
        cursor = conn.execute(_SELECT_FROM, (start,))
        try:
            for first_seq, server_id, received_at, body in cursor:
                part = slice_batch(first_seq, server_id, received_at, body, start, limit - taken)
                if part.messages:
                    found.append(part)
                    taken += len(part.messages)
                if taken >= limit:
                    break
        finally:
            cursor.close()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read messages after {after_seq}: {exc}") from exc
    return found


def count_messages(conn: sqlite3.Connection) -> int:
    """How many messages the batch rows hold.

    Raises:
        StoreError: the database could not be read.
    """
    try:
        return int(conn.execute(_SELECT_COUNT).fetchone()[0])
    except sqlite3.Error as exc:
        raise StoreError(f"cannot count messages: {exc}") from exc
