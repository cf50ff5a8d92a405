"""A 0.5-era connector that batches incoming messages and reads a topic with typing.

Usage: ``batched_incoming_topic_typing.py RECORD``. The wire behaviour of zulip_mcp
(peers.md §11), written from that description (its exact advertisement is not reproduced
there, so this one is a plausible 0.5 record: sets using ``tools``, channel paths and
``pushEvents``). After the policy Request it registers two streams (``stream:general`` with
``address: {stream_name, stream_id}``, ``stream:random``), then sends **one**
``channels/incoming`` carrying three messages (``z-1``, ``z-2`` in general with
``metadata.topic``, ``z-3`` in random) and a push (``event:z-alert-1``). Typing takes
``{channelId, metadata?: {topic}}`` and has no stop (it records what it gets). A
``channels/publish`` Request is answered ``{delivered: true, messageId: "z-501"}``, then
``z-done`` follows.

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

__all__ = ["ADVERTISEMENT", "GENERAL", "RANDOM", "main"]

CHANNEL_USES = [
    "channels.register",
    "channels.publish",
    "channels.incoming",
    "channels.lifecycle",
    "channels.typing",
    "channels.acknowledge",
]
ADVERTISEMENT: dict[str, Any] = {
    "version": "0.5",
    "pushEvents": True,
    "channels": {leaf.split(".")[1]: True for leaf in CHANNEL_USES},
    "featureSets": {
        "stream.messaging": {
            "description": "Streams and topics",
            "uses": ["tools", *CHANNEL_USES, "pushEvents"],
        }
    },
}
GENERAL: dict[str, Any] = {
    "id": "stream:general",
    "type": "stream",
    "label": "#general",
    "direction": "bidirectional",
    "address": {"stream_name": "general", "stream_id": 7},
}
RANDOM: dict[str, Any] = {
    "id": "stream:random",
    "type": "stream",
    "label": "#random",
    "direction": "bidirectional",
    "address": {"stream_name": "random", "stream_id": 8},
}


async def main() -> None:
    wire = Wire(sys.argv[1])
    started = asyncio.Event()

    async def initialize(msg: dict[str, Any]) -> None:
        await wire.answer(msg, initialize_answer("batched-incoming", ADVERTISEMENT))

    async def policy(msg: dict[str, Any]) -> None:
        if "id" in msg:
            await wire.answer(msg, {"accepted": True})
        if started.is_set():
            return
        started.set()
        await wire.request("channels/register", {"channels": [GENERAL, RANDOM]})
        batch = [
            incoming_message(GENERAL["id"], "z-1", "lunch?", metadata={"topic": "lunch"}),
            incoming_message(GENERAL["id"], "z-2", "deploy done", metadata={"topic": "deploys"}),
            incoming_message(RANDOM["id"], "z-3", "cat picture"),
        ]
        await wire.request("channels/incoming", {"messages": batch})
        origin = {"source": "stream", "mcplChannelId": GENERAL["id"], "authorName": "Ann"}
        await wire.request(
            "push/event", push_params("stream.messaging", "z-alert-1", "@agent look", origin)
        )

    async def publish(msg: dict[str, Any]) -> None:
        if "id" in msg:
            await wire.answer(msg, {"delivered": True, "messageId": "z-501"})
        done = incoming_message(GENERAL["id"], "z-done", "done")
        await wire.request("channels/incoming", {"messages": [done]})

    wire.on("initialize", initialize)
    wire.on("featureSets/update", policy)
    wire.on("channels/publish", publish)
    await serve_stdio(wire)


if __name__ == "__main__":
    asyncio.run(main())
