"""The fake platform of the cluster's fault tests, as a connector process.

Usage: ``platform_connector.py SERVER_ID DIR RATE [BATCH]``.

The platform's state lives in files, outside any process: ``DIR/<SERVER_ID>.acked`` holds a
line per message the host acknowledged (``accepted: true``): its number, the wall time and
the connector's pid;
``DIR/<SERVER_ID>.posted`` a line per ``channels/publish`` it answered ``delivered``. A new
connector process (started by whichever instance owns the connector now) resumes after the
highest acknowledged number, as a platform gateway resumes from its last acknowledged
position, so what was committed but not acknowledged is sent again (the host must take it as
a duplicate). It sends one request at a time, RATE a second (0: as fast as answered), of
BATCH messages (default 1) on ``<SERVER_ID>:room``; what is refused is sent again until
acknowledged. bench/bench_cluster.py drives it too.

Its MCP tools: ``whereami`` answers the connector's id and its parent's pid (the instance
running it); ``stall`` is never answered. ``context/beforeInference`` is answered with a
``beforeUser`` injection repeating the ``userMessage`` it observed and an ``afterUser`` one,
unless the file ``DIR/<SERVER_ID>.stall-context`` exists (then it is never answered).

Hand-rolled JSON-RPC on stdio with no Switchboard import, so that it starts in well under a
second: a failover's time is then the cluster's, not the connector's.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

import orjson

MANIFEST = {
    "protocolVersion": "2025-06-18",
    "serverInfo": {"name": "platform", "version": "0"},
    "capabilities": {
        "tools": {},
        "experimental": {
            "mcpl": {
                "version": "0.5",
                "channels": True,
                "contextHooks": {
                    "beforeInference": {
                        "observe": True,
                        "inject": {"beforeUser": True, "afterUser": True},
                    }
                },
            }
        },
    },
}
TOOLS = [
    {"name": "whereami", "inputSchema": {"type": "object"}},
    {"name": "stall", "inputSchema": {"type": "object"}},
]


def context_stalled(folder: str, sid: str) -> bool:
    return os.path.exists(os.path.join(folder, f"{sid}.stall-context"))


def last_acknowledged(path: str) -> int:
    try:
        with open(path, encoding="utf-8") as file:
            return max((int(line.split()[0]) for line in file if line.strip()), default=0)
    except FileNotFoundError:
        return 0


async def main() -> None:
    sid, folder, rate = sys.argv[1], sys.argv[2], float(sys.argv[3])
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    room = f"{sid}:room"
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    ready = asyncio.Event()
    waiting: dict[Any, asyncio.Future[Any]] = {}
    posted = os.open(os.path.join(folder, f"{sid}.posted"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)

    def send(obj: Any) -> None:
        writer.write(orjson.dumps(obj) + b"\n")

    def answer(rid: Any, result: Any) -> None:
        send({"jsonrpc": "2.0", "id": rid, "result": result})

    async def serve() -> None:
        while line := await reader.readline():
            msg = orjson.loads(line)
            if "method" not in msg:
                future = waiting.pop(msg.get("id"), None)
                if future is not None and not future.done():
                    future.set_result(msg)
                continue
            method, rid = msg["method"], msg.get("id")
            if method == "initialize":
                answer(rid, MANIFEST)
            elif method == "featureSets/update" and rid is not None:
                answer(rid, {"accepted": True})
                ready.set()
            elif method == "channels/publish" and rid is not None:
                mid = f"{sid}-out-{time.time_ns()}"
                os.write(posted, f"{mid} {time.time():.6f}\n".encode())
                answer(rid, {"delivered": True, "messageId": mid})
            elif method == "channels/open" and rid is not None:
                answer(rid, {"channel": {"id": (msg.get("params") or {}).get("channelId")}})
            elif method == "channels/close" and rid is not None:
                answer(rid, {})
            elif method == "tools/list" and rid is not None:
                answer(rid, {"tools": TOOLS})
            elif method == "tools/call" and rid is not None:
                # ``stall`` is never answered; ``whereami`` names the instance running us.
                if (msg.get("params") or {}).get("name") == "whereami":
                    ppid = os.getppid()
                    answer(
                        rid,
                        {
                            "content": [{"type": "text", "text": f"{sid} run by {ppid}"}],
                            "structuredContent": {"server": sid, "ppid": ppid},
                        },
                    )
            elif method == "context/beforeInference" and rid is not None:
                if not context_stalled(folder, sid):
                    seen = (msg.get("params") or {}).get("userMessage")
                    answer(
                        rid,
                        {
                            "contextInjections": [
                                {"namespace": sid, "position": "beforeUser", "content": f"{seen}"},
                                {"namespace": sid, "position": "afterUser", "content": "after"},
                            ]
                        },
                    )
            elif rid is not None:
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
        os._exit(0)  # the host closed our stdin: it is gone, so are we

    async def call(rid: Any, method: str, params: Any) -> Any:
        future: asyncio.Future[Any] = loop.create_future()
        waiting[rid] = future
        send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return await future

    server = asyncio.create_task(serve())
    await ready.wait()
    channel = {"id": room, "type": "platform", "label": f"#{sid}", "direction": "bidirectional"}
    await call("register", "channels/register", {"channels": [channel]})
    log_path = os.path.join(folder, f"{sid}.acked")
    n = last_acknowledged(log_path) + 1
    acked = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    pace = 1.0 / rate if rate > 0 else 0.0
    attempt = 0
    while not server.done():
        attempt += 1
        messages = [
            {
                "channelId": room,
                "messageId": f"{sid}-{k}",
                "author": {"id": "u1", "name": "Ann"},
                "timestamp": "2026-12-05T12:00:00Z",
                "content": [{"type": "text", "text": f"message {k} of {sid}"}],
            }
            for k in range(n, n + batch)
        ]
        reply = await call(f"in-{attempt}", "channels/incoming", {"messages": messages})
        results = (reply.get("result") or {}).get("results") or []
        if len(results) == batch and all(r.get("accepted") is True for r in results):
            stamp = f"{time.time():.6f} {os.getpid()}"
            os.write(acked, "".join(f"{k} {stamp}\n" for k in range(n, n + batch)).encode())
            os.fsync(acked)
            n += batch
        else:
            sys.stderr.write(f"refused {n}: {reply.get('error')}\n")
        await asyncio.sleep(pace)


if __name__ == "__main__":
    asyncio.run(main())
