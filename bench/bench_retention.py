"""Benchmark retention: the store's growth per message, and ingest with and without a pass.

Usage: ``python bench/bench_retention.py [--messages 100000] [--old 200000] [--batch 20]
[--submitters 16]``

Every figure comes from one process on one machine, each into a fresh temporary file with the
store's schema and pragmas:

* **growth**: ``--messages`` messages of about 220 bytes of wire JSON each are written through
  ``MessageStore.submit_wire`` in batches of 1 and of ``--batch``; after a clean close the file
  size divided by the count is the store's bytes per message;
* **ingest**: two stores are filled with ``--old`` acknowledged messages received two days
  ago; then ``--submitters`` tasks write ``--messages`` new messages in batches of ``--batch``
  as fast as commits come back, into one store alone and into the other while a retention pass
  (``retain`` one day, chunks of 1,000 rows) deletes the old ones. It prints both rates, their
  ratio, each run's commit latency (p50, p99, max) and how long the pass took.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import orjson

from switchboard.runtime.logs import configure
from switchboard.store.retention import Floor, PassReport, RetentionPolicy
from switchboard.store.sqlite import MessageStore
from switchboard.store.sqlite.retention import RetentionTask

Wire = dict[str, Any]
DAY = 86_400.0


def make_messages(count: int, first: int = 0) -> list[Wire]:
    """Wire messages of about 220 bytes of JSON each (one text block, ten channels)."""
    base = 1_300_000_000_000_000_000
    return [
        {
            "channelId": f"discord:guild-1:channel-{i % 10}",
            "messageId": str(base + i * 4096),
            "author": {"id": f"user-{i % 50}", "name": f"User {i % 50}"},
            "timestamp": "2026-01-01T12:00:00.000Z",
            "content": [{"type": "text", "text": f"message number {i:>9}, a typical line"}],
        }
        for i in range(first, first + count)
    ]


def file_bytes(path: Path) -> int:
    """The database file's size once its WAL is copied in and truncated (the WAL itself is
    bounded apart: it starts over at 64 MiB, see switchboard.store.sqlite.schema)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        conn.close()
    return path.stat().st_size


async def growth(folder: Path, count: int, batch: int) -> float:
    path = folder / f"growth-{batch}.sqlite"
    messages = make_messages(count)
    store = await MessageStore.open(path)
    try:
        pending = []
        for start in range(0, count, batch):
            pending.append(store.submit_wire("demo", messages[start : start + batch]))
            if len(pending) >= 64:
                for waiter in pending:
                    await waiter
                pending = []
        for waiter in pending:
            await waiter
    finally:
        await store.aclose()
    return file_bytes(path) / count


async def fill_old(store: MessageStore, count: int, batch: int) -> None:
    messages = make_messages(count, first=10_000_000)
    when = time.time() - 2 * DAY
    pending = []
    for start in range(0, count, batch):
        pending.append(store.submit_wire("demo", messages[start : start + batch], received_at=when))
        if len(pending) >= 64:
            for waiter in pending:
                await waiter
            pending = []
    for waiter in pending:
        await waiter
    await store.set_cursor("agent", store.latest_seq)


async def ingest(
    store: MessageStore, count: int, batch: int, submitters: int
) -> tuple[float, list[float]]:
    """Messages per second from the first submit to the last commit, and every batch's
    commit latency in milliseconds."""
    messages = make_messages(count)
    batches = [messages[i : i + batch] for i in range(0, count, batch)]
    latencies: list[float] = []
    position = 0

    async def submitter() -> None:
        nonlocal position
        while position < len(batches):
            mine = batches[position]
            position += 1
            began = time.perf_counter()
            await store.submit_wire("demo", mine)
            latencies.append((time.perf_counter() - began) * 1000)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(submitters):
            tg.start_soon(submitter)
    return count / (time.perf_counter() - started), latencies


async def paced(store: MessageStore, rate: float, seconds: float, batch: int) -> list[float]:
    """Submit batches at ``rate`` messages per second for ``seconds``; each batch's commit
    latency in milliseconds (a slow commit does not hold back the next submit)."""
    messages = make_messages(int(rate * seconds) + batch, first=50_000_000)
    latencies: list[float] = []
    every = batch / rate

    async def one(mine: list[Wire]) -> None:
        began = time.perf_counter()
        await store.submit_wire("demo", mine)
        latencies.append((time.perf_counter() - began) * 1000)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for n, start in enumerate(range(0, int(rate * seconds), batch)):
            delay = started + n * every - time.perf_counter()
            if delay > 0:
                await anyio.sleep(delay)
            tg.start_soon(one, messages[start : start + batch])
    return latencies


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def pair(folder: Path, tag: str, old: int, batch: int) -> tuple[MessageStore, MessageStore]:
    """Two stores holding ``old`` acknowledged messages received two days ago."""
    stores = []
    for name in ("alone", "beside"):
        store = await MessageStore.open(folder / f"{tag}-{name}.sqlite", dedupe_window=0)
        await fill_old(store, old, batch)
        stores.append(store)
    return stores[0], stores[1]


async def beside_a_pass(store: MessageStore, run: Any) -> tuple[Any, PassReport]:
    """``await run()`` while a retention pass deletes what ``store`` holds from before."""
    floor = Floor(store.latest_seq, "bench")

    async def owed() -> Floor:
        return floor

    task = RetentionTask(store, RetentionPolicy(retain=DAY, keep_newest=0), owed)
    reports: list[PassReport] = []

    async def run_pass() -> None:
        reports.append(await task.run_pass())

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_pass)
        result = await run()
    return result, reports[0]


def latency_line(name: str, lat: list[float], rate: str) -> str:
    return (
        f"  {name:24} {rate:>14}   commit latency p50 {statistics.median(lat):6.1f} ms  "
        f"p99 {quantile(lat, 0.99):6.1f} ms  max {max(lat):6.1f} ms"
    )


def pass_line(done: PassReport) -> str:
    return (
        f"  the pass deleted {done.messages:,} messages ({done.rows:,} rows, "
        f"{done.bytes_freed / 1e6:.1f} MB) in {done.took_ms / 1000:.2f} s; its longest chunk "
        f"held the writer {done.longest_chunk_ms:.1f} ms"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--old", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--submitters", type=int, default=16)
    parser.add_argument("--rate", type=float, default=2000.0, help="paced messages per second")
    parser.add_argument("--seconds", type=float, default=5.0, help="paced run length")
    args = parser.parse_args()
    configure("WARNING")
    sample = len(orjson.dumps(make_messages(1)[0]))
    print(
        f"python {platform.python_version()}, {os.cpu_count()} cpus, {sys.platform}, load "
        f"{os.getloadavg()[0]:.1f}; one message is {sample} bytes of wire JSON"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print("growth (database file bytes per message, WAL checkpointed):")
        for batch in (1, args.batch):
            per = await growth(folder, args.messages, batch)
            hourly = per * 2000 * 3600 / 1e9
            print(
                f"  batches of {batch:>3}: {per:7.1f} B/message  ({hourly:.2f} GB/hour at 2,000/s)"
            )

        print(
            f"saturated ingest of {args.messages:,} messages, {args.submitters} submitters, "
            f"batches of {args.batch}, over {args.old:,} old acknowledged messages:"
        )
        alone, beside = await pair(folder, "saturated", args.old, args.batch)
        try:
            plain_rate, plain_lat = await ingest(alone, args.messages, args.batch, args.submitters)
            (with_rate, with_lat), done = await beside_a_pass(
                beside, lambda: ingest(beside, args.messages, args.batch, args.submitters)
            )
        finally:
            await alone.aclose()
            await beside.aclose()
        print(latency_line("alone", plain_lat, f"{plain_rate:,.0f} msg/s"))
        print(latency_line("during a retention pass", with_lat, f"{with_rate:,.0f} msg/s"))
        print(f"  ratio of rates (during / alone): {with_rate / plain_rate:.2f}")
        print(pass_line(done))

        print(
            f"paced ingest at {args.rate:,.0f} msg/s for {args.seconds:.0f} s, batches of "
            f"{args.batch}, over {args.old:,} old acknowledged messages:"
        )
        alone, beside = await pair(folder, "paced", args.old, args.batch)
        try:
            plain = await paced(alone, args.rate, args.seconds, args.batch)
            during, done = await beside_a_pass(
                beside, lambda: paced(beside, args.rate, args.seconds, args.batch)
            )
        finally:
            await alone.aclose()
            await beside.aclose()
        print(latency_line("alone", plain, f"{args.rate:,.0f} msg/s"))
        print(latency_line("during a retention pass", during, f"{args.rate:,.0f} msg/s"))
        print(
            f"  ratio of p99 (during / alone): {quantile(during, 0.99) / quantile(plain, 0.99):.2f}"
        )
        print(pass_line(done))


if __name__ == "__main__":
    anyio.run(main)
