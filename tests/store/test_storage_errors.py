"""A write the storage refuses is a ``StorageUnavailableError`` with the cause, and the store
tells its storage listeners once when writes start failing and once when they succeed again.

Made real with SQLite: ``PRAGMA max_page_count`` at the file's current size makes a write that
needs a new page fail with ``SQLITE_FULL`` ("database or disk is full"), the error a full
disk gives; ``PRAGMA query_only`` makes every write fail with ``SQLITE_READONLY``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from switchboard.store import StorageUnavailableError, StoreError
from switchboard.store.group_thread import storage_cause
from switchboard.store.sqlite import MessageStore

pytestmark = pytest.mark.anyio


def _problem(store: MessageStore) -> str | None:
    """The store's storage problem now (read afresh: it changes while the test awaits)."""
    return store.storage_problem


def _message(mid: str) -> dict[str, Any]:
    return {
        "channelId": "room",
        "messageId": mid,
        "author": {"id": "u1", "name": "Ann"},
        "timestamp": "2026-12-01T12:00:00Z",
        "content": [{"type": "text", "text": "x" * 500}],
    }


def _cap(conn: sqlite3.Connection) -> None:
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    conn.execute(f"PRAGMA max_page_count = {pages}")


def _uncap(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA max_page_count = 1073741823")


async def test_a_full_disk_fails_the_write_with_the_cause_and_the_listener_hears_it_once(
    tmp_path: Path,
) -> None:
    heard: list[str | None] = []
    async with await MessageStore.open(tmp_path / "s.sqlite") as store:
        store.watch_storage(heard.append)
        await store.submit_wire("s1", [_message("m0")])
        await store.maintain(_cap)
        failures: list[StorageUnavailableError] = []
        for n in range(1, 40):  # a few fit the last page; then every write fails
            try:
                await store.submit_wire("s1", [_message(f"m{n}")])
            except StorageUnavailableError as exc:
                failures.append(exc)
        assert len(failures) >= 2
        assert failures[0].cause == "database or disk is full"
        assert str(failures[0]) == "storage unavailable: database or disk is full"
        assert store.storage_problem == "database or disk is full"
        assert heard == ["database or disk is full"]
        await store.maintain(_uncap)
        await store.submit_wire("s1", [_message("again")])
        assert _problem(store) is None
        assert heard == ["database or disk is full", None]


async def test_a_read_only_store_refuses_a_cursor_write_as_storage_unavailable(
    tmp_path: Path,
) -> None:
    async with await MessageStore.open(tmp_path / "s.sqlite") as store:
        await store.submit_wire("s1", [_message("m0")])
        await store.maintain(lambda conn: conn.execute("PRAGMA query_only = 1"))
        with pytest.raises(StorageUnavailableError) as caught:
            await store.set_cursor("agent", 1)
        assert caught.value.cause == "attempt to write a readonly database"
        assert await store.get_cursor("agent") == 0


def test_only_the_storage_s_own_errors_are_classified_as_unavailable() -> None:
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = sqlite3.SQLITE_FULL
    ioerr = sqlite3.OperationalError("disk I/O error")
    ioerr.sqlite_errorcode = sqlite3.SQLITE_IOERR_WRITE
    constraint = sqlite3.IntegrityError("UNIQUE constraint failed")
    constraint.sqlite_errorcode = sqlite3.SQLITE_CONSTRAINT_UNIQUE
    assert storage_cause(full) == "database or disk is full"
    assert storage_cause(ioerr) == "disk I/O error"
    assert storage_cause(constraint) is None
    assert storage_cause(OSError(28, "No space left on device")) == "No space left on device"
    assert storage_cause(StoreError("bad batch")) is None
