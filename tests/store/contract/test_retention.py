"""Retention's contract on every backend: what a pass deletes and what it keeps, and what a
reader sees afterwards. Each backend's task is the one the host builds
(:func:`switchboard.app.retention.retention_task`); the size cap's measure differs by backend
(docs/operations.md), so here it is only ever exceeded by far."""

from __future__ import annotations

import random
from typing import Any

import anyio
import pytest

from switchboard.app.retention import Retention, retention_task
from switchboard.config import StoreConfig
from switchboard.store import MessageStoreProtocol
from switchboard.store.mailmark import MAIL_SERVER
from switchboard.store.retention import Floor
from tests.store.contract.conftest import Backend

pytestmark = pytest.mark.anyio

NOW = 1_800_000_000.0
DAY = 86_400.0


class Cursors:
    """The floor of a test: the least acknowledged cursor of the agents named, read from the
    store as the host does; ``asked`` is set once a pass asked for it."""

    def __init__(self, store: MessageStoreProtocol, *agents: str) -> None:
        self.store = store
        self.agents = agents
        self.asked = anyio.Event()

    async def __call__(self) -> Floor:
        self.asked.set()
        floor = Floor(self.store.latest_seq, "nothing")
        for agent in self.agents:
            cursor = await self.store.get_cursor(agent)
            if cursor < floor.seq:
                floor = Floor(cursor, f"agent @{agent}")
        return floor


def wire(n: int) -> dict[str, Any]:
    # Pseudo-random text, so packed bodies take room in proportion to the messages.
    text = f"message {n} " + random.Random(n).randbytes(48).hex()
    return {
        "channelId": "c",
        "messageId": f"m{n}",
        "author": {"id": "u1", "name": "Ann"},
        "timestamp": "2026-12-01T10:00:00Z",
        "content": [{"type": "text", "text": text}],
    }


async def fill(
    store: MessageStoreProtocol,
    batches: int,
    *,
    at: float,
    per: int = 10,
    start: int = 0,
    server: str = "demo",
) -> None:
    """``batches`` batches of ``per`` messages each, received at ``at``."""
    for b in range(batches):
        first = start + b * per
        await store.submit_wire(
            server, [wire(n) for n in range(first, first + per)], received_at=at
        )


def task(
    store: MessageStoreProtocol,
    *agents: str,
    keep_newest: int = 0,
    **settings: Any,
) -> Retention:
    made = retention_task(
        store,
        StoreConfig(**settings),
        Cursors(store, *agents),
        clock=lambda: NOW,
        keep_newest=keep_newest,
    )
    assert made is not None
    return made


async def seqs(store: MessageStoreProtocol) -> list[int]:
    return [m.seq for m in await store.read(0, 10_000)]


async def test_a_pass_deletes_old_acknowledged_messages_and_keeps_young_ones(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        store = stores.messages
        await fill(store, 20, at=NOW - 40 * DAY)
        await fill(store, 5, at=NOW - DAY, start=200)
        await store.set_cursor("alice", store.latest_seq)

        report = await task(store, "alice", retain="30d").run_pass()

        assert (report.rows, report.messages) == (20, 200)
        assert await seqs(store) == list(range(201, 251))
        assert await store.count() == 50
        assert store.latest_seq == 250


async def test_an_agent_behind_reads_on_from_its_cursor_after_a_pass(backend: Backend) -> None:
    async with backend.open() as stores:
        store = stores.messages
        await fill(store, 10, at=NOW - 90 * DAY)
        await store.set_cursor("alice", 100)
        await store.set_cursor("bob", 35)  # bob still owes an ack for 36..100

        report = await task(store, "alice", "bob", retain="1d").run_pass()

        # Rows 1..10, 11..20 and 21..30 lie below bob's cursor; 31..40 holds 36, so it stays.
        assert (report.floor, report.held_by) == (35, "agent @bob")
        assert (report.rows, report.messages) == (3, 30)
        assert [m.seq for m in await store.read(35, 100)] == list(range(36, 101))
        assert [m.message_id for m in await store.read(35, 2)] == ["m35", "m36"]
        assert (await seqs(store))[0] == 31


async def test_an_agent_that_never_acknowledged_holds_every_message(backend: Backend) -> None:
    async with backend.open() as stores:
        store = stores.messages
        await fill(store, 5, at=NOW - 90 * DAY)
        await store.set_cursor("alice", store.latest_seq)

        report = await task(store, "alice", "carol", retain="1d").run_pass()

        assert (report.rows, report.floor, report.held_by) == (0, 0, "agent @carol")
        assert await store.count() == 50


async def test_the_newest_messages_stay_however_old(backend: Backend) -> None:
    async with backend.open() as stores:
        store = stores.messages
        await fill(store, 10, at=NOW - 90 * DAY)
        await store.set_cursor("alice", store.latest_seq)

        report = await task(store, "alice", keep_newest=35, retain="1d").run_pass()

        # The newest 35 are 66..100: the row 61..70 holds 66, so it stays too.
        assert report.held_by == "the duplicate window (the newest messages)"
        assert (await seqs(store))[0] == 61


async def test_mail_is_never_deleted_and_the_rows_after_it_still_go(backend: Backend) -> None:
    async with backend.open() as stores:
        store = stores.messages
        await fill(store, 2, at=NOW - 90 * DAY)
        await fill(store, 1, at=NOW - 90 * DAY, start=20, server=MAIL_SERVER)
        await fill(store, 2, at=NOW - 90 * DAY, start=30)
        await store.set_cursor("alice", store.latest_seq)

        report = await task(store, "alice", retain="1d").run_pass()

        assert report.messages == 40
        assert await seqs(store) == list(range(21, 31))


async def test_the_size_cap_deletes_the_oldest_it_may_and_waits_for_acknowledgements(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        store = stores.messages
        await fill(store, 10, at=NOW)  # young: only the cap can delete them
        await store.set_cursor("alice", 50)
        capped = task(store, "alice", max_size="1B")

        first = await capped.run_pass()
        assert (first.rows, first.floor) == (5, 50)
        assert await seqs(store) == list(range(51, 101))

        await store.set_cursor("alice", 80)
        second = await capped.run_pass()
        assert second.rows == 3
        assert await seqs(store) == list(range(81, 101))
        assert capped.last_pass()["deleted_messages"] == 80


async def test_a_store_opened_again_after_a_pass_keeps_what_it_kept(backend: Backend) -> None:
    async with backend.open() as stores:
        store = stores.messages
        await fill(store, 4, at=NOW - 90 * DAY)
        await store.set_cursor("alice", 20)
        await task(store, "alice", retain="1d").run_pass()
    async with backend.open() as stores:
        store = stores.messages
        assert store.latest_seq == 40
        assert await seqs(store) == list(range(21, 41))
        results = await store.submit_wire("demo", [wire(1000)])
        assert [r.seq for r in results] == [41]
