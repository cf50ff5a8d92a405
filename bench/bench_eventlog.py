"""Benchmark the decision event log: start-up replay of a large log, and decision throughput.

Usage: ``python bench/bench_eventlog.py [--events 1000000] [--batch 1000] [--snapshot-at N]
[--decisions 3000]``

Replay (one temporary file): ``--events`` realistic ``desired-state`` event dicts (shaped like
``DesiredStateSet.to_json()``: 5,000 channels on 3 servers, open/closed, agent or module
decisions) are appended in batches of ``--batch``. Then, each on a freshly opened log:

* ``load``: read every row and decode it into dicts (the store's part of start-up);
* ``decode + replay``: ``decode_events`` and ``LifecycleBook.replay`` over those dicts (the
  caller's part); ``ready`` is the sum, from open to a rebuilt book;
* the same after a snapshot at ``--snapshot-at`` (default: 99 % of the events): the caller's
  compacted state (one ``desired-state`` record per channel) plus the tail.

Throughput (fresh files): decisions durably recorded per second, each decision one awaited
``append`` of one event, with 1 and with 16 concurrent appenders, for ``synchronous=full``
(the default: survives power loss) and ``normal`` (survives a process crash).

Only this benchmark imports :mod:`switchboard.channels`; the store itself never does.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from switchboard.lifecycle.rules.book import LifecycleBook
from switchboard.lifecycle.rules.events import DesiredStateSet, decode_events
from switchboard.runtime.logs import configure
from switchboard.store import LoadedLog
from switchboard.store.sqlite.eventlog import DecisionLog
from switchboard.store.sqlite.schema import Synchronous

READY_GOAL_S = 2.0
Event = dict[str, Any]


def row(name: str, figure: str, note: str = "") -> None:
    """One aligned line of figures on stdout."""
    print(f"  {name:52} {figure:>18}  {note}".rstrip())


def make_events(count: int, start: int = 0) -> list[Event]:
    """Realistic desired-state decisions over 5,000 channels on three servers."""
    events: list[Event] = []
    for i in range(start, start + count):
        event: Event = {
            "kind": "desired-state",
            "serverId": f"server-{i % 3}",
            "channelId": f"discord:guild-{i % 40}:channel-{i % 5000}",
            "desired": "open" if i % 3 else "closed",
            "source": "agent-tool" if i % 4 else "module-tool",
            "at": 1_780_000_000.0 + i * 0.25,
        }
        if i % 4:
            event["byAgent"] = f"agent-{i % 7}"
        events.append(event)
    return events


def compact(book: LifecycleBook) -> dict[str, Any]:
    """The caller's snapshot: one desired-state record per channel (open/closed books only)."""
    return {
        "desired": [
            DesiredStateSet(ref, r.state, r.source, r.decided_at, r.by_agent).to_json()
            for ref, r in book.items()
        ]
    }


def restore(loaded: LoadedLog) -> LifecycleBook:
    base = loaded.snapshot.state["desired"] if loaded.snapshot is not None else []
    return LifecycleBook.replay(decode_events([*base, *loaded.tail]))


async def fill(path: Path, events: list[Event], batch: int) -> float:
    """Append ``events`` in batches (16 batches in flight); events per second."""
    async with await DecisionLog.open(path, synchronous="normal") as decisions:
        began = time.perf_counter()
        pending = []
        for i in range(0, len(events), batch):
            pending.append(decisions.append(events[i : i + batch]))
            if len(pending) >= 16:
                for waiter in pending:
                    await waiter
                pending = []
        for waiter in pending:
            await waiter
        return len(events) / (time.perf_counter() - began)


async def timed_start(path: Path) -> tuple[float, float, LifecycleBook, int]:
    """Open, load and replay: (load seconds, decode + replay seconds, book, tail length)."""
    began = time.perf_counter()
    async with await DecisionLog.open(path) as decisions:
        loaded = await decisions.load()
    loaded_at = time.perf_counter()
    book = restore(loaded)
    return loaded_at - began, time.perf_counter() - loaded_at, book, len(loaded.tail)


async def throughput(path: Path, decisions_total: int, appenders: int, sync: Synchronous) -> float:
    """Decisions durably recorded per second with ``appenders`` concurrent awaiting callers."""
    events = make_events(decisions_total)
    each = decisions_total // appenders
    async with await DecisionLog.open(path, synchronous=sync) as decisions:

        async def appender(offset: int) -> None:
            for event in events[offset : offset + each]:
                await decisions.append([event])

        began = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for n in range(appenders):
                tg.start_soon(appender, n * each)
        elapsed = time.perf_counter() - began
        if decisions.latest_seq != each * appenders:
            raise SystemExit(f"lost decisions: {decisions.latest_seq} of {each * appenders}")
    return each * appenders / elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--snapshot-at", type=int, default=None)
    parser.add_argument("--decisions", type=int, default=3200)
    args = parser.parse_args()
    configure("WARNING")  # log lines go to stderr; stdout carries only the figures
    total: int = args.events
    cut: int = args.snapshot_at if args.snapshot_at is not None else total * 99 // 100
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"{os.cpu_count()} cpus, {total:,} events in batches of {args.batch}, "
        f"snapshot at {cut:,}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-eventlog-") as tmp:
        path = Path(tmp) / "store.sqlite"
        # The events are built, written and dropped before any start-up is timed: a starting
        # host holds no million objects the garbage collector would walk again and again.
        rate = await fill(path, make_events(total), args.batch)
        size = path.stat().st_size + Path(f"{path}-wal").stat().st_size
        row(f"write {total:,} events in batches", f"{rate:,.0f} events/s")
        row("file size (db + wal)", f"{size / 1e6:,.1f} MB")

        load_s, replay_s, full_book, tail = await timed_start(path)
        row(f"full log: load {tail:,} events into dicts", f"{load_s:.3f} s")
        row("full log: decode_events + LifecycleBook.replay", f"{replay_s:.3f} s")
        row("full log: ready", f"{load_s + replay_s:.3f} s")

        head = LifecycleBook.replay(decode_events(make_events(cut)))
        async with await DecisionLog.open(path) as decisions:
            await decisions.snapshot(compact(head), cut)
        load_s, replay_s, book, tail = await timed_start(path)
        if book != full_book:
            raise SystemExit("snapshot + tail does not rebuild the full log's book")
        ready = load_s + replay_s
        row(f"snapshot ({len(book):,} channels) + {tail:,} tail: load", f"{load_s:.3f} s")
        row("snapshot + tail: decode_events + replay", f"{replay_s:.3f} s")
        verdict = "meets" if ready <= READY_GOAL_S else "misses"
        row("snapshot + tail: ready", f"{ready:.3f} s", f"{verdict} the goal of {READY_GOAL_S} s")

        for sync in ("full", "normal"):
            mode: Synchronous = "full" if sync == "full" else "normal"
            for appenders in (1, 16):
                rate = await throughput(
                    Path(tmp) / f"tp-{sync}-{appenders}.sqlite", args.decisions, appenders, mode
                )
                row(
                    f"durable decisions, synchronous={sync}, {appenders} appender(s)",
                    f"{rate:,.0f}/s",
                )
    sys.stdout.flush()


if __name__ == "__main__":
    anyio.run(main, backend="asyncio")
