"""The package's public surface, its layering, and the on-disk format of a new file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import switchboard.store
from switchboard.store.sqlite import MessageStore
from switchboard.store.sqlite.schema import SCHEMA_VERSION

pytestmark = pytest.mark.anyio


def test_the_store_package_exports_exactly_its_public_api() -> None:
    assert sorted(switchboard.store.__all__) == [
        "AppendResult",
        "Batches",
        "Cursors",
        "DecisionLogProtocol",
        "FreshResults",
        "IncomingRecord",
        "Leave",
        "LeaveStore",
        "LifetimeRecords",
        "LoadedLog",
        "MailNumbers",
        "MessageStoreProtocol",
        "NumberedDeposits",
        "RawMessages",
        "Snapshot",
        "StaleEpochError",
        "StorageUnavailableError",
        "StoreClosedError",
        "StoreError",
        "StoredMessage",
    ]
    for name in set(switchboard.store.__all__) - {"Leave"}:  # Leave is a tuple alias
        assert getattr(switchboard.store, name).__module__.startswith("switchboard.store.")


def test_the_package_names_no_backend_and_the_sqlite_backend_implements_the_interfaces() -> None:
    import switchboard.store.sqlite as sqlite

    assert sorted(sqlite.__all__) == [
        "ChannelLeaves",
        "DecisionLog",
        "LifetimeFile",
        "MessageStore",
        "lifetime_records",
    ]
    assert not any(
        getattr(switchboard.store, name) is getattr(sqlite, name, None)
        for name in switchboard.store.__all__
    )


async def test_a_new_file_is_in_wal_mode_with_one_row_per_batch_and_a_cursor_table(
    db_path: Path,
) -> None:
    async with await MessageStore.open(db_path):
        pass

    with sqlite3.connect(db_path) as check:
        assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert check.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        tables = check.execute("SELECT name FROM sqlite_schema WHERE type = 'table'").fetchall()
        assert sorted(name for (name,) in tables) == ["batches", "cursors"]
        columns = check.execute("PRAGMA table_info(batches)").fetchall()
        assert [(name, kind, notnull, pk) for _, name, kind, notnull, _, pk in columns] == [
            ("first_seq", "INTEGER", 0, 1),
            ("count", "INTEGER", 1, 0),
            ("server_id", "TEXT", 1, 0),
            ("received_at", "REAL", 1, 0),
            ("body", "BLOB", 1, 0),
        ]
        assert check.execute("PRAGMA index_list(batches)").fetchall() == []  # no key index
    check.close()
