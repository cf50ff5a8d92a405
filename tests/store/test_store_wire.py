"""submit_wire: one row per batch, messages kept as sent, duplicates in and across batches and
groups, reads that start inside a batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from switchboard.store import AppendResult, MessageStoreProtocol, StoreError
from switchboard.store.sqlite import MessageStore
from tests.store.storekit import batch_rows, build_record, build_wire

pytestmark = pytest.mark.anyio


async def test_a_wire_batch_is_stored_as_one_row_holding_the_messages_as_sent(
    store: MessageStore, db_path: Path
) -> None:
    messages = [
        build_wire(1),
        build_wire(2, threadId="t-1", metadata={"edited": True}, tags=["chat:mention"]),
    ]

    results = await store.submit_wire("demo", messages, received_at=12.5)

    assert results == [AppendResult(1, False), AppendResult(2, False)]
    assert batch_rows(db_path) == [(1, 2, "demo", 12.5, messages)]
    first, second = await store.read(0)
    assert (first.thread_id, first.metadata, first.tags) == (None, None, None)
    assert (second.server_id, second.channel_id, second.message_id) == (
        "demo",
        "discord:guild:general",
        "m-2",
    )
    assert (second.thread_id, second.metadata, second.tags) == (
        "t-1",
        {"edited": True},
        ["chat:mention"],
    )
    assert (second.author_id, second.author_name, second.timestamp) == (
        "u-2",
        "User 2",
        messages[1]["timestamp"],
    )
    assert second.content == messages[1]["content"]
    assert second.received_at == 12.5


async def test_unknown_members_of_a_wire_message_are_kept_as_given(
    store: MessageStore, db_path: Path
) -> None:
    message = build_wire(
        1, future={"x": [1, 2]}, author={"id": "u", "name": "U", "avatar": "https://a/b.png"}
    )

    await store.submit_wire("demo", [message], received_at=1.0)

    [(_, _, _, _, stored)] = batch_rows(db_path)
    assert stored == [message]
    assert stored[0]["future"] == {"x": [1, 2]}
    assert stored[0]["author"]["avatar"] == "https://a/b.png"
    [read] = await store.read(0)
    assert (read.author_id, read.author_name) == ("u", "U")


async def test_a_wire_message_that_cannot_be_encoded_or_keyed_is_refused_at_once(
    store: MessageStore,
) -> None:
    unencodable = build_wire(2, metadata={"when": object()})
    keyless: dict[str, Any] = {k: v for k, v in build_wire(3).items() if k != "messageId"}

    with pytest.raises(StoreError, match="JSON"):
        store.submit_wire("demo", [build_wire(1), unencodable], received_at=1.0)
    with pytest.raises(StoreError, match="messageId"):
        store.submit_wire("demo", [build_wire(1), keyless], received_at=1.0)

    assert await store.submit_wire("demo", [build_wire(1)]) == [AppendResult(1, False)]
    assert await store.count() == 1


async def test_duplicates_within_one_batch_are_answered_and_only_new_messages_are_stored(
    store: MessageStore, db_path: Path
) -> None:
    await store.submit_wire("demo", [build_wire(1)], received_at=1.0)

    results = await store.submit_wire(
        "demo", [build_wire(2), build_wire(1), build_wire(2), build_wire(3)], received_at=2.0
    )

    assert results == [
        AppendResult(2, False),
        AppendResult(1, True),
        AppendResult(2, True),
        AppendResult(3, False),
    ]
    rows = batch_rows(db_path)
    assert [(first_seq, count) for first_seq, count, *_ in rows] == [(1, 1), (2, 2)]
    assert [m["messageId"] for m in rows[1][4]] == ["m-2", "m-3"]


async def test_duplicates_across_batches_submitted_together_point_at_the_first_copy(
    store: MessageStore, db_path: Path
) -> None:
    pending = [
        store.submit_wire("demo", [build_wire(n) for n in range(first, first + 3)])
        for first in (0, 2, 1, 0)
    ]
    answers = [await waiter for waiter in pending]

    assert answers == [
        [AppendResult(1, False), AppendResult(2, False), AppendResult(3, False)],
        [AppendResult(3, True), AppendResult(4, False), AppendResult(5, False)],
        [AppendResult(2, True), AppendResult(3, True), AppendResult(4, True)],
        [AppendResult(1, True), AppendResult(2, True), AppendResult(3, True)],
    ]
    assert [(first_seq, count) for first_seq, count, *_ in batch_rows(db_path)] == [
        (1, 3),
        (4, 2),
    ]


async def test_duplicates_are_recognised_after_a_reopen_from_the_rebuilt_index(
    db_path: Path,
) -> None:
    async with await MessageStore.open(db_path) as store:
        await store.submit_wire("demo", [build_wire(n) for n in range(3)], received_at=1.0)
        await store.submit_wire("zulip", [build_wire(0)], received_at=1.0)

    async with await MessageStore.open(db_path) as store:
        again = await store.submit_wire("demo", [build_wire(2), build_wire(0), build_wire(9)])
        other = await store.submit_wire("zulip", [build_wire(0), build_wire(1)])

    assert again == [AppendResult(3, True), AppendResult(1, True), AppendResult(5, False)]
    assert other == [AppendResult(4, True), AppendResult(6, False)]


async def test_a_message_older_than_the_dedupe_window_is_stored_again(db_path: Path) -> None:
    async with await MessageStore.open(db_path, dedupe_window=3) as store:
        await store.submit_wire("demo", [build_wire(n) for n in range(5)], received_at=1.0)
        recent = await store.submit_wire("demo", [build_wire(2), build_wire(4)])
        old = await store.submit_wire("demo", [build_wire(1)])

    assert recent == [AppendResult(3, True), AppendResult(5, True)]
    assert old == [AppendResult(6, False)]  # m-1 had left the window: a new copy


async def test_the_window_rebuilt_at_open_holds_only_the_newest_messages(db_path: Path) -> None:
    async with await MessageStore.open(db_path) as store:
        for first in range(0, 6, 2):
            await store.submit_wire("demo", [build_wire(first), build_wire(first + 1)])

    async with await MessageStore.open(db_path, dedupe_window=3) as store:
        newest = await store.submit_wire("demo", [build_wire(5), build_wire(4), build_wire(3)])
        older = await store.submit_wire("demo", [build_wire(2)])

    assert newest == [AppendResult(6, True), AppendResult(5, True), AppendResult(4, True)]
    assert older == [AppendResult(7, False)]


async def test_a_negative_dedupe_window_is_refused(db_path: Path) -> None:
    with pytest.raises(ValueError, match="dedupe_window"):
        await MessageStore.open(db_path, dedupe_window=-1)


async def test_reads_that_start_inside_a_batch_and_span_batches_return_exactly_the_range(
    store: MessageStore,
) -> None:
    n = 0
    for size in (3, 1, 4, 2, 5):
        await store.submit_wire("demo", [build_wire(n + i) for i in range(size)])
        n += size
    everything = [f"m-{i}" for i in range(n)]

    for after in range(-1, n + 1):
        for limit in (1, 2, 3, 5, 100):
            page = await store.read(after, limit)
            start = max(after, 0)
            assert [m.seq for m in page] == list(range(start + 1, min(start + limit, n) + 1))
            assert [m.message_id for m in page] == everything[start : start + limit]


async def test_records_from_two_servers_in_one_submit_become_one_row_per_run(
    store: MessageStore, db_path: Path
) -> None:
    results = await store.append(
        [build_record(1), build_record(2), build_record(1, server_id="zulip"), build_record(3)],
        received_at=1.0,
    )

    assert results == [AppendResult(s, False) for s in (1, 2, 3, 4)]
    rows = batch_rows(db_path)
    assert [(first_seq, count, server) for first_seq, count, server, *_ in rows] == [
        (1, 2, "demo"),
        (3, 1, "zulip"),
        (4, 1, "demo"),
    ]
    assert [(m.server_id, m.message_id) for m in await store.read(0)] == [
        ("demo", "m-1"),
        ("demo", "m-2"),
        ("zulip", "m-1"),
        ("demo", "m-3"),
    ]


async def test_the_sqlite_store_keeps_the_backend_contract(store: MessageStore) -> None:
    contract: MessageStoreProtocol = store  # checked by mypy; the calls check it at run time

    assert await contract.submit_wire("demo", [build_wire(1)], received_at=1.0) == [
        AppendResult(1, False)
    ]
    assert await contract.append([build_record(1)], received_at=1.0) == [AppendResult(1, True)]
    assert [m.message_id for m in await contract.read(0)] == ["m-1"]
