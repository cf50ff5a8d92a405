"""channel_publish over MCP: names, the own rule, defaults, aliases and outcomes (issue #3;
channel-registry.md §3.6, §3.8, §7.6, §8.1, §8.5, §15)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from switchboard.app import build_server
from switchboard.transport import RpcError
from tests.agents.tools.channel_support import call, dm, lifecycle_fake
from tests.fake import FakeConnector, board_of, descriptor, drop_server, message, noted

pytestmark = pytest.mark.anyio


def _sent(fake: FakeConnector) -> list[str]:
    return [p["channelId"] for p in fake.got("channels/publish")]


async def _register(fake: FakeConnector, *channels: dict[str, Any]) -> None:
    await fake.call("channels/register", {"channels": list(channels)})


async def test_the_publish_schema_takes_no_identity_requires_text_and_shows_no_aliases(
    tmp_path: Path,
) -> None:
    """Provenance comes from dispatch: the schema has no agent or own-channel field. The
    reference's names (channelId, content) are accepted but not shown (issue #11)."""
    async with (
        board_of(tmp_path, {"s": lifecycle_fake()}) as board,
        Client(build_server(board, agent="a"), mode="legacy") as client,
    ):
        tools = {t.name: t for t in (await client.list_tools()).tools}
    schema = tools["channel_publish"].input_schema
    assert schema.get("required", []) == ["text"]
    assert set(schema["properties"]) == {"channel", "text", "server_id"}
    assert tools["channel_publish"].output_schema is not None


async def test_an_id_two_servers_share_is_refused_with_the_name_that_picks_each(
    tmp_path: Path,
) -> None:
    """T03: outside a turn, "general" on `a` and `b` is refused; each is offered by name."""
    a, b = lifecycle_fake(), lifecycle_fake()
    async with board_of(tmp_path, {"a": a, "b": b}) as board:
        await _register(a, descriptor("general"))
        await _register(b, descriptor("general"))
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            refused = await call(client, "channel_publish", {"channel": "general", "text": "x"})
            picked = await call(client, "channel_publish", {"channel": "b:general", "text": "x"})
    assert refused["refusal"] == "ambiguous-channel"
    assert [c["name"] for c in refused["candidates"]] == ["a:general", "b:general"]
    assert "candidates" in refused["next"]
    assert picked["status"] == "delivered"
    assert (_sent(a), _sent(b)) == ([], ["general"])


async def test_the_turns_own_channel_wins_over_another_servers_channel_with_its_id(
    tmp_path: Path,
) -> None:
    """T13, T14, T16: bound to the own channel, refused once it is gone, never sent to `b`;
    naming a server leaves the own rule out."""
    a, b = lifecycle_fake(), lifecycle_fake()
    async with board_of(tmp_path, {"a": a, "b": b}) as board:
        await _register(a, descriptor("general"))
        await _register(b, descriptor("general"))
        await a.call("channels/incoming", {"messages": [message("general", "m1")]})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            await call(client, "inbox")
            own = await call(client, "channel_publish", {"channel": "general", "text": "1"})
            other = await call(
                client, "channel_publish", {"channel": "general", "server_id": "b", "text": "2"}
            )
            await a.call("channels/changed", {"removed": ["general"]})
            gone = await call(client, "channel_publish", {"channel": "general", "text": "3"})
    assert (own["status"], own["server_id"], own["channel"]) == ("delivered", "a", "general")
    assert (other["status"], other["server_id"]) == ("delivered", "b")
    assert gone["refusal"] == "unknown-channel"
    assert gone["gone"] is True
    assert (gone["server_id"], gone["channel_id"]) == ("a", "general")
    assert _sent(a) == ["general"]
    assert _sent(b) == ["general"]


async def test_qualified_names_that_collide_are_refused_and_reached_by_id_and_server(
    tmp_path: Path,
) -> None:
    """T06/T07: server `a` channel `b:room` against server `a:b` channel `room`."""
    fakes = {sid: lifecycle_fake() for sid in ("a", "a:b", "c", "x")}
    async with board_of(tmp_path, fakes) as board:
        await _register(fakes["a"], descriptor("b:room"))
        await _register(fakes["a:b"], descriptor("room"))
        async with Client(build_server(board, agent="q"), mode="legacy") as client:
            named = await call(client, "channel_publish", {"channel": "a:b:room", "text": "x"})
            await _register(fakes["c"], descriptor("b:room"))
            await _register(fakes["x"], descriptor("room"))
            unnamed = await call(client, "channel_publish", {"channel": "a:b:room", "text": "x"})
            listed = await call(client, "channel_list")
            reached = await call(
                client, "channel_publish", {"channel": "b:room", "server_id": "a", "text": "y"}
            )
    assert named["refusal"] == "ambiguous-channel"
    assert sorted(c["name"] for c in named["candidates"]) == ["b:room", "room"]
    assert [c["name"] for c in unnamed["candidates"]] == [None, None]
    assert {(c["server_id"], c["channel_id"]) for c in unnamed["candidates"]} == {
        ("a", "b:room"),
        ("a:b", "room"),
    }
    assert "server_id" in unnamed["next"]
    names = {(c["server_id"], c["channel_id"]): c["name"] for c in listed["channels"]}
    assert names[("a", "b:room")] is None
    assert names[("a:b", "room")] is None
    assert reached["status"] == "delivered"
    assert _sent(fakes["a"]) == ["b:room"]
    assert _sent(fakes["a:b"]) == _sent(fakes["c"]) == _sent(fakes["x"]) == []


async def test_one_server_registering_room_and_s_room_is_asked_which(tmp_path: Path) -> None:
    """T08: "s:room" is the id of one channel and the qualified name of the other."""
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}) as board:
        await _register(fake, descriptor("room"), descriptor("s:room"))
        async with Client(build_server(board, agent="q"), mode="legacy") as client:
            refused = await call(client, "channel_publish", {"channel": "s:room", "text": "x"})
            first = await call(client, "channel_publish", {"channel": "room", "text": "x"})
            second = await call(client, "channel_publish", {"channel": "s:s:room", "text": "x"})
    assert refused["refusal"] == "ambiguous-channel"
    assert sorted(c["name"] for c in refused["candidates"]) == ["room", "s:s:room"]
    assert (first["channel_id"], second["channel_id"]) == ("room", "s:room")
    assert _sent(fake) == ["room", "s:room"]


async def test_ids_with_colons_are_matched_whole_and_never_split(tmp_path: Path) -> None:
    """T05."""
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"discord": fake}) as board:
        await _register(fake, descriptor("discord:g:1"))
        async with Client(build_server(board, agent="q"), mode="legacy") as client:
            by_id = await call(client, "channel_publish", {"channel": "discord:g:1", "text": "1"})
            qualified = await call(
                client, "channel_publish", {"channel": "discord:discord:g:1", "text": "2"}
            )
            split = await call(client, "channel_publish", {"channel": "g:1", "text": "3"})
    assert by_id["status"] == qualified["status"] == "delivered"
    assert split["refusal"] == "unknown-channel"
    assert _sent(fake) == ["discord:g:1", "discord:g:1"]


async def test_one_persons_dms_on_two_servers_are_never_guessed_between(tmp_path: Path) -> None:
    """T21: by @name and by <@id>, refused with a name for each DM."""
    a, b = lifecycle_fake(), lifecycle_fake()
    async with board_of(tmp_path, {"a": a, "b": b}) as board:
        await _register(a, dm("dm1", "alice", "42"))
        await _register(b, dm("dm1", "alice", "42"))
        async with Client(build_server(board, agent="q"), mode="legacy") as client:
            by_name = await call(client, "channel_publish", {"channel": "@alice", "text": "x"})
            by_id = await call(client, "channel_publish", {"channel": "<@42>", "text": "x"})
            picked = await call(client, "channel_publish", {"channel": "a:dm1", "text": "x"})
    for refused in (by_name, by_id):
        assert refused["refusal"] == "ambiguous-channel"
        assert sorted(c["name"] for c in refused["candidates"]) == ["a:dm1", "b:dm1"]
    assert picked["status"] == "delivered"
    assert (_sent(a), _sent(b)) == (["dm1"], [])


async def test_a_label_with_spaces_picks_its_channel(tmp_path: Path) -> None:
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}) as board:
        await _register(fake, descriptor("lounge", label="team room"))
        async with Client(build_server(board, agent="q"), mode="legacy") as client:
            published = await call(client, "channel_publish", {"channel": "team room", "text": "x"})
    assert (published["status"], published["channel"]) == ("delivered", "lounge")


async def test_aliases_are_accepted_and_conflicts_or_empty_text_are_refused(
    tmp_path: Path,
) -> None:
    """A missing text is refused by the schema; an empty server_id counts as absent (T12)."""
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}) as board:
        await _register(fake, descriptor("room"), descriptor("hall"))
        async with Client(build_server(board, agent="q"), mode="legacy") as client:
            aliased = await call(client, "channel_publish", {"channelId": "room", "content": "a"})
            both = await call(
                client, "channel_publish", {"channel": "room", "channelId": "hall", "text": "b"}
            )
            texts = await call(
                client, "channel_publish", {"channel": "room", "text": "c", "content": "d"}
            )
            empty = await call(client, "channel_publish", {"channel": "room", "text": "  "})
            nothing = await client.call_tool("channel_publish", {"channel": "room"})
            blank_server = await call(
                client, "channel_publish", {"channel": "room", "server_id": "", "text": "e"}
            )
    assert aliased["status"] == "delivered"
    assert both["refusal"] == texts["refusal"] == "conflicting-arguments"
    assert empty["refusal"] == "empty-content"
    assert nothing.is_error
    said = " ".join(b.text for b in nothing.content if b.type == "text")
    assert "text" in said
    assert "required" in said.lower()
    assert blank_server["status"] == "delivered"
    assert _sent(fake) == ["room", "room"]


async def test_an_inbound_only_channel_takes_no_publish(tmp_path: Path) -> None:
    """T36 (the channel_publish part)."""
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}) as board:
        await _register(fake, descriptor("news", "inbound"))
        async with Client(build_server(board, agent="q"), mode="legacy") as client:
            refused = await call(client, "channel_publish", {"channel": "news", "text": "x"})
    assert refused["refusal"] == "inbound-only"
    assert _sent(fake) == []


_UNKNOWN = "unknown", False
_FAILED = "failed", True


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        ({"delivered": True, "messageId": "m9"}, ("delivered", False)),
        ({"delivered": False}, _FAILED),
        ({"delivered": False, "messageId": None, "reason": "muted"}, _FAILED),
        ({"delivered": False, "messageId": "m-x"}, _UNKNOWN),
        ({"delivered": False, "messageId": 7}, _UNKNOWN),
        ({}, _UNKNOWN),
        ({"delivered": "yes", "messageId": "m9"}, _UNKNOWN),
        (["delivered"], _UNKNOWN),
        (RpcError(-32023, "Unknown channel"), _FAILED),
        (RpcError(-32017, "Channel not permitted"), _FAILED),
        (RpcError(-32002, "Capability denied", {"capability": "channels.publish"}), _FAILED),
        (RpcError(-32603, "Internal error"), _UNKNOWN),
        (RpcError(-32602, "Invalid params"), _UNKNOWN),
        (RpcError(-32000, "rate limited after posting"), _UNKNOWN),
        (RpcError(-32024, "Channel open failed"), _UNKNOWN),
    ],
    ids=[
        "delivered",
        "refused-receipt",
        "refused-receipt-with-null-id-and-reason",
        "refused-beside-a-message-id",
        "refused-beside-a-numeric-message-id",
        "empty-receipt",
        "malformed-receipt",
        "not-a-receipt",
        "unknown-channel",
        "channel-not-permitted",
        "capability-denied",
        "internal-error",
        "invalid-params",
        "server-error",
        "another-mcpl-error",
    ],
)
async def test_the_status_is_the_connectors_word_and_only_a_definite_refusal_is_failed(
    tmp_path: Path, answer: dict[str, Any] | list[str] | RpcError, outcome: tuple[str, bool]
) -> None:
    """§8.1, T42 (issue #10, part 5): delivered only on the connector's receipt; failed only
    when the connector said for certain that nothing was posted; everything else is unknown,
    and the agent is told the message may have been posted and that sending again could post
    it twice."""
    fake = lifecycle_fake()

    async def answer_with(method: str, params: Any) -> Any:
        if isinstance(answer, RpcError):
            raise answer
        return answer

    fake.extra["channels/publish"] = answer_with
    async with board_of(tmp_path, {"s": fake}) as board:
        await _register(fake, descriptor("room"))
        async with Client(build_server(board, agent="q"), mode="legacy") as client:
            published = await call(client, "channel_publish", {"channel": "room", "text": "x"})
    status = outcome[0]
    assert (published["status"], published["is_error"]) == outcome
    assert _sent(fake) == ["room"]
    if status == "delivered":
        assert published["message_id"] == "m9"
        return
    assert published.get("message_id") is None
    reason = published["reason"] if status == "unknown" else published["message"]
    if status == "failed":
        assert published["refusal"] == "connector-failed"
        assert "nothing was posted" in reason or "not delivered" in reason
        assert "twice" not in reason
    else:
        assert "may have been posted" in reason
        assert "could post it twice" in reason
    if isinstance(answer, RpcError):
        assert f"code {answer.code}" in reason


async def test_a_connector_without_the_request_form_gets_the_notification_and_an_unknown(
    tmp_path: Path,
) -> None:
    """-32601 is not an outcome: the publish goes again as a Notification (peers.md:
    mcpl-editor), whose delivery nobody confirms, and every later publish goes that way."""
    fake = lifecycle_fake()

    async def no_request_form(method: str, params: Any) -> Any:
        raise RpcError(-32601, "Method not found")

    fake.extra["channels/publish"] = no_request_form
    async with board_of(tmp_path, {"s": fake}) as board:
        await _register(fake, descriptor("room"))
        async with Client(build_server(board, agent="q"), mode="legacy") as client:
            first = await call(client, "channel_publish", {"channel": "room", "text": "a"})
            second = await call(client, "channel_publish", {"channel": "room", "text": "b"})
        notified = await noted(fake, "channels/publish", 2)
    assert (first["status"], second["status"]) == ("unknown", "unknown")
    assert "notification" in first["reason"]
    assert "could post it twice" in first["reason"]
    assert len(fake.got("channels/publish")) == 1
    texts = [p["content"][0]["text"] for p in notified]
    assert texts == ["a", "b"]


async def test_a_server_that_is_gone_is_named_when_the_call_names_it(tmp_path: Path) -> None:
    a, b = lifecycle_fake(), lifecycle_fake()
    async with board_of(tmp_path, {"a": a, "b": b}) as board:
        await _register(b, descriptor("room"))
        await drop_server(board, b, "b")
        async with Client(build_server(board, agent="q"), mode="legacy") as client:
            refused = await call(
                client, "channel_publish", {"channel": "room", "server_id": "b", "text": "x"}
            )
    assert refused["refusal"] == "server-gone"
    assert "channel_list" in refused["next"]


async def test_a_qualified_name_on_a_server_that_is_gone_is_refused_server_gone_naming_it(
    tmp_path: Path,
) -> None:
    """Issue #26, item 5: its channels left the registry with its connection, but ``b:room``
    is a qualified name of the configured server ``b``: ``server-gone``, naming ``b``, not
    ``unknown-channel``. Speech to it bounces (``unresolved-target``) with the same words."""
    a, b = lifecycle_fake(), lifecycle_fake()
    async with board_of(tmp_path, {"a": a, "b": b}) as board:
        await _register(a, descriptor("general"))
        await _register(b, descriptor("room"))
        await drop_server(board, b, "b")
        async with Client(build_server(board, agent="q"), mode="legacy") as client:
            refused = await call(client, "channel_publish", {"channel": "b:room", "text": "x"})
            on_a = await call(client, "channel_publish", {"channel": "a:nothing", "text": "x"})
            spoken = await call(client, "speak", {"text": ">>>b:room\nhello"})
    assert refused["refusal"] == "server-gone"
    assert refused["server_id"] == "b"
    assert "'b'" in refused["message"]
    assert '"b:room"' in refused["message"]
    assert "channel_list" in refused["next"]
    # A connected server without such a channel: the name is simply unknown.
    assert on_a["refusal"] == "unknown-channel"
    (segment,) = spoken["segments"]
    assert segment["status"] == "bounced"
    assert segment["refusal"] == "unresolved-target"
    assert "server 'b'" in segment["reason"]
    assert _sent(b) == []


async def test_a_name_two_gone_servers_could_qualify_stays_unknown_and_is_not_guessed(
    tmp_path: Path,
) -> None:
    """Servers ``a`` and ``a:b``, both gone: ``a:b:c`` may be ``a``'s ``b:c`` or ``a:b``'s
    ``c``; no server is guessed. ``a:x`` can only be ``a``'s."""
    a, ab = lifecycle_fake(), lifecycle_fake()
    async with board_of(tmp_path, {"a": a, "a:b": ab}) as board:
        await drop_server(board, a, "a")
        await drop_server(board, ab, "a:b")
        async with Client(build_server(board, agent="q"), mode="legacy") as client:
            either = await call(client, "channel_publish", {"channel": "a:b:c", "text": "x"})
            only_a = await call(client, "channel_publish", {"channel": "a:x", "text": "x"})
    assert either["refusal"] == "unknown-channel"
    assert (only_a["refusal"], only_a["server_id"]) == ("server-gone", "a")


async def test_speech_into_a_channel_that_will_not_open_is_refused_and_says_to_open_it(
    tmp_path: Path,
) -> None:
    """§8.3: no words go into a channel speech would open unless it opened."""
    fake = lifecycle_fake()

    async def refuse_open(method: str, params: Any) -> Any:
        raise RpcError(-32603, "the room is locked")

    fake.extra["channels/open"] = refuse_open
    async with board_of(tmp_path, {"s": fake}) as board:
        await _register(fake, descriptor("room"))
        async with Client(build_server(board, agent="q"), mode="legacy") as client:
            published = await call(client, "channel_publish", {"channel": "room", "text": "x"})
    assert published["is_error"]
    assert published["refusal"] == "channel-not-open"
    assert "channel_open" in published["next"]
    assert fake.got("channels/publish") == []
