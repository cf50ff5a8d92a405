"""Benchmark the message store's fast path (``submit_wire``) against bare sqlite3, in one run.

Usage: ``python bench/bench_store.py [--messages N] [--batch 50] [--synchronous normal|full]
[--repeat 1]``

Every figure comes from the same process on the same machine, each into a fresh temporary file
with the store's schema and pragmas:

* ``bare``: this thread encodes each batch (one ``orjson.dumps``) and inserts it as one batch
  row, with no queue, thread, event loop or duplicate index; one commit per batch, and one
  commit per 16 batches (the best group commit could do with 16 submitters);
* ``store, 1 submitter``: one task awaits ``submit_wire`` of each batch in turn (one commit
  per batch unless the writer finds more queued);
* ``store, 16 submitters``: sixteen tasks do the same concurrently, so group commit can put
  many batches into one transaction;
* ``store submit(records), 16``: as above through the record API, which converts each
  record to wire form first (for comparison only).

Messages are built before timing starts, as the host has them after parsing a request (wire
dicts); the figures are messages per second from submit to commit, encoding included. The
ratios say what the store (sequence numbers, duplicate index, writer thread, futures) costs
over the bare inserts. With ``--repeat`` above 1 each figure is the best of interleaved rounds.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import orjson

from switchboard.runtime.logs import configure
from switchboard.store import IncomingRecord
from switchboard.store.sqlite import MessageStore
from switchboard.store.sqlite.schema import INSERT_BATCH, BatchRow, Synchronous, open_writer

Wire = dict[str, Any]
GOAL_16 = 400_000


def make_messages(count: int) -> list[Wire]:
    """Realistic small wire messages: one text block, ten channels, fifty authors."""
    base = 1_300_000_000_000_000_000
    return [
        {
            "channelId": f"discord:guild-1:channel-{i % 10}",
            "messageId": str(base + i * 4096),
            "author": {"id": f"user-{i % 50}", "name": f"User {i % 50}"},
            "timestamp": "2026-01-01T12:00:00.000Z",
            "content": [{"type": "text", "text": f"message number {i}, of a typical short length"}],
        }
        for i in range(count)
    ]


def as_record(message: Wire) -> IncomingRecord:
    return IncomingRecord(
        server_id="demo",
        channel_id=message["channelId"],
        message_id=message["messageId"],
        thread_id=None,
        author_id=message["author"]["id"],
        author_name=message["author"]["name"],
        timestamp=message["timestamp"],
        content=message["content"],
    )


def batches(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


async def store_run(
    path: Path, groups: Sequence[list[Wire]], submitters: int, sync: Synchronous
) -> float:
    """Messages/s through ``MessageStore.submit_wire`` with ``submitters`` concurrent tasks."""
    total = sum(len(g) for g in groups)
    async with await MessageStore.open(path, synchronous=sync) as store:

        async def submitter(mine: Sequence[list[Wire]]) -> None:
            for group in mine:
                await store.submit_wire("demo", group, received_at=1.0)

        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for k in range(submitters):
                tg.start_soon(submitter, groups[k::submitters])
        elapsed = time.perf_counter() - start
        stored = await store.count()
    if stored != total:
        raise SystemExit(f"store lost messages: {stored} of {total}")
    return total / elapsed


async def records_run(
    path: Path, groups: Sequence[list[IncomingRecord]], submitters: int, sync: Synchronous
) -> float:
    """Messages/s through ``MessageStore.submit`` (records) with ``submitters`` tasks."""
    total = sum(len(g) for g in groups)
    async with await MessageStore.open(path, synchronous=sync) as store:

        async def submitter(mine: Sequence[list[IncomingRecord]]) -> None:
            for group in mine:
                await store.submit(group, received_at=1.0)

        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for k in range(submitters):
                tg.start_soon(submitter, groups[k::submitters])
        elapsed = time.perf_counter() - start
    return total / elapsed


def bare_run(path: Path, groups: Sequence[list[Wire]], per_commit: int, sync: Synchronous) -> float:
    """Messages/s of encode + insert of one row per batch in this thread, committing every
    ``per_commit`` batches (``executemany`` of the one-row insert)."""
    total = sum(len(g) for g in groups)
    conn = open_writer(path, sync)
    dumps = orjson.dumps
    start = time.perf_counter()
    seq = 1
    for i in range(0, len(groups), per_commit):
        rows: list[BatchRow] = []
        for group in groups[i : i + per_commit]:
            rows.append((seq, len(group), "demo", 1.0, dumps(group)))
            seq += len(group)
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(INSERT_BATCH, rows)
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    stored = conn.execute("SELECT sum(count) FROM batches").fetchone()[0]
    conn.close()
    if stored != total:
        raise SystemExit(f"bare run lost messages: {stored} of {total}")
    return total / elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=400_000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--synchronous", choices=["normal", "full"], default="normal")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the best of each is shown")
    args = parser.parse_args()
    configure("WARNING")  # log lines go to stderr; stdout carries only the figures
    sync: Synchronous = "full" if args.synchronous == "full" else "normal"

    messages = make_messages(args.messages)
    groups = batches(messages, args.batch)
    record_groups = batches([as_record(m) for m in messages], args.batch)
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"{os.cpu_count()} cpus, {args.messages} messages in batches of {args.batch}, "
        f"synchronous={sync}, best of {args.repeat}"
    )
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        for round_ in range(args.repeat):  # interleaved, so a noisy moment hits every figure
            folder = Path(tmp) / str(round_)
            folder.mkdir()
            figures = {
                "bare-1": bare_run(folder / "bare-1.db", groups, 1, sync),
                "bare-16": bare_run(folder / "bare-16.db", groups, 16, sync),
                "store-1": await store_run(folder / "store-1.db", groups, 1, sync),
                "store-16": await store_run(folder / "store-16.db", groups, 16, sync),
                "records-16": await records_run(folder / "rec-16.db", record_groups, 16, sync),
            }
            for name, rate in figures.items():
                best[name] = max(best.get(name, 0.0), rate)
    bare_1, bare_16 = best["bare-1"], best["bare-16"]
    one, sixteen, records = best["store-1"], best["store-16"], best["records-16"]
    rows = [
        ("bare batch rows, commit per batch", bare_1, ""),
        ("bare batch rows, commit per 16 batches", bare_16, ""),
        ("store submit_wire, 1 submitter", one, f"{one / bare_1:.2f}x bare per batch"),
        ("store submit_wire, 16 submitters", sixteen, f"{sixteen / bare_16:.2f}x bare per 16"),
        ("store submit(records), 16 submitters", records, f"{records / bare_16:.2f}x bare per 16"),
    ]
    for name, rate, ratio in rows:
        print(f"  {name:40} {rate:>10,.0f} msg/s  {ratio}")
    verdict = "meets" if sixteen >= GOAL_16 else "misses"
    print(f"  16 submitters {verdict} the goal of {GOAL_16:,} msg/s")
    sys.stdout.flush()


if __name__ == "__main__":
    anyio.run(main, backend="asyncio")
