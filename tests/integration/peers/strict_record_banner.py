"""A strict 0.5 connector that checks every privileged method against its grant, with a banner.

Usage: ``strict_record_banner.py RECORD``. The wire behaviour of slack-mcpl (peers.md §9),
written from that description: a non-JSON banner on stdout once at start-up; ``version:
"0.5"``, record-form sets, ``channels`` as an object without ``typing`` or ``acknowledge``;
inert until a ``featureSets/update`` **Request** (a Notification grants nothing); it registers
``team:C1`` and ``team:D1`` once ``channels.register`` is granted, then sends an incoming
message (``1700000000.000100``) and a mention push (``event:team-mention-1``). A host request
for a method whose capability it was not granted (``channels/publish``, ``channels/open``,
...) is answered ``-32002``; a granted ``channels/publish`` is answered ``{delivered: true,
messageId: "1700000001.000200"}`` and followed by ``1700000002.000300`` (``done``).

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
    incoming_message,
    initialize_answer,
    push_params,
    serve_stdio,
)

__all__ = ["ADVERTISEMENT", "BANNER", "DM", "GENERAL", "main"]

BANNER = b"[strict-record] connector starting (stdio)"
ADVERTISEMENT: dict[str, Any] = {
    "version": "0.5",
    "pushEvents": True,
    "channels": {
        "register": True,
        "lifecycle": True,
        "publish": True,
        "incoming": True,
        "streaming": True,
    },
    "featureSets": {
        "team.messaging": {
            "description": "Send and read messages",
            "uses": [
                "tools",
                "channels.register",
                "channels.lifecycle",
                "channels.publish",
                "channels.incoming",
                "channels.streaming",
                "pushEvents",
            ],
            "rollback": True,
        },
        "team.history": {"description": "History", "uses": ["tools"]},
        "team.subscriptions": {"description": "Subscriptions", "uses": ["tools"]},
    },
}
GENERAL = {"id": "team:C1", "type": "channel", "label": "#general", "direction": "bidirectional"}
DM = {"id": "team:D1", "type": "im", "label": "DM: Carol", "direction": "bidirectional"}
GATED = {
    "channels/publish": "channels.publish",
    "channels/open": "channels.lifecycle",
    "channels/close": "channels.lifecycle",
}


async def main() -> None:
    wire = Wire(sys.argv[1])
    granted: set[str] = set()
    registered = asyncio.Event()

    async def initialize(msg: dict[str, Any]) -> None:
        await wire.answer(msg, initialize_answer("strict-record", ADVERTISEMENT))

    async def policy(msg: dict[str, Any]) -> None:
        if "id" not in msg:
            return  # a Notification grants nothing to a 0.5 connector
        granted.clear()
        granted.update(msg["params"].get("effectiveCapabilities", []))
        await wire.answer(msg, {"accepted": True})
        if "channels.register" not in granted or registered.is_set():
            return
        registered.set()
        await wire.request("channels/register", {"channels": [GENERAL, DM]})
        message = incoming_message(GENERAL["id"], "1700000000.000100", "morning all")
        await wire.request("channels/incoming", {"messages": [message]})
        origin = {"source": "team", "mcplChannelId": GENERAL["id"], "authorName": "Ann"}
        await wire.request(
            "push/event",
            push_params(
                "team.messaging", "team-mention-1", "@agent ping", origin, tags=["chat:mention"]
            ),
        )

    def gated(method: str) -> Any:
        async def handle(msg: dict[str, Any]) -> None:
            if "id" not in msg:
                return
            if GATED[method] not in granted:
                await wire.send(
                    {
                        "jsonrpc": "2.0",
                        "id": msg["id"],
                        "error": {
                            "code": -32002,
                            "message": "Capability denied",
                            "data": {"capability": GATED[method]},
                        },
                    }
                )
                return
            if method == "channels/publish":
                await wire.answer(msg, {"delivered": True, "messageId": "1700000001.000200"})
                done = incoming_message(GENERAL["id"], "1700000002.000300", "done")
                await wire.request("channels/incoming", {"messages": [done]})
            elif method == "channels/open":
                await wire.answer(msg, {"channel": GENERAL})
            else:
                await wire.answer(msg, {"closed": True})

        return handle

    wire.on("initialize", initialize)
    wire.on("featureSets/update", policy)
    for method in GATED:
        wire.on(method, gated(method))
    await serve_stdio(wire, banner=BANNER)


if __name__ == "__main__":
    asyncio.run(main())
