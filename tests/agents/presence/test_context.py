"""The channel context of ``context/beforeInference``: each server hears of its own (§10.3).

T40 (a turn with no channel gets no incoming anchor) and T50 (per-server context).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from switchboard.agents.presence.context import (
    IncomingAnchor,
    build_channel_context,
    channel_context,
)
from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.store import StoredMessage
from tests.channels.channels_support import Desc
from tests.fake import FakeConnector, board_of, descriptor, message

pytestmark = pytest.mark.anyio


def two_servers() -> ChannelRegistry:
    reg = ChannelRegistry()
    reg.register("a", [Desc("room"), Desc("hall"), Desc("news", direction="inbound")])
    reg.register("b", [Desc("g"), Desc("room")])
    for ref in (ChannelRef("a", "room"), ChannelRef("a", "news"), ChannelRef("b", "g")):
        reg.set_transport_open(ref, True)
    return reg


def test_a_server_is_not_told_of_another_servers_default_channel() -> None:
    """T50: the default on b gives a no incoming and no defaultOutgoing; a's own candidates."""
    reg = two_servers()
    anchor = IncomingAnchor(ChannelRef("b", "g"), "m1", "t1")
    for_a = channel_context(reg, "a", outgoing=ChannelRef("b", "g"), incoming=anchor)
    assert for_a == {"candidates": ["room", "news"]}
    for_b = channel_context(reg, "b", outgoing=ChannelRef("b", "g"), incoming=anchor)
    assert for_b == {
        "incoming": {"channelId": "g", "messageId": "m1", "threadId": "t1"},
        "defaultOutgoing": {"channelId": "g"},
        "candidates": ["g"],
    }


def test_a_server_with_nothing_to_tell_gets_no_context() -> None:
    reg = two_servers()
    reg.set_transport_open(ChannelRef("b", "g"), False)
    anchor = IncomingAnchor(ChannelRef("a", "room"), "m1")
    assert channel_context(reg, "b", outgoing=ChannelRef("a", "room"), incoming=anchor) is None
    assert channel_context(reg, "nobody", outgoing=None, incoming=None) is None


def test_an_inbound_only_or_unregistered_locus_is_never_the_default_outgoing() -> None:
    reg = two_servers()
    news = ChannelRef("a", "news")
    anchor = IncomingAnchor(news, "m9")
    context = channel_context(reg, "a", outgoing=news, incoming=anchor)
    assert context == {
        "incoming": {"channelId": "news", "messageId": "m9"},
        "candidates": ["room", "news"],
    }
    gone = channel_context(reg, "a", outgoing=ChannelRef("a", "gone"), incoming=None)
    assert gone == {"candidates": ["room", "news"]}


def test_a_channel_id_shared_by_two_servers_is_reported_to_its_own_server_only() -> None:
    reg = two_servers()
    reg.set_transport_open(ChannelRef("b", "room"), True)
    anchor = IncomingAnchor(ChannelRef("b", "room"), "m2")
    for_a = channel_context(reg, "a", outgoing=ChannelRef("b", "room"), incoming=anchor)
    assert for_a is not None
    assert "incoming" not in for_a
    assert "defaultOutgoing" not in for_a


def marker(server_id: str, channel_id: str) -> StoredMessage:
    return StoredMessage(
        seq=1,
        server_id=server_id,
        channel_id=channel_id,
        message_id="r1",
        thread_id=None,
        author_id="u1",
        author_name="Ann",
        timestamp="2026-11-29T12:00:00Z",
        content=[],
        metadata=None,
        tags=["chat:reaction"],
        received_at=0.0,
    )


async def test_the_context_follows_the_agents_locus_and_the_latest_message(
    tmp_path: Path,
) -> None:
    fa, fb = FakeConnector(), FakeConnector()
    async with board_of(tmp_path, {"a": fa, "b": fb}) as board:
        await fa.call("channels/register", {"channels": [descriptor("room")]})
        await fb.call("channels/register", {"channels": [descriptor("g")]})
        await fb.call("channels/incoming", {"messages": [message("g", "m7")]})
        desk = board.desks.for_agent("ann")
        for_a = build_channel_context(board.context_hooks, desk, "a") or {}
        assert "incoming" not in for_a
        assert "defaultOutgoing" not in for_a
        for_b = build_channel_context(board.context_hooks, desk, "b") or {}
        assert for_b["incoming"] == {"channelId": "g", "messageId": "m7"}
        assert for_b["defaultOutgoing"] == {"channelId": "g"}


async def test_a_turn_that_deliberately_has_no_channel_gets_no_incoming_anchor(
    tmp_path: Path,
) -> None:
    """T40: every message of the read was a marker, so the turn has no channel."""
    fb = FakeConnector()
    async with board_of(tmp_path, {"b": fb}) as board:
        await fb.call("channels/register", {"channels": [descriptor("g")]})
        await fb.call("channels/incoming", {"messages": [message("g", "m7")]})
        desk = board.desks.for_agent("ann")
        desk.begin_turn([marker("b", "g")], board.registry)
        assert desk.locus(board.registry, board.default_channel).ref is None
        context = build_channel_context(board.context_hooks, desk, "b") or {}
        assert "incoming" not in context
        assert "defaultOutgoing" not in context
