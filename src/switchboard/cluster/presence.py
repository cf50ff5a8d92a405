"""The agents' presence across the cluster: :class:`ClusterPresence`, the attachments part's
:class:`~switchboard.agents.roster.attach.SharedPresence` in cluster mode.

Each instance keeps its own count of each agent's sessions in ``attachments(agent, instance,
count)``. An agent is online in the directory while some *live* instance (its ``instances`` row
heartbeaten within ``lease_ttl``, by the database's clock) holds a row with a count above
zero for it.

The details are in the docstring of :class:`ClusterPresence`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from functools import partial
from typing import Any, Final

import anyio
import anyio.to_thread
import psycopg
import structlog

from switchboard.cluster.pg.schema import connect_bounded_sync

__all__ = ["ClusterPresence"]

log = structlog.get_logger(__name__)

#: How many ``lease_ttl`` an instance may stay silent before its rows are deleted.
FORGET_AFTER_TTLS: Final = 10.0

_LOCK: Final = "LOCK TABLE attachments IN SHARE ROW EXCLUSIVE MODE"

_WRITE: Final = (
    "INSERT INTO attachments (agent, instance, count)"
    " SELECT h.agent, %(me)s, h.count FROM unnest(%(agents)s::text[], %(counts)s::int[])"
    " AS h(agent, count) WHERE h.count > 0"
    " ON CONFLICT (agent, instance) DO UPDATE SET count = EXCLUDED.count"
    " WHERE attachments.count <> EXCLUDED.count"
)

_ERASE: Final = (
    "DELETE FROM attachments WHERE instance = %(me)s AND agent = ANY(%(agents)s::text[])"
)

#: Rows of this instance for agents it has no session of (a write that failed meanwhile).
_ERASE_OTHERS: Final = (
    "DELETE FROM attachments WHERE instance = %(me)s AND NOT (agent = ANY(%(agents)s::text[]))"
    " RETURNING agent"
)

#: Each listed agent's flag as the rows and the heartbeats have it now, where it differs.
_FLAGS: Final = """
WITH wanted AS (
    SELECT d.address, CASE WHEN EXISTS (
        SELECT 1 FROM attachments a JOIN instances i ON i.id = a.instance
        WHERE a.agent = d.address AND a.count > 0
          AND i.heartbeat_at > now() - make_interval(secs => %(ttl)s)
    ) THEN 1 ELSE 0 END AS online
    FROM directory_entries d WHERE d.address = ANY(%(agents)s::text[])
)
UPDATE directory_entries d SET online = w.online, last_seen = %(now)s
FROM wanted w WHERE d.address = w.address AND d.online <> w.online
RETURNING d.address, d.online
"""

_WITH_ROWS: Final = "SELECT DISTINCT agent FROM attachments"

#: The directory's last-seen of every agent with rows (or attached at the last look), and
#: whether it has a session on a live instance.
_ATTACHED: Final = """
SELECT d.address, d.last_seen, EXISTS (
    SELECT 1 FROM attachments a JOIN instances i ON i.id = a.instance
    WHERE a.agent = d.address AND a.count > 0
      AND i.heartbeat_at > now() - make_interval(secs => %(ttl)s)
)
FROM directory_entries d
WHERE d.address = ANY(%(before)s::text[]) OR d.address IN (SELECT agent FROM attachments)
"""

_FORGET: Final = (
    "DELETE FROM attachments a WHERE NOT EXISTS (SELECT 1 FROM instances i"
    " WHERE i.id = a.instance AND i.heartbeat_at > now() - make_interval(secs => %(after)s))"
)

_BUMP: Final = (
    "INSERT INTO versions (name, version) VALUES ('directory', 1) ON CONFLICT (name)"
    " DO UPDATE SET version = versions.version + 1"
)


class ClusterPresence:
    """This instance's share of the agents' presence.

    - **Writes stay off the event loop's path.** :meth:`ClusterPresence.counted` only notes the
      count; a task of its own writes what changed meanwhile in one transaction, on a connection
      of its own (never the lease connection: a slow write must not delay a renewal).
    - **The flag is a function of the database.** The same transaction that writes the counts sets
      ``online`` of the agents it touched to what the rows and the heartbeats say now, and only
      where the stored flag differs. Every presence transaction first locks ``attachments``
      against the others, so the last one to commit saw every count committed before it: two
      instances changing one agent's counts at once cannot leave a stale flag.
    - **A dead instance** is corrected by whichever instance sweeps first: each one, every
      ``ttl/3``, sets the flag of every agent with rows to the same function of the database. No
      lease is needed because there is nothing to elect: two instances sweeping at once compute
      the same answer from the same rows and the same clock, and write only where it differs, so
      they cannot flap it; and the correction does not wait for a singleton's own failover when
      the instance that died was the one running it. The rows of an instance silent for
      ``10 × ttl`` are deleted (after its agents' flags were corrected); an instance that was only
      paused that long writes its rows again at its next sweep, which also writes back anything a
      failed write left out.
    - **What the others have** is read at each sweep (:meth:`ClusterPresence.attached`, and
      :meth:`ClusterPresence.seen`: the directory's last-seen, which every instance writes on
      attach, detach and at most every 5 s of activity): the lifetimes job, which runs on one
      instance, does not end an agent as idle while it is attached to, or active on, another.
    - **Restart under the same instance id** deletes that id's rows before anything is counted, so
      a session of the previous run is never counted twice. **A graceful stop**
      (:meth:`ClusterPresence.retire`) deletes this instance's rows and corrects the flags at once.

    The directory's ``last_seen`` is written with each flag change; the touches of activity stay
    the attachments part's (at most one write per agent every 5 s).

    Args:
        url: the shared database.
        me: this instance's id.
        ttl: ``lease_ttl``: how long an instance counts after its last heartbeat.
        clock: Unix seconds, for the directory's ``last_seen``.
        sweep_every: seconds between two sweeps (default ``ttl/3``, the heartbeat's interval).
    """

    def __init__(
        self,
        url: str,
        me: str,
        ttl: float,
        *,
        clock: Callable[[], float] = time.time,
        sweep_every: float | None = None,
    ) -> None:
        self._url = url
        self.me = me
        self.ttl = ttl
        self._clock = clock
        self.sweep_every = sweep_every if sweep_every is not None else ttl / 3
        self._conn: psycopg.Connection[Any] | None = None
        #: This instance's sessions per agent now, and what changed since the last write.
        self._counts: dict[str, int] = {}
        self._pending: dict[str, int] = {}
        #: What the last sweep found attached on a live instance, and each agent's last-seen
        #: in the directory then (written by every instance, at most every 5 s per agent).
        self._attached: frozenset[str] = frozenset()
        self._seen: dict[str, float] = {}
        self._wake = anyio.Event()
        self._retired = False
        self._lock = anyio.Lock()
        self._swept_at = float("-inf")
        #: Transactions that failed (the database away): counted for tests and operators.
        self.failures = 0

    # -- the attachments part's port

    def counted(self, handle: str, count: int) -> None:
        """This instance now has ``count`` sessions of ``handle``: written soon, not here."""
        if self._retired:
            return
        if count > 0:
            self._counts[handle] = count
        else:
            self._counts.pop(handle, None)
        self._pending[handle] = count
        self._wake.set()

    # -- running

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Forget the rows of an earlier run under this id (the first sweep), then write what
        changes and sweep every ``sweep_every`` until cancelled or retired."""
        while True:
            try:
                async with self._lock:
                    await self._transaction(partial(self._sweep, counts=dict(self._counts)))
                break
            except psycopg.Error as exc:
                self.failures += 1
                log.warning("cluster.presence_start_failed", error=str(exc))
                await anyio.sleep(self.sweep_every)
        task_status.started()
        while not self._retired:
            with anyio.move_on_after(self.sweep_every):
                await self._wake.wait()
            self._wake = anyio.Event()
            pending, self._pending = self._pending, {}
            try:
                async with self._lock:
                    if self.retired:
                        return
                    if pending:
                        await self._transaction(partial(self._write, pending=pending))
                    if time.monotonic() - self._swept_at >= self.sweep_every:
                        await self._transaction(partial(self._sweep, counts=dict(self._counts)))
            except psycopg.Error as exc:
                self.failures += 1
                # Written at the next try; a count noted meanwhile is newer and wins.
                self._pending = {**pending, **self._pending}
                log.warning("cluster.presence_write_failed", error=str(exc))

    async def retire(self) -> None:
        """A graceful stop: delete this instance's rows and correct its agents' flags now.
        Counts told afterwards are ignored."""
        if self._retired:
            async with self._lock:
                return  # the first call's transaction is over
        self._retired = True
        self._wake.set()
        async with self._lock:
            try:
                await self._transaction(self._retire)
            except psycopg.Error as exc:
                # Its rows stop counting all the same once its heartbeat is older than the ttl.
                log.warning("cluster.presence_retire_failed", error=str(exc))
            finally:
                await self.aclose()

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await anyio.to_thread.run_sync(conn.close)

    def attached(self, handle: str) -> bool:
        """Whether ``handle`` has a session here, or had one on a live instance at the last
        sweep."""
        return handle in self._counts or handle in self._attached

    def seen(self, handle: str) -> float | None:
        """``handle``'s last-seen in the directory at the last sweep that looked at it (its
        attaches, detaches and activity on any instance); None: not looked at."""
        return self._seen.get(handle)

    @property
    def retired(self) -> bool:
        """Whether :meth:`retire` was called (nothing more is written)."""
        return self._retired

    # -- the transactions

    # Why a worker thread with a blocking connection, not an async one: a presence transaction
    # holds row locks of directory_entries (and the directory's version row) until it commits,
    # while the directory's own writes run blocking on the event loop and lock that table. An
    # async transaction would need the loop to reach its commit, and the loop would be waiting
    # on its locks: the two would wait on each other until a timeout. In a thread the
    # transaction commits whatever the loop is doing.

    def _connection(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            conn = connect_bounded_sync(
                self._url,
                connect_seconds=self.ttl,
                statement_ms=max(1000, int(self.ttl * 1000)),
                application_name="switchboard-presence",
            )
            self._conn = conn
        return conn

    async def _transaction(self, body: Callable[[psycopg.Connection[Any]], None]) -> None:
        await anyio.to_thread.run_sync(self._transact, body)

    def _transact(self, body: Callable[[psycopg.Connection[Any]], None]) -> None:
        conn = self._connection()
        try:
            with conn.transaction():
                conn.execute(_LOCK)
                body(conn)
        except psycopg.Error:
            if conn.broken or conn.closed:
                self._conn = None
            raise

    def _write(self, conn: psycopg.Connection[Any], *, pending: Mapping[str, int]) -> None:
        self._put(conn, pending)
        self._flag(conn, list(pending))

    def _put(self, conn: psycopg.Connection[Any], counts: Mapping[str, int]) -> None:
        agents, values = list(counts), list(counts.values())
        gone = [a for a, n in counts.items() if n <= 0]
        if gone:
            conn.execute(_ERASE, {"me": self.me, "agents": gone})
        if len(gone) < len(agents):
            conn.execute(_WRITE, {"me": self.me, "agents": agents, "counts": values})

    def _sweep(self, conn: psycopg.Connection[Any], *, counts: Mapping[str, int]) -> None:
        """Write this instance's rows again as they are now (the first sweep also deletes
        those of an earlier run under this id), set the flag of every agent with rows or
        whose row went, and forget the rows of instances silent for long."""
        self._swept_at = time.monotonic()
        cur = conn.execute(_ERASE_OTHERS, {"me": self.me, "agents": list(counts)})
        agents = {row[0] for row in cur.fetchall()}
        self._put(conn, counts)
        cur = conn.execute(_WITH_ROWS)
        agents.update(row[0] for row in cur.fetchall())
        self._flag(conn, agents)
        conn.execute(_FORGET, {"after": self.ttl * FORGET_AFTER_TTLS})
        cur = conn.execute(_ATTACHED, {"ttl": self.ttl, "before": list(self._attached)})
        found = cur.fetchall()
        self._attached = frozenset(row[0] for row in found if row[2])
        self._seen.update((row[0], float(row[1])) for row in found)

    def _retire(self, conn: psycopg.Connection[Any]) -> None:
        cur = conn.execute(
            "DELETE FROM attachments WHERE instance = %(me)s RETURNING agent", {"me": self.me}
        )
        self._flag(conn, [row[0] for row in cur.fetchall()])

    def _flag(self, conn: psycopg.Connection[Any], agents: Collection[str]) -> None:
        if not agents:
            return
        cur = conn.execute(_FLAGS, {"ttl": self.ttl, "agents": list(agents), "now": self._clock()})
        changed = cur.fetchall()
        if changed:
            conn.execute(_BUMP)
            for address, online in changed:
                log.debug("cluster.presence_marked", agent=address, online=bool(online))
