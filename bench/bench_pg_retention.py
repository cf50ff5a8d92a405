"""Benchmark of retention on PostgreSQL, in ONE run: how long a pass takes to trim old,
acknowledged messages, and what it does to commits made meanwhile.

For each ingest mode a fresh database (the shared server, ``SWITCHBOARD_TEST_PG`` or
``--admin-url``) gets ``--messages`` old messages (``--per-row`` to a batch row, 1 by default:
the most rows to delete; received 60 days ago), all acknowledged. Then ingest runs alone for a
few seconds, and again while one pass (``retain = 30d``, the host's chunk sizes, VACUUM after)
deletes them:

* **paced**: one batch of 20 every 10 ms (2,000 msg/s); the commit latency of each batch
  (submit to commit), p50 / p99 / max, alone and during the pass;
* **saturated**: 16 submitters of 20-message batches, as fast as commits complete; messages
  per second alone and during the pass, and the ratio.

Run: ``python bench/bench_pg_retention.py [--messages 100000] [--per-row 1]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from switchboard.cluster.pg.message_store import PgMessageStore
from switchboard.cluster.pg.retention import PgRetentionTask
from switchboard.runtime.logs import configure
from switchboard.store.retention import Floor, PassReport, RetentionPolicy

# The shared server's admin URL and a database of the bench's own: the tests' helper.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.pg import ADMIN_URL, fresh_database

BATCH = 20
DAY = 86_400.0


def _wire(n: int) -> dict[str, Any]:
    return {
        "channelId": f"c{n % 100}",
        "messageId": f"m{n}",
        "author": {"id": "u1", "name": "Ann"},
        "timestamp": "2026-12-01T10:00:00Z",
        "content": [{"type": "text", "text": f"message number {n} of the retention bench " * 4}],
    }


class Counter:
    def __init__(self, start: int, size: int = BATCH) -> None:
        self.n = start
        self.size = size

    def batch(self) -> list[dict[str, Any]]:
        first, self.n = self.n, self.n + self.size
        return [_wire(i) for i in range(first, first + self.size)]


async def fill_old(store: PgMessageStore, messages: int, per_row: int) -> None:
    counter = Counter(0, per_row)
    at = time.time() - 60 * DAY

    async def submitter(batches: int) -> None:
        for _ in range(batches):
            await store.submit_wire("demo", counter.batch(), received_at=at)

    per = messages // per_row // 16
    await asyncio.gather(*(submitter(per) for _ in range(16)))
    await store.set_cursor("everyone", store.latest_seq)


async def paced(store: PgMessageStore, counter: Counter, done: asyncio.Event) -> list[float]:
    """Commit latencies (ms) of one batch every 10 ms until ``done``."""
    latencies: list[float] = []
    pending: set[asyncio.Task[None]] = set()

    async def one() -> None:
        began = time.perf_counter()
        await store.submit_wire("live", counter.batch())
        latencies.append((time.perf_counter() - began) * 1000)

    next_at = time.perf_counter()
    while not done.is_set():
        task = asyncio.ensure_future(one())
        pending.add(task)
        task.add_done_callback(pending.discard)
        next_at += 0.010
        await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
    await asyncio.gather(*pending)
    return latencies


async def saturated(store: PgMessageStore, counter: Counter, done: asyncio.Event) -> float:
    """Messages per second of 16 submitters until ``done``."""
    stored = 0
    began = time.perf_counter()

    async def submitter() -> None:
        nonlocal stored
        while not done.is_set():
            await store.submit_wire("live", counter.batch())
            stored += BATCH

    await asyncio.gather(*(submitter() for _ in range(16)))
    return stored / (time.perf_counter() - began)


async def one_mode(
    url: str, messages: int, per_row: int, mode: str, alone_s: float
) -> dict[str, Any]:
    store = await PgMessageStore.open(url)
    try:
        await fill_old(store, messages, per_row)
        counter = Counter(10_000_000)

        async def floor() -> Floor:
            return Floor(await store.get_cursor("everyone"), "agent @everyone")

        task = PgRetentionTask(store, RetentionPolicy(retain=30 * DAY, keep_newest=0), floor)
        run = paced if mode == "paced" else saturated

        done = asyncio.Event()  # a warm-up, not counted
        asyncio.get_running_loop().call_later(1.0, done.set)
        await run(store, counter, done)
        done = asyncio.Event()
        asyncio.get_running_loop().call_later(alone_s, done.set)
        alone = await run(store, counter, done)

        done = asyncio.Event()
        report: PassReport | None = None

        async def trim() -> None:
            nonlocal report
            try:
                report = await task.run_pass()
            finally:
                done.set()

        trimmer = asyncio.ensure_future(trim())
        during = await run(store, counter, done)
        await trimmer
        assert report is not None
        return {"alone": alone, "during": during, "report": report}
    finally:
        await store.aclose()


def _pct(values: list[float], q: int) -> float:
    """The ``q``-th percentile (nearest rank)."""
    ranked = sorted(values)
    return ranked[min(len(ranked) - 1, max(0, round(q / 100 * len(ranked)) - 1))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument(
        "--per-row", type=int, default=1, help="old messages per batch row (1: the worst case)"
    )
    parser.add_argument("--alone", type=float, default=4.0, help="seconds of ingest alone")
    parser.add_argument("--admin-url", default=ADMIN_URL)
    args = parser.parse_args()
    configure("WARNING")
    print(
        f"retention on PostgreSQL: {args.messages:,} old acknowledged messages, "
        f"{args.per_row} per batch row; new batches of {BATCH}"
    )
    for mode in ("paced", "saturated"):
        with fresh_database("sbbench", args.admin_url) as url:
            got = await one_mode(url, args.messages, args.per_row, mode, args.alone)
        r: PassReport = got["report"]
        print(
            f"[{mode}] pass: {r.messages:,} messages ({r.rows:,} rows) in {r.took_ms / 1000:.2f} s"
            f" ({r.messages / max(r.took_ms / 1000, 1e-9):,.0f} msg/s), longest chunk "
            f"{r.longest_chunk_ms:.1f} ms, table+TOAST+indexes after: {r.file_bytes / 1e6:.1f} MB"
        )
        if mode == "paced":
            a, d = got["alone"], got["during"]
            print(
                f"[paced 2,000 msg/s] commit latency alone: p50 {_pct(a, 50):.1f} ms, "
                f"p99 {_pct(a, 99):.1f} ms, max {max(a):.1f} ms ({len(a)} commits)"
            )
            print(
                f"[paced 2,000 msg/s] during the pass:    p50 {_pct(d, 50):.1f} ms, "
                f"p99 {_pct(d, 99):.1f} ms, max {max(d):.1f} ms ({len(d)} commits); "
                f"p99 ratio {_pct(d, 99) / _pct(a, 99):.2f}"
            )
        else:
            a_rate, d_rate = got["alone"], got["during"]
            print(
                f"[saturated, 16 submitters] alone {a_rate:,.0f} msg/s, during the pass "
                f"{d_rate:,.0f} msg/s: ratio {d_rate / a_rate:.2f}"
            )


if __name__ == "__main__":
    asyncio.run(main())
