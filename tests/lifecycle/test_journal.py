"""The decision journal: append before memory changes, apply in commit order, snapshots,
replay (issue #4 part 1; channel-registry.md §5.2, §5.4)."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from switchboard.channels import ChannelRef
from switchboard.lifecycle.book import book_snapshot, restore_book
from switchboard.lifecycle.journal import DecisionJournal, DecisionNotRecorded
from switchboard.lifecycle.rules.book import LifecycleBook
from switchboard.lifecycle.rules.decisions import (
    DesiredState,
    Source,
    TuneOutEpoch,
    TuneOutScope,
)
from switchboard.lifecycle.rules.events import DecisionEvent, DesiredStateSet, TuneOutStarted
from switchboard.store import LoadedLog, StoreError
from switchboard.store.sqlite import DecisionLog

pytestmark = pytest.mark.anyio

A, B = ChannelRef("s1", "a"), ChannelRef("s1", "b:with:colons")


def opened(ref: ChannelRef, at: float = 1.0, source: Source = Source.AGENT_TOOL) -> DesiredStateSet:
    return DesiredStateSet(ref, DesiredState.OPEN, source, at, "agent")


def closed(ref: ChannelRef, at: float = 2.0) -> DesiredStateSet:
    return DesiredStateSet(ref, DesiredState.CLOSED, Source.MODULE_TOOL, at)


class BookPart:
    """A journal part holding a lifecycle book, as the lifecycle book is kept."""

    def __init__(self) -> None:
        self.book = LifecycleBook()
        self.seen: list[object] = []

    def apply(self, event: Any) -> object:
        self.seen.append(event)
        return self.book.apply(event)

    def take_snapshot(self) -> object:
        return book_snapshot(self.book)

    def restore_snapshot(self, state: object | None) -> None:
        restore_book(self.book, state)


class ManualSink:
    """A log whose commits the test decides, one future per append."""

    latest_seq = 0

    def __init__(self) -> None:
        self.pending: list[asyncio.Future[int]] = []
        self.appended: list[list[Mapping[str, Any]]] = []

    def append(self, events: Sequence[Mapping[str, Any]]) -> Awaitable[int]:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.appended.append(list(events))
        self.pending.append(future)
        return future

    def snapshot(
        self, state: Mapping[str, Any], upto_seq: int, *, compact: bool = True
    ) -> Awaitable[None]:
        raise StoreError("no snapshots here")

    async def load(self) -> LoadedLog:
        return LoadedLog(None, [])


async def _until(predicate: Any) -> None:
    with anyio.fail_after(5):
        while not predicate():
            await anyio.lowlevel.checkpoint()


async def test_an_event_is_applied_only_once_the_log_committed_it() -> None:
    sink = ManualSink()
    part = BookPart()
    journal = DecisionJournal(sink, parts={"lifecycle": part})
    async with anyio.create_task_group() as tg:
        tg.start_soon(journal.record, [opened(A)])
        await _until(lambda: sink.pending)
        assert part.book.record(A) is None  # appended, not committed: memory unchanged
        assert sink.appended[0][0]["kind"] == "desired-state"
        sink.pending[0].set_result(1)
    record = part.book.record(A)
    assert record is not None
    assert record.state is DesiredState.OPEN
    assert journal.applied_seq == 1


async def test_a_refused_append_raises_and_changes_no_memory() -> None:
    """T29: a failed append means the decision was not made."""
    sink = ManualSink()
    part = BookPart()
    journal = DecisionJournal(sink, parts={"lifecycle": part})
    failure: list[BaseException] = []

    async def record() -> None:
        try:
            await journal.record([closed(A)])
        except DecisionNotRecorded as exc:
            failure.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(record)
        await _until(lambda: sink.pending)
        sink.pending[0].set_exception(StoreError("disk full"))
    assert failure
    assert "disk full" in str(failure[0])
    assert part.book.record(A) is None
    assert part.seen == []


async def test_a_closed_log_refuses_at_once_and_nothing_is_applied(tmp_path: Path) -> None:
    log = await DecisionLog.open(tmp_path / "d.sqlite")
    await log.aclose()
    part = BookPart()
    journal = DecisionJournal(log, parts={"lifecycle": part})
    with pytest.raises(DecisionNotRecorded):
        await journal.record([opened(A)])
    assert part.seen == []


async def test_batches_in_flight_apply_in_commit_order() -> None:
    sink = ManualSink()
    part = BookPart()
    journal = DecisionJournal(sink, parts={"lifecycle": part})
    async with anyio.create_task_group() as tg:
        tg.start_soon(journal.record, [opened(A, 1.0)])
        tg.start_soon(journal.record, [closed(A, 2.0)])
        await _until(lambda: len(sink.pending) == 2)
        sink.pending[0].set_result(1)
        sink.pending[1].set_result(2)
    record = part.book.record(A)
    assert record is not None
    assert record.state is DesiredState.CLOSED
    assert [type(e).__name__ for e in part.seen] == ["DesiredStateSet", "DesiredStateSet"]


async def test_a_cancelled_caller_still_waits_for_its_commit_and_it_is_applied() -> None:
    sink = ManualSink()
    part = BookPart()
    journal = DecisionJournal(sink, parts={"lifecycle": part})
    returned: list[int] = []

    async def record() -> None:
        returned.append(await journal.record([opened(A)]))

    async with anyio.create_task_group() as tg:
        tg.start_soon(record)
        await _until(lambda: sink.pending)
        tg.cancel_scope.cancel()
        sink.pending[0].set_result(1)  # the write commits after its caller was cancelled
    assert returned == [1]
    assert part.book.record(A) is not None
    assert journal.applied_seq == 1


async def test_every_part_sees_every_event_including_records_of_its_own_kind() -> None:
    class HostRecord:
        def to_json(self) -> dict[str, object]:
            return {"kind": "part-record"}

    first, second = BookPart(), BookPart()
    journal = DecisionJournal(None, parts={"one": first, "two": second})
    await journal.record([opened(A), HostRecord()])
    assert len(first.seen) == len(second.seen) == 2
    assert first.book == second.book


async def test_snapshots_every_n_events_and_restart_restores_the_same_book(
    tmp_path: Path,
) -> None:
    path = tmp_path / "d.sqlite"
    async with await DecisionLog.open(path) as log:
        part = BookPart()
        journal = DecisionJournal(log, parts={"lifecycle": part}, snapshot_every=3)
        for i in range(10):
            await journal.record([opened(A, i) if i % 2 else closed(B, i)])
        await journal.record([closed(A, 99.0)])
        assert journal.snapshots >= 2
        loaded = await log.load()
        assert loaded.snapshot is not None
        assert len(loaded.tail) < 3  # compacted: start-up reads the snapshot and a short tail
    async with await DecisionLog.open(path) as log:
        again = BookPart()
        fresh = DecisionJournal(log, parts={"lifecycle": again})
        restored = await fresh.restore()
    assert again.book == part.book
    assert restored.snapshot_seq > 0
    assert fresh.applied_seq == journal.applied_seq == 11


async def test_restore_skips_junk_records_and_junk_snapshot_rows(tmp_path: Path) -> None:
    path = tmp_path / "d.sqlite"
    async with await DecisionLog.open(path) as log:
        await log.append([{"kind": "desired-state", "serverId": 3}, {"kind": "nonsense"}])
        bad_rows = {"records": [["s1"], ["s1", "x", {"state": "sideways"}], 7]}
        await log.snapshot({"lifecycle": bad_rows}, 2)
        await log.append([opened(A).to_json(), {"not": "an event"}])
    async with await DecisionLog.open(path) as log:
        part = BookPart()
        journal = DecisionJournal(log, parts={"lifecycle": part})
        restored = await journal.restore()
    assert restored.events == 1
    assert restored.skipped == 1
    assert list(part.book.items()) == [(A, opened(A).record())]


_EVENTS = st.lists(
    st.tuples(
        st.sampled_from([A, B, ChannelRef("s2", "a")]),
        st.sampled_from(["open", "close", "tune-out"]),
        st.integers(min_value=0, max_value=1000),
    ),
    max_size=25,
)


def _event(ref: ChannelRef, what: str, at: int) -> DecisionEvent:
    if what == "open":
        return opened(ref, float(at), Source.SUBSCRIPTION_POLICY)
    if what == "close":
        return closed(ref, float(at))
    epoch = TuneOutEpoch(f"e{at}", "agent", TuneOutScope(ref), float(at), 10)
    return TuneOutStarted(epoch, Source.AGENT_TOOL)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=_EVENTS, every=st.integers(min_value=1, max_value=6))
async def test_whatever_the_snapshot_interval_restore_equals_memory(
    events: list[tuple[ChannelRef, str, int]], every: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "d.sqlite"
        async with await DecisionLog.open(path, synchronous="normal") as log:
            part = BookPart()
            journal = DecisionJournal(log, parts={"lifecycle": part}, snapshot_every=every)
            for ref, what, at in events:
                await journal.record([_event(ref, what, at)])
        async with await DecisionLog.open(path) as log:
            again = BookPart()
            fresh = DecisionJournal(log, parts={"lifecycle": again})
            await fresh.restore()
    assert again.book == part.book
    assert again.book == LifecycleBook.replay(_event(*e) for e in events)


async def test_a_long_uncompacted_tail_is_snapshotted_right_after_it_is_replayed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "d.sqlite"
    async with await DecisionLog.open(path) as log:
        await log.append([opened(A, i).to_json() for i in range(7)])
    async with await DecisionLog.open(path) as log:
        journal = DecisionJournal(log, parts={"lifecycle": BookPart()}, snapshot_every=5)
        first = await journal.restore()
    async with await DecisionLog.open(path) as log:
        again = DecisionJournal(log, parts={"lifecycle": BookPart()}, snapshot_every=5)
        second = await again.restore()
    assert (first.snapshot_seq, first.events) == (0, 7)
    assert (second.snapshot_seq, second.events) == (7, 0)
