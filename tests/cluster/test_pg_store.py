"""What the PostgreSQL store adds for several instances sharing one database: seqs in commit
order across writers, the head told or polled, lease fences checked inside the commit, cursors
that never move back, mail numbered inside its commit, and version rows for what others cache.

Each test opens two or more stores on a database of its own (tests/pg.py) as two instances
would; the interface's own contract runs on both backends in tests/store/contract/.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import psycopg
import pytest

from switchboard.app.stores import Stores, open_stores
from switchboard.cluster.pg.leaves import PgChannelLeaves
from switchboard.cluster.pg.message_store import PgMessageStore
from switchboard.cluster.pg.schema import SCHEMA_VERSION, connect, migrate
from switchboard.config import StoreConfig
from switchboard.directory import HeldByAnotherOwner
from switchboard.store import IncomingRecord, StaleEpochError, StoreError
from switchboard.store.mailmark import MAIL_SERVER
from tests.pg import fresh_database

pytestmark = pytest.mark.anyio


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_database("sbcluster") as made:
        yield made


def wire(channel: str, mid: str) -> dict[str, Any]:
    return {
        "channelId": channel,
        "messageId": mid,
        "author": {"id": "u1", "name": "Ann"},
        "timestamp": "2026-12-01T10:00:00Z",
        "content": [{"type": "text", "text": "hi"}],
    }


def mail(to: str, sender: str, text: str) -> IncomingRecord:
    return IncomingRecord(
        server_id=MAIL_SERVER,
        channel_id=to,
        message_id=f"{sender}#0",
        thread_id=None,
        author_id=sender,
        author_name=sender,
        timestamp="2026-12-01T10:00:00Z",
        content=[{"type": "text", "text": text}],
        metadata={"kind": "mail", "from": sender, "n": 0},
    )


@asynccontextmanager
async def instances(url: str, count: int, *, fencing: bool = False) -> AsyncIterator[list[Stores]]:
    """``count`` instances' durable things over the one database."""
    async with AsyncExitStack() as stack:
        config = StoreConfig(backend="postgres", url=url)
        yield [
            await stack.enter_async_context(open_stores(config, fencing=fencing))
            for _ in range(count)
        ]


def pg(stores: Stores) -> PgMessageStore:
    assert isinstance(stores.messages, PgMessageStore)
    return stores.messages


def set_lease(url: str, server_id: str, epoch: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO connector_leases (server_id, owner, epoch) VALUES (%s, 'x', %s) "
            "ON CONFLICT (server_id) DO UPDATE SET epoch = excluded.epoch",
            (server_id, epoch),
        )


async def test_two_writers_commit_one_gapless_sequence_and_a_reader_following_the_head_skips_none(
    url: str,
) -> None:
    async with instances(url, 3) as (one, two, reader):
        a, b, r = pg(one), pg(two), pg(reader)
        a.on_commit(r.advance_head)
        b.on_commit(r.advance_head)
        seen: list[int] = []
        rounds = 40

        async def write(store: PgMessageStore, server: str) -> None:
            for n in range(rounds):
                await store.submit_wire(server, [wire("c", f"{n}a"), wire("c", f"{n}b")])

        async def follow() -> None:
            with anyio.fail_after(30):
                while len(seen) < 4 * rounds:
                    await r.wait_for_new(seen[-1] if seen else 0, 1.0)
                    page = await r.read(seen[-1] if seen else 0, 7)
                    assert all(m.seq <= r.latest_seq for m in page)
                    seen.extend(m.seq for m in page)

        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            tg.start_soon(write, a, "sa")
            tg.start_soon(write, b, "sb")
        assert seen == list(range(1, 4 * rounds + 1))
        assert await r.count() == 4 * rounds


async def test_a_head_committed_elsewhere_is_found_by_polling_and_told_to_the_watchers(
    url: str,
) -> None:
    async with instances(url, 2) as (one, two):
        a, b = pg(one), pg(two)
        heads: list[int] = []
        b.watch_head(heads.append)
        await a.submit_wire("s", [wire("c", "m1"), wire("c", "m2")])
        assert b.latest_seq == 0
        assert await b.read(0, 10) == []  # never above the head it knows
        assert await b.poll_head() == 2
        assert heads == [2]
        assert [m.message_id for m in await b.read(0, 10)] == ["m1", "m2"]
        b.advance_head(1)  # a stale hint moves nothing
        assert heads == [2]


async def test_a_batch_commits_only_under_the_lease_epoch_it_was_fenced_with(url: str) -> None:
    async with instances(url, 1, fencing=True) as (one,):
        store = pg(one)
        with pytest.raises(StaleEpochError, match="holds no lease"):
            await store.submit_wire("s", [wire("c", "m1")])
        set_lease(url, "s", 3)
        store.fence("s", 3)
        [ok] = await store.submit_wire("s", [wire("c", "m2")])
        set_lease(url, "s", 4)  # another instance took the lease over
        with pytest.raises(StaleEpochError, match="not the current one"):
            await store.submit_wire("s", [wire("c", "m3")])
        # a refused server does not fail the others committed with it; mail is never fenced
        set_lease(url, "t", 1)
        store.fence("t", 1)
        stale = store.submit_wire("s", [wire("c", "m4")])
        fine = store.submit_wire("t", [wire("c", "t1")])
        deposit = store.submit_numbered(mail("@b", "@a", "x"))
        with pytest.raises(StaleEpochError):
            await stale
        assert not (await fine)[0].duplicate
        (deposited, n) = await deposit
        assert (deposited.duplicate, n) == (False, 1)
        store.unfence("s")
        with pytest.raises(StaleEpochError):
            await store.submit_wire("s", [wire("c", "m5")])
        assert store.stale_rejections == 4
        assert [m.message_id for m in await store.read(0, 10)] == ["m2", "t1", "@a#1"]
        with psycopg.connect(url) as conn:
            epochs = conn.execute("SELECT server_id, epoch FROM batches ORDER BY 1").fetchall()
        assert epochs == [("@mail", None), ("s", 3), ("t", 1)]
        assert ok.seq == 1


async def test_a_cursor_set_by_two_instances_at_once_never_moves_back(url: str) -> None:
    async with instances(url, 2) as (one, two):
        a, b = pg(one), pg(two)
        await a.submit_wire("s", [wire("c", f"m{n}") for n in range(50)])
        await b.poll_head()
        async with anyio.create_task_group() as tg:
            for seq in range(1, 51):
                tg.start_soon((a if seq % 2 else b).set_cursor, "ann", seq)
                tg.start_soon((b if seq % 2 else a).set_delivered, "ann", seq)
        assert await a.get_cursor("ann") == 50
        assert await b.get_delivered("ann") == 50
        await a.set_cursor("ann", 3)
        assert await b.get_cursor("ann") == 50


async def test_mail_deposited_by_two_instances_is_numbered_without_gap_or_repeat(url: str) -> None:
    async with instances(url, 2) as (one, two):
        a, b = pg(one), pg(two)
        pending = [
            (a if n % 2 else b).submit_numbered(mail("@bob", "@ann", f"note {n}"))
            for n in range(30)
        ]
        pending.append(a.submit_numbered(mail("@ann", "@bob", "back")))
        numbers = [n for _, n in [await p for p in pending]]
        assert sorted(numbers[:-1]) == list(range(1, 31))
        assert numbers[-1] == 1
        await a.poll_head()
        stored = await a.read(0, 100)
        ids = sorted(m.message_id for m in stored if m.channel_id == "@bob")
        assert ids == sorted(f"@ann#{n}" for n in range(1, 31))
        assert all(
            m.metadata is not None and m.message_id.endswith(f"#{m.metadata['n']}") for m in stored
        )
        assert await a.highest_numbers(MAIL_SERVER) == {("@bob", "@ann"): 30, ("@ann", "@bob"): 1}


async def test_a_connector_taken_over_finds_its_former_owners_messages_duplicates(
    url: str,
) -> None:
    async with instances(url, 2) as (old, new):
        [first] = await pg(old).submit_wire("s", [wire("c", "m1")])
        await pg(new).rebuild_dedupe("s")
        [again] = await pg(new).submit_wire("s", [wire("c", "m1")])
        assert again.duplicate
        assert again.seq == first.seq


async def test_changes_to_what_instances_cache_bump_their_version_rows(url: str) -> None:
    async with instances(url, 2) as (one, two):
        one.directory.claim("@ann", token="t" * 32)
        one.leaves.leave("ann", "s", "lobby")
        await one.decisions.append([{"kind": "x"}])
        with psycopg.connect(url) as conn:
            versions: dict[str, int] = dict(
                conn.execute("SELECT name, version FROM versions").fetchall()
            )
        assert {"directory", "leaves", "decisions"} <= set(versions)
        assert ("ann", "s", "lobby") not in two.leaves  # read at open, before the change
        assert isinstance(two.leaves, PgChannelLeaves)
        before = two.leaves.version
        assert two.leaves.refresh()
        assert ("ann", "s", "lobby") in two.leaves
        assert two.leaves.version > before
        assert not two.leaves.refresh()  # nothing changed since


async def test_migrations_run_once_and_a_newer_schema_is_refused(url: str) -> None:
    with connect(url) as conn:
        assert migrate(conn) == 0
        assert migrate(conn) == SCHEMA_VERSION
        conn.execute("UPDATE schema_version SET version = version + 1")
        with pytest.raises(StoreError, match="upgrade Switchboard"):
            migrate(conn)


async def test_two_instances_claiming_one_address_at_once_leave_exactly_one_holder(
    url: str,
) -> None:
    async with instances(url, 2) as (one, two):
        outcomes: list[str] = []

        def claim(stores: Stores, token: str) -> None:
            try:
                outcomes.append(stores.directory.claim("@ann", token=token).outcome)
            except HeldByAnotherOwner:
                outcomes.append("refused")

        for round_ in range(10):
            address_token = [f"{round_}a" * 16, f"{round_}b" * 16]
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, claim, one, address_token[0])
                tg.start_soon(anyio.to_thread.run_sync, claim, two, address_token[1])
            assert sorted(outcomes) == ["refused", "taken"]
            one.directory.unregister("@ann", force=True)
            outcomes.clear()


async def test_decisions_appended_by_two_instances_form_one_log_in_commit_order(
    url: str,
) -> None:
    async with instances(url, 2) as (one, two):
        pending = [
            (one if n % 2 else two).decisions.append([{"kind": "x", "n": n}]) for n in range(20)
        ]
        ends = [await p for p in pending]
        assert sorted(ends) == list(range(1, 21))
        loaded = await two.decisions.load()
        assert sorted(e["n"] for e in loaded.tail) == list(range(20))
        assert two.decisions.latest_seq == 20


async def test_a_decision_whose_caller_was_cancelled_is_still_committed(url: str) -> None:
    async with instances(url, 1) as (one,):
        with anyio.move_on_after(0):
            await one.decisions.append([{"kind": "x", "n": 1}])
        loaded = await one.decisions.load()  # queued behind the append
        assert [e["n"] for e in loaded.tail] == [1]
