"""A connector that streams messages with requests in flight and tells what was answered.

Raw asyncio and orjson (no switchboard imports), run as a real stdio child of
``switchboard run``. Usage: ``python stream_connector.py OUT [--rate R] [--window W]
[--batch B]``.

After the policy exchange it registers ``s:room`` and ``s:other``, then sends
``channels/incoming`` batches of ``B`` messages on ``s:room`` at ``R`` messages a second, with
at most ``W`` requests in flight (it waits for an answer before going past ``W``). Every answer
is counted: accepted, or an error object (kept, one of each ``data.reason``). An error whose
``data.reason`` is ``shutting-down`` stops it sending (what was not taken it would send again
to the next host). When its stdin
ends (the host closed the link) it writes one JSON object to OUT and exits 0:
``{"sent", "accepted_batches", "errors", "reasons", "unanswered"}``, where ``unanswered`` is
the number of requests still waiting for an answer when the link closed.

It prints ``streaming`` on stderr when the first batch was accepted (the host passes it on as a
``connector_stderr`` line).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import orjson

MANIFEST = {
    "protocolVersion": "2025-06-18",
    "serverInfo": {"name": "stream-connector", "version": "0"},
    "capabilities": {"experimental": {"mcpl": {"version": "0.5", "channels": True}}},
}


def _frame(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"


def _message(n: int) -> dict[str, Any]:
    return {
        "channelId": "s:room",
        "messageId": f"m{n}",
        "author": {"id": "u1", "name": "Ann"},
        "timestamp": "2026-12-01T12:00:00Z",
        "content": [{"type": "text", "text": f"message {n}"}],
    }


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    p.add_argument("--rate", type=float, default=2000.0)
    p.add_argument("--window", type=int, default=4)
    p.add_argument("--batch", type=int, default=20)
    args = p.parse_args()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    ready = asyncio.Event()
    registered = asyncio.Event()
    in_flight: dict[int, None] = {}
    room = asyncio.Semaphore(args.window)
    counts = {"sent": 0, "accepted_batches": 0, "errors": 0}
    reasons: dict[str, dict[str, Any]] = {}
    told = [False]
    stopped = asyncio.Event()

    async def read() -> None:
        while line := await reader.readline():
            msg = orjson.loads(line)
            method = msg.get("method")
            if method is None:
                if msg.get("id") == "reg":
                    registered.set()
                    continue
                if in_flight.pop(msg.get("id"), "gone") == "gone":
                    continue
                room.release()
                if "error" in msg:
                    counts["errors"] += 1
                    data = msg["error"].get("data")
                    reason = data.get("reason") if isinstance(data, dict) else None
                    reasons.setdefault(str(reason), msg["error"])
                    if reason == "shutting-down":
                        stopped.set()
                else:
                    counts["accepted_batches"] += 1
                    if not told[0]:
                        told[0] = True
                        sys.stderr.write("streaming\n")
                        sys.stderr.flush()
            elif method == "initialize":
                writer.write(_frame({"jsonrpc": "2.0", "id": msg["id"], "result": MANIFEST}))
            elif method == "featureSets/update" and "id" in msg:
                writer.write(
                    _frame({"jsonrpc": "2.0", "id": msg["id"], "result": {"accepted": True}})
                )
                ready.set()
            elif method in ("channels/open", "channels/close") and "id" in msg:
                writer.write(_frame({"jsonrpc": "2.0", "id": msg["id"], "result": {}}))
            elif "id" in msg:
                error = {"code": -32601, "message": "not served"}
                writer.write(_frame({"jsonrpc": "2.0", "id": msg["id"], "error": error}))

    async def stream() -> None:
        await ready.wait()
        channels = [
            {"id": c, "type": "room", "label": f"#{c[2:]}", "direction": "bidirectional"}
            for c in ("s:room", "s:other")
        ]
        writer.write(
            _frame(
                {
                    "jsonrpc": "2.0",
                    "id": "reg",
                    "method": "channels/register",
                    "params": {"channels": channels},
                }
            )
        )
        await registered.wait()
        interval = args.batch / args.rate
        started = time.perf_counter()
        n = 0
        while not stopped.is_set():
            await room.acquire()
            if stopped.is_set():
                break
            due = started + n * interval
            if (wait := due - time.perf_counter()) > 0:
                await asyncio.sleep(wait)
            messages = [_message(n * args.batch + j) for j in range(args.batch)]
            in_flight[n] = None
            counts["sent"] += 1
            writer.write(
                _frame(
                    {
                        "jsonrpc": "2.0",
                        "id": n,
                        "method": "channels/incoming",
                        "params": {"messages": messages},
                    }
                )
            )
            n += 1

    streaming = asyncio.create_task(stream())
    await read()
    streaming.cancel()
    result = {**counts, "reasons": reasons, "unanswered": len(in_flight)}
    args.out.write_text(orjson.dumps(result).decode())


if __name__ == "__main__":
    asyncio.run(main())
