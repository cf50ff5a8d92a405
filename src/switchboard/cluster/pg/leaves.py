"""Which agents left which channels, in PostgreSQL: :class:`PgChannelLeaves`, and the agents'
lifetime records: :class:`PgLifetimeRecords`.

The leaves are few and read on every routing decision, so every row is kept in memory; each
change is one transaction that bumps ``versions('leaves')``, and :meth:`PgChannelLeaves.refresh`
reads the rows again when another instance changed them.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Final

import psycopg

from switchboard.cluster.pg.shared import SharedTables, as_store_error
from switchboard.store.records import Leave

__all__ = ["PgChannelLeaves", "PgLifetimeRecords"]

_OWNER_KEY: Final = "owner-token"
_INCARNATION_KEY: Final = "incarnation:"


class PgChannelLeaves:
    """The durable set of channels agents left, shared by every instance (see
    :class:`~switchboard.store.interface.LeaveStore`)."""

    def __init__(self, tables: SharedTables, *, clock: Callable[[], float] = time.time) -> None:
        self._tables = tables
        self._clock = clock
        self._rows: set[Leave] = set()
        self._seen = -1  # the versions row the rows were read at
        #: Grows with every change of the rows (this instance's or, after refresh, another's).
        self.version = 0
        self.refresh()

    def refresh(self) -> bool:
        """Read the rows again if another instance changed them; True when they changed.

        Raises:
            StoreError: the database could not be read.
        """
        try:
            conn = self._tables.connection()
            with conn.transaction():
                row = conn.execute("SELECT version FROM versions WHERE name = 'leaves'").fetchone()
                seen = int(row[0]) if row is not None else 0
                if seen == self._seen:
                    return False
                found = conn.execute(
                    "SELECT agent, server_id, channel_id FROM channel_leaves"
                ).fetchall()
        except psycopg.Error as exc:
            raise as_store_error(exc, "read the channel leaves") from exc
        rows = {(str(a), str(s), str(c)) for a, s, c in found}
        self._seen = seen
        if rows == self._rows:
            return False
        self._rows = rows
        self.version += 1
        return True

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def rows(self) -> frozenset[Leave]:
        return frozenset(self._rows)

    def leave(self, agent: str, server_id: str, channel_id: str) -> bool:
        """Record that ``agent`` left the channel; False when it had already."""
        key = (agent, server_id, channel_id)
        if key in self._rows:
            return False
        try:
            with self._tables.change("leaves") as conn:
                conn.execute(
                    "INSERT INTO channel_leaves (agent, server_id, channel_id, left_at) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    (agent, server_id, channel_id, self._clock()),
                )
        except psycopg.Error as exc:
            raise as_store_error(exc, f"record that {agent!r} left a channel") from exc
        self._rows.add(key)
        self.version += 1
        return True

    def rejoin(self, agent: str, server_id: str, channel_id: str) -> bool:
        """Forget that ``agent`` left the channel; False when it had not."""
        key = (agent, server_id, channel_id)
        if key not in self._rows:
            return False
        try:
            with self._tables.change("leaves") as conn:
                conn.execute(
                    "DELETE FROM channel_leaves WHERE agent = %s AND server_id = %s "
                    "AND channel_id = %s",
                    key,
                )
        except psycopg.Error as exc:
            raise as_store_error(exc, f"record that {agent!r} rejoined a channel") from exc
        self._rows.discard(key)
        self.version += 1
        return True

    def close(self) -> None:
        """Nothing of its own to close (the shared connection is closed by its opener)."""


class PgLifetimeRecords:
    """The owner token and each configured agent's incarnation count, shared by every
    instance (see :class:`~switchboard.store.interface.LifetimeRecords`)."""

    def __init__(self, tables: SharedTables) -> None:
        self._tables = tables

    def start(self, names: list[str], seen: dict[str, int]) -> tuple[str, dict[str, int]]:
        """The owner token (made on first use) and each name's new incarnation: one more than
        the larger of the kept count and ``seen``; the new counts are kept."""
        try:
            with self._tables.change("lifetimes") as conn:
                conn.execute("LOCK TABLE agent_lifetimes IN SHARE ROW EXCLUSIVE MODE")
                conn.execute(
                    "INSERT INTO agent_lifetimes (key, value) VALUES (%s, %s) "
                    "ON CONFLICT (key) DO NOTHING",
                    (_OWNER_KEY, secrets.token_urlsafe(32)),
                )
                row = conn.execute(
                    "SELECT value FROM agent_lifetimes WHERE key = %s", (_OWNER_KEY,)
                ).fetchone()
                assert row is not None
                owner = str(row[0])
                counts: dict[str, int] = {}
                for name in names:
                    key = _INCARNATION_KEY + name
                    found = conn.execute(
                        "SELECT value FROM agent_lifetimes WHERE key = %s", (key,)
                    ).fetchone()
                    kept = int(found[0]) if found is not None else 0
                    counts[name] = max(kept, seen.get(name, 0)) + 1
                    conn.execute(
                        "INSERT INTO agent_lifetimes (key, value) VALUES (%s, %s) "
                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        (key, str(counts[name])),
                    )
        except psycopg.Error as exc:
            raise as_store_error(exc, "keep the agents' lifetime records") from exc
        return owner, counts
