"""A channel-less 0.4 connector that answers the policy Request -32601 gets its pushes through.

The scripted connector is ``policy_request_unknown_pushes`` (heartbeat-mcpl's wire behaviour,
peers.md §4): no channels, one set whose ``uses`` lists only ``tools``, pushes on a timer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import connector
from tests.integration.peers.support import agent_on, answer_to, named, policy_sent, script

pytestmark = pytest.mark.anyio


async def test_pushes_from_a_set_that_lists_only_tools_reach_the_inbox_in_legacy_mode(
    tmp_path: Path,
) -> None:
    record = tmp_path / "got.jsonl"
    beat = connector("beat", script("policy_request_unknown_pushes", "legacy", str(record)))
    async with agent_on(tmp_path, beat) as (board, agent):
        await agent.inbox_until("event:beat-1", "event:beat-2", "event:beat-done")
        assert agent.message("event:beat-1")["text"] == "Heartbeat."
        assert agent.message("event:beat-1")["metadata"]["origin"]["source"] == "heartbeat"
        assert agent.message("event:beat-2")["text"] == "Stretch your legs."
        listing = await agent.call("channel_list")
        assert [c for c in listing["channels"] if c["server_id"] == "beat"] == []
        assert listing["servers"]["beat"] == "ready"
        # It registers no channel, so there is nowhere to publish: refused, nothing sent.
        published = await agent.call("channel_publish", {"text": "hello?"})
        assert published["is_error"]
        assert board.sessions["beat"].legacy_policy
    requested, told = named(record, "featureSets/update")
    assert "id" in requested  # the Request, refused -32601,
    assert "id" not in told  # then the Notification
    assert told["params"]["enabled"] == ["beat"]
    assert policy_sent(record) == requested
    assert [answer_to(record, n)["result"] for n in (1, 2, 3)] == [{"accepted": True}] * 3
    assert named(record, "channels/publish") == []


async def test_a_strict_connector_pushing_on_a_set_that_does_not_declare_it_is_refused(
    tmp_path: Path,
) -> None:
    """H-21: a 0.5 push on a set whose ``uses`` lacks ``pushEvents`` is refused -32002."""
    record = tmp_path / "got.jsonl"
    beat = connector("beat", script("policy_request_unknown_pushes", "strict", str(record)))
    async with agent_on(tmp_path, beat) as (_board, agent):
        seen = await agent.inbox_until("event:beat-done")
        assert "event:beat-1" not in {m["message_id"] for m in seen}
    refused = answer_to(record, 1)["error"]
    assert (refused["code"], refused["data"]) == (-32002, {"capability": "pushEvents"})
    assert answer_to(record, 2)["result"] == {"accepted": True}
