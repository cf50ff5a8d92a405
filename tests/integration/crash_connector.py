"""A connector for the crash-safety tests, written with Switchboard's connector SDK.

Usage: ``crash_connector.py MODE OUT [COUNT]``.

* It registers ``crash:room`` and ``crash:other`` and answers opens and closes (the SDK's
  defaults), so the host's lifecycle decisions reach a real connector.
* ``stream``: then it sends COUNT messages (default 450), one request at a time, alternating
  between the two channels, at a steady pace. After each ``accepted: true`` it appends the
  message id to OUT, fsyncs it, and prints ``accepted N`` on stderr (which the host passes
  through), so the test knows which messages the host acknowledged.
* ``quiet``: it sends one message, ``ready-1`` on ``crash:other``, and nothing else (a restart
  of the host; the test waits for that message to know the channels are registered).
"""

from __future__ import annotations

import os
import sys

import anyio

from switchboard.connector import Connector

PACE_SECONDS = 0.003  # the connector's own sending rate; the tests never sleep
CHANNELS = ("crash:room", "crash:other")


class Crash(Connector):
    def __init__(self, mode: str, out: str, count: int) -> None:
        super().__init__("crash")
        self.mode = mode
        self.out = out
        self.count = count

    async def on_ready(self) -> None:
        await self.register(
            [{"id": c, "type": "crash", "label": c, "direction": "bidirectional"} for c in CHANNELS]
        )
        if self.mode == "stream":
            self.start_soon(self.stream)
        else:
            await self.send_incoming([self.message("crash:other", "ready-1")])

    @staticmethod
    def message(channel: str, mid: str) -> dict[str, object]:
        return {
            "channelId": channel,
            "messageId": mid,
            "author": {"id": "u1", "name": "Ann"},
            "timestamp": "2026-11-29T12:00:00Z",
            "content": [{"type": "text", "text": f"text of {mid}"}],
        }

    async def stream(self) -> None:
        fd = os.open(self.out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for n in range(1, self.count + 1):
                mid = f"m-{n}"
                results = await self.send_incoming([self.message(CHANNELS[n % 2], mid)])
                if results and results[0].accepted:
                    os.write(fd, f"{mid}\n".encode())
                    os.fsync(fd)
                    sys.stderr.write(f"accepted {n}\n")
                    sys.stderr.flush()
                await anyio.sleep(PACE_SECONDS)
        finally:
            os.close(fd)


if __name__ == "__main__":
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 450
    Crash(sys.argv[1], sys.argv[2], count).main()
