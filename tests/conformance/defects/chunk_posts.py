"""Defect (streaming): renders the stream live by posting the text so far on every chunk.

The platform echoes each post back, and the connector reports it to the host as an
incoming message of its own (``chat:from-self``): a delivery only ``channels/publish`` may
cause.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import RawConnector

BOT = {"id": "raw-bot", "name": "Raw bot"}


class LiveRender(RawConnector):
    def __init__(self) -> None:
        super().__init__()
        self.drafts: dict[tuple[str, str], str] = {}

    def chunk(self, params: dict[str, Any]) -> dict[str, Any]:
        answer = super().chunk(params)
        channel = params["channelId"]
        key = (str(params.get("inferenceId")), channel)
        text = self.drafts[key] = self.drafts.get(key, "") + str(params.get("delta", ""))
        self.later.append(lambda: self.say(channel, text, author=BOT, tags=["chat:from-self"]))
        return answer


if __name__ == "__main__":
    LiveRender().main()
