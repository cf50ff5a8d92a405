"""What the connector answers: every host→server channel method is gated, checked, hooked."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard.connector import Connector
from switchboard.protocol import ChannelDescriptor, UnknownChannel
from switchboard.transport import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError
from tests.connector.hostkit import GENERAL, RecordingConnector, ScriptedHost, connected

pytestmark = pytest.mark.anyio

TEXT = [{"type": "text", "text": "hello"}]
STREAM = {"inferenceId": "inf-1", "conversationId": "conv-1", "channelId": GENERAL["id"]}


async def ready_host(host: ScriptedHost, paths: list[str] | None = None) -> None:
    if paths is None:
        await host.handshake()
    else:
        await host.handshake(paths)
    await host.next("channels/register")


async def error_of(host: ScriptedHost, method: str, params: Any) -> RpcError:
    with pytest.raises(RpcError) as caught:
        await host.peer.request(method, params)
    return caught.value


async def test_publish_reaches_the_hook_and_returns_its_message_id() -> None:
    """S-29: {delivered: true, messageId}."""
    connector = RecordingConnector()
    async with connected(connector) as host:
        await ready_host(host)
        result = await host.peer.request(
            "channels/publish", {"channelId": GENERAL["id"], "content": TEXT, "extra": 1}
        )
    assert result == {"delivered": True, "messageId": "m-1"}
    assert connector.names() == ["publish"]


async def test_a_method_that_is_not_granted_gets_capability_denied_with_its_path() -> None:
    """mcpl-protocol.md 3.3: -32002 with data.capability; the hook never runs."""
    connector = RecordingConnector()
    async with connected(connector) as host:
        await ready_host(host, ["channels.register", "channels.incoming"])
        error = await error_of(
            host, "channels/publish", {"channelId": GENERAL["id"], "content": TEXT}
        )
        close = await error_of(host, "channels/close", {"channelId": GENERAL["id"]})
    assert (error.code, error.data) == (-32002, {"capability": "channels.publish"})
    assert (close.code, close.data) == (-32002, {"capability": "channels.lifecycle"})
    assert connector.calls == []


async def test_before_the_policy_exchange_every_channel_method_is_denied() -> None:
    async with connected(RecordingConnector()) as host:
        await host.initialize()
        error = await error_of(host, "channels/list", {})
    assert (error.code, error.data) == (-32002, {"capability": "channels.register"})


async def test_an_unknown_channel_gets_minus_32023() -> None:
    """S-30, S-32: never silence and never delivered:true."""
    connector = RecordingConnector()
    async with connected(connector) as host:
        await ready_host(host)
        publish = await error_of(host, "channels/publish", {"channelId": "x:nope", "content": TEXT})
        close = await error_of(host, "channels/close", {"channelId": "x:nope"})
        typing = await error_of(host, "channels/typing", {"channelId": "x:nope"})
    assert (publish.code, publish.data) == (-32023, {"channelId": "x:nope"})
    assert close.code == typing.code == -32023
    assert connector.calls == []


async def test_a_refusal_reaches_the_host_as_the_class_of_its_code() -> None:
    async with connected(RecordingConnector()) as host:
        await ready_host(host)
        with pytest.raises(UnknownChannel) as unknown:
            await host.peer.request("channels/close", {"channelId": "x:nope"})
        missing = await error_of(host, "no/such", {})
    assert unknown.value.channel_id == "x:nope"
    assert type(missing) is RpcError
    assert missing.data == {"method": "no/such"}


async def test_a_rejected_descriptor_stays_unknown() -> None:
    """S-26: a publish to a channel the host rejected gets -32023."""
    connector = RecordingConnector()
    async with connected(connector, reject={GENERAL["id"]}) as host:
        await ready_host(host)
        await host.barrier()
        error = await error_of(
            host, "channels/publish", {"channelId": GENERAL["id"], "content": TEXT}
        )
        listed = await host.peer.request("channels/list", {})
    assert error.code == -32023
    assert listed == {"channels": []}


async def test_an_unknown_method_gets_method_not_found() -> None:
    """S-20; removed 0.5 methods are unknown methods too."""
    async with connected(RecordingConnector()) as host:
        await ready_host(host)
        unknown = await error_of(host, "no/such", {})
        removed = await error_of(host, "context/afterInference", {})
    assert unknown.code == removed.code == METHOD_NOT_FOUND


async def test_malformed_params_get_invalid_params() -> None:
    async with connected(RecordingConnector()) as host:
        await ready_host(host)
        error = await error_of(host, "channels/publish", {"channelId": GENERAL["id"]})
    assert error.code == INVALID_PARAMS


async def test_chunks_and_complete_deliver_nothing_only_publish_does() -> None:
    """S-33, S-34: gaps in index are fine; the stream is advisory."""
    connector = RecordingConnector()
    async with connected(connector) as host:
        await ready_host(host)
        for index in (0, 5, 9):
            await host.peer.notify(
                "channels/outgoing/chunk", {**STREAM, "index": index, "delta": "he"}
            )
        await host.peer.notify("channels/outgoing/complete", {**STREAM, "content": TEXT})
        await host.barrier()
        assert connector.names() == ["chunk", "chunk", "chunk", "complete"]
        await host.peer.request("channels/publish", {"channelId": GENERAL["id"], "content": TEXT})
    assert connector.names().count("publish") == 1


async def test_ungranted_chunks_are_dropped_without_reaching_the_hooks() -> None:
    """S-35: a host bug must not become a delivery, nor even reach the stream hook."""
    connector = RecordingConnector()
    async with connected(connector) as host:
        await ready_host(host, ["channels.register", "channels.publish"])
        await host.peer.notify("channels/outgoing/chunk", {**STREAM, "index": 0, "delta": "x"})
        await host.peer.notify("channels/publish", {"channelId": GENERAL["id"], "content": TEXT})
        await host.barrier()
    assert connector.names() == ["publish"]


async def test_a_publish_notification_still_delivers_once() -> None:
    """S-29: as a Notification it still delivers, once."""
    connector = RecordingConnector()
    async with connected(connector) as host:
        await ready_host(host)
        await host.peer.notify("channels/publish", {"channelId": GENERAL["id"], "content": TEXT})
        await host.barrier()
    assert connector.names() == ["publish"]


async def test_typing_and_acknowledge_reach_their_hooks_in_both_forms() -> None:
    connector = RecordingConnector()
    async with connected(connector) as host:
        await ready_host(host)
        await host.peer.notify("channels/typing", {"channelId": GENERAL["id"], "op": "start"})
        await host.peer.notify("notifications/typing", {"channelId": GENERAL["id"]})
        ack = await host.peer.request(
            "channels/acknowledge",
            {"channelId": GENERAL["id"], "messageId": "m-9", "intent": "seen-not-opening"},
        )
    assert ack == {"acknowledged": True, "representation": "reaction:eyes"}
    assert connector.names() == ["typing", "typing", "acknowledge"]


async def test_the_default_acknowledge_says_it_cannot_and_the_default_publish_refuses() -> None:
    connector = Connector("plain")
    async with connected(connector) as host:
        await host.handshake()
        await host.barrier()
        connector.channels.put(ChannelDescriptor.model_validate(GENERAL))
        ack = await host.peer.request(
            "channels/acknowledge", {"channelId": GENERAL["id"], "messageId": "m", "intent": "x"}
        )
        publish = await error_of(
            host, "channels/publish", {"channelId": GENERAL["id"], "content": TEXT}
        )
    assert ack["acknowledged"] is False
    assert publish.code == -32017


async def test_open_finds_a_registered_channel_by_id_or_address_and_close_closes_it() -> None:
    """S-31, S-32."""
    connector = RecordingConnector()
    async with connected(connector) as host:
        await ready_host(host)
        by_id = await host.peer.request("channels/open", {"channelId": GENERAL["id"]})
        closed = await host.peer.request("channels/close", {"channelId": GENERAL["id"]})
        assert not connector.channels.is_open(GENERAL["id"])
        by_address = await host.peer.request(
            "channels/open", {"type": "test", "address": {"channelId": "c-100"}}
        )
        assert connector.channels.is_open(GENERAL["id"])
        missing = await error_of(host, "channels/open", {"channelId": "test:none"})
    assert by_id["channel"]["id"] == by_address["channel"]["id"] == GENERAL["id"]
    assert closed == {"closed": True}
    assert missing.code == -32023


async def test_channels_list_answers_the_accepted_channels() -> None:
    async with connected(RecordingConnector()) as host:
        await ready_host(host)
        listed = await host.peer.request("channels/list", {})
    assert [c["id"] for c in listed["channels"]] == [GENERAL["id"]]
