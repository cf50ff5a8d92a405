"""A 0.4 connector's own tool, called by the agent, triggers a push that reaches the inbox.

The scripted connector is ``tool_triggered_push_string_ids`` (dog_events_mcpl's wire
behaviour, peers.md §7): no channels, string request ids, ``-32601`` on the policy Request, a
set whose ``uses`` lists only ``tools``, and a tool whose push arrives before the tool's result.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from switchboard.events import ConnectorToolsChanged, HostEvent
from tests.helpers import Recorder, connector
from tests.integration.peers.support import agent_on, answer_to, named, script

pytestmark = pytest.mark.anyio


def _tools_held(event: HostEvent) -> bool:
    return isinstance(event, ConnectorToolsChanged) and bool(event.tools)


async def test_string_id_pushes_and_a_tool_triggered_push_reach_the_inbox(tmp_path: Path) -> None:
    record = tmp_path / "got.jsonl"
    recorder = Recorder()
    watch = connector("watch", script("tool_triggered_push_string_ids", str(record)))
    async with agent_on(tmp_path, watch, recorder=recorder) as (board, agent):
        await agent.inbox_until("event:watch-online")
        assert agent.message("event:watch-online")["text"] == "Relay up."
        assert board.sessions["watch"].legacy_policy
        await recorder.wait_for(_tools_held)
        listed = {t.name for t in (await agent.client.list_tools()).tools}
        assert {"watch__watch_test_push", "watch__watch_status"} <= listed
        result = await agent.client.call_tool("watch__watch_test_push", {"note": "sit"})
        assert not result.is_error
        assert [getattr(c, "text", None) for c in result.content] == ["test push 1: accepted"]
        await agent.inbox_until("event:watch-test-1")
        assert agent.message("event:watch-test-1")["text"] == "sit"
        # Nowhere to publish: it registers no channel.
        assert (await agent.call("channel_publish", {"text": "hello?"}))["is_error"]
    # String ids are answered as strings, never as numbers.
    assert answer_to(record, "s1")["result"] == {"accepted": True}
    assert answer_to(record, "s2")["result"] == {"accepted": True}
    (called,) = named(record, "tools/call")
    assert called["params"] == {"name": "watch_test_push", "arguments": {"note": "sit"}}
    told = named(record, "featureSets/update")[1]
    assert "id" not in told
    assert told["params"]["enabled"] == ["watch"]
