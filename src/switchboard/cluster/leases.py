"""The lease and heartbeat SQL: who owns each connector, which instances are live.

Every time that decides anything is PostgreSQL's ``now()``; no local clock is compared with
another machine's. A lease row carries an ``epoch``, bumped by every acquisition: the store
checks it inside each commit of that connector's batches, so a former owner that was paused or
cut off can never commit (``switchboard.cluster.pg``). Renewal keeps the epoch, and may succeed
after expiry while nobody has taken the lease, so a database outage does not move leases.
The table runs on its own connection so renewals never queue behind a group commit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import tuple_row

__all__ = ["InstanceRow", "LeaseRow", "LeaseTable", "LeaseTableError"]


class LeaseTableError(Exception):
    """The database could not be reached or refused a lease statement."""


@dataclass(frozen=True, slots=True)
class LeaseRow:
    """One lease as the database has it now."""

    key: str
    owner: str | None
    epoch: int
    #: Seconds until it expires by the database's clock (negative: expired that long ago).
    expires_in: float


@dataclass(frozen=True, slots=True)
class InstanceRow:
    """One instance as the database has it now."""

    id: str
    http_url: str | None
    #: Seconds since it started, and since its last heartbeat.
    up_for: float
    silent_for: float
    #: What it reports with each heartbeat (its connectors, its head).
    info: dict[str, Any]


class LeaseTable:
    """The lease and heartbeat statements of one instance, on a connection of its own."""

    def __init__(self, url: str, me: str, ttl: float) -> None:
        self._url = url
        self.me = me
        self.ttl = ttl
        self._conn: psycopg.AsyncConnection[Any] | None = None

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            # A statement that hangs must not outlive the lease it is renewing.
            timeout_ms = max(1, int(self.ttl * 1000 / 3))
            conn = await psycopg.AsyncConnection.connect(
                self._url,
                autocommit=True,
                connect_timeout=max(1, int(self.ttl)),
                options=f"-c statement_timeout={timeout_ms}",
                row_factory=tuple_row,
            )
            self._conn = conn
        return conn

    async def _run(self, sql: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        try:
            conn = await self._connection()
            cur = await conn.execute(sql, params)
            return await cur.fetchall() if cur.description is not None else []
        except psycopg.Error as exc:
            held = self._conn
            if held is not None and (held.broken or held.closed):
                self._conn = None
            raise LeaseTableError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    # -- instances

    async def register(self, http_url: str | None, info: Mapping[str, Any]) -> None:
        """Say this instance is live from now (its start time is now)."""
        await self._run(
            "INSERT INTO instances (id, http_url, started_at, heartbeat_at, info)"
            " VALUES (%(me)s, %(url)s, now(), now(), %(info)s)"
            " ON CONFLICT (id) DO UPDATE SET http_url = EXCLUDED.http_url,"
            " started_at = now(), heartbeat_at = now(), info = EXCLUDED.info",
            {"me": self.me, "url": http_url, "info": json.dumps(dict(info))},
        )

    async def heartbeat(self, info: Mapping[str, Any] | None = None) -> None:
        """Say this instance is still live (and, if given, what it reports)."""
        if info is None:
            await self._run(
                "UPDATE instances SET heartbeat_at = now() WHERE id = %(me)s", {"me": self.me}
            )
        else:
            await self._run(
                "UPDATE instances SET heartbeat_at = now(), info = %(info)s WHERE id = %(me)s",
                {"me": self.me, "info": json.dumps(dict(info))},
            )

    async def retire(self) -> None:
        """Say this instance is gone (others stop counting it at once)."""
        await self._run("DELETE FROM instances WHERE id = %(me)s", {"me": self.me})

    async def instances(self) -> list[InstanceRow]:
        """Every known instance, live or not, by the database's clock."""
        rows = await self._run(
            "SELECT id, http_url, extract(epoch FROM now() - started_at)::float8,"
            " extract(epoch FROM now() - heartbeat_at)::float8, info FROM instances ORDER BY id"
        )
        return [InstanceRow(r[0], r[1], float(r[2]), float(r[3]), dict(r[4])) for r in rows]

    # -- leases

    async def ensure(self, keys: Iterable[str]) -> None:
        """Make a lease row, unowned, for every key that has none."""
        await self._run(
            "INSERT INTO connector_leases (server_id) SELECT unnest(%(keys)s::text[])"
            " ON CONFLICT (server_id) DO NOTHING",
            {"keys": list(keys)},
        )

    async def acquire(self, key: str) -> int | None:
        """Take ``key`` if it has expired (or is already this instance's): the new epoch, or
        None when another instance holds it."""
        rows = await self._run(
            "UPDATE connector_leases SET owner = %(me)s, epoch = epoch + 1,"
            " expires_at = now() + make_interval(secs => %(ttl)s)"
            " WHERE server_id = %(key)s AND (expires_at < now() OR owner = %(me)s)"
            " RETURNING epoch",
            {"me": self.me, "ttl": self.ttl, "key": key},
        )
        return int(rows[0][0]) if rows else None

    async def renew(self, held: Mapping[str, int]) -> set[str]:
        """Extend every lease in ``held`` (key → epoch) still this instance's at that epoch, in
        one statement; the keys renewed."""
        if not held:
            return set()
        rows = await self._run(
            "UPDATE connector_leases l SET expires_at = now() + make_interval(secs => %(ttl)s)"
            " FROM unnest(%(keys)s::text[], %(epochs)s::bigint[]) AS h(key, epoch)"
            " WHERE l.server_id = h.key AND l.epoch = h.epoch AND l.owner = %(me)s"
            " RETURNING l.server_id",
            {"ttl": self.ttl, "me": self.me, "keys": list(held), "epochs": list(held.values())},
        )
        return {row[0] for row in rows}

    async def release(self, key: str, epoch: int) -> bool:
        """Let ``key`` go now, if it is still this instance's at ``epoch`` (the owner is
        cleared, so whoever takes it next knows it was handed over, not failed over)."""
        rows = await self._run(
            "UPDATE connector_leases SET owner = NULL,"
            " expires_at = now() - interval '1 millisecond'"
            " WHERE server_id = %(key)s AND owner = %(me)s AND epoch = %(epoch)s"
            " RETURNING 1",
            {"key": key, "me": self.me, "epoch": epoch},
        )
        return bool(rows)

    async def versions(self) -> dict[str, int]:
        """The version row of every shared table (each change of one raises its row)."""
        rows = await self._run("SELECT name, version FROM versions")
        return {row[0]: int(row[1]) for row in rows}

    async def leases(self) -> list[LeaseRow]:
        """Every lease as the database has it now."""
        rows = await self._run(
            "SELECT server_id, owner, epoch,"
            " extract(epoch FROM expires_at - now())::float8 FROM connector_leases"
            " ORDER BY server_id"
        )
        return [LeaseRow(r[0], r[1], int(r[2]), float(r[3])) for r in rows]
