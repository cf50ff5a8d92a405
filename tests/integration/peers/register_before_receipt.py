"""A connector that registers its channels after the policy Request arrives but before its receipt.

Usage: ``register_before_receipt.py MODE RECORD``. The wire behaviour of matrix_mcpl
(peers.md §3), written from that description. When the ``featureSets/update`` Request arrives
it sends ``channels/register`` (two rooms) and then the receipt, carrying the non-spec
``mode: "full"``, both lines in one write, and keeps reading while its register waits. It never
retries a refused register.

MODE ``legacy``: ``version: "0.4"``, ``channels: true``, ``pushEvents: true``, three array-form
sets, none listing ``pushEvents`` or the channel paths it exercises. After its register is
answered it sends a DM (``m-dm``) and a push routed by ``origin.mcplChannelId``
(``event:mx_push_1``). A ``channels/publish`` Request is answered ``{delivered: true, messageId:
"$evt1"}``, then ``m-done`` follows.

MODE ``strict``: the same order from a strict 0.5 connector (record-form sets, ``channels`` as an
object). Once its register is answered it sends one push on a set that declares ``pushEvents``
(``event:mx_after_register``) so a test knows the answer is recorded.

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

__all__ = ["DM", "LEGACY", "ROOM", "STRICT", "main"]

LEGACY: dict[str, Any] = {
    "version": "0.4",
    "pushEvents": True,
    "channels": True,
    "rollback": True,
    "featureSets": [
        {"name": "rooms.messaging", "uses": ["tools", "channels.publish"], "rollback": True},
        {"name": "rooms.history", "uses": ["tools"], "rollback": False},
        {"name": "rooms.rooms", "uses": ["tools"], "rollback": False},
    ],
}
STRICT: dict[str, Any] = {
    "version": "0.5",
    "pushEvents": True,
    "channels": {"register": True, "incoming": True, "publish": True},
    "featureSets": {
        "rooms.messaging": {
            "uses": ["channels.register", "channels.incoming", "channels.publish", "pushEvents"]
        }
    },
}
ROOM = {
    "id": "rooms:!clearing",
    "type": "room",
    "label": "The Clearing",
    "direction": "bidirectional",
}
DM = {"id": "rooms:!dm-john", "type": "dm", "label": "DM: John", "direction": "bidirectional"}
RECEIPT = {"accepted": True, "mode": "full", "unavailableFeatures": [], "notes": []}


async def main() -> None:
    mode, record = sys.argv[1], sys.argv[2]
    wire = Wire(record)
    started = asyncio.Event()

    async def initialize(msg: dict[str, Any]) -> None:
        advertisement = LEGACY if mode == "legacy" else STRICT
        await wire.answer(msg, initialize_answer("register-before-receipt", advertisement))

    async def policy(msg: dict[str, Any]) -> None:
        if started.is_set():
            if "id" in msg:
                await wire.answer(msg, RECEIPT)
            return
        started.set()
        register, registered = wire.prepare("channels/register", {"channels": [ROOM, DM]})
        if "id" in msg:
            receipt = {"jsonrpc": "2.0", "id": msg["id"], "result": RECEIPT}
            await wire.send_together(register, receipt)
        else:
            await wire.send(register)
        answer = await registered
        if mode == "strict":
            await wire.request(
                "push/event", push_params("rooms.messaging", "mx_after_register", "after", None)
            )
            return
        if "result" not in answer:
            return  # it never retries a refused register
        dm = incoming_message(DM["id"], "m-dm", "hello there", tags=["chat:dm", "chat:private"])
        await wire.request("channels/incoming", {"messages": [dm]})
        origin = {"source": "rooms", "mcplChannelId": ROOM["id"], "authorName": "John"}
        await wire.request(
            "push/event", push_params("rooms.messaging", "mx_push_1", "@agent ping", origin)
        )

    async def publish(msg: dict[str, Any]) -> None:
        if "id" in msg:
            await wire.answer(msg, {"delivered": True, "messageId": "$evt1"})
        await wire.request(
            "channels/incoming", {"messages": [incoming_message(DM["id"], "m-done", "done")]}
        )

    wire.on("initialize", initialize)
    wire.on("featureSets/update", policy)
    wire.on("channels/publish", publish)
    await serve_stdio(wire)


if __name__ == "__main__":
    asyncio.run(main())
