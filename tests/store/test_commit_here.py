"""A batch submitted while the writer is idle is committed at once, on the submitting thread.

Issue #14: a lone batch handed to the writer thread waited for two thread hand-offs, a few
hundred µs of round trip for a commit of about 100. With ``synchronous="normal"`` the store
commits such a batch itself; a batch submitted while the writer has work goes to the writer,
after that work, so order holds. With ``synchronous="full"`` (a commit syncs the disk) every
batch goes to the writer, so the event loop never waits for a disk flush.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import anyio
import pytest

from switchboard.store import AppendResult, FreshResults, MessageStore
from tests.store.storekit import build_wire

pytestmark = pytest.mark.anyio


def _seqs_of(db_path: Path) -> list[tuple[int, int]]:
    with sqlite3.connect(db_path) as look:
        rows = look.execute("SELECT first_seq, count FROM batches ORDER BY first_seq").fetchall()
    look.close()
    return [(int(first), int(count)) for first, count in rows]


async def test_a_batch_submitted_while_the_writer_is_idle_is_committed_before_submit_returns(
    db_path: Path,
) -> None:
    async with await MessageStore.open(db_path) as store:
        done = store.submit_wire("demo", [build_wire(n) for n in range(3)], received_at=1.0)
        assert _seqs_of(db_path) == [(1, 3)]  # committed, with no turn of the event loop
        assert store.latest_seq == 3
        assert [r.seq for r in await done] == [1, 2, 3]


async def test_a_batch_submitted_while_the_writer_is_busy_waits_for_it_and_keeps_the_order(
    db_path: Path,
) -> None:
    release = threading.Event()
    entered = threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        entered.set()
        release.wait(10)

    async with await MessageStore.open(db_path) as store:
        first = store.submit_wire("demo", [build_wire(0)], received_at=1.0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(store.maintain, hold)
            with anyio.fail_after(10):
                await anyio.to_thread.run_sync(entered.wait)
            second = store.submit_wire("demo", [build_wire(1), build_wire(2)], received_at=2.0)
            assert _seqs_of(db_path) == [(1, 1)]  # queued behind the writer's work
            release.set()
            with anyio.fail_after(10):
                results = await second
        assert [r.seq for r in await first] == [1]
        assert [r.seq for r in results] == [2, 3]
        assert _seqs_of(db_path) == [(1, 1), (2, 2)]
        third = store.submit_wire("demo", [build_wire(3)], received_at=3.0)
        assert _seqs_of(db_path)[-1] == (4, 1)  # idle again: committed at once
        assert [r.seq for r in await third] == [4]


async def test_with_full_sync_every_batch_goes_to_the_writer_thread(db_path: Path) -> None:
    async with await MessageStore.open(db_path, synchronous="full") as store:
        pending = store.submit_wire("demo", [build_wire(0)], received_at=1.0)
        assert store.latest_seq == 0  # reported only from the writer's callback
        with anyio.fail_after(10):
            assert [r.seq for r in await pending] == [1]
        assert store.latest_seq == 1


async def test_a_duplicate_submitted_while_idle_is_answered_with_the_stored_copy(
    db_path: Path,
) -> None:
    async with await MessageStore.open(db_path) as store:
        await store.submit_wire("demo", [build_wire(0)], received_at=1.0)
        again = await store.submit_wire("demo", [build_wire(0), build_wire(1)], received_at=2.0)
        assert [(r.seq, r.duplicate) for r in again] == [(1, True), (2, False)]
        assert _seqs_of(db_path) == [(1, 1), (2, 1)]


async def test_the_results_of_an_all_new_batch_read_like_a_list_of_append_results(
    db_path: Path,
) -> None:
    async with await MessageStore.open(db_path) as store:
        await store.submit_wire("demo", [build_wire(0)], received_at=1.0)
        results = await store.submit_wire("demo", [build_wire(n) for n in (1, 2, 3)])
    assert isinstance(results, FreshResults)  # nothing built until read
    expected = [AppendResult(2, False), AppendResult(3, False), AppendResult(4, False)]
    assert results == expected
    assert list(results) == expected
    assert (len(results), results[0], results[-1], results[1:]) == (3, *expected[::2], expected[1:])
    assert results != expected[:2]
    assert repr(results) == repr(expected)
    with pytest.raises(IndexError):
        results[3]


async def test_a_batch_finding_the_file_locked_by_another_connection_goes_to_the_writer(
    db_path: Path,
) -> None:
    """The event loop never waits for the database: another connection holds the file's write
    lock, so the batch is left to the writer thread, which commits it once the lock is free."""
    async with await MessageStore.open(db_path) as store:
        other = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
        try:
            other.execute("BEGIN IMMEDIATE")  # the write lock, held by someone else
            pending = store.submit_wire("demo", [build_wire(0)], received_at=1.0)
            assert store.latest_seq == 0  # not committed here, and submit did not wait
            other.execute("COMMIT")
            with anyio.fail_after(10):
                assert [r.seq for r in await pending] == [1]
        finally:
            other.close()
        assert _seqs_of(db_path) == [(1, 1)]
        again = store.submit_wire("demo", [build_wire(1)], received_at=2.0)
        assert store.latest_seq == 2  # the writer is idle again: committed here
        assert [r.seq for r in await again] == [2]
