"""The decision event log: appends in order, refused appends, snapshots and concurrency."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.channels.ref import ChannelRef
from switchboard.lifecycle.rules.book import LifecycleBook
from switchboard.lifecycle.rules.decisions import DesiredState, Source
from switchboard.lifecycle.rules.events import DesiredStateSet, decode_events
from switchboard.store import Snapshot, StoreClosedError, StoreError
from switchboard.store.sqlite import MessageStore
from switchboard.store.sqlite.eventlog import DecisionLog

pytestmark = pytest.mark.anyio


@pytest.fixture
async def decisions(db_path: Path) -> AsyncIterator[DecisionLog]:
    opened = await DecisionLog.open(db_path, synchronous="normal")
    try:
        yield opened
    finally:
        await opened.aclose()


def desired(channel: str, state: str = "open", at: float = 1.0) -> dict[str, Any]:
    """A dict shaped like DesiredStateSet.to_json() output."""
    return {
        "kind": "desired-state",
        "serverId": "srv",
        "channelId": channel,
        "desired": state,
        "source": "agent-tool",
        "at": at,
        "byAgent": "agent-1",
    }


def compact(book: LifecycleBook) -> dict[str, Any]:
    """The caller's snapshot of a book that holds only open/closed records."""
    return {
        "desired": [
            DesiredStateSet(ref, r.state, r.source, r.decided_at, r.by_agent).to_json()
            for ref, r in book.items()
        ]
    }


def restore(snapshot: Snapshot | None, tail: list[dict[str, Any]]) -> LifecycleBook:
    base = snapshot.state["desired"] if snapshot is not None else []
    return LifecycleBook.replay(decode_events([*base, *tail]))


async def test_appended_events_load_back_in_order_with_consecutive_seqs(
    decisions: DecisionLog,
) -> None:
    first = await decisions.append([desired("a"), desired("b")])
    second = await decisions.append([desired("c", "closed")])

    assert (first, second) == (2, 3)
    assert decisions.latest_seq == 3
    loaded = await decisions.load()
    assert loaded.snapshot is None
    assert loaded.tail == [desired("a"), desired("b"), desired("c", "closed")]
    assert await decisions.read_all(after_seq=2) == [desired("c", "closed")]


async def test_an_empty_append_resolves_with_the_current_seq_and_stores_nothing(
    decisions: DecisionLog,
) -> None:
    await decisions.append([desired("a")])
    assert await decisions.append([]) == 1
    assert await decisions.read_all() == [desired("a")]


async def test_a_reopened_log_continues_the_sequence_where_it_stopped(db_path: Path) -> None:
    async with await DecisionLog.open(db_path) as first:
        await first.append([desired("a"), desired("b")])
    async with await DecisionLog.open(db_path) as again:
        assert again.latest_seq == 2
        assert await again.append([desired("c")]) == 3
        assert [e["channelId"] for e in await again.read_all()] == ["a", "b", "c"]


async def test_the_log_shares_the_message_store_file_without_disturbing_it(
    db_path: Path,
) -> None:
    async with (
        await MessageStore.open(db_path) as store,
        await DecisionLog.open(db_path) as decisions,
    ):
        assert await decisions.append([desired("a")]) == 1
        assert store.latest_seq == 0
        assert await store.count() == 0
    async with await MessageStore.open(db_path) as again:
        assert again.latest_seq == 0


async def test_a_refused_append_fails_its_awaitable_and_leaves_nothing_behind(
    decisions: DecisionLog, db_path: Path
) -> None:
    with sqlite3.connect(db_path) as setup:
        setup.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON decision_batches "
            "WHEN instr(NEW.body, 'forbidden') > 0 BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    good_before = decisions.append([desired("a")])
    bad = decisions.append([desired("forbidden"), desired("b")])
    good_after = decisions.append([desired("c")])

    assert await good_before == 1
    with pytest.raises(StoreError, match="refused"):
        await bad
    assert await good_after == 2
    assert [e["channelId"] for e in await decisions.read_all()] == ["a", "c"]
    assert decisions.latest_seq == 2


async def test_an_event_that_is_not_a_json_object_is_refused_before_it_is_queued(
    decisions: DecisionLog,
) -> None:
    with pytest.raises(StoreError):
        decisions.append([desired("a"), ["not", "an", "object"]])  # type: ignore[list-item]
    with pytest.raises(StoreError):
        decisions.append([{"kind": "desired-state", "at": object()}])
    assert await decisions.read_all() == []


async def test_a_closed_log_refuses_appends_snapshots_and_reads(db_path: Path) -> None:
    decisions = await DecisionLog.open(db_path)
    await decisions.aclose()
    await decisions.aclose()
    with pytest.raises(StoreClosedError):
        decisions.append([desired("a")])
    with pytest.raises(StoreClosedError):
        decisions.snapshot({}, 0)
    with pytest.raises(StoreClosedError):
        await decisions.load()


async def test_a_snapshot_plus_its_tail_replays_to_the_same_book_as_the_full_log(
    db_path: Path,
) -> None:
    events = [desired(f"ch{i % 7}", "open" if i % 3 else "closed", float(i)) for i in range(50)]
    async with await DecisionLog.open(db_path, synchronous="normal") as decisions:
        for i in range(0, 40, 4):
            await decisions.append(events[i : i + 4])
        full = restore(None, (await decisions.load()).tail)
        await decisions.snapshot(compact(full), decisions.latest_seq - 2)
        await decisions.append(events[40:])
        expected = LifecycleBook.replay(decode_events(events))

    async with await DecisionLog.open(db_path) as reopened:
        loaded = await reopened.load()
        assert loaded.snapshot is not None
        assert loaded.snapshot.upto_seq == 38
        assert len(loaded.tail) == 12  # seqs 39..50
        assert restore(loaded.snapshot, loaded.tail) == expected
        assert len(expected) == 7


async def test_compaction_deletes_only_rows_the_snapshot_fully_covers(
    decisions: DecisionLog,
) -> None:
    await decisions.append([desired("a"), desired("b")])
    await decisions.append([desired("c"), desired("d")])
    await decisions.snapshot({"note": "upto three"}, 3)

    assert [e["channelId"] for e in await decisions.read_all()] == ["c", "d"]
    loaded = await decisions.load()
    assert loaded.snapshot == Snapshot(3, {"note": "upto three"})
    assert [e["channelId"] for e in loaded.tail] == ["d"]


async def test_a_snapshot_without_compaction_keeps_the_whole_history(
    decisions: DecisionLog,
) -> None:
    await decisions.append([desired("a"), desired("b")])
    await decisions.snapshot({"n": 2}, 2, compact=False)
    assert len(await decisions.read_all()) == 2
    assert (await decisions.load()).tail == []


async def test_a_snapshot_beyond_the_end_or_before_the_last_one_is_refused(
    decisions: DecisionLog,
) -> None:
    await decisions.append([desired("a"), desired("b")])
    with pytest.raises(StoreError):
        await decisions.snapshot({}, 3)
    await decisions.snapshot({"n": 2}, 2)
    with pytest.raises(StoreError):
        await decisions.snapshot({}, 1)
    assert (await decisions.load()).snapshot == Snapshot(2, {"n": 2})


async def test_a_fully_compacted_log_reopens_at_the_snapshot_seq(db_path: Path) -> None:
    async with await DecisionLog.open(db_path) as decisions:
        await decisions.append([desired("a"), desired("b")])
        await decisions.snapshot({"n": 2}, 2)
    async with await DecisionLog.open(db_path) as reopened:
        assert reopened.latest_seq == 2
        assert await reopened.append([desired("c")]) == 3


async def test_concurrent_appenders_each_keep_their_order_and_seqs_match_positions(
    decisions: DecisionLog,
) -> None:
    returned: dict[str, list[int]] = {}

    async def appender(name: str) -> None:
        seqs = returned.setdefault(name, [])
        for i in range(25):
            seqs.append(await decisions.append([desired(f"{name}-{i}")]))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for n in range(8):
                tg.start_soon(appender, f"w{n}")

    logged = [e["channelId"] for e in await decisions.read_all()]
    assert len(logged) == 200
    for name, seqs in returned.items():
        assert seqs == sorted(seqs)
        assert [logged[s - 1] for s in seqs] == [f"{name}-{i}" for i in range(25)]


async def test_batches_queued_without_awaiting_commit_in_call_order(
    decisions: DecisionLog,
) -> None:
    pending = [decisions.append([desired(f"c{i}")] * (i % 3 + 1)) for i in range(30)]
    seqs = [await p for p in pending]
    assert seqs == sorted(seqs)
    logged = await decisions.read_all()
    assert [logged[s - 1]["channelId"] for s in seqs] == [f"c{i}" for i in range(30)]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.sampled_from(["open", "closed"])), min_size=1, max_size=40
    ),
    st.data(),
)
def test_any_snapshot_point_restores_the_same_book_as_the_full_log(
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[tuple[int, str]],
    data: st.DataObject,
) -> None:
    events = [desired(f"ch{c}", s, float(i)) for i, (c, s) in enumerate(steps)]
    cut = data.draw(st.integers(0, len(events)))
    path = tmp_path_factory.mktemp("log") / "store.sqlite"

    async def scenario() -> tuple[LifecycleBook, LifecycleBook]:
        async with await DecisionLog.open(path, synchronous="normal") as decisions:
            await decisions.append(events[:cut])
            head = LifecycleBook.replay(decode_events(events[:cut]))
            await decisions.snapshot(compact(head), cut)
            await decisions.append(events[cut:])
            loaded = await decisions.load()
        return restore(loaded.snapshot, loaded.tail), LifecycleBook.replay(decode_events(events))

    restored, expected = anyio.run(scenario)
    assert restored == expected


def test_the_desired_state_dicts_used_here_decode_as_desired_state_events() -> None:
    (event,) = decode_events([desired("x", "closed", 5.0)])
    assert event == DesiredStateSet(
        ChannelRef("srv", "x"), DesiredState.CLOSED, Source.AGENT_TOOL, 5.0, "agent-1"
    )
