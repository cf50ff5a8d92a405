"""A small community for many-agent tests and the agents benchmark, run as a real subprocess.

It registers three bidirectional rooms (``town:general``, ``town:lab``, ``town:random``) and
one outbound-only ``town:control``. What is published to ``town:control`` is a JSON object (or
a list of them) ``{"channel": "town:lab", "author": "ada", "text": "..."}``: the connector says
each one in its room as a person would, so a test decides exactly what people write. What is
published to a room is answered with nothing (its id is returned as delivered).

Publishing ``{"ticks": {"rate": R, "count": N, "room": "town:random"}}`` to ``town:control``
makes it say ``tick <i> <unix time>`` R times a second in that room, N times, for the
delivery-latency benchmark (bench/bench_agents.py).
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import anyio

from switchboard.connector import Connector
from switchboard.protocol import PublishParams

ROOMS = ("town:general", "town:lab", "town:random")


class Community(Connector):
    def __init__(self) -> None:
        super().__init__("community")
        self._ids = itertools.count(1)

    async def on_ready(self) -> None:
        rooms: list[dict[str, Any]] = [
            {"id": r, "type": "room", "label": f"#{r[5:]}", "direction": "bidirectional"}
            for r in ROOMS
        ]
        rooms.append(
            {"id": "town:control", "type": "control", "label": "control", "direction": "outbound"}
        )
        await self.register(rooms)

    async def _ticks(self, rate: float, count: int, room: str) -> None:
        for i in range(count):
            said = self._message(room, "clock", f"tick {i} {time.time()}")
            await self.send_incoming([said])
            await anyio.sleep(1 / rate)

    def _message(self, channel: str, author: str, text: str) -> dict[str, Any]:
        return {
            "channelId": channel,
            "messageId": f"m-{next(self._ids)}",
            "author": {"id": author, "name": author.title()},
            "timestamp": "2026-12-01T12:00:00Z",
            "content": [{"type": "text", "text": text}],
        }

    async def on_publish(self, params: PublishParams) -> str:
        text = " ".join(b.text for b in params.content if b.type == "text")
        if params.channel_id == "town:control":
            said = json.loads(text)
            if isinstance(said, dict) and "ticks" in said:
                t = said["ticks"]
                self.start_soon(self._ticks, float(t["rate"]), int(t["count"]), str(t["room"]))
                return f"out-{next(self._ids)}"
            items = said if isinstance(said, list) else [said]
            await self.send_incoming(
                [self._message(i["channel"], i.get("author", "someone"), i["text"]) for i in items]
            )
        return f"out-{next(self._ids)}"


if __name__ == "__main__":
    Community().main()
