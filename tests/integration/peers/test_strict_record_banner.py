"""A strict 0.5 connector with a start-up banner works under a default config.

The scripted connector is ``strict_record_banner`` (slack-mcpl's wire behaviour, peers.md §9):
a banner on stdout, inert until the policy Request, every privileged method checked against its
grant, no typing and no acknowledge advertised.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import connector
from tests.integration.peers.support import agent_on, policy_sent, received, script

pytestmark = pytest.mark.anyio


async def test_a_strict_connector_with_a_banner_registers_delivers_and_publishes(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    """H-45: no ``channels/typing`` goes to a connector that was not granted typing."""
    record = tmp_path / "got.jsonl"
    team = connector("team", script("strict_record_banner", str(record)))
    async with agent_on(tmp_path, team) as (board, agent):
        await agent.inbox_until("1700000000.000100", "event:team-mention-1")
        channels = await agent.channels("team")
        assert sorted(channels) == ["team:C1", "team:D1"]
        assert agent.message("event:team-mention-1")["channel_id"] == "team:C1"
        general = channels["team:C1"]["name"]
        typed = await agent.call("typing", {"channel": general, "on": True})
        assert [c["shown"] for c in typed["channels"]] == [False]
        published = await agent.call("channel_publish", {"channel": general, "text": "hi"})
        assert (published["status"], published["message_id"]) == (
            "delivered",
            "1700000001.000200",
        )
        await agent.inbox_until("1700000002.000300")
        assert board.sessions["team"].compat_reason is None  # judged by 0.5 rules
    policy = policy_sent(record)
    assert "id" in policy
    assert policy["params"]["enabled"] == ["team.history", "team.messaging", "team.subscriptions"]
    # Switchboard asked nothing it was not granted: no typing, no acknowledge.
    asked = {m["method"] for m in received(record) if "method" in m}
    assert not asked & {"channels/typing", "notifications/typing", "channels/acknowledge"}
    assert [e["detail"] for e in logs if e["event"] == "junk_line_skipped"] == [
        "[strict-record] connector starting (stdio)"
    ]
