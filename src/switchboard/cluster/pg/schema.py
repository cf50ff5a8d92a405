"""The PostgreSQL schema of the durable things, upgraded by ordered migrations.

:data:`MIGRATIONS` is a list of steps; step ``i`` takes the ``schema_version`` table's version
``i`` to ``i + 1``. Steps are only ever appended (the cluster's own tables come as later steps).
:func:`migrate` runs the missing ones in one transaction, serialised between instances that
start together, and refuses a database newer than this code. :func:`connect` opens a
connection the way every part of the backend wants it.

The commit function ``sb_commit`` is the one statement of a group commit: the lease fence, the
seqs from the one counter row, the batch rows (docs/cluster.md, "Ordering"); ``sb_deposit``
numbers one mail deposit from its counter row and commits it the same way.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import psycopg
from psycopg.rows import tuple_row

from switchboard.store.records import StoreError

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "STALE_EPOCH",
    "connect",
    "connect_bounded",
    "connect_bounded_sync",
    "migrate",
]

#: The SQLSTATE ``sb_commit`` raises when a batch's lease epoch is not the lease's.
STALE_EPOCH: Final = "SB409"

_COMMIT_FUNCTION: Final = """
CREATE FUNCTION sb_commit(
    p_servers text[], p_epochs bigint[], p_counts int[], p_received double precision[],
    p_bodies bytea[]
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_server text;
    v_epoch bigint;
    v_held bigint;
    v_total bigint;
    v_first bigint;
BEGIN
    -- The fence: a lease row read FOR SHARE, so no epoch bump commits between this check
    -- and our commit (the bump waits for us, or we see its epoch).
    FOR v_server, v_epoch IN
        SELECT DISTINCT s, e FROM unnest(p_servers, p_epochs) AS t(s, e)
        WHERE e IS NOT NULL ORDER BY 1
    LOOP
        SELECT epoch INTO v_held FROM connector_leases WHERE server_id = v_server FOR SHARE;
        IF v_held IS DISTINCT FROM v_epoch THEN
            RAISE EXCEPTION 'lease epoch % of % is not the current one (%)',
                v_epoch, v_server, coalesce(v_held::text, 'no lease')
                USING ERRCODE = 'SB409', DETAIL = v_server;
        END IF;
    END LOOP;
    SELECT sum(c) INTO v_total FROM unnest(p_counts) AS c;
    -- Seqs from the one counter row: its lock is held until this statement's commit, so seq
    -- order is commit order and a reader's "> cursor" never skips a later commit.
    UPDATE stream_head SET next_seq = next_seq + v_total WHERE id = 1
        RETURNING next_seq - v_total INTO v_first;
    INSERT INTO batches (first_seq, count, server_id, epoch, received_at, body)
    SELECT v_first + coalesce(sum(c) OVER (ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING
                                           AND 1 PRECEDING), 0),
           c, s, e, r, b
    FROM unnest(p_counts, p_servers, p_epochs, p_received, p_bodies)
        WITH ORDINALITY AS t(c, s, e, r, b, i);
    RETURN v_first;
END $$
"""

_DEPOSIT_FUNCTION: Final = """
CREATE FUNCTION sb_deposit(
    p_server text, p_channel text, p_author text, p_parts bytea[], p_received double precision
) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    v_n bigint;
    v_number bytea;
    v_body bytea;
    v_first bigint;
BEGIN
    -- The next number of this (channel, author) sequence, in the deposit's own commit: no
    -- gap (a failed commit takes its number back) and no repeat (the row is locked to commit).
    INSERT INTO mail_counters (recipient, sender, n) VALUES (p_channel, p_author, 1)
        ON CONFLICT (recipient, sender) DO UPDATE SET n = mail_counters.n + 1
        RETURNING n INTO v_n;
    v_number := convert_to(v_n::text, 'UTF8');
    v_body := p_parts[1];
    FOR i IN 2 .. array_length(p_parts, 1) LOOP
        v_body := v_body || v_number || p_parts[i];
    END LOOP;
    v_first := sb_commit(ARRAY[p_server], ARRAY[NULL::bigint], ARRAY[1], ARRAY[p_received],
                         ARRAY[v_body]);
    RETURN ARRAY[v_first, v_n];
END $$
"""

# Each entry upgrades the schema by one version: entry i takes version i to i + 1.
MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    (
        # -- messages: the batch rows, the one counter row, cursors, mail numbering
        "CREATE TABLE stream_head (id int PRIMARY KEY CHECK (id = 1), next_seq bigint NOT NULL)",
        "INSERT INTO stream_head (id, next_seq) VALUES (1, 1)",
        """
        CREATE TABLE batches (
            first_seq bigint PRIMARY KEY,
            count int NOT NULL,
            server_id text NOT NULL,
            epoch bigint,
            received_at double precision NOT NULL,
            body bytea NOT NULL
        )
        """,
        "CREATE INDEX batches_by_server ON batches (server_id, first_seq)",
        """
        CREATE TABLE cursors (
            agent text PRIMARY KEY,
            seq bigint NOT NULL DEFAULT 0,
            delivered bigint NOT NULL DEFAULT 0
        )
        """,
        """
        CREATE TABLE mail_counters (
            recipient text NOT NULL,
            sender text NOT NULL,
            n bigint NOT NULL,
            PRIMARY KEY (recipient, sender)
        )
        """,
        # -- the cluster: connector leases (the epoch is the fencing token), instances,
        #    which agents are attached where, and each connector's channels
        """
        CREATE TABLE connector_leases (
            server_id text PRIMARY KEY,
            owner text,
            epoch bigint NOT NULL DEFAULT 0,
            expires_at timestamptz NOT NULL DEFAULT 'epoch'
        )
        """,
        """
        CREATE TABLE instances (
            id text PRIMARY KEY,
            http_url text,
            started_at timestamptz,
            heartbeat_at timestamptz,
            info jsonb NOT NULL DEFAULT '{}'
        )
        """,
        """
        CREATE TABLE attachments (
            agent text,
            instance text,
            count int,
            PRIMARY KEY (agent, instance)
        )
        """,
        """
        CREATE TABLE channels (
            server_id text NOT NULL,
            channel_id text NOT NULL,
            descriptor jsonb NOT NULL,
            PRIMARY KEY (server_id, channel_id)
        )
        """,
        # -- what other instances cache: each change bumps its row in the same transaction
        "CREATE TABLE versions (name text PRIMARY KEY, version bigint NOT NULL DEFAULT 0)",
        # -- the decision log: batches of events under their own counter row, one snapshot
        "CREATE TABLE decision_head (id int PRIMARY KEY CHECK (id = 1), next_seq bigint NOT NULL)",
        "INSERT INTO decision_head (id, next_seq) VALUES (1, 1)",
        """
        CREATE TABLE decision_batches (
            first_seq bigint PRIMARY KEY,
            count int NOT NULL,
            body bytea NOT NULL
        )
        """,
        """
        CREATE TABLE decision_snapshot (
            id int PRIMARY KEY CHECK (id = 1),
            upto_seq bigint NOT NULL,
            body bytea NOT NULL
        )
        """,
        # -- the directory, channel leaves, lifetime records (as in the SQLite file)
        """
        CREATE TABLE directory_entries (
            address text PRIMARY KEY,
            kind text NOT NULL CHECK (kind IN ('agent', 'service')),
            holder text,
            capability text NOT NULL,
            tags text NOT NULL,
            description text NOT NULL,
            metadata text NOT NULL,
            online int NOT NULL,
            busy int NOT NULL,
            registered_at double precision NOT NULL,
            last_seen double precision NOT NULL,
            ttl double precision,
            owner_token_sha256 text
        )
        """,
        """
        CREATE TABLE channel_leaves (
            agent text NOT NULL,
            server_id text NOT NULL,
            channel_id text NOT NULL,
            left_at double precision NOT NULL,
            PRIMARY KEY (agent, server_id, channel_id)
        )
        """,
        "CREATE TABLE agent_lifetimes (key text PRIMARY KEY, value text NOT NULL)",
        _COMMIT_FUNCTION,
        _DEPOSIT_FUNCTION,
    ),
)
SCHEMA_VERSION: Final = len(MIGRATIONS)

# Instances that start together migrate one at a time: a lock held to the end of the
# migration's transaction (never across one: the leases carry no advisory lock).
_MIGRATION_LOCK: Final = "SELECT pg_advisory_xact_lock(hashtext('switchboard-schema'))"

Durability = Literal["normal", "full"]

#: ``[store] synchronous`` as PostgreSQL's ``synchronous_commit``: "normal" waits for the
#: local WAL flush (a commit survives a crash of any process, PostgreSQL's included); "full"
#: also waits for a synchronous standby when one is configured.
SYNCHRONOUS_COMMIT: Final[dict[Durability, str]] = {"normal": "local", "full": "on"}


def connect(
    url: str, *, synchronous: Durability = "normal", timeout: float = 5.0
) -> psycopg.Connection[Any]:
    """An autocommit connection to ``url``, committing as durably as ``synchronous`` says,
    with no named prepared statements (they break behind a transaction pooler).

    Raises:
        psycopg.Error: the database does not answer.
    """
    conn = psycopg.connect(
        url,
        autocommit=True,
        connect_timeout=max(1, round(timeout)),
        prepare_threshold=None,
        application_name="switchboard",
        keepalives=1,
        keepalives_idle=5,
        keepalives_interval=2,
        keepalives_count=3,
    )
    conn.execute(f"SET synchronous_commit = {SYNCHRONOUS_COMMIT[synchronous]}")
    # A session stuck inside a transaction (a paused client) must not hold locks for long.
    conn.execute("SET idle_in_transaction_session_timeout = '10s'")
    return conn


async def connect_bounded(
    url: str, *, connect_seconds: float, statement_ms: int, application_name: str | None = None
) -> psycopg.AsyncConnection[Any]:
    """An autocommit connection to ``url`` whose connecting takes at most ``connect_seconds``
    (rounded, one at least) and each statement ``statement_ms``, with no named prepared
    statements and rows as tuples: for a part that must give up on a slow database in time.

    Raises:
        psycopg.Error: the database does not answer.
    """
    return await psycopg.AsyncConnection.connect(
        url, **_bounded(connect_seconds, statement_ms, application_name)
    )


def connect_bounded_sync(
    url: str, *, connect_seconds: float, statement_ms: int, application_name: str | None = None
) -> psycopg.Connection[Any]:
    """:func:`connect_bounded` for a worker thread."""
    return psycopg.connect(url, **_bounded(connect_seconds, statement_ms, application_name))


def _bounded(
    connect_seconds: float, statement_ms: int, application_name: str | None
) -> dict[str, Any]:
    return {
        "autocommit": True,
        "connect_timeout": max(1, round(connect_seconds)),
        "prepare_threshold": None,
        "application_name": application_name,  # None: psycopg leaves it out
        "options": f"-c statement_timeout={statement_ms}",
        "row_factory": tuple_row,
    }


def migrate(conn: psycopg.Connection[Any]) -> int:
    """Bring the database up to :data:`SCHEMA_VERSION`; return the version it had.

    Raises:
        StoreError: the database has a newer schema than this code knows.
    """
    with conn.transaction():
        conn.execute(_MIGRATION_LOCK)
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version int NOT NULL)")
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        if row is None:
            conn.execute("INSERT INTO schema_version (version) VALUES (0)")
            found = 0
        else:
            found = int(row[0])
        if found > SCHEMA_VERSION:
            raise StoreError(
                f"the database has schema version {found}, newer than this Switchboard's "
                f"{SCHEMA_VERSION}: upgrade Switchboard"
            )
        for step in MIGRATIONS[found:]:
            for statement in step:
                conn.execute(statement.encode())
        if found < SCHEMA_VERSION:
            conn.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION,))
    return found
