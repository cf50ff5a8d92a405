"""What a read may see: only commits the store has reported, so a cursor set from a read is
always in range (issue #11: ``cursor 169580 is outside 0..169560``); and the delivered mark kept
beside each cursor."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import anyio
import pytest

from switchboard.store.sqlite import MessageStore
from tests.store.storekit import build_record

pytestmark = pytest.mark.anyio


def _rows_committed(db_path: Path) -> int:
    with sqlite3.connect(db_path) as look:
        (count,) = look.execute("SELECT coalesce(sum(count), 0) FROM batches").fetchone()
    look.close()
    return int(count)


async def test_a_read_sees_no_commit_before_the_store_reported_it(db_path: Path) -> None:
    """The writer has committed the second batch to SQLite, but the event loop has not yet run
    the callback that reports it (the loop is held here, without yielding). A read called now
    returns only what ``latest_seq`` covers, and a cursor set from it is in range.

    With ``synchronous="full"`` every batch goes through the writer thread (with "normal" a
    batch submitted while the writer is idle is committed and reported at once)."""
    async with await MessageStore.open(db_path, synchronous="full") as store:
        await store.append([build_record(n) for n in range(5)], received_at=1.0)
        pending = store.submit([build_record(n) for n in range(5, 10)], received_at=2.0)
        deadline = time.monotonic() + 10
        while _rows_committed(db_path) < 10:  # the loop is held: nothing is reported meanwhile
            assert time.monotonic() < deadline, "the writer never committed the batch"
        reported = store.latest_seq
        read = await store.read(0, 100)
        await store.set_cursor("alice", read[-1].seq)
        await pending
        rest = await store.read(read[-1].seq, 100)
    assert reported == 5
    assert [m.seq for m in read] == [1, 2, 3, 4, 5]
    assert [m.seq for m in rest] == [6, 7, 8, 9, 10]


async def test_delivered_marks_are_kept_apart_from_cursors_and_survive_reopening(
    db_path: Path,
) -> None:
    async with await MessageStore.open(db_path) as store:
        await store.append([build_record(n) for n in range(6)], received_at=1.0)
        await store.set_delivered("alice", 6)
        await store.set_cursor("alice", 2)
        await store.set_cursor("bob", 3)
        assert await store.get_delivered("alice") == 6
        assert await store.get_delivered("bob") == 0
    async with await MessageStore.open(db_path) as store:
        assert (await store.get_cursor("alice"), await store.get_delivered("alice")) == (2, 6)
        assert (await store.get_cursor("bob"), await store.get_delivered("bob")) == (3, 0)
        with pytest.raises(ValueError, match="outside"):
            await store.set_delivered("alice", 7)


async def test_a_store_from_before_delivered_marks_keeps_its_cursors(db_path: Path) -> None:
    """A version 1 file (no ``delivered`` column) is upgraded in place on open."""
    with sqlite3.connect(db_path) as old:
        old.execute(
            "CREATE TABLE batches (first_seq INTEGER PRIMARY KEY, count INTEGER NOT NULL, "
            "server_id TEXT NOT NULL, received_at REAL NOT NULL, body BLOB NOT NULL)"
        )
        old.execute(
            "CREATE TABLE cursors (agent TEXT PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID"
        )
        old.execute("INSERT INTO cursors VALUES ('alice', 0)")
        old.execute("PRAGMA user_version = 1")
    old.close()
    async with await MessageStore.open(db_path) as store:
        await store.append([build_record(1)], received_at=1.0)
        await store.set_delivered("alice", 1)
        assert (await store.get_cursor("alice"), await store.get_delivered("alice")) == (0, 1)


async def test_readers_of_one_page_at_once_all_get_it_though_the_first_was_cancelled(
    db_path: Path,
) -> None:
    async with await MessageStore.open(db_path) as store:
        await store.append([build_record(n) for n in range(20)], received_at=1.0)
        pages: list[list[int]] = []

        async def reader() -> None:
            pages.append([m.seq for m in await store.read(5, 10)])

        async with anyio.create_task_group() as group:
            with anyio.CancelScope() as lost:
                lost.cancel()
                await store.read(5, 10)  # cancelled before its page came
            for _ in range(50):
                group.start_soon(reader)
        again = await store.read(5, 10)
    assert pages == [list(range(6, 16))] * 50
    assert [m.seq for m in again] == list(range(6, 16))
