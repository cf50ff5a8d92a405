"""A strict 0.5 connector's push naming only a native channel id lands on its channel.

The scripted connector is ``native_id_push`` (the mcpl-cc-bridge toy server's wire behaviour,
peers.md §6): request ids from 101, itemized register results required, pushes by MCPL id, by
native id only (``origin.channelId`` equal to the descriptor's ``address.channelId``) and by
no channel at all, with a set of channel and push leaves only. The toy's exact advertisement,
inference included, is test_toy_bridge.py's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import connector
from tests.integration.peers.support import (
    agent_on,
    answer_to,
    named,
    policy_sent,
    script,
)

pytestmark = pytest.mark.anyio


async def test_a_push_naming_only_the_native_id_lands_on_the_channel_with_that_address(
    tmp_path: Path,
) -> None:
    record = tmp_path / "got.jsonl"
    lobby = connector("lobby", script("native_id_push", "servable", str(record)))
    async with agent_on(tmp_path, lobby) as (_board, agent):
        events = ["event:lobby-beat", "event:lobby-mcpl", "event:lobby-native", "event:lobby-dm"]
        await agent.inbox_until("lobby-m1", *events)
        channels = await agent.channels("lobby")
        assert list(channels) == ["lobby:main"]
        assert agent.message("lobby-m1")["tags"] == ["chat:mention"]
        landed = {e: agent.message(e)["channel_id"] for e in events}
        assert landed == {
            "event:lobby-beat": "",
            "event:lobby-mcpl": "lobby:main",
            "event:lobby-native": "lobby:main",
            "event:lobby-dm": "",
        }
        published = await agent.call(
            "channel_publish", {"channel": channels["lobby:main"]["name"], "text": "hello lobby"}
        )
        assert (published["status"], published["message_id"]) == ("delivered", "lobby-out-1")
        await agent.inbox_until("lobby-done")
    assert policy_sent(record)["params"]["enabled"] == ["lobby"]
    assert answer_to(record, 101)["result"]["results"] == [{"id": "lobby:main", "accepted": True}]
    (sent,) = named(record, "channels/publish")
    assert sent["params"]["channelId"] == "lobby:main"
