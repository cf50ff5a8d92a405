"""One synchronous connection for the small shared tables (directory, leaves, lifetimes), and
the version rows their changes bump.

Their interfaces are synchronous and their calls short and rare, so they run on the caller's
thread over one connection, opened again after it broke. Each change is one transaction that
also raises its table's row in ``versions``, so other instances can notice it.

What it deliberately does not know: what the tables hold.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import psycopg

from switchboard.cluster.pg.schema import Durability, connect
from switchboard.store.records import StorageUnavailableError, StoreError

__all__ = ["SharedTables", "as_store_error"]

_BUMP: Final = (
    "INSERT INTO versions (name, version) VALUES (%s, 1) ON CONFLICT (name) "
    "DO UPDATE SET version = versions.version + 1"
)


def as_store_error(exc: psycopg.Error, doing: str) -> StoreError:
    """``exc`` as the store says it: the database away is :class:`StorageUnavailableError`."""
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        text = str(exc).strip()
        return StorageUnavailableError(text.splitlines()[0] if text else type(exc).__name__)
    return StoreError(f"cannot {doing}: {exc}")


class SharedTables:
    """The connection the small shared tables use, from the thread that calls them."""

    def __init__(self, url: str, *, synchronous: Durability = "full") -> None:
        self._url = url
        self._synchronous: Durability = synchronous
        self._conn: psycopg.Connection[Any] | None = None

    def connection(self) -> psycopg.Connection[Any]:
        """The open connection (opened again when it broke).

        Raises:
            psycopg.Error: the database does not answer.
        """
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            self._conn = conn = connect(self._url, synchronous=self._synchronous)
        return conn

    @contextmanager
    def change(self, version: str) -> Iterator[psycopg.Connection[Any]]:
        """A transaction that raises the version row ``version`` as it commits; ``LOCK`` the
        table inside it first when the change reads before it writes."""
        conn = self.connection()
        with conn.transaction():
            yield conn
            conn.execute(_BUMP, (version,))

    def version(self, name: str) -> int:
        """The version row ``name`` (0 before any change)."""
        row = (
            self.connection()
            .execute("SELECT version FROM versions WHERE name = %s", (name,))
            .fetchone()
        )
        return int(row[0]) if row is not None else 0

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
