"""The connector example from docs/connectors.md, run as a real subprocess by the tests."""

import itertools

from switchboard.connector import Connector
from switchboard.protocol import PublishParams


class Echo(Connector):
    ids = itertools.count(1)  # every message needs its own id: the host drops a repeated one

    async def on_ready(self) -> None:
        await self.register(
            [
                {"id": "echo:room", "type": "echo", "label": "#room", "direction": "bidirectional"},
            ]
        )

    async def on_publish(self, params: PublishParams) -> str:
        n = next(self.ids)
        text = " ".join(b.text for b in params.content if b.type == "text")
        await self.send_incoming(
            [
                {
                    "channelId": params.channel_id,
                    "messageId": f"echo-in-{n}",
                    "author": {"id": "echo", "name": "Echo"},
                    "timestamp": "2026-11-29T12:00:00Z",
                    "content": [{"type": "text", "text": f"you said: {text}"}],
                }
            ]
        )
        return f"echo-out-{n}"  # the message id the host reports as delivered


if __name__ == "__main__":
    Echo("echo").main()  # serves the host on stdin/stdout; logs go to stderr
