"""A hand-rolled MCPL connector for end-to-end tests (raw asyncio, no switchboard imports).

Modes (argv[1]):

* ``malformed OUT``: after the policy exchange it registers ``raw:room`` and then sends a
  sequence of bad messages (unparsable JSON, an invalid request, an unknown method, bad params, a
  message for a channel it never registered), followed by one good ``channels/incoming``. Every
  answer it receives is written to OUT as JSON lines, and ``done`` is printed to stderr.
* ``banner OUT``: prints ``[raw-connector] Client initialized (MCPL mode)`` on stdout right
  after ``notifications/initialized`` (as discord-mcpl and slack-mcpl do), registers
  ``raw:room``, writes one JSON line to OUT (``loose``: every message it received that
  answered nothing it sent; an answer to the banner would be one), then sends one
  ``channels/incoming`` (``m-after-banner``) and prints ``done`` to stderr.
* ``counting OUT``: registers ``raw:room`` and sends one message at a time, forever; after each
  ``accepted: true`` it appends the message id to OUT (fsynced) and prints ``accepted N`` on
  stderr.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import orjson

MANIFEST = {
    "protocolVersion": "2025-06-18",
    "serverInfo": {"name": "raw-connector", "version": "0"},
    "capabilities": {"experimental": {"mcpl": {"version": "0.5", "channels": True}}},
}
ROOM = {"id": "raw:room", "type": "raw", "label": "#room", "direction": "bidirectional"}


def message(mid: str, channel: str = "raw:room") -> dict[str, Any]:
    return {
        "channelId": channel,
        "messageId": mid,
        "author": {"id": "u1", "name": "Ann"},
        "timestamp": "2026-11-29T12:00:00Z",
        "content": [{"type": "text", "text": f"text of {mid}"}],
    }


async def main() -> None:
    mode, out = sys.argv[1], sys.argv[2]
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    ready = asyncio.Event()
    answers: dict[Any, asyncio.Future[Any]] = {}
    loose: asyncio.Queue[Any] = asyncio.Queue()

    def raw(data: bytes) -> None:
        writer.write(data + b"\n")

    async def read() -> None:
        while line := await reader.readline():
            msg = orjson.loads(line)
            if isinstance(msg, list) or "method" not in msg:
                key = None if isinstance(msg, list) else msg.get("id")
                fut = answers.pop(key, None) if key is not None else None
                if fut is not None:
                    fut.set_result(msg)
                else:
                    await loose.put(msg)
                continue
            method = msg["method"]
            if method == "initialize":
                raw(orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": MANIFEST}))
            elif method == "notifications/initialized" and mode == "banner":
                raw(b"[raw-connector] Client initialized (MCPL mode)")
            elif method == "featureSets/update" and "id" in msg:
                raw(orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"accepted": True}}))
                ready.set()
            elif "id" in msg:
                raw(
                    orjson.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": msg["id"],
                            "error": {"code": -32601, "message": "no"},
                        }
                    )
                )
        os._exit(0)

    async def call(rid: Any, method: str, params: Any) -> Any:
        fut: asyncio.Future[Any] = loop.create_future()
        answers[rid] = fut
        raw(orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        return await fut

    reader_task = asyncio.create_task(read())
    await ready.wait()
    await call("reg", "channels/register", {"channels": [ROOM]})
    if mode == "malformed":
        got: list[Any] = []
        raw(b'{"jsonrpc": "2.0", "id": 1, "method": ')  # unparsable JSON
        got.append(await asyncio.wait_for(loose.get(), 10))
        raw(b'{"jsonrpc": "2.0", "id": 2}')  # neither a request nor a response
        got.append(await asyncio.wait_for(loose.get(), 10))
        raw(b"[]")  # an empty batch
        got.append(await asyncio.wait_for(loose.get(), 10))
        got.append(await call(3, "no/such/method", {}))
        got.append(await call(4, "channels/incoming", {"messages": "not a list"}))
        got.append(await call(5, "channels/register", {"channels": 7}))
        got.append(
            await call(6, "channels/incoming", {"messages": [message("ghost", "raw:never")]})
        )
        got.append(await call(7, "channels/incoming", {"messages": [message("m-good")]}))
        with open(out, "wb") as f:
            for g in got:
                f.write(orjson.dumps(g) + b"\n")
        print("done", file=sys.stderr, flush=True)
    elif mode == "banner":
        # The host answers in order: an answer to the banner would have come before the
        # answer to the register call, so what is loose now is all there will be.
        stray = [loose.get_nowait() for _ in range(loose.qsize())]
        with open(out, "wb") as f:
            f.write(orjson.dumps({"loose": stray}) + b"\n")
        await call(10, "channels/incoming", {"messages": [message("m-after-banner")]})
        print("done", file=sys.stderr, flush=True)
    else:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        n = 0
        while True:
            n += 1
            mid = f"m-{n}"
            reply = await call(f"in-{n}", "channels/incoming", {"messages": [message(mid)]})
            if reply["result"]["results"][0]["accepted"] is True:
                os.write(fd, mid.encode() + b"\n")
                os.fsync(fd)
                print(f"accepted {n}", file=sys.stderr, flush=True)
    await reader_task


if __name__ == "__main__":
    asyncio.run(main())
