"""Defect (streaming, typing): shows "typing" by posting a placeholder message in the room.

The platform echoes the post back, and the connector reports it as an incoming message of
its own (``chat:from-self``), although the host published nothing.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import RawConnector

BOT = {"id": "raw-bot", "name": "Raw bot"}


class TypingPost(RawConnector):
    def typing(self, params: dict[str, Any]) -> dict[str, Any]:
        answer = super().typing(params)
        if params.get("op", "start") == "start":
            channel = params["channelId"]
            self.later.append(
                lambda: self.say(channel, "Raw bot is typing…", author=BOT, tags=["chat:from-self"])
            )
        return answer


if __name__ == "__main__":
    TypingPost().main()
