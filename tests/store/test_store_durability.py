"""A process killed without closing the store keeps every message it was told was committed."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import anyio
import pytest

from switchboard.store.sqlite import MessageStore

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# Appends five batches, printing "committed <seq>" after each one completes, queues a sixth
# without waiting for it, sets a cursor, then kills itself: no close, no flush, no atexit.
CHILD = """
import os, signal, sys
import anyio
from switchboard.runtime.logs import configure
from switchboard.store import IncomingRecord
from switchboard.store.sqlite import MessageStore

def record(batch, i):
    return IncomingRecord("demo", "general", f"{batch}-{i}", None, "u", "U",
                          "2026-01-01T00:00:00Z", [{"type": "text", "text": f"{batch}/{i}"}])

async def main(path, synchronous):
    store = await MessageStore.open(path, synchronous=synchronous)
    for batch in range(5):
        results = await store.append([record(batch, i) for i in range(20)], received_at=1.0)
        print("committed", results[-1].seq, flush=True)
    await store.set_cursor("alice", 60)
    print("cursor", flush=True)
    store.submit([record(5, i) for i in range(20)], received_at=1.0)
    os.kill(os.getpid(), signal.SIGKILL)

configure("WARNING")
anyio.run(main, sys.argv[1], sys.argv[2], backend="asyncio")
"""


@pytest.mark.parametrize("synchronous", ["normal", "full"])
async def test_a_killed_process_keeps_every_message_it_reported_committed(
    db_path: Path, synchronous: str
) -> None:
    with anyio.fail_after(60):
        child = await anyio.run_process(
            [sys.executable, "-c", CHILD, str(db_path), synchronous], check=False
        )

    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    lines = child.stdout.decode().split()
    assert lines[-1] == "cursor"
    assert [int(n) for n in lines[1:-1:2]] == [20, 40, 60, 80, 100]
    async with await MessageStore.open(db_path) as store:
        assert store.latest_seq in (100, 120)  # the unawaited batch: all of it or none
        stored = await store.read(0, limit=1000)
        assert [m.seq for m in stored] == list(range(1, store.latest_seq + 1))
        assert [m.message_id for m in stored[:100]] == [
            f"{batch}-{i}" for batch in range(5) for i in range(20)
        ]
        assert await store.get_cursor("alice") == 60
