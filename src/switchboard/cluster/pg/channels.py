"""The mirror of each connector's channels in PostgreSQL: ``channels(server_id, channel_id,
descriptor)``, written by the connector's owner, read by every other instance.

The details are in the docstring of :class:`ChannelMirror`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson
import psycopg

from switchboard.cluster.pg.schema import connect_bounded

__all__ = ["CHANNELS", "ChannelMirror", "ChannelMirrorError", "Mirrored"]

#: The version row of a connector's channels is ``channels:<server id>``; the same name is the
#: invalidation announced on NATS after a write.
CHANNELS: Final = "channels:"

_FENCE: Final = """
WITH fence AS (
    SELECT 1 FROM connector_leases
    WHERE server_id = %(sid)s AND epoch = %(epoch)s AND owner = %(me)s
    FOR SHARE
), src AS MATERIALIZED (
    SELECT d ->> 'id' AS id, d FROM jsonb_array_elements(%(put)s::jsonb) AS d
), put AS (
    INSERT INTO channels (server_id, channel_id, descriptor)
    SELECT %(sid)s, id, d FROM src WHERE EXISTS (SELECT 1 FROM fence)
    ON CONFLICT (server_id, channel_id) DO UPDATE SET descriptor = EXCLUDED.descriptor
), gone AS (
    DELETE FROM channels
    WHERE server_id = %(sid)s AND EXISTS (SELECT 1 FROM fence) AND {gone}
), word AS (
    UPDATE instances SET info = jsonb_set(
        jsonb_set(info, '{{connectors}}', coalesce(info -> 'connectors', '{{}}'::jsonb)),
        ARRAY['connectors', %(sid)s], %(word)s::jsonb)
    WHERE id = %(me)s AND %(word)s::jsonb IS NOT NULL AND EXISTS (SELECT 1 FROM fence)
), bump AS (
    INSERT INTO versions (name, version) SELECT %(name)s, 1 WHERE EXISTS (SELECT 1 FROM fence)
    ON CONFLICT (name) DO UPDATE SET version = versions.version + 1
    RETURNING version
)
SELECT version FROM bump
"""

# Every row the whole set does not name (NOT IN a subquery is hashed: linear, not n * m).
_WHOLE: Final = _FENCE.format(gone="channel_id NOT IN (SELECT id FROM src)")
# Only the rows named gone since the last write (the put and gone sets are disjoint).
_DIFF: Final = _FENCE.format(gone="channel_id = ANY(%(gone)s::text[])")

_READ: Final = (
    "SELECT coalesce((SELECT version FROM versions WHERE name = %(name)s), 0),"
    " coalesce((SELECT jsonb_agg(descriptor ORDER BY channel_id) FROM channels"
    " WHERE server_id = %(sid)s), '[]'::jsonb)::text,"
    " (SELECT (info -> 'connectors' -> %(sid)s)::text FROM instances WHERE id = %(owner)s)"
)


@dataclass(frozen=True, slots=True)
class Mirrored:
    """One read of a connector's mirror."""

    version: int
    #: The descriptors, in wire form.
    descriptors: list[dict[str, Any]]
    #: How the connector stands, as the instance asked about last said (None: it said nothing).
    word: dict[str, Any] | None


class ChannelMirrorError(Exception):
    """The database could not be reached or refused a mirror statement."""


class ChannelMirror:
    """One instance's writes to and reads of the mirror, on an async connection of its own.

    A write is one statement (so one round trip and one transaction whatever the number of
    channels): the lease fence, the rows, the bump of the ``channels:<server id>`` version row
    the others poll, and the owner's word on how the connector stands (its entry in the owner's
    ``instances.info``, which the heartbeat otherwise writes), so a reader gets the channels and
    the state they go with from one snapshot. The fence reads the lease row ``FOR SHARE`` and
    writes nothing unless this instance still owns the connector at the epoch it acquired it with,
    so a former owner that was paused or cut off cannot overwrite what the new owner wrote (an
    acquisition bumps the epoch and waits for the share lock, or the statement sees its new
    epoch).

    The writer remembers what it last committed for each connector at each epoch, and sends only
    what differs; after a failure, or at a new epoch, it sends the whole set and deletes every
    other row of that connector. A read is one statement too, so the rows and the version it
    returns are of one snapshot.
    """

    def __init__(self, url: str, me: str, *, timeout: float = 10.0) -> None:
        self._url = url
        self.me = me
        self._timeout = timeout
        self._conn: psycopg.AsyncConnection[Any] | None = None
        #: What was last committed for each connector: the epoch and each channel's row.
        self._written: dict[str, tuple[int, dict[str, str]]] = {}
        #: Statements sent (a write or a read is one each).
        self.statements = 0
        #: Writes refused by the fence (this instance no longer owns at that epoch).
        self.fenced = 0

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            conn = await connect_bounded(
                self._url,
                connect_seconds=self._timeout,
                statement_ms=int(self._timeout * 1000),
            )
            self._conn = conn
        return conn

    async def _run(self, sql: str, params: Mapping[str, Any]) -> Any:
        self.statements += 1
        try:
            conn = await self._connection()
            cur = await conn.execute(sql.encode(), params)
            return await cur.fetchone()
        except psycopg.Error as exc:
            held = self._conn
            if held is not None and (held.broken or held.closed):
                self._conn = None
            raise ChannelMirrorError(str(exc) or type(exc).__name__) from exc

    async def write(
        self,
        server_id: str,
        epoch: int,
        descriptors: Sequence[Mapping[str, Any]],
        word: Mapping[str, Any] | None = None,
    ) -> int | None:
        """Make the mirror of ``server_id`` hold exactly ``descriptors`` (wire form, each with
        its ``id``), if this instance owns it at ``epoch``, and say ``word`` (how it stands)
        with them: the new version, or None when the fence refused (nothing was written) or
        there was nothing to change.

        Raises:
            ChannelMirrorError: the database could not be reached (what was written is not
                known: the next write sends the whole set).
        """
        rows = {
            str(d["id"]): orjson.dumps(d, default=str, option=orjson.OPT_SORT_KEYS).decode()
            for d in descriptors
        }
        known = self._written.get(server_id)
        params: dict[str, Any]
        if known is not None and known[0] == epoch:
            before = known[1]
            put = [row for cid, row in rows.items() if before.get(cid) != row]
            gone = [cid for cid in before if cid not in rows]
            if not put and not gone:
                return None
            sql, params = _DIFF, {"gone": gone}
        else:
            put, sql, params = list(rows.values()), _WHOLE, {}
        params |= {
            "sid": server_id,
            "epoch": epoch,
            "me": self.me,
            "name": CHANNELS + server_id,
            "put": "[" + ",".join(put) + "]",
            "word": None if word is None else orjson.dumps(word, default=str).decode(),
        }
        self._written.pop(server_id, None)
        row = await self._run(sql, params)
        if row is None:
            self.fenced += 1
            return None
        self._written[server_id] = (epoch, rows)
        return int(row[0])

    def forget(self, server_id: str) -> None:
        """This instance no longer owns ``server_id``: its next write (at a new epoch) sends
        the whole set."""
        self._written.pop(server_id, None)

    async def read(self, server_id: str, owner: str | None = None) -> Mirrored:
        """``server_id``'s mirror, and what ``owner`` last said of how it stands (one
        snapshot).

        Raises:
            ChannelMirrorError: the database could not be reached.
        """
        row = await self._run(
            _READ, {"name": CHANNELS + server_id, "sid": server_id, "owner": owner}
        )
        word = orjson.loads(row[2]) if row[2] is not None else None
        return Mirrored(int(row[0]), orjson.loads(row[1]), word if isinstance(word, dict) else None)

    async def aclose(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
