"""A channel-less 0.4 connector with string request ids whose own tool triggers a push.

Usage: ``tool_triggered_push_string_ids.py RECORD``. The wire behaviour of dog_events_mcpl
(peers.md §7), written from that description: ``version: "0.4"``, ``channels: false``,
``pushEvents: true``, the 0.4 ``contextHooks`` shape (``beforeInference: true``,
``afterInference: {blocking: false}``), one array-form set ``watch`` with ``uses: ["tools"]``,
``-32601`` on the policy Request, and request ids that are strings (``"s1"``, ``"s2"``, ...).

Once the policy arrives as a Notification it pushes ``event:watch-online``. Its MCP tool
``watch_test_push`` pushes ``event:watch-test-N`` and answers the call only after that push was
answered; ``watch_status`` answers with text. It answers ``context/beforeInference`` and
``context/afterInference`` in the 0.4 shapes.

Every message from the host is recorded in RECORD (see ``wire``).
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.integration.peers.wire import (
    Wire,
    initialize_answer,
    push_params,
    serve_stdio,
)

__all__ = ["ADVERTISEMENT", "TOOLS", "main"]

ADVERTISEMENT: dict[str, Any] = {
    "version": "0.4",
    "pushEvents": True,
    "channels": False,
    "rollback": False,
    "contextHooks": {"beforeInference": True, "afterInference": {"blocking": False}},
    "featureSets": [
        {
            "name": "watch",
            "description": "Embodiment attention",
            "uses": ["tools"],
            "rollback": False,
            "hostState": False,
        }
    ],
}
TOOLS = [
    {
        "name": "watch_test_push",
        "description": "Send a test push event now.",
        "inputSchema": {"type": "object", "properties": {"note": {"type": "string"}}},
    },
    {
        "name": "watch_status",
        "description": "Say whether the robot is online.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


async def main() -> None:
    wire = Wire(sys.argv[1], ids=(f"s{n}" for n in itertools.count(1)))
    started = asyncio.Event()
    tests = itertools.count(1)

    async def initialize(msg: dict[str, Any]) -> None:
        await wire.answer(msg, initialize_answer("tool-triggered-push", ADVERTISEMENT))

    async def policy(msg: dict[str, Any]) -> None:
        if "id" in msg:
            await wire.fail(msg, -32601, "Method not found")
            return
        if started.is_set():
            return
        started.set()
        origin = {"source": "watch", "kind": "relay"}
        await wire.request("push/event", push_params("watch", "watch-online", "Relay up.", origin))

    async def tools(msg: dict[str, Any]) -> None:
        await wire.answer(msg, {"tools": TOOLS})

    async def call_tool(msg: dict[str, Any]) -> None:
        name = msg["params"]["name"]
        if name == "watch_status":
            await wire.answer(msg, {"content": [{"type": "text", "text": "offline"}]})
            return
        if name != "watch_test_push":
            await wire.answer(
                msg, {"content": [{"type": "text", "text": f"no tool {name}"}], "isError": True}
            )
            return
        n = next(tests)
        note = str(msg["params"].get("arguments", {}).get("note", "test"))
        pushed = await wire.request(
            "push/event", push_params("watch", f"watch-test-{n}", note, {"source": "test"})
        )
        text = f"test push {n}: {'accepted' if 'result' in pushed else 'refused'}"
        await wire.answer(msg, {"content": [{"type": "text", "text": text}]})

    async def before_inference(msg: dict[str, Any]) -> None:
        await wire.answer(msg, {"featureSet": "watch", "contextInjections": []})

    async def after_inference(msg: dict[str, Any]) -> None:
        await wire.answer(msg, {"featureSet": "watch"})

    wire.on("initialize", initialize)
    wire.on("featureSets/update", policy)
    wire.on("tools/list", tools)
    wire.on("tools/call", call_tool)
    wire.on("context/beforeInference", before_inference)
    wire.on("context/afterInference", after_inference)
    await serve_stdio(wire)


if __name__ == "__main__":
    asyncio.run(main())
