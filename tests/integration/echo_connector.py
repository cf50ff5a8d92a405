"""The connector example from docs/connectors.md, run as a real subprocess by the tests."""

from switchboard.connector import Connector
from switchboard.protocol import PublishParams


class Echo(Connector):
    async def on_ready(self) -> None:
        await self.register(
            [
                {"id": "echo:room", "type": "echo", "label": "#room", "direction": "bidirectional"},
            ]
        )

    async def on_publish(self, params: PublishParams) -> str:
        text = " ".join(b.text for b in params.content if b.type == "text")
        await self.send_incoming(
            [
                {
                    "channelId": params.channel_id,
                    "messageId": f"echo-{text[:8]}",
                    "author": {"id": "echo", "name": "Echo"},
                    "timestamp": "2026-11-29T12:00:00Z",
                    "content": [{"type": "text", "text": f"you said: {text}"}],
                }
            ]
        )
        return "m-1"  # the message id the host reports as delivered


if __name__ == "__main__":
    Echo("echo").main()  # serves the host on stdin/stdout; logs go to stderr
