"""The mirror of each connector's channels in PostgreSQL: written by the connector's owner,
read by every other instance into its registry (NATS only hints).

Two in-process instances of one cluster (``cluster_started``, the same host ``switchboard run``
starts) share a real database and a real NATS server; the connector is a real subprocess whose
registrations the test steers by publishing commands to it through its owner.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import orjson
import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.app.board import Switchboard
from switchboard.app.cluster import cluster_started
from switchboard.channels import ChannelRegistry
from switchboard.cluster.leases import LeaseTable
from switchboard.cluster.pg.channels import ChannelMirror, Mirrored
from switchboard.cluster.pg.schema import connect, migrate
from switchboard.cluster.placement import preferred_owner
from switchboard.cluster.replica import ChannelReplica, descriptor_dict
from switchboard.config import ClusterConfig, Config, StoreConfig
from switchboard.refusals.outcome import PublishStatus
from tests.cluster.harness import PLATFORM, Cluster, eventually, eventually_async, free_port
from tests.cluster.support import figure
from tests.helpers import connector

pytestmark = pytest.mark.anyio

ROOMS = str(Path(__file__).with_name("channels_connector.py"))
SID = "rooms"


@asynccontextmanager
async def instance(
    pg_url: str, nats_url: str, prefix: str, name: str, count: int = 3, max_channels: int = 10_000
) -> AsyncIterator[Switchboard]:
    """One instance of the cluster, running the rooms connector while it holds its lease."""
    config = Config(
        store=StoreConfig(backend="postgres", url=pg_url),
        cluster=ClusterConfig(
            nats_url=nats_url, instance_id=name, lease_ttl=2.0, subject_prefix=prefix
        ),
        connectors=[connector(SID, [sys.executable, ROOMS, str(count)], max_channels=max_channels)],
    )
    async with cluster_started(config) as board:
        yield board


def held(board: Switchboard, sid: str = SID) -> dict[str, dict[str, Any]]:
    """A connector's channels in ``board``'s registry, in wire form."""
    return {
        cid: descriptor_dict(entry.descriptor)
        for cid, entry in board.registry.server_channels(sid).items()
    }


def _rows(url: str, sid: str) -> dict[str, dict[str, Any]]:
    with psycopg.connect(url) as conn:
        found = conn.execute(
            "SELECT channel_id, descriptor::text FROM channels WHERE server_id = %s", (sid,)
        ).fetchall()
    return {str(cid): orjson.loads(text) for cid, text in found}


async def mirrored(url: str, sid: str = SID) -> dict[str, dict[str, Any]]:
    """A connector's rows in the ``channels`` table now."""
    return await anyio.to_thread.run_sync(_rows, url, sid)


def _version(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT version FROM versions WHERE name = %s", ("channels:" + SID,))
        found = row.fetchone()
    return int(found[0]) if found is not None else 0


async def command(owner: Switchboard, text: str) -> None:
    """Have the connector change its registrations (answered once the host took them)."""
    outcome = await owner.sessions[SID].publish("control", [{"type": "text", "text": text}], "")
    assert outcome.status is PublishStatus.DELIVERED, outcome


@asynccontextmanager
async def replicated(
    pg_url: str, nats_url: str, prefix: str
) -> AsyncIterator[tuple[Switchboard, Switchboard]]:
    """Instance ``a`` (the connector's owner) and ``b``, once b holds a's four channels."""
    async with instance(pg_url, nats_url, prefix, "a") as a:
        await eventually(lambda: len(held(a)) == 4, 30, "the connector registered on a")
        async with instance(pg_url, nats_url, prefix, "b") as b:
            await eventually(lambda: held(b) == held(a), 30, "a's channels replicated on b")
            yield a, b


async def test_a_connectors_channels_registered_on_its_owner_appear_on_another_instance(
    pg_url: str, nats_url: str, subject_prefix: str
) -> None:
    async with replicated(pg_url, nats_url, subject_prefix) as (a, b):
        assert set(held(b)) == {"control", "c0", "c1", "c2"}
        # What the table holds is the owner's registry, descriptor for descriptor.
        assert await mirrored(pg_url) == held(a)


async def test_a_new_a_removed_and_a_relabelled_channel_reach_the_other_instance(
    pg_url: str, nats_url: str, subject_prefix: str
) -> None:
    async with replicated(pg_url, nats_url, subject_prefix) as (a, b):
        await command(a, "add c9")
        assert "c9" in held(a)
        await eventually(lambda: "c9" in held(b), 10, "the new channel on b")
        await command(a, "remove c0")
        assert "c0" not in held(a)
        await eventually(lambda: "c0" not in held(b), 10, "the removed channel gone on b")
        await command(a, "relabel c1")
        assert held(a)["c1"]["label"] == "#c1-new"
        await eventually(lambda: held(b)["c1"] == held(a)["c1"], 10, "the new label on b")
        assert [e.channel_id for e in b.registry.by_label("#c1-new")] == ["c1"]
        assert held(b) == held(a)
        assert await mirrored(pg_url) == held(a)


async def test_with_nats_unreachable_the_reader_gets_the_channels_by_the_version_poll(
    pg_url: str, nats_url: str, subject_prefix: str
) -> None:
    nowhere = f"nats://127.0.0.1:{free_port()}"  # nothing listens there
    async with instance(pg_url, nats_url, subject_prefix, "a") as a:
        await eventually(lambda: len(held(a)) == 4, 30, "the connector registered on a")
        async with instance(pg_url, nowhere, subject_prefix, "b") as b:
            await eventually(lambda: held(b) == held(a), 30, "a's channels on b without NATS")
            await command(a, "add c7")
            started = time.monotonic()
            await eventually(lambda: "c7" in held(b), 10, "the new channel on b without NATS")
            took = time.monotonic() - started
            figure(f"channel change reached an instance without NATS in {took * 1000:.0f} ms")
            assert held(b) == held(a)


async def test_a_change_of_ten_thousand_channels_reaches_the_other_instance_in_few_writes(
    pg_url: str, nats_url: str, subject_prefix: str
) -> None:
    many = 20_000
    async with instance(pg_url, nats_url, subject_prefix, "a", max_channels=many) as a:
        await eventually(lambda: len(held(a)) == 4, 30, "the connector registered on a")
        async with instance(pg_url, nats_url, subject_prefix, "b", max_channels=many) as b:
            await eventually(lambda: held(b) == held(a), 30, "a's channels replicated on b")
            before = await anyio.to_thread.run_sync(_version, pg_url)
            started = time.monotonic()
            await command(a, "addmany 10000")
            # The publish is answered after the host took the change: the owner holds them.
            assert len(held(a)) == 10004
            taken = time.monotonic()
            await eventually(lambda: len(held(b)) == 10004, 60, "10,000 channels on b")
            took = time.monotonic() - taken
            writes = await anyio.to_thread.run_sync(_version, pg_url) - before
            figure(
                f"10,000 channels added by a connector ({(taken - started) * 1000:.0f} ms to its "
                f"owner's registry) reached another instance's registry {took * 1000:.0f} ms "
                f"later ({writes} mirror write(s), one statement each)"
            )
            # Each write is one statement; a burst of registrations is written once or twice.
            assert 1 <= writes <= 2
            assert held(b) == held(a)
            assert await mirrored(pg_url) == held(a)


async def test_a_former_owner_past_its_lease_cannot_overwrite_the_mirror(pg_url: str) -> None:
    with connect(pg_url) as conn:
        migrate(conn)
    old_leases, new_leases = LeaseTable(pg_url, "old", 0.2), LeaseTable(pg_url, "new", 5.0)
    old, new = ChannelMirror(pg_url, "old"), ChannelMirror(pg_url, "new")
    try:
        await old_leases.ensure([SID])
        old_epoch = await old_leases.acquire(SID)
        assert old_epoch is not None
        assert await old.write(SID, old_epoch, [{"id": "a", "type": "room"}]) is not None
        # The old owner stalls past its lease; the new one takes the connector over.
        new_epoch = None
        with anyio.fail_after(10):
            while new_epoch is None:
                await anyio.sleep(0.05)
                new_epoch = await new_leases.acquire(SID)
        assert await new.write(SID, new_epoch, [{"id": "b", "type": "room"}]) is not None
        version = (await new.read(SID)).version
        # The old owner wakes and writes what it held: refused whole, by the epoch.
        assert await old.write(SID, old_epoch, [{"id": "x", "type": "room"}]) is None
        assert await old.write(SID, old_epoch, []) is None
        assert old.fenced == 2
        assert await new.read(SID) == Mirrored(version, [{"id": "b", "type": "room"}], None)
    finally:
        for each in (old, new):
            await each.aclose()
        for table in (old_leases, new_leases):
            await table.aclose()


async def test_a_mirror_write_of_ten_thousand_channels_is_one_statement(pg_url: str) -> None:
    with connect(pg_url) as conn:
        migrate(conn)
    leases, mirror = LeaseTable(pg_url, "me", 5.0), ChannelMirror(pg_url, "me")
    rooms = [
        {"id": f"c{i}", "type": "room", "label": f"#c{i}", "direction": "bidirectional"}
        for i in range(10_000)
    ]
    try:
        await leases.ensure([SID])
        epoch = await leases.acquire(SID)
        assert epoch is not None
        started = time.monotonic()
        assert await mirror.write(SID, epoch, rooms) == 1
        whole = time.monotonic() - started
        assert mirror.statements == 1
        # A change of one channel sends that channel only, still one statement.
        changed = [*rooms[1:], {"id": "new", "type": "room"}]
        started = time.monotonic()
        assert await mirror.write(SID, epoch, changed) == 2
        one = time.monotonic() - started
        assert mirror.statements == 2
        read = await mirror.read(SID)
        assert read.version == 2
        assert {d["id"]: d for d in read.descriptors} == {d["id"]: d for d in changed}
        # Written again whole (what was committed is not known, as after a failure): the rows
        # it does not name go, in the same one statement.
        again = ChannelMirror(pg_url, "me")
        try:
            started = time.monotonic()
            assert await again.write(SID, epoch, rooms[:5_000]) == 3
            rewrite = time.monotonic() - started
            assert again.statements == 1
            assert len((await again.read(SID)).descriptors) == 5_000
        finally:
            await again.aclose()
        figure(
            f"mirror write of 10,000 channels: {whole * 1000:.0f} ms in one statement; "
            f"a change of 2 channels among them: {one * 1000:.1f} ms; a whole rewrite to "
            f"5,000 of them: {rewrite * 1000:.0f} ms"
        )
    finally:
        await mirror.aclose()
        await leases.aclose()


async def test_a_new_owner_replaces_the_former_owners_rows_with_its_own_registrations(
    pg_url: str, nats_url: str, subject_prefix: str
) -> None:
    """The former owner registered c0-c2; after it hands over, the new owner's connector
    registers only c0, and the mirror says so (c1, c2 are not kept for anyone)."""
    first: list[Switchboard] = []
    stop_a = anyio.Event()

    async def run_a() -> None:
        async with instance(pg_url, nats_url, subject_prefix, "a", count=3) as a:
            first.append(a)
            await stop_a.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(run_a)
        await eventually(lambda: first and len(held(first[0])) == 4, 30, "registered on a")
        a = first[0]
        async with instance(pg_url, nats_url, subject_prefix, "b", count=1) as b:
            await eventually(lambda: held(b) == held(a), 30, "a's channels replicated on b")
            assert set(held(b)) == {"control", "c0", "c1", "c2"}
            stop_a.set()  # a hands the connector over as it stops
            await eventually(
                lambda: SID in b.sessions and b.sessions[SID].connected and len(held(b)) == 2,
                30,
                "b runs the connector and holds its own registrations",
            )
            assert set(held(b)) == {"control", "c0"}
            await eventually_async(
                lambda: _mirror_is(pg_url, held(b)), 10, "the mirror holds b's registrations"
            )


async def _mirror_is(url: str, expected: dict[str, dict[str, Any]]) -> bool:
    return await mirrored(url) == expected


async def test_a_connector_nobody_owns_has_none_of_its_channels_offered_elsewhere(
    tmp_path: Path, pg_url: str, nats_url: str, subject_prefix: str
) -> None:
    """Its owner killed, and before anyone takes it, the other instance holds none of its
    channels, though the mirror still has them."""
    cluster = Cluster(tmp_path, pg_url, nats_url, subject_prefix, ("p1",), ("a",), ttl=2.0)
    with connect(pg_url) as conn:
        # A live instance preferred for the connector that never takes it: the others leave
        # it unowned for a whole lease_ttl past its expiry before taking it themselves.
        ghost = next(g for g in (f"ghost{i}" for i in range(100)) if _preferred(g))
        conn.execute(
            "INSERT INTO instances (id, started_at, heartbeat_at)"
            " VALUES (%s, now() - interval '1 hour', now() + interval '1 hour')",
            (ghost,),
        )
    argv = [sys.executable, PLATFORM, "p1", str(cluster.platform), str(cluster.rate)]
    config = Config(
        store=StoreConfig(backend="postgres", url=pg_url),
        cluster=ClusterConfig(
            nats_url=nats_url, instance_id="b", lease_ttl=2.0, subject_prefix=subject_prefix
        ),
        connectors=[connector("p1", argv)],
    )
    try:
        cluster.start("a")
        await eventually(lambda: cluster.owners().get("p1") == "a", 60, "a owns the connector")
        async with cluster_started(config) as b:
            await eventually(lambda: "p1:room" in held(b, "p1"), 60, "a's channel on b")
            cluster.kill9("a")
            await eventually(
                lambda: not held(b, "p1") and "p1" not in b.sessions, 10, "b dropped the replica"
            )
            assert "p1:room" in await mirrored(pg_url, "p1")  # the rows a left behind
    finally:
        cluster.close()


def _preferred(ghost: str) -> bool:
    return preferred_owner("p1", ["a", "b", ghost]) == ghost


_IDS = st.sampled_from([f"c{i}" for i in range(8)])
_SETS = st.lists(
    st.dictionaries(_IDS, st.sampled_from(["#a", "#b", ""]), max_size=8), min_size=1, max_size=6
)


def _wire(labels: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"id": cid, "type": "room", "label": label, "direction": "bidirectional"}
        for cid, label in labels.items()
    ]


@given(_SETS)
def test_a_replica_holds_exactly_what_it_last_read_whatever_came_before(
    reads: list[dict[str, str]],
) -> None:
    registry = ChannelRegistry()
    replica = ChannelReplica(registry, lambda _sid: None)
    for labels in reads:
        assert replica.hold(SID, _wire(labels))
        assert {
            cid: descriptor_dict(e.descriptor) for cid, e in registry.server_channels(SID).items()
        } == {d["id"]: d for d in _wire(labels)}
        for cid, label in labels.items():
            if label:
                assert cid in {e.channel_id for e in registry.by_label(label)}


async def test_the_mirror_holds_exactly_each_set_written_whatever_came_before(
    pg_url: str,
) -> None:
    with connect(pg_url) as conn:
        migrate(conn)
    leases, mirror = LeaseTable(pg_url, "me", 30.0), ChannelMirror(pg_url, "me")
    examples: list[list[dict[str, str]]] = []

    @settings(max_examples=40, database=None)
    @given(_SETS)
    def collect(writes: list[dict[str, str]]) -> None:
        examples.append(writes)

    collect()
    try:
        for n, writes in enumerate(examples):
            sid = f"s{n}"
            await leases.ensure([sid])
            epoch = await leases.acquire(sid)
            assert epoch is not None
            for labels in writes:
                await mirror.write(sid, epoch, _wire(labels))
                read = await mirror.read(sid)
                assert {d["id"]: d for d in read.descriptors} == {d["id"]: d for d in _wire(labels)}
            mirror.forget(sid)  # written whole next time: the rows of another set go
            await mirror.write(sid, epoch, _wire(writes[0]))
            assert {d["id"] for d in (await mirror.read(sid)).descriptors} == set(writes[0])
    finally:
        await mirror.aclose()
        await leases.aclose()
