"""A channel-less connector that answers the policy Request ``-32601`` and pushes on a timer.

Usage: ``policy_request_unknown_pushes.py MODE RECORD``. The wire behaviour of heartbeat-mcpl
(peers.md §4), written from that description.

MODE ``legacy``: ``version: "0.4"``, ``channels: false``, ``pushEvents: true``, MCP ``tools``, and
one array-form set ``beat`` with ``uses: ["tools"]`` only. It answers the ``featureSets/update``
Request with ``-32601``; once the policy arrives as a Notification it pushes a heartbeat
(``event:beat-1``, ``origin.source: "heartbeat"``) and a reminder (``event:beat-2``), then,
once both are answered, ``event:beat-done``.

MODE ``strict``: a 0.5 connector with the same set in record form (``uses: ["tools"]``) and a
second set ``beat.declared`` that lists ``pushEvents``; it answers the policy Request, pushes
``beat-1`` on ``beat`` (a use its set does not declare) and then ``beat-done`` on
``beat.declared``.

Every message from the host is recorded in RECORD (see ``wire``).
"""

from __future__ import annotations

import asyncio
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

__all__ = ["LEGACY", "STRICT", "main"]

LEGACY: dict[str, Any] = {
    "version": "0.4",
    "pushEvents": True,
    "channels": False,
    "rollback": False,
    "featureSets": [{"name": "beat", "uses": ["tools"], "rollback": False, "hostState": False}],
}
STRICT: dict[str, Any] = {
    "version": "0.5",
    "pushEvents": True,
    "featureSets": {
        "beat": {"description": "heartbeats", "uses": ["tools"]},
        "beat.declared": {"description": "declared pushes", "uses": ["pushEvents"]},
    },
}
TOOLS = [
    {
        "name": "beat_trigger",
        "description": "Send a heartbeat now.",
        "inputSchema": {"type": "object", "properties": {}},
    }
]


async def main() -> None:
    mode, record = sys.argv[1], sys.argv[2]
    wire = Wire(record)
    started = asyncio.Event()

    async def initialize(msg: dict[str, Any]) -> None:
        advertisement = LEGACY if mode == "legacy" else STRICT
        await wire.answer(msg, initialize_answer("policy-request-unknown", advertisement))

    async def tools(msg: dict[str, Any]) -> None:
        await wire.answer(msg, {"tools": TOOLS})

    async def policy(msg: dict[str, Any]) -> None:
        if "id" in msg and mode == "legacy":
            await wire.fail(msg, -32601, "Method not found")
            return
        if "id" in msg:
            await wire.answer(msg, {"accepted": True})
        if started.is_set():
            return
        started.set()
        heartbeat = {"source": "heartbeat", "reason": "interval", "recurring": True}
        await wire.request("push/event", push_params("beat", "beat-1", "Heartbeat.", heartbeat))
        if mode == "legacy":
            reminder = {"source": "reminder", "reminderId": "r1", "recurring": False}
            await wire.request(
                "push/event", push_params("beat", "beat-2", "Stretch your legs.", reminder)
            )
        last = "beat" if mode == "legacy" else "beat.declared"
        await wire.request("push/event", push_params(last, "beat-done", "done", heartbeat))

    wire.on("initialize", initialize)
    wire.on("tools/list", tools)
    wire.on("featureSets/update", policy)
    await serve_stdio(wire)


if __name__ == "__main__":
    asyncio.run(main())
