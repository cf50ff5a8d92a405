"""Appending and reading messages: order, fields, duplicates, concurrency, reopening."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from switchboard.store import AppendResult, StoreError
from switchboard.store.sqlite import MessageStore
from tests.store.storekit import build_record

pytestmark = pytest.mark.anyio


async def test_appended_messages_read_back_in_order_with_every_field_intact(
    store: MessageStore,
) -> None:
    records = [
        build_record(1),
        build_record(
            2,
            thread_id="t-9",
            content=[{"type": "text", "text": "héllo ✓"}, {"type": "resource", "uri": "x:/y"}],
            metadata={"edited": True, "nested": {"n": [1, 2.5, None]}},
            tags=["urgent", "mention"],
        ),
        build_record(3),
    ]
    results = await store.append(records, received_at=1234.5)
    assert results == [AppendResult(1, False), AppendResult(2, False), AppendResult(3, False)]

    stored = await store.read(0)
    assert [m.seq for m in stored] == [1, 2, 3]
    for record, message in zip(records, stored, strict=True):
        assert message.server_id == record.server_id
        assert message.channel_id == record.channel_id
        assert message.message_id == record.message_id
        assert message.thread_id == record.thread_id
        assert message.author_id == record.author_id
        assert message.author_name == record.author_name
        assert message.timestamp == record.timestamp
        assert message.content == record.content
        assert message.metadata == record.metadata
        assert message.tags == record.tags
        assert message.received_at == 1234.5


async def test_read_returns_only_messages_after_the_given_seq_and_honours_the_limit(
    store: MessageStore,
) -> None:
    await store.append([build_record(n) for n in range(10)], received_at=1.0)

    page = await store.read(3, limit=4)

    assert [m.seq for m in page] == [4, 5, 6, 7]
    assert [m.message_id for m in page] == ["m-3", "m-4", "m-5", "m-6"]
    assert await store.read(10) == []
    with pytest.raises(ValueError, match="limit"):
        await store.read(0, limit=0)


async def test_a_message_appended_again_is_not_stored_twice_and_answers_with_its_original_seq(
    store: MessageStore,
) -> None:
    first = await store.append([build_record(1), build_record(2)], received_at=1.0)
    again = await store.append([build_record(2), build_record(1)], received_at=2.0)
    once_more = await store.append([build_record(1)], received_at=3.0)

    assert first == [AppendResult(1, False), AppendResult(2, False)]
    assert again == [AppendResult(2, True), AppendResult(1, True)]
    assert once_more == [AppendResult(1, True)]
    assert await store.count() == 2
    assert store.latest_seq == 2
    assert (await store.read(0))[0].received_at == 1.0  # the first copy is the one kept


async def test_duplicates_inside_one_batch_point_at_the_first_copy_and_new_ones_stay_in_order(
    store: MessageStore,
) -> None:
    await store.append([build_record(1)], received_at=1.0)

    results = await store.append(
        [build_record(2), build_record(1), build_record(2), build_record(3)], received_at=2.0
    )

    assert results == [
        AppendResult(2, False),
        AppendResult(1, True),
        AppendResult(2, True),
        AppendResult(3, False),
    ]
    assert [m.message_id for m in await store.read(0)] == ["m-1", "m-2", "m-3"]


async def test_the_same_message_id_in_another_channel_or_server_is_a_different_message(
    store: MessageStore,
) -> None:
    results = await store.append(
        [
            build_record(1),
            build_record(1, channel_id="discord:guild:random"),
            build_record(1, server_id="zulip"),
        ],
        received_at=1.0,
    )

    assert [r.duplicate for r in results] == [False, False, False]
    assert await store.count() == 3


async def test_submit_commits_batches_in_the_order_it_was_called(store: MessageStore) -> None:
    pending = [
        store.submit([build_record(10 * b + i) for i in range(5)], received_at=float(b))
        for b in range(20)
    ]
    outcomes = [await waiter for waiter in pending]

    seqs = [r.seq for batch in outcomes for r in batch]
    assert seqs == list(range(1, 101))
    stored = await store.read(0, limit=1000)
    assert [m.message_id for m in stored] == [
        f"m-{10 * b + i}" for b in range(20) for i in range(5)
    ]


async def test_sixteen_concurrent_submitters_all_complete_and_every_row_is_stored_once(
    store: MessageStore,
) -> None:
    answers: dict[int, list[Sequence[AppendResult]]] = {}

    async def submitter(k: int) -> None:
        answers[k] = []
        for b in range(10):
            batch = [build_record(i, server_id=f"s{k}", message_id=f"{b}-{i}") for i in range(10)]
            answers[k].append(await store.append(batch, received_at=1.0))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for k in range(16):
                tg.start_soon(submitter, k)

    assert await store.count() == 1600
    all_seqs = sorted(r.seq for batches in answers.values() for b in batches for r in b)
    assert all_seqs == list(range(1, 1601))
    for batches in answers.values():  # each submitter's own batches keep their order
        mine = [r.seq for b in batches for r in b]
        assert mine == sorted(mine)
    stored = await store.read(0, limit=2000)
    assert len({(m.server_id, m.message_id) for m in stored}) == 1600


async def test_an_empty_batch_completes_at_once_without_writing(store: MessageStore) -> None:
    assert await store.append([], received_at=1.0) == []
    assert store.latest_seq == 0
    assert await store.count() == 0


async def test_a_record_that_cannot_be_encoded_is_refused_at_submit_and_nothing_is_queued(
    store: MessageStore,
) -> None:
    bad = build_record(2, metadata={"when": object()})

    with pytest.raises(StoreError, match="JSON"):
        store.submit([build_record(1), bad], received_at=1.0)

    assert await store.append([build_record(3)], received_at=1.0) == [AppendResult(1, False)]
    assert await store.count() == 1


async def test_the_clock_is_read_only_when_the_caller_gives_no_received_at(
    store: MessageStore,
) -> None:
    await store.append([build_record(1)], received_at=42.0)
    await store.append([build_record(2)])

    given, defaulted = await store.read(0)
    assert given.received_at == 42.0
    assert defaulted.received_at > 1_700_000_000  # a real unix time


async def test_reopening_restores_latest_seq_and_continues_the_sequence(db_path: Path) -> None:
    async with await MessageStore.open(db_path) as store:
        await store.append([build_record(n) for n in range(3)], received_at=1.0)

    async with await MessageStore.open(db_path) as store:
        assert store.latest_seq == 3
        duplicate, fresh = await store.append([build_record(1), build_record(3)], received_at=2.0)
        assert duplicate == AppendResult(2, True)
        assert fresh == AppendResult(4, False)
        assert [m.seq for m in await store.read(0)] == [1, 2, 3, 4]
