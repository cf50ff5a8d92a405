"""A strict 0.5 connector that acts only when ``enabled`` names its set, and pushes by native id.

Usage: ``native_id_push.py servable RECORD``. The wire behaviour of the mcpl-cc-bridge toy server
(peers.md §6), written from that description. Its request ids start at 101. It answers the
policy Request ``{accepted: true}`` and does nothing more unless ``enabled`` names ``lobby``.
Then it registers ``lobby:main`` (``address.channelId: "raw-lobby"``) and goes on only if the
answer itemizes ``{id: "lobby:main", accepted: true}``: an incoming mention (``lobby-m1``), a
push with no origin (``event:lobby-beat``), a push naming ``origin.mcplChannelId``
(``event:lobby-mcpl``), a push naming only the native ``origin.channelId: "raw-lobby"``
(``event:lobby-native``) and a DM push naming no channel (``event:lobby-dm``). A
``channels/publish`` Request is answered ``{delivered: true, messageId: "lobby-out-1"}``, then
``lobby-done`` follows.

Its set uses only ``pushEvents`` and channel paths (the toy's own advertisement, inference
and context hooks included, is ``toy_bridge``'s).

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
    incoming_message,
    initialize_answer,
    push_params,
    serve_stdio,
)

__all__ = ["LOBBY", "SERVABLE", "main"]

CHANNEL_USES = ["channels.register", "channels.lifecycle", "channels.incoming", "channels.publish"]
SERVABLE: dict[str, Any] = {
    "version": "0.5",
    "pushEvents": True,
    "channels": {"register": True, "lifecycle": True, "incoming": True, "publish": True},
    "featureSets": {
        "lobby": {"description": "Channels and pushes", "uses": ["pushEvents", *CHANNEL_USES]}
    },
}
LOBBY: dict[str, Any] = {
    "id": "lobby:main",
    "type": "room",
    "label": "#lobby",
    "direction": "bidirectional",
    "address": {"channelId": "raw-lobby"},
}


async def main() -> None:
    record = sys.argv[2]
    wire = Wire(record, ids=itertools.count(101))
    started = asyncio.Event()

    async def initialize(msg: dict[str, Any]) -> None:
        await wire.answer(msg, initialize_answer("native-id-push", SERVABLE, tools=False))

    async def policy(msg: dict[str, Any]) -> None:
        if "id" in msg:
            await wire.answer(msg, {"accepted": True})
        if "lobby" not in msg["params"].get("enabled", []) or started.is_set():
            return
        started.set()
        answer = await wire.request("channels/register", {"channels": [LOBBY]})
        if {"id": "lobby:main", "accepted": True} not in answer.get("result", {}).get(
            "results", []
        ):
            return  # it needs itemized results
        mention = incoming_message(LOBBY["id"], "lobby-m1", "@agent hi", tags=["chat:mention"])
        await wire.request("channels/incoming", {"messages": [mention]})
        pushes = [
            ("lobby-beat", "beat", None),
            ("lobby-mcpl", "by mcpl id", {"mcplChannelId": "lobby:main"}),
            ("lobby-native", "by native id", {"channelId": "raw-lobby"}),
            ("lobby-dm", "a DM", {"authorId": "u9", "authorName": "Dee"}),
        ]
        for event_id, text, origin in pushes:
            await wire.request("push/event", push_params("lobby", event_id, text, origin))

    async def publish(msg: dict[str, Any]) -> None:
        if "id" in msg:
            await wire.answer(msg, {"delivered": True, "messageId": "lobby-out-1"})
        done = incoming_message(LOBBY["id"], "lobby-done", "done")
        await wire.request("channels/incoming", {"messages": [done]})

    wire.on("initialize", initialize)
    wire.on("featureSets/update", policy)
    wire.on("channels/publish", publish)
    await serve_stdio(wire)


if __name__ == "__main__":
    asyncio.run(main())
