"""The message store's contract (``MessageStoreProtocol``): batches, the head, cursors, and
mail numbering. Every test goes through the interface only."""

from __future__ import annotations

from typing import Any

import anyio
import orjson
import pytest

from switchboard.store import IncomingRecord, MessageStoreProtocol, RawMessages, StoredMessage
from tests.store.contract.conftest import Backend

pytestmark = pytest.mark.anyio


def wire(channel: str, mid: str, text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {
        "channelId": channel,
        "messageId": mid,
        "author": {"id": "u1", "name": "Ann"},
        "timestamp": "2026-12-01T10:00:00Z",
        "content": [{"type": "text", "text": text}],
        **extra,
    }


def record(
    channel: str, mid: str, text: str = "hi", server: str = "s", author: str = "u1"
) -> IncomingRecord:
    return IncomingRecord(
        server_id=server,
        channel_id=channel,
        message_id=mid,
        thread_id=None,
        author_id=author,
        author_name="Ann",
        timestamp="2026-12-01T10:00:00Z",
        content=[{"type": "text", "text": text}],
    )


def ids(messages: list[StoredMessage]) -> list[str]:
    return [m.message_id for m in messages]


async def test_a_committed_batch_reads_back_in_arrival_order_with_consecutive_seqs(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        store: MessageStoreProtocol = stores.messages
        results = await store.submit_wire("s", [wire("c", "m1"), wire("c", "m2"), wire("d", "m3")])
        assert [r.duplicate for r in results] == [False, False, False]
        assert [r.seq for r in results] == [1, 2, 3]
        assert store.latest_seq == 3
        read = await store.read(0, 10)
        assert ids(read) == ["m1", "m2", "m3"]
        assert [(m.server_id, m.channel_id, m.seq) for m in read] == [
            ("s", "c", 1),
            ("s", "c", 2),
            ("s", "d", 3),
        ]


async def test_batches_submitted_without_waiting_commit_in_the_order_they_were_submitted(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        store = stores.messages
        pending = [store.submit_wire("s", [wire("c", f"m{n}")]) for n in range(20)]
        seqs = [(await p)[0].seq for p in pending]
        assert seqs == sorted(seqs) == list(range(1, 21))


async def test_a_repeat_is_a_duplicate_answered_with_the_seq_of_the_stored_copy(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        store = stores.messages
        [first] = await store.submit_wire("s", [wire("c", "m1")])
        again = await store.submit_wire("s", [wire("c", "m1"), wire("c", "m2"), wire("c", "m2")])
        assert [(r.seq, r.duplicate) for r in again] == [
            (first.seq, True),
            (first.seq + 1, False),
            (first.seq + 1, True),
        ]
        other_channel = await store.submit_wire("s", [wire("d", "m1")])
        assert not other_channel[0].duplicate
        assert await store.count() == 3


async def test_what_was_committed_is_there_after_a_reopen(backend: Backend) -> None:
    async with backend.open() as stores:
        await stores.messages.append([record("c", "m1"), record("c", "m2")])
        await stores.messages.set_cursor("ann", 1)
        await stores.messages.set_delivered("ann", 2)
    async with backend.open() as stores:
        store = stores.messages
        assert store.latest_seq == 2
        assert ids(await store.read(0, 10)) == ["m1", "m2"]
        assert await store.get_cursor("ann") == 1
        assert await store.get_delivered("ann") == 2
        # the duplicate window is rebuilt: a retried message is still a duplicate
        [again] = await store.submit_wire("s", [wire("c", "m2")])
        assert again.duplicate
        assert again.seq == 2


async def test_reads_page_after_a_seq_and_never_past_the_head(backend: Backend) -> None:
    async with backend.open() as stores:
        store = stores.messages
        await store.append([record("c", f"m{n}") for n in range(1, 8)])
        assert ids(await store.read(0, 3)) == ["m1", "m2", "m3"]
        assert ids(await store.read(3, 3)) == ["m4", "m5", "m6"]
        assert ids(await store.read(6, 3)) == ["m7"]
        assert await store.read(7, 3) == []
        assert all(m.seq <= store.latest_seq for m in await store.read(0, 100))


async def test_slices_hold_the_same_messages_as_a_read_split_at_batch_bounds(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        store = stores.messages
        await store.submit_wire("a", [wire("c", f"a{n}") for n in range(1, 5)])
        await store.submit_wire("b", [wire("d", f"b{n}", metadata={"k": n}) for n in range(1, 4)])
        await store.submit_wire("a", [wire("c", "a5")])
        for after, limit in [(0, 100), (2, 3), (3, 4), (6, 1), (8, 5)]:
            parts = await store.read_slices(after, limit)
            flat = [m for part in parts for m in part.stored()]
            assert flat == await store.read(after, limit)
            assert [(p.server_id, p.first_seq, p.last_seq) for p in parts] == [
                (p.server_id, p.first_seq, p.first_seq + len(p.messages) - 1) for p in parts
            ]
        parts = await store.read_slices(2, 3)
        assert [(p.server_id, p.first_seq, len(p.messages)) for p in parts] == [
            ("a", 3, 2),
            ("b", 5, 1),
        ]
        assert parts[1].messages[0]["metadata"] == {"k": 1}


async def test_waiting_for_news_ends_with_a_commit_or_with_its_timeout(backend: Backend) -> None:
    async with backend.open() as stores:
        store = stores.messages
        assert not await store.wait_for_new(0, 0.01)
        async with anyio.create_task_group() as tg:
            woke: list[bool] = []

            async def wait() -> None:
                woke.append(await store.wait_for_new(0, 10))

            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            await store.append([record("c", "m1")])
        assert woke == [True]
        assert await store.wait_for_new(0, 0)


async def test_the_head_listeners_hear_every_move_of_the_head(backend: Backend) -> None:
    async with backend.open() as stores:
        store = stores.messages
        heads: list[int] = []
        store.watch_head(heads.append)
        await store.append([record("c", "m1"), record("c", "m2")])
        await store.append([record("c", "m2")])  # a duplicate: the head does not move
        await store.append([record("c", "m3")])
        with anyio.fail_after(5):
            while not heads or heads[-1] != 3:
                await anyio.lowlevel.checkpoint()
        assert heads == sorted(set(heads))
        assert heads[-1] == store.latest_seq == 3


async def test_the_three_ways_in_store_the_same_message(backend: Backend) -> None:
    async with backend.open() as stores:
        store = stores.messages
        one = wire("c", "m1", "the same words")
        raw = RawMessages([orjson.dumps(wire("c", "m2", "the same words"))])
        await store.submit_wire("s", [one])
        await store.submit_raw([("s", "c", "m2")], raw)
        await store.append([record("c", "m3", "the same words")])
        read = await store.read(0, 10)
        shown = {
            (m.channel_id, m.author_name, m.timestamp, tuple(map(str, m.content))) for m in read
        }
        assert len(shown) == 1
        assert ids(read) == ["m1", "m2", "m3"]


async def test_cursors_and_delivered_marks_start_at_zero_and_refuse_a_seq_out_of_range(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        store = stores.messages
        assert await store.get_cursor("ann") == 0
        assert await store.get_delivered("ann") == 0
        await store.append([record("c", "m1")])
        with pytest.raises(ValueError, match="outside"):
            await store.set_cursor("ann", 2)
        await store.set_cursor("ann", 1)
        assert await store.get_cursor("ann") == 1
        assert await store.get_cursor("bob") == 0


async def test_where_each_numbered_sequence_stands_is_read_from_the_messages(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        store = stores.messages
        await store.append(
            [
                record("@bob", "@ann#1", server="@mail", author="@ann"),
                record("@bob", "@ann#2", server="@mail", author="@ann"),
                record("@ann", "@bob#1", server="@mail", author="@bob"),
            ]
        )
        await store.append([record("c", "x#9")])  # another server: not counted
        assert await store.highest_numbers("@mail") == {("@bob", "@ann"): 2, ("@ann", "@bob"): 1}


async def test_a_cursor_or_delivered_mark_set_below_where_it_stands_stays_put(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        store = stores.messages
        await store.append([record("c", f"m{n}") for n in range(5)])
        await store.set_cursor("ann", 4)
        await store.set_cursor("ann", 2)  # a session that read less, answering late
        await store.set_delivered("ann", 5)
        await store.set_delivered("ann", 1)
        assert await store.get_cursor("ann") == 4
        assert await store.get_delivered("ann") == 5
    async with backend.open() as stores:
        assert await stores.messages.get_cursor("ann") == 4
        assert await stores.messages.get_delivered("ann") == 5
