"""A pre-0.5 connector that registers before its policy receipt is held, not refused.

The scripted connector is ``register_before_receipt`` (matrix_mcpl's wire behaviour, peers.md
§3): it sends ``channels/register`` after the policy Request arrives and before it answers it,
never retries, reads typing from a boolean ``typing``, and pushes from a set whose ``uses``
does not list ``pushEvents``.
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


async def test_a_register_sent_before_the_receipt_is_held_then_judged_by_the_grant(
    tmp_path: Path,
) -> None:
    record = tmp_path / "got.jsonl"
    rooms = connector("rooms", script("register_before_receipt", "legacy", str(record)))
    async with agent_on(tmp_path, rooms) as (board, agent):
        await agent.inbox_until("m-dm", "event:mx_push_1")
        channels = await agent.channels("rooms")
        assert sorted(channels) == ["rooms:!clearing", "rooms:!dm-john"]
        assert agent.message("m-dm")["channel_id"] == "rooms:!dm-john"
        # No set lists pushEvents; a 0.4 push is judged by the grant, which has it.
        assert agent.message("event:mx_push_1")["channel_id"] == "rooms:!clearing"
        dm = channels["rooms:!dm-john"]["name"]
        await agent.call("typing", {"channel": dm, "on": True})
        await agent.call("typing", {"channel": dm, "on": False})
        published = await agent.call("channel_publish", {"channel": dm, "text": "hi John"})
        assert (published["status"], published["message_id"]) == ("delivered", "$evt1")
        await agent.inbox_until("m-done")
        assert board.sessions["rooms"].state.value == "ready"
    assert answer_to(record, 1)["result"]["results"] == [
        {"id": "rooms:!clearing", "accepted": True},
        {"id": "rooms:!dm-john", "accepted": True},
    ]
    assert policy_sent(record)["params"]["enabled"] == [
        "rooms.history",
        "rooms.messaging",
        "rooms.rooms",
    ]
    (sent,) = named(record, "channels/publish")
    assert sent["params"]["channelId"] == "rooms:!dm-john"
    typing = typing_before(record)
    # It reads only the boolean: a stop must carry typing false.
    assert any(t["typing"] is True for t in typing)
    assert typing[-1] == {"channelId": "rooms:!dm-john", "op": "stop", "typing": False}


async def test_a_strict_connector_registering_before_its_receipt_is_still_refused(
    tmp_path: Path,
) -> None:
    """H-05: a strict 0.5 connector's register read before its receipt gets -32002.

    Its register and its receipt arrive in one read, so the register must be judged where it
    stands in arrival order (before the exchange completed), not when it is dispatched.
    """
    record = tmp_path / "got.jsonl"
    rooms = connector("rooms", script("register_before_receipt", "strict", str(record)))
    async with agent_on(tmp_path, rooms) as (_board, agent):
        await agent.inbox_until("event:mx_after_register")
        assert await agent.channels("rooms") == {}
    refused = answer_to(record, 1)
    assert refused["error"]["code"] == -32002
    assert refused["error"]["data"] == {"capability": "channels.register"}
