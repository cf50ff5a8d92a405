"""A WebSocket connector that registers before any policy works when it speaks 0.4 vocabulary.

The scripted connector is ``registers_before_any_policy_ws`` (mcpl-editor's wire behaviour,
peers.md §5): Switchboard dials it at ``ws://127.0.0.1:PORT/mcpl``; it registers right after
``notifications/initialized``, answers both the policy and the publish Request ``-32601``, sends
a non-spec ``state/update`` Request, and pushes on a set whose other use is ``stateUpdate``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from switchboard.config import ConnectorConfig
from tests.integration.peers.support import agent_on, answer_to, listening, named, policy_sent

pytestmark = pytest.mark.anyio

MODULE = "registers_before_any_policy_ws"


async def test_an_early_register_over_websocket_is_held_and_publish_falls_back_to_a_notification(
    tmp_path: Path,
) -> None:
    record = tmp_path / "got.jsonl"
    async with listening(MODULE, "legacy", str(record)) as port:
        doc = ConnectorConfig(id="doc", url=f"ws://127.0.0.1:{port}/mcpl")
        async with agent_on(tmp_path, doc) as (board, agent):
            await agent.inbox_until("5", "event:doc_change_1")
            channels = await agent.channels("doc")
            assert sorted(channels) == ["doc:chat"]
            assert agent.message("5")["channel_id"] == "doc:chat"
            assert agent.message("event:doc_change_1")["channel_id"] == ""
            listing = await agent.call("channel_list")
            disabled = {d["name"] for d in listing["disabled_feature_sets"].get("doc", [])}
            assert disabled == {"doc.branches"}  # no capability path left in its uses
            published = await agent.call(
                "channel_publish", {"channel": channels["doc:chat"]["name"], "text": "done!"}
            )
            assert published["status"] == "unknown"  # the Notification form has no receipt
            await agent.inbox_until("6")
            assert board.sessions["doc"].state.value == "ready"
    assert answer_to(record, 1)["result"]["results"] == [{"id": "doc:chat", "accepted": True}]
    assert answer_to(record, 2)["result"]["results"] == [{"messageId": "5", "accepted": True}]
    assert "error" in answer_to(record, 3)  # state/update: answered, never left hanging
    assert answer_to(record, 4)["result"] == {"accepted": True}
    requested, told = named(record, "featureSets/update")[:2]
    assert policy_sent(record) == requested
    assert "id" not in told
    assert sorted(told["params"]["enabled"]) == ["doc.chat", "doc.observe", "doc.read", "doc.write"]
    publishes = named(record, "channels/publish")
    assert ["id" in p for p in publishes] == [True, False]  # Request refused, then Notification
    assert publishes[-1]["params"]["content"] == [{"type": "text", "text": "done!"}]


async def test_a_strict_websocket_connector_registering_before_any_policy_is_refused(
    tmp_path: Path,
) -> None:
    """H-05: a strict 0.5 connector's register before any policy exchange gets -32002."""
    record = tmp_path / "got.jsonl"
    async with listening(MODULE, "strict", str(record)) as port:
        doc = ConnectorConfig(id="doc", url=f"ws://127.0.0.1:{port}/mcpl")
        async with agent_on(tmp_path, doc) as (_board, agent):
            await agent.inbox_until("event:doc_after_register")
            assert await agent.channels("doc") == {}
    refused = answer_to(record, 1)["error"]
    assert (refused["code"], refused["data"]) == (-32002, {"capability": "channels.register"})
