"""Retention on a real PostgreSQL database: the size cap's measure, the shared cursors holding
the floor in cluster mode, commits going on while a chunk's delete is open, and VACUUM after a
pass. What is the same on both backends is in tests/store/contract/test_retention.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import anyio
import psycopg
import pytest

from switchboard.cluster.pg.message_store import PgMessageStore
from switchboard.cluster.pg.retention import PgRetentionTask
from switchboard.config import StoreConfig
from switchboard.store.retention import RetentionPolicy
from tests.cluster.harness import Cluster, Instance, eventually
from tests.helpers import running_board
from tests.store.contract.test_retention import NOW, Cursors, fill, wire

pytestmark = pytest.mark.anyio

RETENTION_KEY: Final = "@job:retention"


def policy(**overrides: Any) -> RetentionPolicy:
    fields: dict[str, Any] = {"keep_newest": 0}
    fields.update(overrides)
    return RetentionPolicy(**fields)


async def first_seqs(url: str) -> list[int]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute("SELECT first_seq FROM batches ORDER BY first_seq")
        return [int(r[0]) for r in await cur.fetchall()]


async def test_the_size_cap_trims_the_oldest_rows_until_the_rows_fit(pg_url: str) -> None:
    store = await PgMessageStore.open(pg_url)
    try:
        await fill(store, 40, at=NOW)
        await store.set_cursor("alice", store.latest_seq)
        measure = PgRetentionTask(store, policy(max_size=10**12), Cursors(store, "alice"))
        full = (await measure.run_pass()).used_bytes
        assert full > 0

        cap = full // 4
        report = await PgRetentionTask(
            store, policy(max_size=cap), Cursors(store, "alice")
        ).run_pass()

        assert report.used_bytes <= cap
        kept = await first_seqs(pg_url)
        assert kept == list(range(kept[0], 400, 10))  # the newest rows, none missing
        assert 400 - kept[0] + 1 <= 400 // 4 + 10  # about a quarter of the messages stay
        assert report.file_bytes > 0
    finally:
        await store.aclose()


async def test_the_counted_size_follows_new_commits_and_deletes(pg_url: str) -> None:
    store = await PgMessageStore.open(pg_url)
    try:
        task = PgRetentionTask(store, policy(retain=86_400.0), Cursors(store, "alice"))
        await fill(store, 10, at=NOW - 90 * 86_400)
        await store.set_cursor("alice", 50)
        await task.run_pass()  # counts every row once, deletes 1..50
        await fill(store, 10, at=NOW, start=100)  # counted as new rows at the next pass
        await store.set_cursor("alice", 100)
        kept = await task.run_pass()

        recounted = await PgRetentionTask(
            store, policy(max_size=10**12), Cursors(store, "alice")
        ).run_pass()
        assert kept.used_bytes == recounted.used_bytes
    finally:
        await store.aclose()


async def test_in_cluster_mode_every_shared_cursor_holds_the_floor(pg_url: str) -> None:
    store = await PgMessageStore.open(pg_url)
    try:
        await fill(store, 10, at=NOW - 90 * 86_400)
        await store.set_cursor("alice", 100)
        # A task agent served by another instance: not in this floor's agents, but its
        # cursor row is shared.
        await store.set_cursor("elsewhere", 42)

        report = await PgRetentionTask(
            store, policy(retain=86_400.0), Cursors(store, "alice"), every_cursor=True
        ).run_pass()

        assert report.floor == 42
        assert "@elsewhere" in report.held_by
        assert [m.seq for m in await store.read(42, 3)] == [43, 44, 45]
    finally:
        await store.aclose()


async def test_a_commit_completes_while_a_delete_of_old_rows_is_open(pg_url: str) -> None:
    store = await PgMessageStore.open(pg_url)
    try:
        await fill(store, 10, at=NOW - 90 * 86_400)
        conn = await psycopg.AsyncConnection.connect(pg_url)
        async with conn, conn.transaction():
            await conn.execute("DELETE FROM batches WHERE first_seq BETWEEN 1 AND 50")
            with anyio.fail_after(5):
                results = await store.submit_wire("demo", [wire(500)])
            assert [r.seq for r in results] == [101]
    finally:
        await store.aclose()


async def test_a_pass_that_deleted_rows_vacuums_the_table(pg_url: str) -> None:
    store = await PgMessageStore.open(pg_url)
    try:
        await fill(store, 10, at=NOW - 90 * 86_400)
        await store.set_cursor("alice", 100)
        report = await PgRetentionTask(
            store, policy(retain=86_400.0), Cursors(store, "alice")
        ).run_pass()
        assert report.messages == 100
        async with await psycopg.AsyncConnection.connect(pg_url) as conn:
            cur = await conn.execute(
                "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'batches'"
            )
            row = await cur.fetchone()
        assert row is not None
        assert row[0] >= 1
    finally:
        await store.aclose()


class RetainingCluster(Cluster):
    """Instances whose ``[store]`` sets retention (a pass every half second)."""

    def _config(self, instance: Instance) -> str:
        return (
            super()
            ._config(instance)
            .replace("[store]\n", '[store]\nretain = "1s"\nretention_interval = "0.5s"\n', 1)
        )


def _job_holder(cluster: Cluster) -> str | None:
    owner, _, left = cluster.leases().get(RETENTION_KEY, (None, 0, 0.0))
    return owner if left > 0 else None


async def test_only_the_instance_holding_the_retention_lease_runs_retention(
    tmp_path: Path, pg_url: str, nats_url: str, subject_prefix: str
) -> None:
    cluster = RetainingCluster(tmp_path, pg_url, nats_url, subject_prefix, (), ("r1", "r2"))
    try:
        cluster.start("r1")
        cluster.start("r2")

        def running() -> str | None:
            held = _job_holder(cluster)
            return held if held and "retention_started" in cluster.log_text(held) else None

        holder = await eventually(running, 60, "an instance to hold the job and start it")
        other = "r2" if holder == "r1" else "r1"
        # The other instance is up (it heartbeats) and still does not run retention.
        await eventually(lambda: _live(cluster, other), 30, f"{other} to be live")
        assert "retention_started" not in cluster.log_text(other)
        assert "retention_pass" not in cluster.log_text(other)

        await cluster.terminate(holder)
        await eventually(
            lambda: (
                _job_holder(cluster) == other and "retention_started" in cluster.log_text(other)
            ),
            30,
            f"{other} to take @job:retention over and start retention",
        )
        assert cluster.log_text(holder).count("retention_started") == 1
    finally:
        cluster.close()


def _live(cluster: Cluster, name: str) -> bool:
    with psycopg.connect(cluster.database) as conn:
        row = conn.execute(
            "SELECT heartbeat_at > now() - interval '5 seconds' FROM instances WHERE id = %s",
            (name,),
        ).fetchone()
    return bool(row and row[0])


async def test_one_instance_on_postgres_without_a_cluster_runs_retention_by_itself(
    tmp_path: Path, pg_url: str
) -> None:
    store = StoreConfig.model_validate(
        {"backend": "postgres", "url": pg_url, "retain": "1d", "retention_interval": "0.1s"}
    )
    async with running_board(tmp_path, store=store) as board:
        assert isinstance(board.retention, PgRetentionTask)
        retention = board.retention
        await eventually(lambda: retention.last_pass()["passes"] >= 2, 30, "two retention passes")
        last = retention.last_pass()["last"]
        assert last is not None
        assert last["error"] is None


@pytest.mark.parametrize("chunk", [{"chunk_rows": 3}, {"chunk_bytes": 1}])
async def test_small_chunks_delete_the_same_rows_as_one_big_chunk(
    pg_url: str, chunk: dict[str, int]
) -> None:
    store = await PgMessageStore.open(pg_url)
    try:
        await fill(store, 10, at=NOW - 90 * 86_400)
        await fill(store, 1, at=NOW - 90 * 86_400, start=100, server="@mail")
        await fill(store, 5, at=NOW - 90 * 86_400, start=110)
        await store.set_cursor("alice", 135)

        report = await PgRetentionTask(
            store,
            policy(retain=86_400.0, keep_servers=frozenset({"@mail"}), **chunk),
            Cursors(store, "alice"),
        ).run_pass()

        assert (report.rows, report.messages) == (12, 120)
        assert await first_seqs(pg_url) == [101, 131, 141, 151]
    finally:
        await store.aclose()
