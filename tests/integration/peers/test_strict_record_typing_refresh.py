"""Typing to a strict 0.5 connector is refreshed while a turn runs and ends with one stop.

The scripted connector is ``strict_record_typing_refresh`` (telegram-mcpL's wire behaviour,
peers.md §10): ``pushEvents: false`` (it never pushes, so only incoming messages are shown
here), typing granted, frame-aware policy handling. It tells the test when a refresh arrived,
so the refresh is waited for, never slept for (one refresh interval, about 7 s).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import connector
from tests.integration.peers.support import agent_on, named, policy_sent, script, typing_before

pytestmark = pytest.mark.anyio


async def test_typing_is_refreshed_during_a_turn_and_stopped_once_before_publishing(
    tmp_path: Path,
) -> None:
    record = tmp_path / "got.jsonl"
    tg = connector("tg", script("strict_record_typing_refresh", str(record)))
    async with agent_on(tmp_path, tg) as (board, agent):
        await agent.inbox_until("tg-1")
        channels = await agent.channels("tg")
        assert list(channels) == ["tg:me:dm:42"]
        assert agent.message("tg-1")["channel_id"] == "tg:me:dm:42"
        # Reading tg-1 began a turn there: typing started by itself and is refreshed.
        await agent.inbox_until("tg-refreshed", within=30)
        dm = channels["tg:me:dm:42"]["name"]
        await agent.call("typing", {"channel": dm, "on": False})
        published = await agent.call("channel_publish", {"channel": dm, "text": "yes, here"})
        assert (published["status"], published["message_id"]) == ("delivered", "tg-7")
        await agent.inbox_until("tg-done")
        assert board.sessions["tg"].compat_reason is None
    assert "id" in policy_sent(record)
    typing = typing_before(record)
    starts = [t for t in typing if t["op"] == "start"]
    assert len(starts) >= 2
    assert all(t == {"channelId": "tg:me:dm:42", "op": "start", "typing": True} for t in starts)
    assert typing[-1] == {"channelId": "tg:me:dm:42", "op": "stop", "typing": False}
    assert [t["op"] for t in typing].count("stop") == 1
    (sent,) = named(record, "channels/publish")
    assert sent["params"]["channelId"] == "tg:me:dm:42"
