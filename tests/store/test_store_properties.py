"""Property tests: anything storable reads back exactly, and duplicate answers match a model.

These are plain functions that run their own event loop per example (hypothesis drives them),
each against a fresh SQLite file.
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.store import AppendResult, IncomingRecord, StoredMessage
from switchboard.store.sqlite import MessageStore
from tests.store.storekit import build_record

T = TypeVar("T")

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
content_blocks = st.lists(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "image", "resource"])}).flatmap(
        lambda block: st.dictionaries(st.text(max_size=6), json_values, max_size=3).map(
            lambda extra: {**extra, **block}
        )
    ),
    max_size=3,
)
records = st.builds(
    IncomingRecord,
    server_id=st.text(max_size=10),
    channel_id=st.text(max_size=20),
    message_id=st.text(max_size=20),
    thread_id=st.none() | st.text(max_size=10),
    author_id=st.text(max_size=10),
    author_name=st.text(max_size=10),
    timestamp=st.text(max_size=24),
    content=content_blocks,
    metadata=st.none() | st.dictionaries(st.text(max_size=6), json_values, max_size=3),
    tags=st.none() | st.lists(st.text(max_size=8), max_size=3),
)


def key_of(record: IncomingRecord) -> tuple[str, str, str]:
    return (record.server_id, record.channel_id, record.message_id)


def with_store(body: Callable[[MessageStore], Awaitable[T]]) -> T:
    """Run ``body`` against a store on a fresh file, on a fresh asyncio loop."""
    with tempfile.TemporaryDirectory() as folder:

        async def main() -> T:
            async with await MessageStore.open(Path(folder) / "store.sqlite") as store:
                with anyio.fail_after(10):
                    return await body(store)

        return anyio.run(main, backend="asyncio")


def as_stored(seq: int, record: IncomingRecord, received_at: float) -> StoredMessage:
    return StoredMessage(
        seq,
        record.server_id,
        record.channel_id,
        record.message_id,
        record.thread_id,
        record.author_id,
        record.author_name,
        record.timestamp,
        record.content,
        record.metadata,
        record.tags,
        received_at,
    )


@settings(max_examples=40, deadline=None)
@given(
    batch=st.lists(records, min_size=1, max_size=6, unique_by=key_of),
    received_at=st.floats(min_value=0, max_value=4e9),
)
def test_any_record_reads_back_exactly_as_it_was_appended(
    batch: list[IncomingRecord], received_at: float
) -> None:
    async def body(store: MessageStore) -> list[StoredMessage]:
        await store.append(batch, received_at=received_at)
        return await store.read(0, limit=100)

    stored = with_store(body)

    assert stored == [as_stored(i + 1, r, received_at) for i, r in enumerate(batch)]


@settings(max_examples=40, deadline=None)
@given(
    batches=st.lists(
        st.lists(st.tuples(st.integers(0, 1), st.integers(0, 4)), max_size=6), max_size=6
    )
)
def test_duplicate_answers_match_a_model_of_first_copies(
    batches: list[list[tuple[int, int]]],
) -> None:
    async def body(store: MessageStore) -> list[Sequence[AppendResult]]:
        pending = [
            store.submit([build_record(m, channel_id=f"c{c}") for c, m in batch], received_at=1.0)
            for batch in batches
        ]
        return [await waiter for waiter in pending]

    answers = with_store(body)

    first_copy: dict[tuple[int, int], int] = {}
    expected: list[list[AppendResult]] = []
    for batch in batches:
        expected.append([])
        for key in batch:
            if key in first_copy:
                expected[-1].append(AppendResult(first_copy[key], True))
            else:
                first_copy[key] = len(first_copy) + 1
                expected[-1].append(AppendResult(first_copy[key], False))
    assert answers == expected
