"""Turns over MCP, the frozen locus and the default channel (issue #3; channel-registry.md
§3.6, §8.4, §8.7, T40, T49)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from switchboard.app import build_server
from switchboard.channels import ChannelRef
from switchboard.config import DEFAULT_GRANT, AgentConfig
from switchboard.events import Published, PushAccepted
from switchboard.protocol import Grant
from switchboard.refusals.outcome import PublishOutcome, PublishStatus
from tests.agents.tools.channel_support import call, lifecycle_fake, tagged
from tests.fake import FakeConnector, board_of, descriptor, drop_server, message

HOOK_INJECT = "contextHooks.beforeInference.inject.afterUser"

pytestmark = pytest.mark.anyio


def _sent(fake: FakeConnector) -> list[str]:
    return [p["channelId"] for p in fake.got("channels/publish")]


async def test_before_any_read_the_agent_is_in_no_turn_and_has_no_locus(tmp_path: Path) -> None:
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            read = await call(client, "inbox")
            published = await call(client, "channel_publish", {"text": "hello?"})
    assert read["turn"] == 0
    assert read["locus"] is None
    assert read["context"] == []
    assert published["is_error"]
    assert published["refusal"] == "no-channel"
    assert "channel_list" in published["next"]
    assert _sent(fake) == []


async def test_a_read_that_returns_messages_begins_the_next_turn_and_an_empty_one_does_not(
    tmp_path: Path,
) -> None:
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}) as board:
        await fake.call("channels/register", {"channels": [descriptor("one"), descriptor("two")]})
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            await fake.call("channels/incoming", {"messages": [message("one", "m1")]})
            first = await call(client, "inbox")
            empty = await call(client, "inbox")
            await fake.call("channels/incoming", {"messages": [message("two", "m2")]})
            second = await call(client, "inbox")
    assert (first["turn"], first["locus"]) == (1, "one")
    assert (empty["turn"], empty["locus"]) == (1, "one")
    assert (second["turn"], second["locus"]) == (2, "two")


async def test_the_locus_is_the_channel_of_the_newest_message_that_is_not_a_marker(
    tmp_path: Path,
) -> None:
    """Reactions, reaction removals, edits and deletions are markers (tags or eventType)."""
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}) as board:
        rooms = [descriptor(c) for c in ("said", "reacted", "edited", "gone", "unreacted")]
        await fake.call("channels/register", {"channels": rooms})
        batch = [
            message("said", "m1"),
            tagged("reacted", "m2", "chat:reaction"),
            tagged("edited", "m3", metadata={"eventType": "message_edit"}),
            tagged("gone", "m4", "chat:deleted"),
            tagged("unreacted", "m5", "chat:reaction-remove"),
        ]
        await fake.call("channels/incoming", {"messages": batch})
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            read = await call(client, "inbox")
            published = await call(client, "channel_publish", {"text": "hi"})
        own = board.desks.for_agent("a").own
    assert read["locus"] == "said"
    assert published["status"] == "delivered"
    assert published["defaulted"] is True
    assert _sent(fake) == ["said"]
    assert own == {ChannelRef("s", c) for c in ("said", "reacted", "edited", "gone", "unreacted")}


async def test_a_turn_begun_by_markers_alone_deliberately_has_no_channel(tmp_path: Path) -> None:
    """T40: a turn with no channel takes no fallback, though a default channel exists."""
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}, agent=AgentConfig(prose="locus")) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        await fake.call("channels/incoming", {"messages": [message("room", "m1")]})
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            await call(client, "inbox")
            await fake.call(
                "channels/incoming", {"messages": [tagged("room", "m2", "chat:reaction")]}
            )
            read = await call(client, "inbox")
            published = await call(client, "channel_publish", {"text": "hi"})
            spoken = await call(client, "speak", {"text": "plain words"})
        default = board.default_channel.ref
    assert default == ChannelRef("s", "room")
    assert (read["turn"], read["locus"]) == (2, None)
    assert published["refusal"] == "no-channel"
    assert "reaction" in published["message"]
    (segment,) = spoken["segments"]
    assert (segment["status"], segment["refusal"]) == ("failed", "no-channel")
    assert segment["kept_as_draft"] is True
    assert _sent(fake) == []


async def test_the_locus_stays_frozen_for_the_turn_while_the_default_moves_on(
    tmp_path: Path,
) -> None:
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}) as board:
        await fake.call("channels/register", {"channels": [descriptor("a"), descriptor("b")]})
        await fake.call("channels/incoming", {"messages": [message("a", "m1")]})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            await call(client, "inbox")
            await fake.call("channels/incoming", {"messages": [message("b", "m2")]})
            published = await call(client, "channel_publish", {"content": "still here"})
        default = board.default_channel.ref
    assert default == ChannelRef("s", "b")
    assert published["channel"] == "a"
    assert _sent(fake) == ["a"]


async def test_outside_any_turn_a_publish_without_a_channel_goes_to_the_default_channel(
    tmp_path: Path,
) -> None:
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}) as board:
        await fake.call("channels/register", {"channels": [descriptor("a"), descriptor("b")]})
        await fake.call(
            "channels/incoming",
            {"messages": [message("a", "m1"), tagged("b", "m2", "chat:edited")]},
        )
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            published = await call(client, "channel_publish", {"text": "hello"})
    assert (published["status"], published["defaulted"]) == ("delivered", True)
    assert _sent(fake) == ["a"]


async def test_the_home_channel_is_the_locus_of_every_turn(tmp_path: Path) -> None:
    fake = lifecycle_fake()
    home = AgentConfig(home="#ops", prose="locus")
    async with board_of(tmp_path, {"s": fake}, agent=home) as board:
        await fake.call("channels/register", {"channels": [descriptor("ops"), descriptor("room")]})
        await fake.call("channels/incoming", {"messages": [message("room", "m1")]})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            before = await call(client, "channel_publish", {"text": "before"})
            read = await call(client, "inbox")
            spoken = await call(client, "speak", {"text": "plain"})
        own = board.desks.for_agent("x").own
    assert before["channel"] == "ops"
    assert read["locus"] == "ops"
    assert spoken["segments"][0]["status"] == "delivered"
    assert _sent(fake) == ["ops", "ops"]
    assert own == {ChannelRef("s", "ops"), ChannelRef("s", "room")}


async def test_a_home_that_names_two_channels_leaves_the_turn_without_a_channel(
    tmp_path: Path,
) -> None:
    """Never a guess: an ambiguous home refuses plain speech rather than picking one."""
    a, b = lifecycle_fake(), lifecycle_fake()
    async with board_of(tmp_path, {"a": a, "b": b}, agent=AgentConfig(home="general")) as board:
        for fake in (a, b):
            await fake.call("channels/register", {"channels": [descriptor("general")]})
        await a.call("channels/incoming", {"messages": [message("general", "m1")]})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            read = await call(client, "inbox")
            published = await call(client, "channel_publish", {"text": "hi"})
    assert read["locus"] is None
    assert published["refusal"] == "no-channel"
    assert '"general"' in published["message"]
    assert _sent(a) == _sent(b) == []


async def test_a_default_on_a_removed_server_is_refused_by_name_not_sent_elsewhere(
    tmp_path: Path,
) -> None:
    """T49: removing a server keeps the default's ref; the same id on `a` is never used."""
    a, b = lifecycle_fake(), lifecycle_fake()
    async with board_of(tmp_path, {"a": a, "b": b}) as board:
        for fake in (a, b):
            await fake.call("channels/register", {"channels": [descriptor("g")]})
        await a.call("channels/incoming", {"messages": [message("g", "m0")]})
        await a.call("channels/incoming", {"messages": [tagged("g", "m1", "chat:reaction")]})
        await b.call("channels/incoming", {"messages": [message("g", "m2")]})
        assert board.default_channel.ref == ChannelRef("b", "g")
        await drop_server(board, b, "b")
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            published = await call(client, "channel_publish", {"text": "x"})
        default = board.default_channel.ref
    assert default == ChannelRef("b", "g")
    assert published["refusal"] == "unknown-channel"
    assert published["gone"] is True
    assert (published["server_id"], published["channel_id"]) == ("b", "g")
    assert '"b:g"' in published["message"]
    assert _sent(a) == []


async def test_push_events_do_not_move_the_default_channel(tmp_path: Path) -> None:
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}) as board:
        await fake.call("channels/register", {"channels": [descriptor("a"), descriptor("b")]})
        await fake.call("channels/incoming", {"messages": [message("a", "m1")]})
        board.default_channel.observe(PushAccepted("s", message("b", "e1")))
        delivered = PublishOutcome(status=PublishStatus.DELIVERED, server_id="s", channel_id="b")
        board.default_channel.observe(Published("s", "b", "hi", delivered))
        assert board.default_channel.ref == ChannelRef("s", "a")


async def test_a_read_that_begins_a_turn_carries_the_connectors_context(tmp_path: Path) -> None:
    """H-25: the hook goes out when a read begins a turn, with the text that began it."""
    asked: list[dict[str, Any]] = []

    async def hook(method: str, params: Any) -> Any:
        asked.append(params)
        injection = {"namespace": "t", "position": "afterUser", "content": "be brief"}
        return {"featureSet": "t", "contextInjections": [injection]}

    fake = lifecycle_fake()
    fake.extra["context/beforeInference"] = hook
    async with board_of(tmp_path, {"s": fake}) as board:
        leaves = ["contextHooks.beforeInference.observe", HOOK_INJECT]
        board.sessions["s"].grant = Grant([*DEFAULT_GRANT, *leaves])
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        await fake.call("channels/incoming", {"messages": [message("room", "m1", "hello there")]})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            began = await call(client, "inbox")
            idle = await call(client, "inbox")
    assert [c["content"] for c in began["context"]] == [[{"type": "text", "text": "be brief"}]]
    assert idle["context"] == []
    assert [a["userMessage"] for a in asked] == ["hello there"]
