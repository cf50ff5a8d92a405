"""Benchmark of the PostgreSQL store against the SQLite one, in ONE run.

* **Ingest end to end**: ``switchboard run`` ingesting from the stdio connector of
  ``bench_ingest.py`` (~220 B messages in batches of 50, 100 channels) at 1 and 16 requests in
  flight, once over an SQLite file and once over a fresh PostgreSQL database (the shared server,
  ``SWITCHBOARD_TEST_PG`` or ``--admin-url``), interleaved round by round. Every message must be
  stored. The ratio PostgreSQL / SQLite at W=16 is the goal (at least 0.5).
* **The commit call** (in process): 16 submitters of 50-message batches into
  ``PgMessageStore``; each group commit is one ``sb_commit`` call, timed on the writer thread
  from its send to its answer (the commit's WAL flush included). That time bounds the hold of
  the counter row's lock (taken inside the call, released by its commit); messages per commit
  divided by it is the ceiling of ingest into one database, whatever the number of instances.
  The same submitters into the SQLite store give the in-process ratio.

Run: ``python bench/bench_pg_store.py [--rounds 3] [--messages 100000] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

from bench_ingest import BATCH, CHANNELS, _connector_argv, _cpu_seconds, _wait_file
from bench_ingest import stored_messages as sqlite_stored
from switchboard.cluster.pg.message_store import PgMessageStore
from switchboard.runtime.logs import configure
from switchboard.store.sqlite import MessageStore

# The shared server's admin URL and a database of the bench's own: the tests' helper.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.pg import ADMIN_URL, fresh_database

GOAL = 0.5


def pg_stored(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT coalesce(sum(count), 0) FROM batches").fetchone()
    return int(row[0]) if row else 0


async def run_switchboard(
    tmp: Path, store: str, connector: list[str], out: Path
) -> tuple[Any, float]:
    """``switchboard run`` with ``[store]`` lines ``store`` until the connector writes ``out``;
    what it wrote and the host's CPU seconds while it sent."""
    command = ", ".join(json.dumps(part) for part in connector)
    config = tmp / "switchboard.toml"
    config.write_text(
        f'{store}\n[[connectors]]\nid = "bench"\ncommand = [{command}]\nrestart = false\n'
    )
    log = (tmp / "switchboard.log").open("wb")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "switchboard",
        "run",
        "--config",
        str(config),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=log,
    )
    try:
        await _wait_file(out.with_suffix(".start"), proc, 600)
        cpu0 = _cpu_seconds(proc.pid)
        text = await _wait_file(out, proc, 600)
        cpu = _cpu_seconds(proc.pid) - cpu0
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        await proc.wait()
        log.close()
    return json.loads(text.splitlines()[-1]), cpu


def make_batches(count: int) -> list[list[dict[str, Any]]]:
    messages = [
        {
            "channelId": f"bench:channel-{i % CHANNELS}",
            "messageId": f"m-{i}",
            "author": {"id": f"user-{i % 50}", "name": f"User {i % 50}"},
            "timestamp": "2026-01-01T12:00:00.000Z",
            "content": [{"type": "text", "text": f"message number {i}, of a typical short length"}],
        }
        for i in range(count)
    ]
    return [messages[i : i + BATCH] for i in range(0, count, BATCH)]


async def submit_all(store: MessageStore | PgMessageStore, batches: list[Any], width: int) -> float:
    """Messages/s of ``width`` submitters each awaiting its batches' commits in turn."""
    queue = iter(batches)

    async def submitter() -> None:
        for batch in queue:
            await store.submit_wire("bench", batch)

    started = time.perf_counter()
    await asyncio.gather(*(submitter() for _ in range(width)))
    return sum(len(b) for b in batches) / (time.perf_counter() - started)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def fmt(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:,.0f}"
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"


async def bench(args: argparse.Namespace) -> int:
    rows: dict[str, list[float]] = {}
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        for rnd in range(args.rounds):
            for window in (1, 16):
                opts = {"messages": args.messages, "window": window, "channels": CHANNELS}
                for backend in ("sqlite", "postgres"):
                    sub = root / f"r{rnd}-w{window}-{backend}"
                    sub.mkdir()
                    out = sub / "out.json"
                    argv = _connector_argv("incoming", out, **opts)
                    if backend == "sqlite":
                        path = sub / "store.sqlite"
                        got, cpu = await run_switchboard(
                            sub, f"[store]\npath = {json.dumps(str(path))}\n", argv, out
                        )
                        stored = sqlite_stored(path)
                    else:
                        with fresh_database("sbbench", args.admin_url) as url:
                            store = f'[store]\nbackend = "postgres"\nurl = {json.dumps(url)}\n'
                            got, cpu = await run_switchboard(sub, store, argv, out)
                            stored = pg_stored(url)
                    rows.setdefault(f"{backend} W={window}", []).append(
                        got["messages"] / got["seconds"]
                    )
                    rows.setdefault(f"{backend} cpu W={window}", []).append(
                        cpu / got["messages"] * 1e6
                    )
                    if stored != got["messages"] or got["accepted"] != got["messages"]:
                        failures.append(
                            f"round {rnd + 1} {backend} W={window}: sent {got['messages']}, "
                            f"accepted {got['accepted']}, stored {stored}"
                        )
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)

        batches = make_batches(args.store_messages)
        sqlite_store = await MessageStore.open(root / "inproc.sqlite")
        sqlite_rate = await submit_all(sqlite_store, batches, 16)
        await sqlite_store.aclose()
        with fresh_database("sbbench", args.admin_url) as url:
            pg_store = await PgMessageStore.open(url)
            times = pg_store.time_commits()
            pg_rate = await submit_all(pg_store, batches, 16)
            await pg_store.aclose()

    print(
        f"ingest through `switchboard run`: {args.messages:,} messages of ~220 B, batches of "
        f"{BATCH}, {args.rounds} interleaved round(s); msgs/s median (range)"
    )
    print(f"{'store':10} {'W=1 msgs/s':>24} {'W=16 msgs/s':>24} {'host cpu W=16 us/msg':>22}")
    for backend in ("sqlite", "postgres"):
        print(
            f"{backend:10} {fmt(rows[f'{backend} W=1']):>24} {fmt(rows[f'{backend} W=16']):>24} "
            f"{statistics.median(rows[f'{backend} cpu W=16']):>22.1f}"
        )
    for window in (1, 16):
        ratio = statistics.median(rows[f"postgres W={window}"]) / statistics.median(
            rows[f"sqlite W={window}"]
        )
        goal = f" (goal >= {GOAL})" if window == 16 else ""
        print(f"ratio postgres / sqlite at W={window}: {ratio:.2f}x{goal}")

    commits = len(times)
    per_commit = args.store_messages / commits if commits else 0.0
    p50, p99 = pct(times, 0.5) * 1e3, pct(times, 0.99) * 1e3
    print(
        f"commit call (in process, 16 submitters, {args.store_messages:,} messages): "
        f"{commits:,} commits, {per_commit:.0f} messages per commit"
    )
    print(f"commit call lock hold: p50 {p50:.3f} ms, p99 {p99:.3f} ms")
    print(
        f"ceiling implied (messages per commit / hold): {per_commit / (p50 / 1e3):,.0f} msgs/s "
        f"at p50, {per_commit / (p99 / 1e3):,.0f} msgs/s at p99"
    )
    print(
        f"in-process submit at 16 submitters: sqlite {sqlite_rate:,.0f} msgs/s, postgres "
        f"{pg_rate:,.0f} msgs/s, ratio {pg_rate / sqlite_rate:.2f}x"
    )
    if failures:
        print("store check FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("store check: every message accepted and stored, in every round")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--messages", type=int, default=100_000)
    p.add_argument("--store-messages", type=int, default=100_000)
    p.add_argument("--admin-url", default=ADMIN_URL)
    p.add_argument("--quick", action="store_true", help="a small run for a smoke test")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.messages, args.store_messages = 1, 2_500, 5_000
    configure("WARNING")
    return asyncio.run(bench(args))


if __name__ == "__main__":
    raise SystemExit(main())
