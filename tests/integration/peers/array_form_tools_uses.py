"""A 0.4-shaped connector whose array-form sets list ``tools`` and channel paths in ``uses``.

Usage: ``array_form_tools_uses.py RECORD``. The wire behaviour of discord-mcpl (peers.md §2),
written from that description:

* advertises ``version: "0.4"``, ``channels: true``, ``pushEvents: true`` and four array-form
  feature sets (with ``hostState``), the first using ``tools``, ``pushEvents`` and every channel
  path, the others only ``tools``;
* prints a non-JSON banner on stdout right after ``notifications/initialized``;
* waits for the policy (Request or Notification; the Request gets the bare ``{accepted: true}``),
  then registers ``chat:g1:111`` (``address.channelId: "111"``, the native id), announces a DM
  with ``channels/changed`` as a **Notification**, sends one incoming message (``m-open``), a
  mention push naming both the native ``origin.channelId`` and ``origin.mcplChannelId``
  (``event:chat_msg_900``) and an edit push naming only the native id (``event:chat_edit_900``);
* answers a ``channels/publish`` Request ``{delivered: true, messageId: "out-1"}``, then sends
  ``m-done`` so a test knows the record holds everything up to that publish.

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

__all__ = ["ADVERTISEMENT", "BANNER", "DM", "ROOM", "main"]

BANNER = b"[array-form] Client initialized (MCPL mode)"
ALL_CHANNEL_USES = [
    "tools",
    "channels.publish",
    "pushEvents",
    "channels.incoming",
    "channels.register",
    "channels.lifecycle",
    "channels.streaming",
    "channels.acknowledge",
    "channels.typing",
]


def _tools_only(name: str) -> dict[str, Any]:
    return {"name": name, "uses": ["tools"], "rollback": False, "hostState": False}


ADVERTISEMENT: dict[str, Any] = {
    "version": "0.4",
    "pushEvents": True,
    "channels": True,
    "rollback": True,
    "featureSets": [
        {
            "name": "chat.messaging",
            "description": "Send and read messages",
            "uses": ALL_CHANNEL_USES,
            "rollback": True,
            "hostState": False,
            "tagOntology": {"coreTags": ["chat:mention", "chat:dm"], "open": True},
        },
        _tools_only("chat.channels"),
        _tools_only("chat.history"),
        _tools_only("chat.subscriptions"),
    ],
}
ROOM: dict[str, Any] = {
    "id": "chat:g1:111",
    "type": "text",
    "label": "#general (Guild)",
    "direction": "bidirectional",
    "address": {"guildId": "g1", "channelId": "111"},
    "initiallyOpen": True,
}
DM: dict[str, Any] = {
    "id": "chat:dm:222",
    "type": "dm",
    "label": "DM: Carol",
    "direction": "bidirectional",
    "address": {"channelId": "222"},
    "metadata": {"channelType": "dm", "recipientName": "Carol"},
}


async def main() -> None:
    wire = Wire(sys.argv[1])
    started = asyncio.Event()

    async def initialize(msg: dict[str, Any]) -> None:
        await wire.answer(msg, initialize_answer("array-form", ADVERTISEMENT))

    async def initialized(msg: dict[str, Any]) -> None:
        await wire.send_raw(BANNER)

    async def policy(msg: dict[str, Any]) -> None:
        if "id" in msg:
            await wire.answer(msg, {"accepted": True})
        if started.is_set():
            return
        started.set()
        await wire.request("channels/register", {"channels": [ROOM]})
        await wire.notify("channels/changed", {"added": [DM]})
        await wire.request(
            "channels/incoming", {"messages": [incoming_message(ROOM["id"], "m-open", "hi all")]}
        )
        origin = {
            "source": "chat",
            "messageId": "900",
            "guildId": "g1",
            "channelId": "111",
            "mcplChannelId": ROOM["id"],
            "authorId": "u2",
            "authorName": "Bob",
            "isMention": True,
        }
        await wire.request(
            "push/event",
            push_params(
                "chat.messaging",
                "chat_msg_900",
                "@agent look",
                origin,
                tags=["chat:mention", "chat:addressed"],
            ),
        )
        await wire.request(
            "push/event",
            push_params(
                "chat.messaging",
                "chat_edit_900",
                "@agent look (edited)",
                {"source": "chat", "messageId": "900", "channelId": "111"},
            ),
        )

    async def publish(msg: dict[str, Any]) -> None:
        if "id" in msg:
            await wire.answer(msg, {"delivered": True, "messageId": "out-1"})
        await wire.request(
            "channels/incoming", {"messages": [incoming_message(ROOM["id"], "m-done", "done")]}
        )

    wire.on("initialize", initialize)
    wire.on("notifications/initialized", initialized)
    wire.on("featureSets/update", policy)
    wire.on("channels/publish", publish)
    await serve_stdio(wire)


if __name__ == "__main__":
    asyncio.run(main())
