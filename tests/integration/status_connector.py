"""A connector a status test steers through files, run as a real stdio subprocess.

It registers two rooms (``lobby``, ``news``). Then it watches the folder named by the
``STATUS_INBOX`` environment variable: each ``*.json`` file dropped there is a JSON object
``{"channel": "lobby", "author": "ada", "text": "..."}`` (or a list of them) that it sends as
one ``channels/incoming`` batch, then deletes the file. A channel it never registered is
refused by the host, which gives the test a refusal on demand.
"""

from __future__ import annotations

import itertools
import json
import os
from typing import Any

import anyio

from switchboard.connector import Connector
from switchboard.protocol import PublishParams

ROOMS = ("lobby", "news")


class Steered(Connector):
    def __init__(self, inbox: anyio.Path) -> None:
        super().__init__("steered")
        self._inbox = inbox
        self._ids = itertools.count(1)

    async def on_ready(self) -> None:
        await self.register(
            [
                {"id": r, "type": "room", "label": f"#{r}", "direction": "bidirectional"}
                for r in ROOMS
            ]
        )
        self.start_soon(self._watch_inbox)

    async def _watch_inbox(self) -> None:
        while True:
            for path in sorted([p async for p in self._inbox.glob("*.json")]):
                said = json.loads(await path.read_text())
                await path.unlink()
                items = said if isinstance(said, list) else [said]
                # Straight to the wire: the SDK would refuse an unregistered channel itself.
                peer = self._check("channels/incoming")
                await peer.request(
                    "channels/incoming", {"messages": [self._message(i) for i in items]}
                )
            await anyio.sleep(0.05)

    def _message(self, item: dict[str, Any]) -> dict[str, Any]:
        return {
            "channelId": item["channel"],
            "messageId": f"m-{os.getpid()}-{next(self._ids)}",
            "author": {"id": item.get("author", "someone"), "name": item.get("author", "someone")},
            "timestamp": "2026-12-01T12:00:00Z",
            "content": [{"type": "text", "text": item["text"]}],
        }

    async def on_publish(self, params: PublishParams) -> str:
        return f"out-{next(self._ids)}"


if __name__ == "__main__":
    Steered(anyio.Path(os.environ["STATUS_INBOX"])).main()
