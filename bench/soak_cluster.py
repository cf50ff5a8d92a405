"""A scaled-down soak of cluster mode (design F6): steady connectors, ``kill -9`` of a random
instance every K seconds, then an audit of what the platform was told against what is stored.

Real ``switchboard run`` processes (the harness of the fault tests, ``tests/cluster/harness.py``:
each instance in its own process group, its connectors killed with it) on a fresh database of
the shared PostgreSQL (dropped afterwards) and the shared NATS server under a subject prefix of
their own. The connectors are the fake platform of the fault tests, whose acknowledgements are
the oracle. The victim is started again at once under the same ``instance_id``.

Printed at the end:

* messages the platform numbered (sent at least once), acknowledged, stored; **lost**
  (acknowledged, not stored: must be 0) and **duplicates stored** (stored more than once:
  must be 0);
* RSS of each instance's incarnations that lived at least ``--warmup`` seconds past it:
  first and last sample after warm-up, and the growth;
* two owners of one connector at a 100 ms sample, looked at three ways: the lease table
  (one row per connector: an unexpired owner), the connectors the *live* instances report
  holding with their heartbeats (``instances.info``), and the platform itself (two connector
  processes of one connector acknowledged within the same 100 ms).

Not part of CI. Run: ``python bench/soak_cluster.py [--duration 180] [--kill-every 30]
[--instances 3] [--connectors 4] [--rate 20] [--ttl 2] [--seed 1]``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cluster.harness import Cluster, audit, eventually  # noqa: E402
from tests.pg import fresh_database  # noqa: E402

NATS_URL = os.environ.get("SWITCHBOARD_TEST_NATS", "nats://127.0.0.1:4222")
SAMPLE = 0.1


def rss_kb(pid: int) -> int | None:
    """The resident set of ``pid`` in kB (None: gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as file:
            for line in file:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


@dataclass
class Incarnation:
    """One process of one instance: when it started and its RSS samples after warm-up."""

    name: str
    pid: int
    started: float
    rss: list[int] = field(default_factory=list)


@dataclass
class Samples:
    """What the 100 ms sampler saw."""

    taken: int = 0
    lease_doubles: int = 0
    reported_doubles: list[tuple[float, str, list[str]]] = field(default_factory=list)


def _sample(conn: psycopg.Connection[Any], ttl: float, samples: Samples) -> None:
    rows = conn.execute(
        "SELECT server_id, count(DISTINCT owner) FROM connector_leases"
        " WHERE owner IS NOT NULL AND expires_at > now() GROUP BY server_id"
    ).fetchall()
    samples.lease_doubles += sum(1 for _, n in rows if n > 1)
    live = conn.execute(
        "SELECT id, info FROM instances WHERE heartbeat_at > now() - make_interval(secs => %s)",
        (ttl,),
    ).fetchall()
    holders: dict[str, list[str]] = {}
    for instance, info in live:
        for sid in (info or {}).get("connectors", {}):
            holders.setdefault(sid, []).append(instance)
    for sid, who in holders.items():
        if len(who) > 1:
            samples.reported_doubles.append((time.time(), sid, sorted(who)))
    samples.taken += 1


def platform_doubles(cluster: Cluster) -> int:
    """100 ms windows in which two connector processes of one connector were acknowledged."""
    doubles = 0
    for sid in cluster.connectors:
        try:
            text = (cluster.platform / f"{sid}.acked").read_text()
        except FileNotFoundError:
            continue
        windows: dict[int, set[int]] = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) > 2:
                windows.setdefault(int(float(parts[1]) / SAMPLE), set()).add(int(parts[2]))
        doubles += sum(1 for pids in windows.values() if len(pids) > 1)
    return doubles


async def soak(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    names = [f"sb-{i + 1}" for i in range(args.instances)]
    connectors = [f"c{i + 1}" for i in range(args.connectors)]
    with tempfile.TemporaryDirectory(prefix="soak-") as folder, fresh_database("sbsoak") as url:
        cluster = Cluster(
            Path(folder),
            url,
            NATS_URL,
            f"sbsoak{uuid.uuid4().hex[:8]}",
            connectors,
            names,
            ttl=args.ttl,
            rate=args.rate,
        )
        incarnations: list[Incarnation] = []
        current: dict[str, Incarnation] = {}
        samples = Samples()
        kills: list[tuple[float, str]] = []

        def start(name: str) -> None:
            cluster.start(name)
            process = cluster.instances[name].process
            assert process is not None
            current[name] = Incarnation(name, process.pid, time.monotonic())
            incarnations.append(current[name])

        try:
            for name in names:
                start(name)
            await eventually(
                lambda: (
                    len(cluster.owners()) == len(connectors)
                    and all(cluster.acked(sid) for sid in connectors)
                ),
                90,
                "every connector owned and acknowledged",
            )
            began = time.monotonic()
            end = began + args.duration
            print(
                f"soak_cluster: {args.instances} instances, {args.connectors} connectors at "
                f"{args.rate:g} msgs/s each, lease_ttl {args.ttl:g} s, kill -9 every "
                f"{args.kill_every:g} s, {args.duration:g} s",
                flush=True,
            )

            async def sampler() -> None:
                with psycopg.connect(url, autocommit=True) as conn:
                    while True:
                        _sample(conn, args.ttl, samples)
                        for inc in current.values():
                            if time.monotonic() - inc.started >= args.warmup:
                                rss = rss_kb(inc.pid)
                                # Once a second is enough for a trend.
                                if rss is not None and samples.taken % 10 == 0:
                                    inc.rss.append(rss)
                        await anyio.sleep(SAMPLE)

            async with anyio.create_task_group() as group:
                group.start_soon(sampler)
                next_kill = began + args.kill_every
                # No kill in the last stretch: the audit needs every connector flowing again.
                while next_kill <= end - args.kill_every / 2:
                    await anyio.sleep(max(0.0, next_kill - time.monotonic()))
                    victim = rng.choice(names)
                    cluster.kill9(victim)
                    kills.append((time.monotonic() - began, victim))
                    print(f"  {time.monotonic() - began:6.1f} s: kill -9 {victim}", flush=True)
                    start(victim)
                    next_kill += args.kill_every
                await anyio.sleep(max(0.0, end - time.monotonic()))
                since = time.time()
                await eventually(
                    lambda: (
                        len(cluster.owners()) == len(connectors)
                        and all(cluster.acked_after(sid, since) for sid in connectors)
                    ),
                    90,
                    "every connector flowing at the end",
                )
                group.cancel_scope.cancel()
            for name in names:
                process = cluster.instances[name].process
                if process is not None and process.poll() is None:
                    await cluster.terminate(name, within=30)
            stored = await cluster.stored()
        finally:
            cluster.close()
        lost, twice, per = audit(cluster, stored)
        numbered = 0
        for sid in connectors:
            numbers = [n for n, _ in cluster.acked(sid)]
            numbers += [int(mid.rsplit("-", 1)[1]) for s, mid in stored if s == sid]
            numbered += max(numbers, default=0)
        doubles = platform_doubles(cluster)

    print(f"kills: {len(kills)} ({', '.join(f'{t:.0f}s {v}' for t, v in kills)})")
    print(f"messages numbered by the platform (sent at least once): {numbered}")
    print(f"acknowledged: {sum(per.values())}   stored: {len(stored)}")
    print(f"lost (acknowledged, not stored): {lost}")
    print(f"duplicates stored: {twice}")
    grown: list[float] = []
    for inc in incarnations:
        if len(inc.rss) >= 2:
            growth = (inc.rss[-1] - inc.rss[0]) / inc.rss[0] * 100
            grown.append(growth)
            print(
                f"RSS {inc.name} pid {inc.pid}: {inc.rss[0] / 1024:.1f} -> "
                f"{inc.rss[-1] / 1024:.1f} MB ({growth:+.1f}%) over {len(inc.rss)} samples"
            )
    if grown:
        print(f"RSS growth per incarnation: max {max(grown):+.1f}%")
    print(
        f"two owners of one connector in {samples.taken} samples every {SAMPLE * 1000:.0f} ms: "
        f"lease table {samples.lease_doubles}, live instances' reports "
        f"{len(samples.reported_doubles)}, platform (two connector processes acknowledged in "
        f"one 100 ms window) {doubles}"
    )
    for at, sid, who in samples.reported_doubles[:5]:
        print(f"  reported by two at {at:.1f}: {sid} {who}")
    return 1 if lost or twice or samples.lease_doubles or doubles else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of load")
    parser.add_argument("--kill-every", type=float, default=30.0, help="seconds between kills")
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument("--connectors", type=int, default=4)
    parser.add_argument("--rate", type=float, default=20.0, help="messages a second each")
    parser.add_argument("--ttl", type=float, default=2.0, help="lease_ttl, seconds")
    parser.add_argument(
        "--warmup", type=float, default=10.0, help="seconds after a start before RSS counts"
    )
    parser.add_argument("--seed", type=int, default=1)
    sys.exit(anyio.run(soak, parser.parse_args()))


if __name__ == "__main__":
    main()
