"""Benchmark of the Matrix bridge: a person's message to an agent's inbox, through Synapse.

Measures, in ONE run, round by round, two paths that end the same way (``switchboard run``
from a config, the connector over stdio, the store on disk, the agent at a real MCP client
reading ``inbox``):

* **matrix**: a person's Matrix client sends ``m.text`` messages to a real Synapse on loopback
  (installed and cached as the tests do), ``switchboard-matrix`` syncs them and hands them to
  Switchboard;
* **demo**: the demo connector says its scripted lines (no platform at all).

Figures per path: messages per second (``--messages`` sent with ``--in-flight`` sends in
flight for Matrix, as fast as the demo's loop goes for the demo; from the first send to the
last message read from the inbox), and the latency from the send to the agent's inbox, p50
and p99 over ``--samples`` messages sent one at a time. For Matrix the send is the moment the
person's client starts the request; for the demo the message's own timestamp (taken when the
line is built, millisecond resolution). A third row, **synapse only**, is the same messages
reaching a second plain Matrix client (its own long-poll sync) with nobody bridging: the
homeserver's own share of the Matrix figures. The ratios are the
bridge path's cost over the demo's. Medians over ``--rounds`` rounds.

Run: ``python bench/bench_matrix.py [--rounds 3] [--messages 1000] [--samples 200]
[--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.matrix.support import (  # noqa: E402
    Person,
    bridge_env,
    call,
    signed_in,
    switchboard_run_config,
)
from tests.integration.matrix.synapse import Synapse, ensure_synapse  # noqa: E402

__all__ = ["main"]


@dataclass
class Figures:
    rate: float
    p50_ms: float
    p99_ms: float


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def _drain(
    client: Client, wanted: int, on_message: Callable[[dict[str, Any], float], None]
) -> None:
    got = 0
    while got < wanted:
        data = await call(client, "inbox", {"wait_seconds": 5, "limit": 500})
        now = time.time()
        for message in data["messages"]:
            on_message(message, now)
            got += 1


async def _send_all(person: Person, room: str, count: int, in_flight: int, tag: str) -> list[str]:
    ids: list[str] = []
    limiter = anyio.CapacityLimiter(in_flight)

    async def one(i: int) -> None:
        async with limiter:
            ids.append(await person.send(room, f"{tag} message {i}"))

    async with anyio.create_task_group() as group:
        for i in range(count):
            group.start_soon(one, i)
    return ids


async def synapse_round(synapse: Synapse, messages: int, samples: int, in_flight: int) -> Figures:
    """The homeserver's own share: Ann's messages as Bob's plain client sees them."""
    ann_user = await synapse.register(synapse.fresh_name("ann"), displayname="Ann")
    bob_user = await synapse.register(synapse.fresh_name("bob"), displayname="Bob")
    async with signed_in(synapse, ann_user) as ann, signed_in(synapse, bob_user) as bob:
        room = await ann.create_room("Synapse only", invite=[bob.user_id])
        await bob.join(room)
        warm = await ann.send(room, "warm-up")
        await bob.wait_for(lambda e: e.get("event_id") == warm)
        bob.seen.clear()
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            group.start_soon(_send_all, ann, room, messages, in_flight, "solo")
            with anyio.fail_after(300):
                while _count(bob, room) < messages:
                    await bob.sync()
        rate = messages / (time.perf_counter() - started)
        latencies: list[float] = []
        for i in range(samples):
            sent_at = time.perf_counter()
            event_id = await ann.send(room, f"latency {i}")
            await bob.wait_for(lambda e, wanted=event_id: e.get("event_id") == wanted)
            latencies.append((time.perf_counter() - sent_at) * 1000)
    return Figures(rate, _percentile(latencies, 0.5), _percentile(latencies, 0.99))


def _count(person: Person, room: str) -> int:
    return sum(
        1
        for e in person.seen
        if e.get("room_id") == room
        and e.get("type") == "m.room.message"
        and str(e.get("content", {}).get("body", "")).startswith("solo ")
    )


async def matrix_round(
    synapse: Synapse, workdir: Path, messages: int, samples: int, in_flight: int
) -> Figures:
    bot = await synapse.register(synapse.fresh_name("benchbot"), displayname="Bench Bot")
    ann_user = await synapse.register(synapse.fresh_name("ann"), displayname="Ann")
    env = bridge_env(synapse, bot, workdir / "bridge-state", MATRIX_LOG_LEVEL="WARNING")
    async with (
        signed_in(synapse, ann_user) as ann,
        switchboard_run_config(workdir, env, log_level="WARNING") as board,
    ):
        room = await ann.create_room("Bench", invite=[bot.user_id])
        warm = await ann.send(room, "warm-up")
        await _until(board.client, lambda m: m["message_id"] == warm)

        arrived: list[float] = []
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            group.start_soon(
                _drain, board.client, messages, lambda m, t: arrived.append(time.perf_counter())
            )
            await _send_all(ann, room, messages, in_flight, "bench")
        rate = messages / (max(arrived) - started)

        latencies: list[float] = []
        for i in range(samples):
            sent_at = time.time()
            event_id = await ann.send(room, f"latency {i}")
            received = await _until(board.client, lambda m, e=event_id: m["message_id"] == e)
            latencies.append((received - sent_at) * 1000)
    return Figures(rate, _percentile(latencies, 0.5), _percentile(latencies, 0.99))


async def _until(client: Client, predicate: Callable[[dict[str, Any]], bool]) -> float:
    with anyio.fail_after(60):
        while True:
            data = await call(client, "inbox", {"wait_seconds": 5, "limit": 500})
            now = time.time()
            if any(predicate(m) for m in data["messages"]):
                return now


def _demo_command(count: int, interval: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "switchboard.connectors.demo",
        "--interval",
        str(interval),
        "--count",
        str(count),
        "--log-level",
        "WARNING",
    ]


def _sent_at(message: dict[str, Any]) -> float:
    return datetime.fromisoformat(message["timestamp"].replace("Z", "+00:00")).timestamp()


async def demo_round(workdir: Path, messages: int, samples: int) -> Figures:
    first: list[float] = []
    last: list[float] = []
    async with switchboard_run_config(
        workdir / "demo-rate", command=_demo_command(messages, 0.0001), log_level="WARNING"
    ) as board:

        def seen(message: dict[str, Any], now: float) -> None:
            first.append(_sent_at(message))
            last.append(now)

        await _drain(board.client, messages, seen)
    rate = messages / (max(last) - min(first))
    latencies: list[float] = []
    async with switchboard_run_config(
        workdir / "demo-latency", command=_demo_command(samples, 0.02), log_level="WARNING"
    ) as board:
        await _drain(
            board.client, samples, lambda m, now: latencies.append((now - _sent_at(m)) * 1000)
        )
    return Figures(rate, _percentile(latencies, 0.5), _percentile(latencies, 0.99))


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _spread(values: list[float], unit: str, digits: int) -> str:
    return (
        f"{_median(values):,.{digits}f} {unit} "
        f"(range {min(values):,.{digits}f}-{max(values):,.{digits}f})"
    )


async def run(args: argparse.Namespace) -> None:
    python, took = await anyio.to_thread.run_sync(ensure_synapse)
    if took is not None:
        print(f"installed Synapse in {took:.0f} s")
    matrix: list[Figures] = []
    demo: list[Figures] = []
    solo: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="bench-matrix-") as tmp:
        synapse = Synapse(python, Path(tmp) / "synapse")
        await synapse.start_async()
        try:
            for n in range(args.rounds):
                workdir = Path(tmp) / f"round-{n}"
                workdir.mkdir()
                matrix.append(
                    await matrix_round(
                        synapse, workdir, args.messages, args.samples, args.in_flight
                    )
                )
                demo.append(await demo_round(workdir, args.messages, args.samples))
                solo.append(
                    await synapse_round(synapse, args.messages, args.samples, args.in_flight)
                )
                print(
                    f"round {n + 1}: "
                    + "; ".join(
                        f"{name} {f.rate:,.0f} msg/s p50 {f.p50_ms:.1f} ms p99 {f.p99_ms:.1f} ms"
                        for name, f in (
                            ("matrix", matrix[-1]),
                            ("demo", demo[-1]),
                            ("synapse only", solo[-1]),
                        )
                    ),
                    flush=True,
                )
        finally:
            await anyio.to_thread.run_sync(synapse.stop)
    print(
        f"\n{args.rounds} rounds, {args.messages} messages ({args.in_flight} sends in flight for "
        f"Matrix), latency over {args.samples} messages sent one at a time; medians:"
    )
    rows = (
        ("matrix (Synapse + bridge)", matrix),
        ("demo connector", demo),
        ("synapse only (no bridge)", solo),
    )
    for name, figures in rows:
        print(f"  {name:<26} {_spread([f.rate for f in figures], 'msg/s', 0)}")
        print(f"  {'':<26} p50 {_spread([f.p50_ms for f in figures], 'ms', 1)}")
        print(f"  {'':<26} p99 {_spread([f.p99_ms for f in figures], 'ms', 1)}")
    m_rate = _median([f.rate for f in matrix])
    d_rate = _median([f.rate for f in demo])
    s_rate = _median([f.rate for f in solo])
    print(f"ratio demo / matrix messages per second: {d_rate / m_rate:.2f}x")
    print(f"ratio matrix / synapse only messages per second: {m_rate / s_rate:.2f}x")
    for label, attribute in (("p50", "p50_ms"), ("p99", "p99_ms")):
        m = _median([getattr(f, attribute) for f in matrix])
        d = _median([getattr(f, attribute) for f in demo])
        h = _median([getattr(f, attribute) for f in solo])
        print(
            f"ratio matrix / demo latency {label}: {m / d:.2f}x "
            f"(a plain Matrix client's {label}, Synapse alone: {h:.1f} ms)"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--in-flight", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="a small run for a smoke test")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.messages, args.samples = 1, 60, 20
    anyio.run(run, args)


if __name__ == "__main__":
    main()
