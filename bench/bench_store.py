"""Benchmark the message store's append path against bare sqlite3, in one run.

Usage: ``python bench/bench_store.py [--messages N] [--batch 50] [--synchronous normal|full]
[--repeat 3]``

Every figure comes from the same process on the same machine, each into a fresh temporary file
with the store's schema and pragmas:

* ``store, 1 submitter``: one task awaits ``append`` of each batch in turn (one commit per
  batch unless the writer finds more queued);
* ``store, 16 submitters``: sixteen tasks do the same concurrently, so group commit can put
  many batches into one transaction;
* ``bare``: the same rows encoded the same way and written in this thread, with no queue,
  thread or event loop, one commit per batch and one commit per 16 batches (the best group
  commit could do with 16 submitters); once with ``executemany`` (the usual way) and once with
  the store's own multi-row statements (so the second ratio is the cost of the machinery).

Records are built before timing starts; the figures are messages per second from submit to
commit (encoding included). The ratios say what the store costs over bare sqlite3. Each
figure is the best of ``--repeat`` interleaved rounds, because a shared machine is noisy.
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

import anyio

from switchboard.logging import configure
from switchboard.store import IncomingRecord, MessageStore
from switchboard.store.schema import (
    INSERT_MESSAGES,
    Row,
    RowInserter,
    Synchronous,
    encode_rows,
    open_writer,
)


def make_records(count: int) -> list[IncomingRecord]:
    """Realistic small messages: one text block, ten channels, fifty authors."""
    base = 1_300_000_000_000_000_000
    return [
        IncomingRecord(
            server_id="demo",
            channel_id=f"discord:guild-1:channel-{i % 10}",
            message_id=str(base + i * 4096),
            thread_id=None,
            author_id=f"user-{i % 50}",
            author_name=f"User {i % 50}",
            timestamp="2026-01-01T12:00:00.000Z",
            content=[{"type": "text", "text": f"message number {i}, of a typical short length"}],
        )
        for i in range(count)
    ]


def batches(records: list[IncomingRecord], size: int) -> list[list[IncomingRecord]]:
    return [records[i : i + size] for i in range(0, len(records), size)]


async def store_run(
    path: Path, groups: Sequence[Sequence[IncomingRecord]], submitters: int, sync: Synchronous
) -> float:
    """Messages/s through MessageStore.append with ``submitters`` concurrent tasks."""
    total = sum(len(g) for g in groups)
    async with await MessageStore.open(path, synchronous=sync) as store:

        async def submitter(mine: Sequence[Sequence[IncomingRecord]]) -> None:
            for group in mine:
                await store.append(group, received_at=1.0)

        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for k in range(submitters):
                tg.start_soon(submitter, groups[k::submitters])
        elapsed = time.perf_counter() - start
        stored = await store.count()
    if stored != total:
        raise SystemExit(f"store lost messages: {stored} of {total}")
    return total / elapsed


def bare_run(
    path: Path,
    groups: Sequence[Sequence[IncomingRecord]],
    per_commit: int,
    sync: Synchronous,
    *,
    multirow: bool = False,
) -> float:
    """Messages/s of encode + insert in this thread, committing every ``per_commit`` batches.

    The insert is ``executemany`` of a one-row statement, or with ``multirow`` the store's own
    chunked multi-row statements (:class:`RowInserter`), one call per commit group.
    """
    total = sum(len(g) for g in groups)
    conn = open_writer(path, sync)
    inserter = RowInserter(conn)
    start = time.perf_counter()
    for i in range(0, len(groups), per_commit):
        conn.execute("BEGIN IMMEDIATE")
        if multirow:
            rows: list[Row] = []
            for group in groups[i : i + per_commit]:
                rows += encode_rows(group, 1.0)
            inserter.insert(conn, rows)
        else:
            for group in groups[i : i + per_commit]:
                conn.executemany(INSERT_MESSAGES, encode_rows(group, 1.0))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    stored = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    conn.close()
    if stored != total:
        raise SystemExit(f"bare run lost messages: {stored} of {total}")
    return total / elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--synchronous", choices=["normal", "full"], default="normal")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the best of each is shown")
    args = parser.parse_args()
    configure("WARNING")  # log lines go to stderr; stdout carries only the figures
    sync: Synchronous = "full" if args.synchronous == "full" else "normal"

    records = make_records(args.messages)
    groups = batches(records, args.batch)
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
                "multi-1": bare_run(folder / "multi-1.db", groups, 1, sync, multirow=True),
                "multi-16": bare_run(folder / "multi-16.db", groups, 16, sync, multirow=True),
                "store-1": await store_run(folder / "store-1.db", groups, 1, sync),
                "store-16": await store_run(folder / "store-16.db", groups, 16, sync),
            }
            for name, rate in figures.items():
                best[name] = max(best.get(name, 0.0), rate)
    bare_1, bare_16 = best["bare-1"], best["bare-16"]
    multi_1, multi_16 = best["multi-1"], best["multi-16"]
    one, sixteen = best["store-1"], best["store-16"]
    rows = [
        ("bare executemany, commit per batch", bare_1, ""),
        ("bare executemany, commit per 16 batches", bare_16, ""),
        ("bare multi-row insert, commit per batch", multi_1, ""),
        ("bare multi-row insert, per 16 batches", multi_16, ""),
        ("store, 1 submitter", one, f"{one / bare_1:.2f}x executemany, {one / multi_1:.2f}x multi"),
        (
            "store, 16 submitters",
            sixteen,
            f"{sixteen / bare_16:.2f}x executemany, {sixteen / multi_16:.2f}x multi",
        ),
    ]
    for name, rate, ratio in rows:
        print(f"  {name:38} {rate:>10,.0f} msg/s  {ratio}")
    sys.stdout.flush()


if __name__ == "__main__":
    anyio.run(main, backend="asyncio")
