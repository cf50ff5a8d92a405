"""The package's public surface, its layering, and the on-disk format of a new file."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import pytest

import switchboard.store
from switchboard.store import MessageStore
from switchboard.store.schema import SCHEMA_VERSION

pytestmark = pytest.mark.anyio


def test_the_store_package_exports_exactly_its_public_api() -> None:
    assert sorted(switchboard.store.__all__) == [
        "AppendResult",
        "IncomingRecord",
        "MessageStore",
        "MessageStoreProtocol",
        "StoreClosedError",
        "StoreError",
        "StoredMessage",
    ]
    for name in switchboard.store.__all__:
        assert getattr(switchboard.store, name).__module__.startswith("switchboard.store.")


def test_the_store_imports_nothing_from_the_layers_above_it() -> None:
    forbidden = (
        "switchboard.host",
        "switchboard.tools",
        "switchboard.channels",
        "switchboard.transport",
        "switchboard.protocol",
    )
    package = Path(switchboard.store.__file__).parent
    imported: set[str] = set()
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
    assert "switchboard.store.records" in imported  # the scan sees real imports
    assert not [m for m in imported if m.startswith(forbidden)]


async def test_a_new_file_is_in_wal_mode_with_the_current_schema_version(db_path: Path) -> None:
    async with await MessageStore.open(db_path):
        pass

    with sqlite3.connect(db_path) as check:
        assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert check.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        index = check.execute("PRAGMA index_info(messages_by_key)").fetchall()
        assert [column for _, _, column in index] == ["server_id", "channel_id", "message_id"]
        unique = check.execute("PRAGMA index_list(messages)").fetchall()
        assert [(name, is_unique) for _, name, is_unique, *_ in unique] == [("messages_by_key", 1)]
    check.close()
