"""The owner token and incarnation counts of the agents, in the store's SQLite file.

The host claims its configured agents' directory addresses under one owner token, made once and
kept, so a restart reclaims them with the same token; each start of a configured agent is a new
incarnation, counted here so the count survives its address being released. Both sit in one
small table of the store's file, :data:`RECORDS_TABLE` (``key``, ``value``).
"""

from __future__ import annotations

import secrets
import sqlite3
from typing import Final

from switchboard.store.interface import LifetimeRecords

__all__ = ["RECORDS_TABLE", "EphemeralLifetimeRecords", "LifetimeFile", "lifetime_records"]

RECORDS_TABLE: Final = "agent_lifetimes"
"""The table, in the store's file, of the owner token of the configured agents' addresses and
of each configured agent's incarnation count."""

_OWNER_KEY: Final = "owner-token"
_INCARNATION_KEY: Final = "incarnation:"


def lifetime_records(path: str) -> LifetimeRecords:
    """The records kept in the SQLite file at ``path``; with an in-memory directory
    (``path`` empty or ``:memory:``), records that keep nothing."""
    if path in ("", ":memory:"):
        return EphemeralLifetimeRecords()
    return LifetimeFile(path)


class EphemeralLifetimeRecords:
    """Records that keep nothing: each start makes a new token, and each count is one more
    than what the directory showed."""

    def start(self, names: list[str], seen: dict[str, int]) -> tuple[str, dict[str, int]]:
        return secrets.token_urlsafe(32), {n: seen.get(n, 0) + 1 for n in names}


class LifetimeFile:
    """The records in :data:`RECORDS_TABLE` of the SQLite file at ``path``."""

    __slots__ = ("_path",)

    def __init__(self, path: str) -> None:
        self._path = path

    def start(self, names: list[str], seen: dict[str, int]) -> tuple[str, dict[str, int]]:
        """The owner token (made on first use) and each name's new incarnation: one more than
        the larger of the kept count and ``seen`` (what the directory entry showed)."""
        conn = sqlite3.connect(self._path, isolation_level=None)
        try:
            conn.execute("PRAGMA busy_timeout = 5000")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {RECORDS_TABLE} "
                "(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"
            )
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    f"SELECT value FROM {RECORDS_TABLE} WHERE key = ?", (_OWNER_KEY,)
                ).fetchone()
                owner = str(row[0]) if row is not None else secrets.token_urlsafe(32)
                if row is None:
                    conn.execute(
                        f"INSERT INTO {RECORDS_TABLE} (key, value) VALUES (?, ?)",
                        (_OWNER_KEY, owner),
                    )
                counts: dict[str, int] = {}
                for name in names:
                    key = _INCARNATION_KEY + name
                    row = conn.execute(
                        f"SELECT value FROM {RECORDS_TABLE} WHERE key = ?", (key,)
                    ).fetchone()
                    kept = int(row[0]) if row is not None else 0
                    counts[name] = max(kept, seen.get(name, 0)) + 1
                    conn.execute(
                        f"INSERT OR REPLACE INTO {RECORDS_TABLE} (key, value) VALUES (?, ?)",
                        (key, str(counts[name])),
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        finally:
            conn.close()
        return owner, counts
