"""Defect (streaming): posts the text of ``channels/outgoing/complete`` to the room.

Like many connectors it sees its own post come back from the platform and reports it to
the host as an incoming message (tagged ``chat:from-self``): a delivery that only
``channels/publish`` may cause.
"""

from __future__ import annotations

from switchboard.connector import incoming_text
from switchboard.connectors.demo import Delivery, DemoConnector
from switchboard.protocol import OutgoingCompleteParams, text_of
from tests.conformance.defects.sdk import run, town


class PostsStreams(DemoConnector):
    async def on_complete(self, params: OutgoingCompleteParams) -> None:
        text = text_of(params.content)
        self.deliveries.append(Delivery(params.channel_id, "streamed", text))
        echo = incoming_text(
            params.channel_id,
            text,
            author_id="demo-bot",
            author_name="Demo bot",
            tags=["chat:from-self"],
        )

        async def report() -> None:
            await self.send_incoming([echo])

        self.start_soon(report)


if __name__ == "__main__":
    run(PostsStreams(town()))
