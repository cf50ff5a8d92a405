"""The decision log's contract (``DecisionLogProtocol``): ordered events and snapshots."""

from __future__ import annotations

import pytest

from switchboard.store import DecisionLogProtocol, Snapshot
from tests.store.contract.conftest import Backend

pytestmark = pytest.mark.anyio


def event(n: int) -> dict[str, object]:
    return {"kind": "test-event", "n": n}


async def test_appended_batches_take_consecutive_seqs_and_read_back_in_order(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        log: DecisionLogProtocol = stores.decisions
        first = log.append([event(1), event(2)])
        second = log.append([event(3)])
        assert await first == 2
        assert await second == 3
        assert await log.append([]) == 3  # an empty batch completes at the end of the log
        assert log.latest_seq == 3
        assert [e["n"] for e in await log.read_all()] == [1, 2, 3]
        assert [e["n"] for e in await log.read_all(after_seq=2)] == [3]


async def test_a_snapshot_compacts_what_it_covers_and_start_up_loads_it_with_the_tail(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        log = stores.decisions
        await log.append([event(1), event(2)])
        await log.snapshot({"state": "after two"}, 2)
        await log.append([event(3)])
        loaded = await log.load()
        assert loaded.snapshot == Snapshot(2, {"state": "after two"})
        assert [e["n"] for e in loaded.tail] == [3]
        assert [e["n"] for e in await log.read_all()] == [3]


async def test_the_log_and_its_snapshot_are_there_after_a_reopen(backend: Backend) -> None:
    async with backend.open() as stores:
        await stores.decisions.append([event(1)])
        await stores.decisions.snapshot({"state": 1}, 1)
        await stores.decisions.append([event(2)])
    async with backend.open() as stores:
        loaded = await stores.decisions.load()
        assert loaded.snapshot == Snapshot(1, {"state": 1})
        assert [e["n"] for e in loaded.tail] == [2]
        assert stores.decisions.latest_seq == 2
