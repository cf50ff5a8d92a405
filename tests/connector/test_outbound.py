"""What the connector sends: self-limited, itemized, and ordered after its answers."""

from __future__ import annotations

import anyio
import pytest

from switchboard.connector import (
    ChannelNotRegistered,
    Connector,
    FeatureSetUnavailable,
    NotGranted,
    NotReady,
    incoming_text,
)
from switchboard.protocol import PublishParams
from tests.connector.hostkit import (
    GENERAL,
    WAIT,
    RecordingConnector,
    ScriptedHost,
    channel,
    connected,
)

pytestmark = pytest.mark.anyio

RANDOM = channel("test:#random", "c-101")
SECRET = channel("test:#secret", "c-102")


async def ready(host: ScriptedHost, connector: Connector, paths: list[str] | None = None) -> None:
    if paths is None:
        await host.handshake()
    else:
        await host.handshake(paths)
    with anyio.fail_after(WAIT):
        await connector.wait_ready()
        if isinstance(connector, RecordingConnector):
            await connector.hook_ran.wait()


async def test_itemized_register_results_are_read_and_only_accepted_channels_are_kept() -> None:
    """mcpl-protocol.md 4.3: one entry per descriptor; S-26."""
    connector = RecordingConnector(channels=())
    async with connected(connector, reject={SECRET["id"]}) as host:
        await ready(host, connector)
        results = await connector.register([GENERAL, RANDOM, SECRET])
        sent = await host.next("channels/register")
    assert [(r.id, r.accepted, r.reason) for r in results] == [
        (GENERAL["id"], True, None),
        (RANDOM["id"], True, None),
        (SECRET["id"], False, "capability_denied"),
    ]
    assert [d["id"] for d in sent.params["channels"]] == [GENERAL["id"], RANDOM["id"], SECRET["id"]]
    assert [d.id for d in connector.channels] == [GENERAL["id"], RANDOM["id"]]


async def test_register_refuses_duplicate_ids_and_malformed_descriptors_locally() -> None:
    connector = RecordingConnector(channels=())
    async with connected(connector) as host:
        await ready(host, connector)
        with pytest.raises(ValueError, match="unique"):
            await connector.register([GENERAL, GENERAL])
        with pytest.raises(ValueError, match="direction"):
            await connector.register([{**GENERAL, "direction": "sideways"}])
        await host.barrier()
    assert host.pending() == []


async def test_register_before_ready_raises_not_ready() -> None:
    connector = RecordingConnector(channels=())
    with pytest.raises(NotReady, match="on_ready"):
        await connector.register([GENERAL])


async def test_changed_is_a_request_and_removals_apply_before_it_is_sent() -> None:
    """S-27: always the Request form, itemized like register."""
    connector = RecordingConnector(channels=(GENERAL, RANDOM))
    async with connected(connector, reject={SECRET["id"]}) as host:
        await ready(host, connector)
        await host.next("channels/register")
        results = await connector.changed(
            added=[SECRET], removed=[RANDOM["id"]], updated=[{**GENERAL, "label": "new"}]
        )
        sent = await host.next("channels/changed")
    assert sent.is_request
    assert sent.params["removed"] == [RANDOM["id"]]
    assert {r.id: r.accepted for r in results} == {SECRET["id"]: False, GENERAL["id"]: True}
    assert [d.id for d in connector.channels] == [GENERAL["id"]]
    general = connector.channels.get(GENERAL["id"])
    assert general is not None
    assert general.label == "new"


async def test_incoming_is_a_request_whose_per_message_results_are_returned() -> None:
    """S-28."""
    connector = RecordingConnector()
    async with connected(connector) as host:
        await ready(host, connector)
        await host.next("channels/register")
        message = incoming_text(
            GENERAL["id"], "hi", author_id="u-1", author_name="Ann", tags=["chat:mention"]
        )
        results = await connector.send_incoming([message])
        sent = await host.next("channels/incoming")
    assert sent.is_request
    assert sent.params["messages"][0]["author"] == {"id": "u-1", "name": "Ann"}
    assert [(r.message_id, r.accepted, r.conversation_id) for r in results] == [
        (message.message_id, True, "conv-1")
    ]


async def test_incoming_is_refused_for_unregistered_channels_and_without_the_grant() -> None:
    """S-10, S-26: nothing reaches the host."""
    connector = RecordingConnector()
    async with connected(connector, reject={GENERAL["id"]}) as host:
        await ready(host, connector, ["channels.register"])
        await host.next("channels/register")
        message = incoming_text(GENERAL["id"], "hi", author_id="u", author_name="U")
        with pytest.raises(NotGranted) as denied:
            await connector.send_incoming([message])
        assert denied.value.capability == "channels.incoming"
        await host.grant(["channels.*"])
        with pytest.raises(ChannelNotRegistered):
            await connector.send_incoming([message])
        await host.barrier()
    assert host.pending() == []


def test_bare_tags_are_refused() -> None:
    """S-18: tags are namespaced ns:value."""
    with pytest.raises(ValueError, match="namespaced"):
        incoming_text("c", "x", author_id="u", author_name="U", tags=["mention"])


async def test_push_event_needs_the_grant_an_enabled_set_and_an_honest_declaration() -> None:
    """S-15, S-16: featureSet declared and enabled; eventId, timestamp, payload.content."""
    connector = Connector(
        "pusher",
        channels=False,
        push_events=True,
        feature_sets={"alerts": {"description": "alerts", "uses": ["pushEvents"]}},
    )
    async with connected(connector) as host:
        await ready(host, connector, ["pushEvents"])
        result = await connector.push_event("alerts", "the kettle boiled", tags=["home:kettle"])
        sent = await host.next("push/event")
        with pytest.raises(FeatureSetUnavailable) as unknown:
            await connector.push_event("nope", "x")
        await host.grant(["pushEvents"], enabled=[])
        with pytest.raises(FeatureSetUnavailable) as unselected:
            await connector.push_event("alerts", "x")
    assert result.accepted
    params = sent.params
    assert params["featureSet"] == "alerts"
    assert params["payload"] == {"content": [{"type": "text", "text": "the kettle boiled"}]}
    assert params["eventId"]
    assert params["timestamp"].endswith("Z")
    assert unknown.value.reason == "unknown"
    assert unselected.value.reason == "not_selected"


async def test_after_reply_work_follows_the_answer_on_the_wire() -> None:
    """A message sent from a publish hook's after_reply arrives after the publish result."""

    class Replier(RecordingConnector):
        async def on_publish(self, params: PublishParams) -> str:
            async def answer() -> None:
                await self.send_incoming(
                    [incoming_text(params.channel_id, "ok", author_id="u", author_name="U")]
                )

            self.after_reply(answer)
            return "m-answered"

    connector = Replier()
    async with connected(connector) as host:
        await ready(host, connector)
        await host.next("channels/register")
        result = await host.peer.request(
            "channels/publish",
            {"channelId": GENERAL["id"], "content": [{"type": "text", "text": "?"}]},
        )
        await host.next("channels/incoming")
    assert result["messageId"] == "m-answered"
    assert host.recorder.index_of_result("messageId") < host.recorder.index_of_method(
        "channels/incoming"
    )


async def test_stop_after_reply_ends_serving_once_the_answer_is_out() -> None:
    class Quitter(RecordingConnector):
        async def on_publish(self, params: PublishParams) -> str:
            self.stop_after_reply(3)
            return "m-last"

    connector = Quitter()
    async with connected(connector) as host:
        await ready(host, connector)
        await host.next("channels/register")
        result = await host.peer.request(
            "channels/publish",
            {"channelId": GENERAL["id"], "content": [{"type": "text", "text": "x"}]},
        )
        with anyio.fail_after(WAIT):
            await host.connector_done.wait()
        with pytest.raises(NotReady):  # serving ended: nothing is granted any more
            await connector.list_host_channels()
    assert result == {"delivered": True, "messageId": "m-last"}
    assert connector.exit_code == 3


def test_after_reply_outside_a_hook_is_a_programming_error() -> None:
    connector = Connector("c")

    async def nothing() -> None:
        pass

    with pytest.raises(RuntimeError, match="inside a hook"):
        connector.after_reply(nothing)
