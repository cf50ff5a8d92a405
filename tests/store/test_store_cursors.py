"""Per-agent cursors: default, durable, validated."""

from __future__ import annotations

from pathlib import Path

import pytest

from switchboard.store.sqlite import MessageStore
from tests.store.storekit import build_record

pytestmark = pytest.mark.anyio


async def test_an_agent_without_a_cursor_starts_at_zero(store: MessageStore) -> None:
    assert await store.get_cursor("nobody") == 0


async def test_a_cursor_set_by_one_agent_is_read_back_and_leaves_others_alone(
    store: MessageStore,
) -> None:
    await store.append([build_record(n) for n in range(5)], received_at=1.0)

    await store.set_cursor("alice", 3)
    await store.set_cursor("bob", 1)
    await store.set_cursor("alice", 5)

    assert await store.get_cursor("alice") == 5
    assert await store.get_cursor("bob") == 1


async def test_cursors_survive_closing_and_reopening(db_path: Path) -> None:
    async with await MessageStore.open(db_path) as store:
        await store.append([build_record(n) for n in range(4)], received_at=1.0)
        await store.set_cursor("alice", 4)
        await store.set_cursor("bob", 2)

    async with await MessageStore.open(db_path) as store:
        assert await store.get_cursor("alice") == 4
        assert await store.get_cursor("bob") == 2
        assert [m.seq for m in await store.read(await store.get_cursor("bob"))] == [3, 4]


async def test_a_cursor_outside_the_stored_sequence_is_refused(store: MessageStore) -> None:
    await store.append([build_record(1)], received_at=1.0)

    with pytest.raises(ValueError, match="outside"):
        await store.set_cursor("alice", 2)
    with pytest.raises(ValueError, match="outside"):
        await store.set_cursor("alice", -1)
    assert await store.get_cursor("alice") == 0
