"""A WebSocket connector that registers before any policy and knows neither Request form.

Usage: ``registers_before_any_policy_ws.py MODE RECORD``. It listens on a free loopback port,
prints the port on stdout, and serves MCPL at ``/mcpl`` (one JSON-RPC message per frame); the
host dials it. The wire behaviour of mcpl-editor (peers.md §5), written from that description.

MODE ``legacy``: advertises ``version: "0.5"`` with 0.4 vocabulary: record-form sets each
carrying a ``name`` and ``hostState``, uses such as ``stateUpdate``, ``channels.observe`` and
``branches``, ``channels`` as an object with the non-spec ``observe``. Right after
``notifications/initialized`` it sends ``channels/register`` for ``doc:chat`` (keeping on
reading while it waits); it answers the ``featureSets/update`` Request and the
``channels/publish`` Request with ``-32601`` and takes both as Notifications. Once registered it
sends a chat message (``5``), a non-spec ``state/update`` Request, and a push on ``doc.observe``
(``event:doc_change_1``, ``origin.source: "editor"``, no channel). A ``channels/publish``
Notification is followed by ``6`` (``done``).

MODE ``strict``: a clean 0.5 advertisement; it still registers before any policy, answers the
policy Request only once its register is answered, and once its receipt is written pushes
``event:doc_after_register`` on a set that declares ``pushEvents``.

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
    serve_websocket,
)

__all__ = ["CHAT", "LEGACY", "STRICT", "main"]


def _set(name: str, uses: list[str]) -> dict[str, Any]:
    return {"name": name, "description": name, "uses": uses, "rollback": False, "hostState": False}


LEGACY: dict[str, Any] = {
    "version": "0.5",
    "pushEvents": True,
    "stateUpdate": True,
    "channels": {"register": True, "publish": True, "observe": True},
    "branches": {"list": True, "create": True, "switch": True, "delete": True},
    "featureSets": {
        "doc.observe": _set("doc.observe", ["pushEvents", "stateUpdate"]),
        "doc.read": _set("doc.read", ["tools"]),
        "doc.write": _set("doc.write", ["tools"]),
        "doc.chat": _set("doc.chat", ["channels.publish", "channels.observe"]),
        "doc.branches": _set("doc.branches", ["branches"]),
    },
}
STRICT: dict[str, Any] = {
    "version": "0.5",
    "pushEvents": True,
    "channels": {"register": True, "publish": True, "incoming": True},
    "featureSets": {
        "doc.observe": {"description": "changes", "uses": ["pushEvents"]},
        "doc.chat": {
            "description": "chat",
            "uses": ["channels.register", "channels.publish", "channels.incoming"],
        },
    },
}
CHAT = {"id": "doc:chat", "type": "editor", "label": "Document Chat", "direction": "bidirectional"}


def connection(mode: str, record: str) -> Wire:
    """One host connection's wire, with this behaviour's handlers."""
    wire = Wire(record)
    registered = asyncio.Event()
    receipt_sent = asyncio.Event()

    async def initialize(msg: dict[str, Any]) -> None:
        advertisement = LEGACY if mode == "legacy" else STRICT
        await wire.answer(msg, initialize_answer("registers-before-policy", advertisement))

    async def initialized(msg: dict[str, Any]) -> None:
        answer = await wire.request("channels/register", {"channels": [CHAT]})
        registered.set()
        if mode == "strict":
            await receipt_sent.wait()  # a push before its receipt would be refused (H-05)
            await wire.request(
                "push/event", push_params("doc.observe", "doc_after_register", "after", None)
            )
            return
        if "result" not in answer:
            return  # its serve loop stops on a refused register
        chat = incoming_message(CHAT["id"], "5", "can you tighten the intro?")
        await wire.request("channels/incoming", {"messages": [chat]})
        await wire.request(
            "state/update", {"featureSet": "doc.observe", "checkpoint": "seq_1", "parent": None}
        )
        await wire.request(
            "push/event",
            push_params(
                "doc.observe",
                "doc_change_1",
                "Document edited: 1 lines added (2 total)",
                {"source": "editor"},
            ),
        )

    async def policy(msg: dict[str, Any]) -> None:
        if "id" in msg:
            if mode == "legacy":
                await wire.fail(msg, -32601, "Method not found")
            else:
                await registered.wait()  # its register is answered before the exchange ends
                await wire.answer(msg, {"accepted": True})
                receipt_sent.set()

    async def publish(msg: dict[str, Any]) -> None:
        if "id" in msg:
            await wire.fail(msg, -32601, "Method not found")
            return
        done = incoming_message(CHAT["id"], "6", "done")
        await wire.request("channels/incoming", {"messages": [done]})

    wire.on("initialize", initialize)
    wire.on("notifications/initialized", initialized)
    wire.on("featureSets/update", policy)
    wire.on("channels/publish", publish)
    return wire


async def main() -> None:
    mode, record = sys.argv[1], sys.argv[2]
    await serve_websocket(lambda: connection(mode, record))


if __name__ == "__main__":
    asyncio.run(main())
