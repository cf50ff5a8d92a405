"""Benchmark the host's lifecycle decisions: durable decision throughput and start-up replay.

Usage: ``python bench/bench_lifecycle.py [--decisions 4000] [--events 1000000]
[--channels 5000]``

Throughput goes through the host API of a real :class:`~switchboard.app.Switchboard` on a
temporary store, exactly as ``Switchboard.started()`` opens it (decision log with
``synchronous=full``: a committed decision survives power loss):

* ``decide``: ``board.lifecycle.decide(ref, state, source)``, every call a new record (the
  agent alternately closes and opens its channel), awaited until durably recorded and applied,
  with 1, 16 and 64 concurrent callers on distinct channels (group commit batches them);
* ``close``/``open`` verbs: ``board.lifecycle.close``/``open`` on registered channels whose
  connector is not connected (decision plus the verb's flow, no round trip).

Replay: ``--events`` decision events over ``--channels`` channels, then the time from a new
``Switchboard`` to a rebuilt book (``board.restore()``: open the log, load, decode, apply):

* ``snapshotted``: ``--events`` plus 9,999 events (the longest tail) written through the
  journal in batches of 1,000, which stores a snapshot every ``snapshot_every`` (10,000)
  events, as a running host does;
* ``no snapshot``: the same events appended to the log directly (the worst case: a log that
  was never compacted, say written by a process that took no snapshots). Its first restore
  replays every event and then stores a snapshot, so the next start is fast again.

The goal from issue #4: ready in at most 2 s for 1,000,000 logged events.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from switchboard.app.board import Switchboard
from switchboard.channels import ChannelRef
from switchboard.config import Config, StoreConfig
from switchboard.lifecycle.journal import DEFAULT_SNAPSHOT_EVERY
from switchboard.lifecycle.rules.decisions import DesiredState, Source
from switchboard.lifecycle.rules.events import DesiredStateSet
from switchboard.protocol.messages import ChannelDescriptor
from switchboard.runtime.logs import configure
from switchboard.store.sqlite import DecisionLog, MessageStore

READY_GOAL_S = 2.0


def row(name: str, figure: str, note: str = "") -> None:
    """One aligned line of figures on stdout."""
    print(f"  {name:56} {figure:>16}  {note}".rstrip())


@asynccontextmanager
async def board_on(path: Path) -> AsyncIterator[Switchboard]:
    """A host on ``path`` opened as ``Switchboard.started()`` opens it, without connectors."""
    config = Config(store=StoreConfig(path=str(path)))
    async with (
        await MessageStore.open(path) as store,
        await DecisionLog.open(path, synchronous="full") as decisions,
    ):
        yield Switchboard(config, store, decisions=decisions)


def event(i: int, channels: int) -> DesiredStateSet:
    c = i % channels
    ref = ChannelRef(f"server-{c % 3}", f"discord:guild-{c % 40}:channel-{c}")
    state = DesiredState.OPEN if (i // channels) % 2 else DesiredState.CLOSED
    return DesiredStateSet(ref, state, Source.AGENT_TOOL, 1_780_000_000.0 + i, "agent")


async def decide_rate(path: Path, total: int, callers: int) -> float:
    """Decisions durably recorded per second through ``board.lifecycle.decide``."""
    each = total // callers
    async with board_on(path) as board:
        lifecycle = board.lifecycle

        async def caller(n: int) -> None:
            ref = ChannelRef("bench", f"channel-{n}")
            for k in range(each):
                state = DesiredState.CLOSED if k % 2 == 0 else DesiredState.OPEN
                decision = await lifecycle.decide(ref, state, Source.AGENT_TOOL, by_agent="a")
                if not decision.made:
                    raise SystemExit("a decision was not recorded")

        began = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for n in range(callers):
                tg.start_soon(caller, n)
        elapsed = time.perf_counter() - began
    return each * callers / elapsed


async def verb_rate(path: Path, total: int, callers: int) -> float:
    """close/open verbs per second on registered channels of a connector that is not up."""
    each = total // callers
    async with board_on(path) as board:
        descriptors = [
            ChannelDescriptor(
                id=f"channel-{n}", type="bench", label=f"#c{n}", direction="bidirectional"
            )
            for n in range(callers)
        ]
        board.registry.register("bench", descriptors)
        lifecycle = board.lifecycle

        async def caller(n: int) -> None:
            ref = ChannelRef("bench", f"channel-{n}")
            for k in range(each):
                verb = lifecycle.close if k % 2 == 0 else lifecycle.open
                answer = await verb(ref)
                if answer.status != "recorded":
                    raise SystemExit(f"unexpected answer: {answer}")

        began = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for n in range(callers):
                tg.start_soon(caller, n)
        elapsed = time.perf_counter() - began
    return each * callers / elapsed


async def fill_through_journal(path: Path, total: int, channels: int) -> int:
    """Record ``total`` events through the journal (snapshots as a running host takes them)."""
    async with board_on(path) as board:
        journal = board.lifecycle.journal
        pending = []
        for start in range(0, total, 1000):
            batch = [event(i, channels) for i in range(start, min(total, start + 1000))]
            pending.append(journal.record(batch))
            if len(pending) >= 16:
                for waiter in pending:
                    await waiter
                pending = []
        for waiter in pending:
            await waiter
        return journal.snapshots


async def fill_directly(path: Path, total: int, channels: int) -> None:
    """Append ``total`` events straight to the log: never compacted."""
    async with await DecisionLog.open(path, synchronous="normal") as decisions:
        for start in range(0, total, 1000):
            batch = [event(i, channels).to_json() for i in range(start, min(total, start + 1000))]
            await decisions.append(batch)


async def timed_restore(path: Path) -> tuple[float, int, int]:
    """Seconds from a new host to a rebuilt book; the book's size; the events replayed."""
    began = time.perf_counter()
    async with board_on(path) as board:
        await board.restore()
        ready = time.perf_counter() - began
        restored = board.lifecycle.journal.restored
        return ready, len(board.lifecycle.book), 0 if restored is None else restored.events


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--decisions", type=int, default=4000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--channels", type=int, default=5000)
    args = parser.parse_args()
    configure("WARNING")  # log lines go to stderr; stdout carries only the figures
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"{os.cpu_count()} cpus; {args.decisions:,} decisions; {args.events:,} events over "
        f"{args.channels:,} channels"
    )
    with tempfile.TemporaryDirectory(prefix="bench-lifecycle-") as tmp:
        folder = Path(tmp)
        for callers in (1, 16, 64):
            rate = await decide_rate(folder / f"decide-{callers}.sqlite", args.decisions, callers)
            row(f"decide, synchronous=full, {callers} concurrent caller(s)", f"{rate:,.0f}/s")
        for callers in (1, 64):
            rate = await verb_rate(folder / f"verb-{callers}.sqlite", args.decisions, callers)
            row(f"close/open verbs, {callers} concurrent caller(s)", f"{rate:,.0f}/s")

        snap = folder / "snapshotted.sqlite"
        # The worst case for a snapshotted log: the tail just short of the next snapshot.
        logged = args.events + DEFAULT_SNAPSHOT_EVERY - 1
        began = time.perf_counter()
        snapshots = await fill_through_journal(snap, logged, args.channels)
        rate = logged / (time.perf_counter() - began)
        row(f"record {logged:,} events through the journal", f"{rate:,.0f} events/s")
        row("snapshots taken meanwhile", f"{snapshots:,}")
        ready, size, replayed = await timed_restore(snap)
        verdict = "meets" if ready <= READY_GOAL_S else "misses"
        row(f"snapshotted: restore ({size:,} channels, {replayed:,} tail)", f"{ready:.3f} s")
        row("snapshotted: ready", f"{ready:.3f} s", f"{verdict} the goal of {READY_GOAL_S} s")

        raw = folder / "raw.sqlite"
        await fill_directly(raw, args.events, args.channels)
        ready, size, replayed = await timed_restore(raw)
        verdict = "meets" if ready <= READY_GOAL_S else "misses"
        row(f"no snapshot: restore {replayed:,} events", f"{ready:.3f} s", f"{verdict} the goal")
        ready, size, replayed = await timed_restore(raw)
        verdict = "meets" if ready <= READY_GOAL_S else "misses"
        row("no snapshot: the next start (snapshotted by the first)", f"{ready:.3f} s", verdict)
    sys.stdout.flush()


if __name__ == "__main__":
    anyio.run(main, backend="asyncio")
