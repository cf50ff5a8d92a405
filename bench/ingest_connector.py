"""The connector program of ``bench_ingest.py`` (raw asyncio + orjson, no switchboard imports).

It speaks just enough MCPL to be served by Switchboard and by the benchmark's minimal host: it
answers ``initialize`` and ``featureSets/update``, registers its channels, then does one job
and writes what it measured to OUT as JSON.

Usage: ``python ingest_connector.py MODE OUT [options]``, where MODE is

- ``incoming``: registers ``--channels`` channels, then sends ``--messages`` messages (~220 B
  each) in ``channels/incoming`` batches of ``--batch`` spread over the channels, ``--window``
  requests in flight, each answer releasing the next request. OUT gets ``seconds``,
  ``messages``, ``accepted`` (messages answered ``accepted: true``) and the median round trip.
- ``soak``: the same, but paced at ``--rate`` messages per second for ``--seconds``; every
  ``--every`` seconds it appends one JSON line (count, p50 and p99 round trip of a batch) to OUT.
- ``publish``: registers its channels, writes ``{"ready": true}`` and confirms every
  ``channels/publish``.
- ``register``: registers ``--channels`` channels in one request and writes the seconds from
  sending the request (pre-encoded) to reading its result.

It is written to cost as little as possible, so that the benchmark measures the host.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import orjson

__all__ = ["main", "message"]

MANIFEST = {
    "protocolVersion": "2025-06-18",
    "serverInfo": {"name": "ingest-connector", "version": "0"},
    "capabilities": {"experimental": {"mcpl": {"version": "0.5", "channels": True}}},
}
_PAD = "lorem ipsum dolor sit amet, consectetur adipiscing"


def channel(i: int) -> dict[str, Any]:
    """The descriptor of channel ``i``."""
    return {"id": f"bench:c{i}", "type": "bench", "label": f"#c{i}", "direction": "bidirectional"}


def message(n: int, channels: int) -> dict[str, Any]:
    """Message ``n`` (about 220 bytes on the wire), on channel ``n % channels``."""
    return {
        "channelId": f"bench:c{n % channels}",
        "messageId": f"m{n}",
        "author": {"id": f"u{n % 37}", "name": "Ann Example"},
        "timestamp": "2026-11-29T12:00:00Z",
        "content": [{"type": "text", "text": f"message {n} in the benchmark: {_PAD}"}],
    }


def _frame(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"


def _incoming(i: int, first: int, batch: int, channels: int) -> bytes:
    messages = [message(first + j, channels) for j in range(batch)]
    return _frame(
        {"jsonrpc": "2.0", "id": i, "method": "channels/incoming", "params": {"messages": messages}}
    )


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["incoming", "soak", "publish", "register"])
    p.add_argument("out", type=Path)
    p.add_argument("--messages", type=int, default=200_000)
    p.add_argument("--window", type=int, default=1)
    p.add_argument("--batch", type=int, default=50)
    p.add_argument("--channels", type=int, default=100)
    p.add_argument("--rate", type=float, default=2000.0)
    p.add_argument("--seconds", type=float, default=120.0)
    p.add_argument("--every", type=float, default=10.0)
    args = p.parse_args()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 28)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    ready = asyncio.Event()
    registered = asyncio.Event()
    answers: dict[Any, asyncio.Future[dict[str, Any]]] = {}
    registered_at = [0.0]
    published = [0]

    async def read() -> None:
        while line := await reader.readline():
            msg = orjson.loads(line)
            method = msg.get("method")
            if method is None:
                if msg.get("id") == "reg":
                    registered_at[0] = time.perf_counter()
                    registered.set()
                    continue
                fut = answers.pop(msg.get("id"), None)
                if fut is not None:
                    fut.set_result(msg)
            elif method == "channels/publish":
                published[0] += 1
                writer.write(
                    b'{"jsonrpc":"2.0","id":%s,"result":{"delivered":true,"messageId":"p%d"}}\n'
                    % (orjson.dumps(msg["id"]), published[0])
                )
            elif method == "initialize":
                writer.write(_frame({"jsonrpc": "2.0", "id": msg["id"], "result": MANIFEST}))
            elif method == "featureSets/update" and "id" in msg:
                writer.write(
                    _frame({"jsonrpc": "2.0", "id": msg["id"], "result": {"accepted": True}})
                )
                ready.set()
            elif "id" in msg:
                error = {"code": -32601, "message": "no"}
                writer.write(_frame({"jsonrpc": "2.0", "id": msg["id"], "error": error}))

    reading = asyncio.create_task(read())
    await ready.wait()
    register = _frame(
        {
            "jsonrpc": "2.0",
            "id": "reg",
            "method": "channels/register",
            "params": {"channels": [channel(i) for i in range(args.channels)]},
        }
    )
    sent_at = time.perf_counter()
    writer.write(register)
    await registered.wait()
    if args.mode == "register":
        args.out.write_text(orjson.dumps({"seconds": registered_at[0] - sent_at}).decode())
    elif args.mode == "publish":
        args.out.write_text(orjson.dumps({"ready": True}).decode())
    elif args.mode == "incoming":
        await _blast(args, writer, answers)
    else:
        await _soak(args, writer, answers)
    await reading


async def _call(
    writer: asyncio.StreamWriter,
    answers: dict[Any, asyncio.Future[dict[str, Any]]],
    i: int,
    frame: bytes,
) -> tuple[float, int]:
    """Send one pre-encoded request; its round trip in seconds and its accepted count."""
    fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    answers[i] = fut
    start = time.perf_counter()
    writer.write(frame)
    reply = await fut
    rtt = time.perf_counter() - start
    results = reply["result"]["results"]
    return rtt, sum(1 for r in results if r["accepted"])


async def _blast(
    args: argparse.Namespace,
    writer: asyncio.StreamWriter,
    answers: dict[Any, asyncio.Future[dict[str, Any]]],
) -> None:
    requests = args.messages // args.batch
    frames = [_incoming(i, i * args.batch, args.batch, args.channels) for i in range(requests)]
    rtts: list[float] = []
    accepted = [0]
    queue = iter(range(requests))

    async def lane() -> None:
        for i in queue:
            rtt, ok = await _call(writer, answers, i, frames[i])
            rtts.append(rtt)
            accepted[0] += ok

    args.out.with_suffix(".start").write_text("started")
    started = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(args.window)))
    elapsed = time.perf_counter() - started
    result = {
        "seconds": elapsed,
        "messages": requests * args.batch,
        "accepted": accepted[0],
        "rtt_median_us": statistics.median(rtts) * 1e6,
        "bytes_per_message": (len(frames[0]) - 80) / args.batch,
    }
    args.out.write_text(orjson.dumps(result).decode())


async def _soak(
    args: argparse.Namespace,
    writer: asyncio.StreamWriter,
    answers: dict[Any, asyncio.Future[dict[str, Any]]],
) -> None:
    """Paced batches; one line per interval with the batch round trips' p50 and p99."""
    interval = args.batch / args.rate
    started = time.perf_counter()
    rtts: list[float] = []
    tasks: set[asyncio.Task[None]] = set()
    total = [0]
    lines = args.out.open("a")
    mark = started + args.every
    i = 0

    async def one(n: int) -> None:
        rtt, ok = await _call(
            writer, answers, n, _incoming(n, n * args.batch, args.batch, args.channels)
        )
        rtts.append(rtt)
        total[0] += ok

    while (now := time.perf_counter()) - started < args.seconds:
        due = started + i * interval
        if due > now:
            await asyncio.sleep(due - now)
        task = asyncio.create_task(one(i))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        i += 1
        if time.perf_counter() >= mark:
            mark += args.every
            rtts.sort()
            line = {
                "t": round(time.perf_counter() - started, 1),
                "accepted": total[0],
                "p50_ms": rtts[len(rtts) // 2] * 1e3 if rtts else None,
                "p99_ms": rtts[int(len(rtts) * 0.99)] * 1e3 if rtts else None,
            }
            lines.write(orjson.dumps(line).decode() + "\n")
            lines.flush()
            rtts.clear()
    await asyncio.gather(*tasks)
    lines.write(orjson.dumps({"done": True, "accepted": total[0]}).decode() + "\n")
    lines.close()


if __name__ == "__main__":
    asyncio.run(main())
