"""Failures: a bad write fails only its own caller, loses nothing committed, and the store goes
on; a closed store says so; unusable files are refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from switchboard.store import AppendResult, StoreClosedError, StoreError
from switchboard.store.sqlite import MessageStore
from tests.store.storekit import build_record

pytestmark = pytest.mark.anyio


def poison(db_path: Path, table: str, when: str) -> None:
    """Make SQLite itself refuse any insert into ``table`` for which ``when`` holds."""
    with sqlite3.connect(db_path) as other:
        other.execute(
            f"CREATE TRIGGER poison_{table} BEFORE INSERT ON {table} "
            f"WHEN {when} BEGIN SELECT RAISE(ABORT, 'poisoned'); END"
        )
    other.close()


def cure(db_path: Path, table: str) -> None:
    with sqlite3.connect(db_path) as other:
        other.execute(f"DROP TRIGGER poison_{table}")
    other.close()


# A batch row whose body holds the message "m-bad".
HOLDS_M_BAD = """instr(NEW.body, '"messageId":"m-bad"') > 0"""


async def test_a_batch_sqlite_refuses_fails_only_its_own_awaitable_and_the_store_goes_on(
    store: MessageStore, db_path: Path
) -> None:
    before = await store.append([build_record(1), build_record(2)], received_at=1.0)
    poison(db_path, "batches", HOLDS_M_BAD)

    good_1 = store.submit([build_record(3)], received_at=2.0)
    bad = store.submit([build_record(4), build_record(0, message_id="m-bad")], received_at=2.0)
    good_2 = store.submit([build_record(5)], received_at=2.0)

    assert await good_1 == [AppendResult(3, False)]
    with pytest.raises(StoreError, match="poisoned"):
        await bad
    assert await good_2 == [AppendResult(4, False)]  # the failed batch used no seqs
    assert before == [AppendResult(1, False), AppendResult(2, False)]
    assert [m.message_id for m in await store.read(0)] == ["m-1", "m-2", "m-3", "m-5"]
    assert store.latest_seq == 4
    assert await store.append([build_record(4)], received_at=3.0) == [AppendResult(5, False)]


async def test_a_message_of_a_failed_batch_is_not_remembered_so_its_retry_is_stored(
    store: MessageStore, db_path: Path
) -> None:
    poison(db_path, "batches", HOLDS_M_BAD)
    bad = [build_record(1), build_record(0, message_id="m-bad")]
    with pytest.raises(StoreError, match="poisoned"):
        await store.append(bad, received_at=1.0)
    cure(db_path, "batches")

    retried = await store.append(bad, received_at=2.0)

    assert retried == [AppendResult(1, False), AppendResult(2, False)]
    assert [m.message_id for m in await store.read(0)] == ["m-1", "m-bad"]


async def test_a_cursor_sqlite_refuses_raises_store_error_and_keeps_the_old_value(
    store: MessageStore, db_path: Path
) -> None:
    await store.append([build_record(1), build_record(2)], received_at=1.0)
    poison(db_path, "cursors", "NEW.agent = 'mallory'")

    with pytest.raises(StoreError, match="poisoned"):
        await store.set_cursor("mallory", 2)
    await store.set_cursor("alice", 2)

    assert await store.get_cursor("mallory") == 0
    assert await store.get_cursor("alice") == 2


async def test_every_submission_made_before_close_is_committed_by_close(db_path: Path) -> None:
    store = await MessageStore.open(db_path)
    pending = [store.submit([build_record(n)], received_at=1.0) for n in range(50)]

    await store.aclose()

    assert [(await waiter)[0].seq for waiter in pending] == list(range(1, 51))
    async with await MessageStore.open(db_path) as reopened:
        assert await reopened.count() == 50


async def test_a_closed_store_refuses_every_operation_and_closing_again_is_harmless(
    store: MessageStore,
) -> None:
    await store.aclose()
    await store.aclose()

    with pytest.raises(StoreClosedError):
        store.submit([build_record(1)], received_at=1.0)
    with pytest.raises(StoreClosedError):
        await store.append([build_record(1)], received_at=1.0)
    with pytest.raises(StoreClosedError):
        await store.read(0)
    with pytest.raises(StoreClosedError):
        await store.count()
    with pytest.raises(StoreClosedError):
        await store.get_cursor("alice")
    with pytest.raises(StoreClosedError):
        await store.set_cursor("alice", 0)


async def test_a_file_with_a_newer_schema_is_refused(db_path: Path) -> None:
    with sqlite3.connect(db_path) as other:
        other.execute("PRAGMA user_version = 99")
    other.close()

    with pytest.raises(StoreError, match="newer"):
        await MessageStore.open(db_path)


async def test_a_file_that_is_not_a_database_is_refused_with_store_error(db_path: Path) -> None:
    await anyio.Path(db_path).write_bytes(b"this is not an SQLite database, just some text " * 100)

    with pytest.raises(StoreError, match="cannot open"):
        await MessageStore.open(db_path)
