"""A strict 0.5 connector that never pushes and expects typing refreshed, then one stop.

Usage: ``strict_record_typing_refresh.py RECORD``. The wire behaviour of telegram-mcpL
(peers.md §10), written from that description: ``version: "0.5"``, ``pushEvents: false``,
``channels`` as an object with ``typing: true``, ``streaming`` and ``acknowledge`` false; one
record-form set ``tg.messaging`` using ``tools`` and five channel paths. Its policy handling is
frame-aware: a ``featureSets/update`` Notification before the Request is ignored. After the
Request it registers ``tg:me:dm:42`` and sends an incoming message (``tg-1``). When a second
``channels/typing`` start arrives for a channel (a refresh) it sends ``tg-refreshed``. A
``channels/publish`` Request (extras such as ``threadId`` welcome) is answered ``{delivered:
true, messageId: "tg-7"}``, then ``tg-done`` follows.

Every message from the host is recorded in RECORD (see ``wire``).
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.integration.peers.wire import (
    Wire,
    incoming_message,
    initialize_answer,
    serve_stdio,
)

__all__ = ["ADVERTISEMENT", "DM", "main"]

ADVERTISEMENT: dict[str, Any] = {
    "version": "0.5",
    "pushEvents": False,
    "channels": {
        "register": True,
        "publish": True,
        "incoming": True,
        "lifecycle": True,
        "typing": True,
        "streaming": False,
        "acknowledge": False,
    },
    "featureSets": {
        "tg.messaging": {
            "description": "Telegram-like messaging",
            "uses": [
                "tools",
                "channels.register",
                "channels.publish",
                "channels.incoming",
                "channels.lifecycle",
                "channels.typing",
            ],
        }
    },
}
DM = {"id": "tg:me:dm:42", "type": "dm", "label": "DM: Bob", "direction": "bidirectional"}


async def main() -> None:
    wire = Wire(sys.argv[1])
    started = asyncio.Event()
    starts: Counter[str] = Counter()

    async def initialize(msg: dict[str, Any]) -> None:
        await wire.answer(msg, initialize_answer("strict-typing-refresh", ADVERTISEMENT))

    async def policy(msg: dict[str, Any]) -> None:
        if "id" not in msg:
            return  # frame-aware: only the Request counts
        await wire.answer(msg, {"accepted": True})
        if started.is_set():
            return
        started.set()
        await wire.request("channels/register", {"channels": [DM]})
        message = incoming_message(DM["id"], "tg-1", "are you there?")
        await wire.request("channels/incoming", {"messages": [message]})

    async def typing(msg: dict[str, Any]) -> None:
        params = msg["params"]
        if params.get("op", "start") != "start":
            return
        starts[params["channelId"]] += 1
        if starts[params["channelId"]] == 2:
            refreshed = incoming_message(params["channelId"], "tg-refreshed", "(typing seen)")
            await wire.request("channels/incoming", {"messages": [refreshed]})

    async def publish(msg: dict[str, Any]) -> None:
        if "id" in msg:
            await wire.answer(msg, {"delivered": True, "messageId": "tg-7"})
        done = incoming_message(DM["id"], "tg-done", "done")
        await wire.request("channels/incoming", {"messages": [done]})

    wire.on("initialize", initialize)
    wire.on("featureSets/update", policy)
    wire.on("channels/typing", typing)
    wire.on("channels/publish", publish)
    await serve_stdio(wire)


if __name__ == "__main__":
    asyncio.run(main())
