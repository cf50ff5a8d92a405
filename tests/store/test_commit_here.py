"""A batch submitted while the writer is idle is committed at once, on the submitting thread.

Issue #14: a lone batch handed to the writer thread waited for two thread hand-offs, a few
hundred µs of round trip for a commit of about 100. With ``synchronous="normal"`` the store
commits such a batch itself; a batch submitted while the writer has work goes to the writer,
after that work, so order holds. With ``synchronous="full"`` (a commit syncs the disk) every
batch goes to the writer, so the event loop never waits for a disk flush. Batches submitted
after one committed at once in the same turn of the event loop (a burst) are held and
committed together as the turn ends, before anything else reaches the writer.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from switchboard.store import AppendResult, FreshResults, StoreError
from switchboard.store.sqlite import MessageStore
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


async def test_batches_submitted_later_in_the_same_turn_are_held_and_committed_together_in_order(
    db_path: Path,
) -> None:
    """A burst (requests in flight, handled one after another in one turn of the event loop):
    the first batch is committed at once, the rest are committed together as the turn ends."""
    async with await MessageStore.open(db_path) as store:
        first = store.submit_wire("demo", [build_wire(0)], received_at=1.0)
        second = store.submit_wire("demo", [build_wire(1), build_wire(2)], received_at=1.0)
        third = store.submit_wire("demo", [build_wire(3)], received_at=1.0)
        assert _seqs_of(db_path) == [(1, 1)]  # only the first, so far
        assert store.write_backlog == 2
        with anyio.fail_after(10):
            assert [r.seq for r in await third] == [4]  # waits for the turn to end
        assert [r.seq for r in await second] == [2, 3]
        assert [r.seq for r in await first] == [1]
        assert _seqs_of(db_path) == [(1, 1), (2, 2), (4, 1)]
        assert store.write_backlog == 0
        later = store.submit_wire("demo", [build_wire(4)], received_at=2.0)
        assert _seqs_of(db_path)[-1] == (5, 1)  # a new turn: committed at once again
        assert [r.seq for r in await later] == [5]


async def test_work_handed_to_the_writer_runs_after_the_batches_held_before_it(
    db_path: Path,
) -> None:
    seen: list[int] = []

    def count(conn: sqlite3.Connection) -> None:
        seen.append(int(conn.execute("SELECT COALESCE(SUM(count), 0) FROM batches").fetchone()[0]))

    async with await MessageStore.open(db_path) as store:
        store.submit_wire("demo", [build_wire(0)], received_at=1.0)
        held = store.submit_wire("demo", [build_wire(1), build_wire(2)], received_at=1.0)
        with anyio.fail_after(10):
            await store.maintain(count)
            assert [r.seq for r in await held] == [2, 3]
        assert seen == [3]


async def test_closing_the_store_commits_the_batches_held_in_this_turn(db_path: Path) -> None:
    store = await MessageStore.open(db_path)
    store.submit_wire("demo", [build_wire(0)], received_at=1.0)
    held = store.submit_wire("demo", [build_wire(1)], received_at=1.0)
    with anyio.fail_after(10):
        await store.aclose()
        assert [r.seq for r in await held] == [2]
    assert _seqs_of(db_path) == [(1, 1), (2, 1)]


async def test_held_batches_that_find_the_file_locked_go_to_the_writer_in_order(
    db_path: Path,
) -> None:
    async with await MessageStore.open(db_path) as store:
        other = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
        try:
            store.submit_wire("demo", [build_wire(0)], received_at=1.0)  # at once
            second = store.submit_wire("demo", [build_wire(1)], received_at=1.0)
            third = store.submit_wire("demo", [build_wire(2)], received_at=1.0)
            other.execute("BEGIN IMMEDIATE")  # taken before the turn ends
            await anyio.lowlevel.checkpoint()  # the turn ends: the held pair meets the lock
            assert store.latest_seq == 1
            other.execute("COMMIT")
            with anyio.fail_after(10):
                assert [r.seq for r in await third] == [3]
                assert [r.seq for r in await second] == [2]
        finally:
            other.close()
        assert _seqs_of(db_path) == [(1, 1), (2, 1), (3, 1)]


async def test_a_held_batch_whose_commit_fails_unexpectedly_is_answered_with_a_store_error(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The held batches are committed from a loop callback: a failure there (one the writer's
    own error handling does not catch, forced here) must still reach each batch's caller."""
    async with await MessageStore.open(db_path) as store:
        first = store.submit_wire("demo", [build_wire(0)], received_at=1.0)  # at once
        held = store.submit_wire("demo", [build_wire(1)], received_at=1.0)

        def broken(jobs: object) -> bool:
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(store._writer, "run_here", broken)
        with anyio.fail_after(10), pytest.raises(StoreError, match="could not be committed"):
            await held
        assert [r.seq for r in await first] == [1]
