"""A minimal, fast MCPL connector for benchmarks (raw asyncio + orjson, no switchboard imports).

Usage: ``python bench_connector.py incoming TOTAL WINDOW BATCH OUT`` blasts TOTAL
``channels/incoming`` requests of BATCH messages each, WINDOW in flight, once the host's policy
Request has been answered and its one channel registered, and writes the elapsed time to OUT.
``python bench_connector.py publish 0 0 0 OUT`` registers its channel, writes ``ready`` to OUT
and confirms every ``channels/publish``. It is written to cost as little as possible, so that
a benchmark measures the host, not this program.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import orjson

MANIFEST = {
    "protocolVersion": "2025-06-18",
    "serverInfo": {"name": "bench-connector", "version": "0"},
    "capabilities": {"experimental": {"mcpl": {"version": "0.5", "channels": True}}},
}
CHANNEL = {"id": "bench:c", "type": "bench", "label": "#c", "direction": "bidirectional"}


async def main() -> None:
    mode, total, window, batch, out = sys.argv[1], *map(int, sys.argv[2:5]), Path(sys.argv[5])
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    ready = asyncio.Event()
    registered = asyncio.Event()
    done = asyncio.Event()
    state: dict[str, Any] = {"sent": 0, "answered": 0, "published": 0}
    frames: list[bytes] = []

    def send_next() -> None:
        i = state["sent"]
        if i < total:
            state["sent"] = i + 1
            writer.write(frames[i])

    async def read() -> None:
        while line := await reader.readline():
            msg = orjson.loads(line)
            method = msg.get("method")
            if method is None:
                if msg.get("id") == "reg":
                    registered.set()
                    continue
                state["answered"] += 1
                if state["answered"] == total:
                    done.set()
                else:
                    send_next()
            elif method == "channels/publish":
                state["published"] += 1
                writer.write(
                    b'{"jsonrpc":"2.0","id":%s,"result":{"delivered":true,"messageId":"m%d"}}\n'
                    % (orjson.dumps(msg["id"]), state["published"])
                )
            elif method == "initialize":
                writer.write(
                    orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": MANIFEST}) + b"\n"
                )
            elif method == "featureSets/update" and "id" in msg:
                writer.write(
                    orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"accepted": True}})
                    + b"\n"
                )
                ready.set()
            elif "id" in msg:
                writer.write(
                    orjson.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": msg["id"],
                            "error": {"code": -32601, "message": "no"},
                        }
                    )
                    + b"\n"
                )

    reading = asyncio.create_task(read())
    await ready.wait()
    writer.write(
        orjson.dumps(
            {
                "jsonrpc": "2.0",
                "id": "reg",
                "method": "channels/register",
                "params": {"channels": [CHANNEL]},
            }
        )
        + b"\n"
    )
    await registered.wait()
    if mode == "incoming":
        for i in range(total):
            messages = [
                {
                    "channelId": "bench:c",
                    "messageId": f"{i}-{j}",
                    "author": {"id": "u1", "name": "Ann"},
                    "timestamp": "2026-11-29T12:00:00Z",
                    "content": [{"type": "text", "text": f"message {i}-{j} in the benchmark"}],
                }
                for j in range(batch)
            ]
            frames.append(
                orjson.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": i,
                        "method": "channels/incoming",
                        "params": {"messages": messages},
                    }
                )
                + b"\n"
            )
        started = time.perf_counter()
        for _ in range(window):
            send_next()
        await done.wait()
        elapsed = time.perf_counter() - started
        out.write_text(orjson.dumps({"seconds": elapsed, "messages": total * batch}).decode())
    else:
        out.write_text("ready")
    await reading


if __name__ == "__main__":
    asyncio.run(main())
