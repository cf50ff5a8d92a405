"""Background checkpoints: asked for by bytes written, run beside the writer, harmless to
durability."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from switchboard.store.sqlite import MessageStore
from switchboard.store.sqlite.checkpoint import Checkpointer
from switchboard.store.sqlite.schema import open_checkpointer, open_writer
from tests.store.storekit import build_wire

pytestmark = pytest.mark.anyio


def fill_wal(db_path: Path, rows: int) -> sqlite3.Connection:
    """Commit ``rows`` batch rows into the WAL, with automatic checkpoints off. The connection
    stays open: closing the last one would checkpoint by itself."""
    conn = open_writer(db_path, "normal")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    for seq in range(1, rows + 1):
        conn.execute(
            "INSERT INTO batches VALUES (?, 1, 'demo', 1.0, ?)", (seq, b"[" + b" " * 9000 + b"]")
        )
    return conn


def test_a_checkpoint_runs_only_once_enough_has_been_written(db_path: Path) -> None:
    writer = fill_wal(db_path, 5)
    idle = Checkpointer(open_checkpointer(db_path, "normal"), every_bytes=1000)
    idle.start()
    idle.wrote(999)
    idle.stop()
    idle.join()
    assert (idle.runs, idle.last) == (0, None)

    due = Checkpointer(open_checkpointer(db_path, "normal"), every_bytes=1000)
    due.start()
    due.wrote(600)
    due.wrote(600)
    due.stop()
    due.join()

    assert due.runs == 1
    assert due.last is not None
    busy, frames, copied = due.last
    assert busy == 0
    assert frames > 0
    assert copied == frames  # every committed frame is now in the database file
    writer.close()


async def test_a_store_written_past_several_checkpoints_reads_back_whole_after_reopening(
    db_path: Path,
) -> None:
    text = "x" * 500
    async with await MessageStore.open(db_path) as store:
        for first in range(0, 12_000, 100):
            batch = [
                build_wire(n, content=[{"type": "text", "text": text}])
                for n in range(first, first + 100)
            ]
            store.submit_wire("demo", batch, received_at=1.0)
        await store.submit_wire("demo", [build_wire(12_000)])
        assert store.latest_seq == 12_001

    async with await MessageStore.open(db_path) as store:
        stored = await store.read(0, limit=20_000)
    assert [m.message_id for m in stored] == [f"m-{n}" for n in range(12_001)]
