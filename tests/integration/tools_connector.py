"""A pre-0.5 connector with MCP tools, for end-to-end tests (raw asyncio, no switchboard imports).

It behaves as heartbeat-mcpl and dog_events_mcpl do on the wire (peers.md §4, §7), in our own
words: MCPL 0.4 advertisement with an array-form feature set whose ``uses`` is ``["tools"]``,
MCP ``capabilities.tools``, and ``-32601`` for the ``featureSets/update`` Request. Its
``tools/list`` is served two tools per page with ``nextCursor``. Tools:

* ``echo {text}``: answers ``content`` and ``structuredContent`` (``{"echoed": text}``);
* ``push_first``: sends a ``push/event`` Request (string id ``s1``) to the host and waits for
  the host's answer *before* answering the ``tools/call``; the result carries that answer as
  ``structuredContent.push_answer``;
* ``sorry``: answers a tool result with ``isError: true``;
* ``broken``: answers the ``tools/call`` with a JSON-RPC error ``-32000``;
* ``grow``: adds the tool ``late`` to its list, answers, then sends
  ``notifications/tools/list_changed``;
* ``exit_now``: exits the process without answering.

Modes (argv[1]): ``normal``; ``cursor-loop``, where every ``tools/list`` page names the same
``nextCursor`` (a connector defect the host must end); ``mute``, which never answers
``initialize`` (the connection stays connecting).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import orjson

MANIFEST = {
    "protocolVersion": "2025-06-18",
    "serverInfo": {"name": "tools-connector", "version": "0"},
    "capabilities": {
        "tools": {"listChanged": True},
        "experimental": {
            "mcpl": {
                "version": "0.4",
                "pushEvents": True,
                "channels": False,
                "featureSets": [
                    {"name": "toolbox", "uses": ["tools"], "rollback": False, "hostState": False}
                ],
            }
        },
    },
}
NO_ARGS = {"type": "object", "properties": {}}
TOOLS: list[dict[str, Any]] = [
    {
        "name": "echo",
        "title": "Echo",
        "description": "Say the text back.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"echoed": {"type": "string"}},
            "required": ["echoed"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {"name": "push_first", "description": "Push an event, then answer.", "inputSchema": NO_ARGS},
    {"name": "sorry", "description": "Fail as a tool.", "inputSchema": NO_ARGS},
    {"name": "broken", "description": "Fail as a server.", "inputSchema": NO_ARGS},
    {"name": "grow", "description": "Add a tool.", "inputSchema": NO_ARGS},
    {"name": "exit_now", "description": "Exit at once.", "inputSchema": NO_ARGS},
    {"name": "huge", "description": "Answer with 600 KiB of text.", "inputSchema": NO_ARGS},
]
LATE = {"name": "late", "description": "Added by grow.", "inputSchema": NO_ARGS}


def text(words: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": words}]


async def main() -> None:
    mode = sys.argv[1]
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    answers: dict[Any, asyncio.Future[Any]] = {}
    tools = list(TOOLS)
    tasks: set[asyncio.Task[None]] = set()

    def send(msg: dict[str, Any]) -> None:
        writer.write(orjson.dumps({"jsonrpc": "2.0", **msg}) + b"\n")

    async def request(rid: str, method: str, params: Any) -> Any:
        fut: asyncio.Future[Any] = loop.create_future()
        answers[rid] = fut
        send({"id": rid, "method": method, "params": params})
        return await fut

    def tools_page(params: dict[str, Any]) -> dict[str, Any]:
        if mode == "cursor-loop":
            return {"tools": tools[:2], "nextCursor": "again"}
        start = int(params.get("cursor") or 0)
        page: dict[str, Any] = {"tools": tools[start : start + 2]}
        if start + 2 < len(tools):
            page["nextCursor"] = str(start + 2)
        return page

    async def call(rid: Any, params: dict[str, Any]) -> None:
        name = params.get("name")
        result: dict[str, Any]
        if name == "echo":
            said = params.get("arguments", {}).get("text", "")
            result = {"content": text(said), "structuredContent": {"echoed": said}}
        elif name == "push_first":
            push = {
                "featureSet": "toolbox",
                "eventId": "e-1",
                "timestamp": "2026-12-01T12:00:00Z",
                "origin": {"source": "tool"},
                "payload": {"content": text("pushed before the answer")},
            }
            answer = await request("s1", "push/event", push)
            result = {"content": text("pushed"), "structuredContent": {"push_answer": answer}}
        elif name == "sorry":
            result = {"content": text("the tool could not do it"), "isError": True}
        elif name == "broken":
            send({"id": rid, "error": {"code": -32000, "message": "the toolbox is on fire"}})
            return
        elif name == "grow":
            tools.append(LATE)
            send({"id": rid, "result": {"content": text("grown")}})
            send({"method": "notifications/tools/list_changed"})
            return
        elif name == "huge":
            result = {"content": text("x" * (600 * 1024))}
        elif name == "exit_now":
            await writer.drain()
            os._exit(0)
        else:
            send({"id": rid, "error": {"code": -32602, "message": f"no tool {name!r}"}})
            return
        send({"id": rid, "result": result})

    while line := await reader.readline():
        msg = orjson.loads(line)
        if "method" not in msg:
            fut = answers.pop(msg.get("id"), None)
            if fut is not None:
                fut.set_result(msg)
            continue
        method, rid, params = msg["method"], msg.get("id"), msg.get("params") or {}
        if rid is None:
            continue
        if method == "initialize":
            if mode != "mute":
                send({"id": rid, "result": MANIFEST})
        elif method == "tools/list":
            send({"id": rid, "result": tools_page(params)})
        elif method == "tools/call":
            task = asyncio.create_task(call(rid, params))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        elif method == "channels/list":
            send({"id": rid, "result": {"channels": []}})
        else:
            send({"id": rid, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    asyncio.run(main())
