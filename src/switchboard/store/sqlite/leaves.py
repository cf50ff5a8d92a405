"""Which agents left which channels: :class:`ChannelLeaves`, a small durable table.

When one agent closes a channel another agent still wants, it *leaves* it instead, and routing
stops giving it that channel's traffic until it opens the channel again (docs/agents.md,
"Routing"). That must survive a restart, so it is one row per (agent, server id, channel id)
in the store's SQLite file, read into memory once.

What it deliberately does not know: agents, channels and routing (it stores strings).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from typing import Final, Self

from switchboard.store.records import Leave, StoreError

__all__ = ["ChannelLeaves"]

"""One row's key: (agent, server id, channel id)."""

_BUSY_TIMEOUT_MS: Final = 5000

_MIGRATIONS: Final[tuple[str, ...]] = (
    """
    CREATE TABLE IF NOT EXISTS channel_leaves (
        agent TEXT NOT NULL,
        server_id TEXT NOT NULL,
        channel_id TEXT NOT NULL,
        left_at REAL NOT NULL,
        PRIMARY KEY (agent, server_id, channel_id)
    ) WITHOUT ROWID
    """,
)
_SELECT: Final = "SELECT agent, server_id, channel_id FROM channel_leaves"
_INSERT: Final = (
    "INSERT INTO channel_leaves (agent, server_id, channel_id, left_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (agent, server_id, channel_id) DO NOTHING"
)
_DELETE: Final = "DELETE FROM channel_leaves WHERE agent = ? AND server_id = ? AND channel_id = ?"


class ChannelLeaves:
    """The durable set of channels agents left.

    What it knows (docs/agents.md, "Routing"): when one agent closes a channel that another
    agent still wants (its home), the connector is not asked to close it; the closing agent *leaves*
    it instead, and routing stops giving it that channel's traffic until it opens the channel again.
    That state must survive a restart, so it is kept here, one row per (agent, server id, channel
    id), in the store's own SQLite file::

        channel_leaves(agent TEXT, server_id TEXT, channel_id TEXT, left_at REAL, PRIMARY KEY
        (agent, server_id, channel_id)) WITHOUT ROWID

    The table sits beside the message store's tables and never touches them or their ``PRAGMA
    user_version`` (as the decision log and the directory do, it is created with ``CREATE TABLE IF
    NOT EXISTS``; a later change to its columns adds an entry to ``_MIGRATIONS``, applied in order,
    the way :mod:`switchboard.store.sqlite.schema` upgrades the message store). Rows are few and
    each one matters, so the file is opened in WAL mode with ``synchronous = FULL``; calls are
    synchronous and short. Every row is also kept in memory, so reads never touch the file;
    :attr:`ChannelLeaves.version` grows with every change, for whoever caches what it derives from
    the rows.

    Open with :meth:`open`; close when done.
    """

    __slots__ = ("_clock", "_conn", "_rows", "version")

    def __init__(
        self, conn: sqlite3.Connection, rows: set[Leave], clock: Callable[[], float]
    ) -> None:
        self._conn = conn
        self._rows = rows
        self._clock = clock
        #: Grows with every change of the rows.
        self.version = 0

    @classmethod
    def open(
        cls, path: str | os.PathLike[str] = ":memory:", *, clock: Callable[[], float] = time.time
    ) -> Self:
        """Open (creating if needed) the table in the database at ``path`` and read its rows.

        Raises:
            StoreError: the file cannot be opened, is not a database, or cannot be put in WAL
                mode.
        """
        where = os.fspath(path)
        try:
            conn = sqlite3.connect(where, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open channel leaves in {where!r}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal" and where != ":memory:":
                raise StoreError(f"cannot put {where!r} in WAL mode (got {mode!r})")
            conn.execute("PRAGMA synchronous = FULL")
            for statement in _MIGRATIONS:
                conn.execute(statement)
            rows = {(str(a), str(s), str(c)) for a, s, c in conn.execute(_SELECT)}
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"cannot open channel leaves in {where!r}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return cls(conn, rows, clock)

    def close(self) -> None:
        """Close the file (the rows stay readable in memory)."""
        self._conn.close()

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def rows(self) -> frozenset[Leave]:
        """Every (agent, server id, channel id) left now."""
        return frozenset(self._rows)

    def leave(self, agent: str, server_id: str, channel_id: str) -> bool:
        """Record that ``agent`` left the channel; False when it had already left it.

        Raises:
            StoreError: the row could not be written (nothing changed).
        """
        key = (agent, server_id, channel_id)
        if key in self._rows:
            return False
        try:
            self._conn.execute(_INSERT, (agent, server_id, channel_id, self._clock()))
        except sqlite3.Error as exc:
            raise StoreError(f"cannot record that {agent!r} left a channel: {exc}") from exc
        self._rows.add(key)
        self.version += 1
        return True

    def rejoin(self, agent: str, server_id: str, channel_id: str) -> bool:
        """Forget that ``agent`` left the channel; False when it had not left it.

        Raises:
            StoreError: the row could not be removed (nothing changed).
        """
        key = (agent, server_id, channel_id)
        if key not in self._rows:
            return False
        try:
            self._conn.execute(_DELETE, key)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot record that {agent!r} rejoined a channel: {exc}") from exc
        self._rows.discard(key)
        self.version += 1
        return True
