"""A 0.4 connector with array-form sets listing tools and channel paths works with a default config.

The scripted connector is ``array_form_tools_uses`` (discord-mcpl's wire behaviour, peers.md §2):
a stdout banner, registration after the policy, a DM added by a ``channels/changed``
Notification, a push routed by ``origin.mcplChannelId`` and an edit push naming only the
native channel id, which lands on the channel whose ``address.channelId`` it is.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import connector
from tests.integration.peers.support import agent_on, named, policy_sent, script, typing_before

pytestmark = pytest.mark.anyio

SETS = ["chat.channels", "chat.history", "chat.messaging", "chat.subscriptions"]


async def test_array_form_sets_register_deliver_and_publish_under_a_default_config(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    record = tmp_path / "got.jsonl"
    async with agent_on(
        tmp_path, connector("chat", script("array_form_tools_uses", str(record)))
    ) as (
        board,
        agent,
    ):
        await agent.inbox_until("m-open", "event:chat_msg_900", "event:chat_edit_900")
        channels = await agent.channels("chat")
        assert sorted(channels) == ["chat:dm:222", "chat:g1:111"]
        room = channels["chat:g1:111"]["name"]
        assert agent.message("m-open")["channel_id"] == "chat:g1:111"
        assert agent.message("event:chat_msg_900")["channel_id"] == "chat:g1:111"
        # The edit names only the native id "111": the descriptor's address maps it.
        assert agent.message("event:chat_edit_900")["channel_id"] == "chat:g1:111"
        typed_on = await agent.call("typing", {"channel": room, "on": True})
        assert not typed_on["is_error"], typed_on
        await agent.call("typing", {"channel": room, "on": False})
        published = await agent.call("channel_publish", {"channel": room, "text": "hello"})
        assert (published["status"], published["message_id"]) == ("delivered", "out-1")
        await agent.inbox_until("m-done")
        assert board.sessions["chat"].state.value == "ready"
    policy = policy_sent(record)
    assert "id" in policy  # the Request form, answered with the bare receipt
    assert policy["params"]["enabled"] == SETS
    assert "tools" in policy["params"]["effectiveCapabilities"]
    (sent,) = named(record, "channels/publish")
    assert sent["params"]["channelId"] == "chat:g1:111"
    assert sent["params"]["content"] == [{"type": "text", "text": "hello"}]
    typing = typing_before(record)
    assert {"channelId": "chat:g1:111", "op": "start", "typing": True} in typing
    assert typing[-1] == {"channelId": "chat:g1:111", "op": "stop", "typing": False}
    assert [e["detail"] for e in logs if e["event"] == "junk_line_skipped"] == [
        "[array-form] Client initialized (MCPL mode)"
    ]
