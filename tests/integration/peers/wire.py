"""JSON-RPC for the scripted peer connectors: NDJSON on stdio, one message per WebSocket frame.

Each scripted connector in this package is a real program that Switchboard spawns (stdio) or
dials (WebSocket). They share this module for the wire: framing, their own request ids (numbers
from 1, or strings such as ``"s1"``), answering requests by method, and a **record** of every
message the host sent them, one JSON object per line in the file named on their command line,
written the moment it is read, so a test can assert on what the host really put on the wire.

Handlers run as tasks, so a connector that awaits one of its own requests keeps reading (as
real connectors built on an async library do); the record is written in arrival order before
any handler runs.

What it deliberately does not know: Switchboard (it imports nothing from it) and any peer's
code; the behaviours live in the scripts that use it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import orjson

__all__ = [
    "Wire",
    "incoming_message",
    "initialize_answer",
    "push_params",
    "serve_stdio",
    "serve_websocket",
]

Message = dict[str, Any]
Handler = Callable[[Message], Awaitable[None]]

TIMESTAMP = "2026-12-01T12:00:00Z"


class Wire:
    """One connection to the host, seen from the connector's side."""

    def __init__(self, record: str, *, ids: Iterator[int | str] | None = None) -> None:
        self._record = open(record, "ab", buffering=0)  # noqa: SIM115 - open for the process
        self._ids: Iterator[int | str] = ids if ids is not None else itertools.count(1)
        self._pending: dict[Any, asyncio.Future[Message]] = {}
        self._handlers: dict[str, Handler] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._send: Callable[[bytes], Awaitable[None]] | None = None
        self.on("ping", self._empty)
        self.on("tools/list", self._no_tools)

    async def _empty(self, request: Message) -> None:
        await self.answer(request, {})

    async def _no_tools(self, request: Message) -> None:
        await self.answer(request, {"tools": []})

    def on(self, method: str, handler: Handler) -> None:
        """Run ``handler`` (as a task) for each request or notification named ``method``."""
        self._handlers[method] = handler

    def attach(self, send: Callable[[bytes], Awaitable[None]]) -> None:
        self._send = send

    async def send(self, message: Message) -> None:
        await self.send_raw(orjson.dumps(message))

    async def send_raw(self, data: bytes) -> None:
        """Write ``data`` as one line or frame, JSON or not (a banner is not)."""
        assert self._send is not None, "not connected"
        await self._send(data)

    async def request(self, method: str, params: Any) -> Message:
        """Send a request and return the whole answer (``result`` or ``error``)."""
        return await (await self.call(method, params))

    async def call(self, method: str, params: Any) -> asyncio.Future[Message]:
        """Send a request now; the returned future is its answer (await it later)."""
        message, fut = self.prepare(method, params)
        await self.send(message)
        return fut

    def prepare(self, method: str, params: Any) -> tuple[Message, asyncio.Future[Message]]:
        """A request not sent yet, and the future its answer will resolve."""
        rid = next(self._ids)
        fut: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, fut

    def expect(self, rid: Any) -> asyncio.Future[Message]:
        """The next answer carrying id ``rid`` (for a request sent by hand with that id)."""
        fut: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        return fut

    async def send_together(self, *messages: Message) -> None:
        """Send ``messages`` as lines of one write, so the host reads them in one go (stdio)."""
        await self.send_raw(b"\n".join(orjson.dumps(m) for m in messages))

    def soon(self, call: Awaitable[Any]) -> asyncio.Task[Any]:
        """Run ``call`` as a task that is kept alive until it ends."""
        task = asyncio.ensure_future(call)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def notify(self, method: str, params: Any) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def answer(self, request: Message, result: Any) -> None:
        await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async def fail(self, request: Message, code: int, message: str) -> None:
        await self.send(
            {"jsonrpc": "2.0", "id": request["id"], "error": {"code": code, "message": message}}
        )

    async def received(self, data: bytes) -> None:
        """Record one message from the host, then route it."""
        message = orjson.loads(data)
        self._record.write(orjson.dumps(message) + b"\n")
        if "method" not in message:
            fut = self._pending.pop(message.get("id"), None)
            if fut is not None and not fut.done():
                fut.set_result(message)
            return
        handler = self._handlers.get(message["method"])
        if handler is not None:
            self.soon(handler(message))
        elif "id" in message:
            await self.fail(message, -32601, f"Method not found: {message['method']}")


def initialize_answer(name: str, mcpl: dict[str, Any], *, tools: bool = True) -> Message:
    """An ``initialize`` result carrying ``mcpl`` as ``capabilities.experimental.mcpl``."""
    capabilities: dict[str, Any] = {"experimental": {"mcpl": mcpl}}
    if tools:
        capabilities["tools"] = {}
    return {
        "protocolVersion": "2025-06-18",
        "serverInfo": {"name": name, "version": "0.0.1"},
        "capabilities": capabilities,
    }


def incoming_message(channel: str, mid: str, text: str, **extra: Any) -> Message:
    """One ``channels/incoming`` message from ``u1`` (Ann)."""
    return {
        "channelId": channel,
        "messageId": mid,
        "author": {"id": "u1", "name": "Ann"},
        "timestamp": TIMESTAMP,
        "content": [{"type": "text", "text": text}],
        **extra,
    }


def push_params(
    feature_set: str, event_id: str, text: str, origin: dict[str, Any] | None, **extra: Any
) -> Message:
    """``push/event`` params; ``origin`` None leaves it out."""
    params: Message = {
        "featureSet": feature_set,
        "eventId": event_id,
        "timestamp": TIMESTAMP,
        "payload": {"content": [{"type": "text", "text": text}]},
        **extra,
    }
    if origin is not None:
        params["origin"] = origin
    return params


async def serve_stdio(wire: Wire, *, banner: bytes | None = None) -> None:
    """Serve ``wire`` over stdin/stdout, one JSON message per line, until stdin ends.

    ``banner``, when given, is printed on stdout first, as a non-JSON line.
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)

    async def send(data: bytes) -> None:
        writer.write(data + b"\n")

    wire.attach(send)
    if banner is not None:
        await send(banner)
    while line := await reader.readline():
        if line.strip():
            await wire.received(line)
    os._exit(0)


async def serve_websocket(make_wire: Callable[[], Wire], path: str = "/mcpl") -> None:
    """Listen on a free loopback port, print it on stdout, serve each host that dials ``path``.

    ``make_wire`` gives each connection its own wire (and so its own scenario).
    """
    from websockets.asyncio.server import ServerConnection, serve

    async def handler(ws: ServerConnection) -> None:
        if ws.request is None or ws.request.path != path:
            await ws.close(1008, "use " + path)
            return
        wire = make_wire()

        async def send(data: bytes) -> None:
            await ws.send(data.decode())

        wire.attach(send)
        async for frame in ws:
            await wire.received(frame.encode() if isinstance(frame, str) else frame)

    async with serve(handler, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        sys.stdout.write(f"{port}\n")
        sys.stdout.flush()
        await asyncio.Event().wait()
