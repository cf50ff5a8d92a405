"""Leases on a real PostgreSQL: placement, epochs, renewal, handoff and self-fencing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from psycopg.conninfo import conninfo_to_dict

from switchboard.cluster.keeper import LeaseKeeper
from switchboard.cluster.leases import LeaseTable
from switchboard.cluster.pg.schema import connect, migrate
from switchboard.cluster.placement import Hysteresis, preferred_owner, should_hand_over
from tests.cluster.support import Changes, RecordingOwnership, figure
from tests.pg import ADMIN_URL as PG_ADMIN

pytestmark = pytest.mark.anyio

KEYS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")
TTL = 1.5
QUICK = Hysteresis(min_hold=0.0, preferred_live=0.0)


@pytest.fixture
def db(pg_url: str) -> str:
    """A database with the store's schema (the lease and instance tables among it)."""
    with connect(pg_url) as conn:
        migrate(conn)
    return pg_url


@asynccontextmanager
async def running(
    db: str, me: str, changes: Changes, hysteresis: Hysteresis = QUICK
) -> AsyncIterator[tuple[LeaseKeeper, RecordingOwnership]]:
    table = LeaseTable(db, me, TTL)
    ownership = RecordingOwnership(changes)
    keeper = LeaseKeeper(table, KEYS, ownership, hysteresis=hysteresis)
    async with anyio.create_task_group() as group:
        await group.start(keeper.run)
        try:
            yield keeper, ownership
        finally:
            group.cancel_scope.cancel()
    await table.aclose()


async def owners(db: str) -> dict[str, tuple[str | None, int]]:
    async with await psycopg.AsyncConnection.connect(db) as conn:
        cur = await conn.execute("SELECT server_id, owner, epoch FROM connector_leases")
        return {row[0]: (row[1], row[2]) for row in await cur.fetchall()}


@given(
    st.text(min_size=1, max_size=12),
    st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=6, unique=True),
    st.text(min_size=1, max_size=8),
)
def test_an_instance_joining_takes_only_the_keys_it_now_wins(
    key: str, live: list[str], newcomer: str
) -> None:
    before = preferred_owner(key, live)
    after = preferred_owner(key, [*live, newcomer])
    assert after in (before, newcomer)
    assert preferred_owner(key, list(reversed(live))) == before


def test_a_holder_keeps_a_key_until_min_hold_and_a_preferred_owner_live_long_enough() -> None:
    rules = Hysteresis(min_hold=60.0, preferred_live=30.0)
    key = next(k for k in (f"k{i}" for i in range(100)) if preferred_owner(k, ["a", "b"]) == "b")
    assert not should_hand_over(key, "a", 59.0, {"a": 100.0, "b": 100.0}, rules)
    assert not should_hand_over(key, "a", 61.0, {"a": 100.0, "b": 29.0}, rules)
    assert should_hand_over(key, "a", 61.0, {"a": 100.0, "b": 31.0}, rules)
    assert not should_hand_over(key, "b", 61.0, {"a": 100.0, "b": 31.0}, rules)


async def test_one_instance_acquires_every_key_with_a_fresh_epoch(db: str) -> None:
    changes = Changes()
    async with running(db, "sb-1", changes) as (_, ownership):
        await changes.until(lambda: len(ownership.serving) == len(KEYS))
        assert set(ownership.serving.values()) == {1}
        assert {owner for owner, _ in (await owners(db)).values()} == {"sb-1"}


async def test_two_instances_split_the_keys_by_rendezvous_and_never_both_serve_one(
    db: str,
) -> None:
    changes = Changes()
    async with (
        running(db, "sb-1", changes) as (_, first),
        running(db, "sb-2", changes) as (_, second),
    ):
        wanted = {key: preferred_owner(key, ["sb-1", "sb-2"]) for key in KEYS}

        def settled() -> bool:
            return all(
                key in (first.serving if who == "sb-1" else second.serving)
                for key, who in wanted.items()
            ) and not (set(first.serving) & set(second.serving))

        await changes.until(settled)
        rows = await owners(db)
        assert {key: row[0] for key, row in rows.items()} == wanted
        # Every handover stopped the first holder before the second started.
        for key in KEYS:
            assert not (key in first.serving and key in second.serving)


async def test_a_dead_holders_keys_are_taken_after_its_lease_with_a_higher_epoch(
    db: str,
) -> None:
    ghost = LeaseTable(db, "ghost", TTL)
    await ghost.ensure(KEYS)
    await ghost.register(None, {})
    for key in KEYS:
        assert await ghost.acquire(key) == 1
    # The ghost never renews again, as a process killed with -9.
    started = anyio.current_time()
    changes = Changes()
    async with running(db, "sb-1", changes) as (keeper, ownership):
        await changes.until(lambda: len(ownership.serving) == len(KEYS))
        took = anyio.current_time() - started
        assert set(ownership.serving.values()) == {2}
        assert keeper.stats.failovers == len(KEYS)
        assert TTL * 0.9 <= took <= 2 * TTL + 2
        figure(f"failover after {took:.2f} s with ttl {TTL} s")
    await ghost.aclose()


async def test_a_renewal_after_expiry_keeps_the_lease_while_nobody_took_it(db: str) -> None:
    table = LeaseTable(db, "sb-1", 0.2)
    await table.ensure(["alpha"])
    epoch = await table.acquire("alpha")
    assert epoch == 1
    async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
        await conn.execute("UPDATE connector_leases SET expires_at = now() - interval '1 hour'")
    assert await table.renew({"alpha": 1}) == {"alpha"}
    other = LeaseTable(db, "sb-2", 5.0)
    assert await other.acquire("alpha") is None
    async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
        await conn.execute("UPDATE connector_leases SET expires_at = now() - interval '1 hour'")
    assert await other.acquire("alpha") == 2
    assert await table.renew({"alpha": 1}) == set()
    assert not await table.release("alpha", 1)
    await table.aclose()
    await other.aclose()


async def test_a_stopping_instance_hands_its_keys_to_the_others_without_waiting_for_expiry(
    db: str,
) -> None:
    changes = Changes()
    async with running(db, "sb-2", changes) as (keeper2, second):
        async with running(db, "sb-1", changes) as (_, first):
            await changes.until(
                lambda: (
                    len(first.serving) + len(second.serving) == len(KEYS)
                    and not set(first.serving) & set(second.serving)
                    and bool(first.serving)
                )
            )
            moving = set(first.serving)
        stopped = anyio.current_time()
        keeper2.poke()
        await changes.until(lambda: len(second.serving) == len(KEYS))
        took = anyio.current_time() - stopped
        assert took < TTL, "a handover waited for the lease to expire"
        assert all(("lost", key, True) in first.history for key in moving)
        assert keeper2.stats.failovers == 0
        figure(f"handover of {len(moving)} keys in {took:.3f} s")


async def test_a_holder_cut_off_from_the_database_stops_serving_before_its_lease_expires(
    db: str,
) -> None:
    changes = Changes()
    async with running(db, "sb-1", changes) as (keeper, ownership):
        await changes.until(lambda: len(ownership.serving) == len(KEYS))
        name = str(conninfo_to_dict(db)["dbname"])
        async with await psycopg.AsyncConnection.connect(PG_ADMIN, autocommit=True) as conn:
            await conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            await conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            cut = anyio.current_time()
            await changes.until(lambda: not ownership.serving, within=TTL + 1)
            fenced_after = anyio.current_time() - cut
            await conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        assert fenced_after < TTL
        assert keeper.stats.self_fenced == len(KEYS)
        assert keeper.stats.tick_errors >= 1
        figure(f"self-fenced {fenced_after:.2f} s after the database went away (ttl {TTL} s)")
        # Back: it takes its own keys again at once; nobody else moved them.
        await changes.until(lambda: len(ownership.serving) == len(KEYS))
        assert {owner for owner, _ in (await owners(db)).values()} == {"sb-1"}
