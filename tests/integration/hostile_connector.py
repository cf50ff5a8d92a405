"""A hostile MCPL connector for the limit tests and the bench (raw asyncio, no switchboard imports).

``python hostile_connector.py OUT N [--probe]``: after the policy exchange it registers ``N``
channels ``h:0`` .. ``h:N-1``, every one ``initiallyOpen``, in ``channels/register`` Requests of
1,000 descriptors each (one after another), and
answers every ``channels/open`` the host sends (counting them). It writes one JSON line to OUT
per step, ``{"step": ..., "answer": ...}``:

* ``register``: ``{"result": {"results": [...]}, "errors": [...]}``, every register's results
  in order and the error objects of any register answered with an error;
* with ``--probe``:
  * ``oversized``: the answer to a 70,000-byte ``channels/incoming`` line (a frame too large);
  * ``unregistered``: the answer to a message for ``h:<N-1>`` (refused past the cap);
  * ``burst``: the answers to batches of four messages for ``h:0`` sent until one is refused
    (the message rate), then ``resent``: the answer to that batch sent again after its
    ``retryAfterMs`` (repeated until accepted: nothing is lost);
* ``opens``: how many ``channels/open`` Requests the host sent so far;
* then it sends ``m-done`` for ``h:0`` (retrying while it is rate-limited), prints ``done`` on
  stderr, and writes ``opens`` again every half second until it is stopped.

``python hostile_connector.py OUT N --flood K``: after registering, it sends ``K``
``channels/changed`` Notifications one after another, each adding one channel ``f:<i>`` (every
tenth ``initiallyOpen``, its open answered with an error) and removing the one before, then a
thousand each of what a host should never answer: an error with ``id: null``, a response to an
id it never used, a malformed ``mcpl/manifestChanged``, a ``notifications/message`` and a
notification no one knows. Then it sends ``m-done`` for ``h:0`` and, once that is answered
(the host handled everything before it, in order), prints ``flooded`` on stderr.

``python hostile_connector.py OUT 1 --steady``: a well-behaved connector for the storage
tests. After registering ``h:0`` it sends ``s-1``, ``s-2``, ... one at a time, 20 ms apart,
for ever. A message is sent again (20 ms later) until it is acknowledged: every error answer is
written as ``{"step": "refused", "answer": ...}`` and each acknowledgement as
``{"step": "acked", "answer": "s-N"}`` (written at once).
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from typing import Any

import orjson

MANIFEST = {
    "protocolVersion": "2025-06-18",
    "serverInfo": {"name": "hostile-connector", "version": "0"},
    "capabilities": {
        "experimental": {
            "mcpl": {
                "version": "0.5",
                "channels": {
                    "register": True,
                    "publish": True,
                    "incoming": True,
                    "lifecycle": True,
                },
            }
        }
    },
}

CHUNK = 1000
"""Descriptors per ``channels/register``."""


def descriptor(i: int) -> dict[str, Any]:
    return {
        "id": f"h:{i}",
        "type": "hostile",
        "label": f"#room-{i}",
        "direction": "bidirectional",
        "address": {"channelId": str(i)},
        "initiallyOpen": True,
    }


def message(mid: str, channel: str = "h:0", text: str = "") -> dict[str, Any]:
    return {
        "channelId": channel,
        "messageId": mid,
        "author": {"id": "u1", "name": "Mallory"},
        "timestamp": "2026-12-01T12:00:00Z",
        "content": [{"type": "text", "text": text or f"text of {mid}"}],
    }


def flooded_channel(i: int) -> dict[str, Any]:
    """Channel ``f:<i>`` of the flood: every tenth ``initiallyOpen``."""
    return {
        "id": f"f:{i}",
        "type": "hostile",
        "label": f"#flood-{i}",
        "direction": "bidirectional",
        "initiallyOpen": i % 10 == 0,
    }


async def flood(raw: Any, drain: Any, count: int) -> None:
    """``count`` ``channels/changed`` Notifications, then stray frames (see the docstring)."""
    for i in range(count):
        params: dict[str, Any] = {"added": [flooded_channel(i)]}
        if i:
            params["removed"] = [f"f:{i - 1}"]
        raw(orjson.dumps({"jsonrpc": "2.0", "method": "channels/changed", "params": params}))
        if i % 500 == 499:
            await drain()
    for n in range(1000):
        error = {"code": -32600, "message": f"I did not understand frame {n}"}
        raw(orjson.dumps({"jsonrpc": "2.0", "id": None, "error": error}))
        raw(orjson.dumps({"jsonrpc": "2.0", "id": f"never-{n}", "result": {}}))
        raw(orjson.dumps({"jsonrpc": "2.0", "method": "mcpl/manifestChanged", "params": [n]}))
        note = {"level": "info", "data": f"connector note {n}"}
        raw(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": note}))
        raw(orjson.dumps({"jsonrpc": "2.0", "method": "x/unknown", "params": {"n": n}}))
        if n % 100 == 99:
            await drain()


async def main() -> None:
    out, count = sys.argv[1], int(sys.argv[2])
    probe = "--probe" in sys.argv[3:]
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    ready = asyncio.Event()
    answers: dict[Any, asyncio.Future[Any]] = {}
    loose: asyncio.Queue[Any] = asyncio.Queue()
    ids = itertools.count(1)
    opens = 0

    def raw(data: bytes) -> None:
        writer.write(data + b"\n")

    async def read() -> None:
        nonlocal opens
        while line := await reader.readline():
            msg = orjson.loads(line)
            if "method" not in msg:
                fut = answers.pop(msg.get("id"), None)
                if fut is not None:
                    fut.set_result(msg)
                else:
                    await loose.put(msg)
                continue
            method, mid = msg["method"], msg.get("id")
            result: Any = None
            if method == "initialize":
                result = MANIFEST
            elif method == "featureSets/update" and mid is not None:
                result = {"accepted": True}
                ready.set()
            elif method == "channels/open":
                opens += 1
                cid = msg["params"].get("channelId", "")
                if cid.startswith("f:"):  # the flood's channels cannot be opened
                    error = {"code": -32000, "message": "this room cannot be opened"}
                    raw(orjson.dumps({"jsonrpc": "2.0", "id": mid, "error": error}))
                    continue
                result = {"channel": descriptor(int(cid.split(":")[1]))}
            elif mid is not None:
                raw(
                    orjson.dumps(
                        {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no"}}
                    )
                )
                continue
            if mid is not None:
                raw(orjson.dumps({"jsonrpc": "2.0", "id": mid, "result": result}))

    async def request(method: str, params: Any) -> Any:
        rid = next(ids)
        fut: asyncio.Future[Any] = loop.create_future()
        answers[rid] = fut
        raw(orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        await writer.drain()
        return await fut

    def record(step: str, answer: Any) -> None:
        with open(out, "ab") as f:
            f.write(orjson.dumps({"step": step, "answer": answer}) + b"\n")

    async def until_taken(messages: list[dict[str, Any]]) -> Any:
        """Send a batch until it is not refused for its rate; return the last answer."""
        for _ in range(20):
            answer = await request("channels/incoming", {"messages": messages})
            data = (answer.get("error") or {}).get("data") or {}
            if data.get("reason") != "rate-limited":
                return answer
            await asyncio.sleep(data["retryAfterMs"] / 1000)
        return answer

    reading = asyncio.create_task(read())
    await ready.wait()
    results: list[Any] = []
    errors: list[Any] = []
    for start in range(0, count, CHUNK):
        chunk = [descriptor(i) for i in range(start, min(count, start + CHUNK))]
        answer = await request("channels/register", {"channels": chunk})
        if "error" in answer:
            errors.append(answer["error"])
        else:
            results.extend(answer["result"]["results"])
    record("register", {"result": {"results": results}, "errors": errors})
    if "--flood" in sys.argv[3:]:
        await flood(raw, writer.drain, int(sys.argv[sys.argv.index("--flood") + 1]))
        answer = await until_taken([message("m-done")])
        record("done", answer)
        sys.stderr.write("flooded\n")
        sys.stderr.flush()
        await reading
        return
    if "--steady" in sys.argv[3:]:
        for n in itertools.count(1):
            mid = f"s-{n}"
            while True:
                answer = await request("channels/incoming", {"messages": [message(mid)]})
                if "error" in answer:
                    record("refused", answer)
                elif answer["result"]["results"][0]["accepted"]:
                    record("acked", mid)
                    break
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.02)
    if probe:
        huge = message("m-huge", text="x" * 70_000)
        raw(
            orjson.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 999,
                    "method": "channels/incoming",
                    "params": {"messages": [huge]},
                }
            )
        )
        record("oversized", await loose.get())
        last = f"h:{count - 1}"
        record(
            "unregistered", await request("channels/incoming", {"messages": [message("m-x", last)]})
        )
        burst: list[Any] = []
        for n in range(50):
            batch = [message(f"m-{n}-{k}") for k in range(4)]
            answer = await request("channels/incoming", {"messages": batch})
            burst.append(answer)
            if "error" in answer:
                record("burst", burst)
                record("resent", await until_taken(batch))
                break
    record("opens", opens)
    await until_taken([message("m-done")])
    sys.stderr.write("done\n")
    sys.stderr.flush()
    while not reading.done():  # the opens the host is still sending, for the bench
        await asyncio.sleep(0.5)
        record("opens", opens)


if __name__ == "__main__":
    asyncio.run(main())
