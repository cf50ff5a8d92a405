"""A batch of incoming messages in one request is taken item by item, topics kept.

The scripted connector is ``batched_incoming_topic_typing`` (zulip_mcp's wire behaviour,
peers.md §11): one ``channels/incoming`` with three messages over two streams, the topic in
``metadata``, typing read without a stop.
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
    typing_before,
)

pytestmark = pytest.mark.anyio


async def test_a_batched_incoming_is_itemized_and_each_message_reaches_the_inbox(
    tmp_path: Path,
) -> None:
    """H-43: one result per incoming message, with its ``messageId`` echoed."""
    record = tmp_path / "got.jsonl"
    zulip = connector("zulip", script("batched_incoming_topic_typing", str(record)))
    async with agent_on(tmp_path, zulip) as (board, agent):
        await agent.inbox_until("z-1", "z-2", "z-3", "event:z-alert-1")
        channels = await agent.channels("zulip")
        assert sorted(channels) == ["stream:general", "stream:random"]
        assert [agent.message(m)["channel_id"] for m in ("z-1", "z-2", "z-3")] == [
            "stream:general",
            "stream:general",
            "stream:random",
        ]
        assert agent.message("z-2")["metadata"] == {"topic": "deploys"}
        assert agent.message("event:z-alert-1")["channel_id"] == "stream:general"
        general = channels["stream:general"]["name"]
        await agent.call("typing", {"channel": general, "on": True})
        published = await agent.call("channel_publish", {"channel": general, "text": "on it"})
        assert (published["status"], published["message_id"]) == ("delivered", "z-501")
        await agent.inbox_until("z-done")
        assert board.sessions["zulip"].compat_reason is None
    assert policy_sent(record)["params"]["enabled"] == ["stream.messaging"]
    assert answer_to(record, 2)["result"]["results"] == [
        {"messageId": "z-1", "accepted": True},
        {"messageId": "z-2", "accepted": True},
        {"messageId": "z-3", "accepted": True},
    ]
    typing = typing_before(record)
    assert {"channelId": "stream:general", "op": "start", "typing": True} in typing
    (sent,) = named(record, "channels/publish")
    assert (sent["params"]["channelId"], sent["params"]["content"]) == (
        "stream:general",
        [{"type": "text", "text": "on it"}],
    )
