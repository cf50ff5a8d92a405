"""The host side of one MCPL connection: handshake, grant, and inbound methods (issue #2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from switchboard.app.board import Switchboard
from switchboard.channels import ChannelRef
from switchboard.channels.records import UPDATE_UNREGISTERED
from switchboard.config import Config, ConnectorConfig, StoreConfig
from switchboard.connections.session import SessionState
from switchboard.events import ChannelsChanged
from switchboard.store.sqlite import MessageStore
from switchboard.transport import RpcError, memory_link_pair
from tests.fake import FakeConnector, board_with, descriptor, message
from tests.helpers import Recorder

pytestmark = pytest.mark.anyio


async def test_the_policy_is_sent_as_a_request_even_when_the_grant_is_empty(tmp_path: Path) -> None:
    """H-xx (§5.3): featureSets/update is a Request, also with nothing granted."""
    fake = FakeConnector()
    async with board_with(tmp_path, fake, grant=[]) as board:
        (policy,) = fake.got("featureSets/update")
        assert policy["effectiveCapabilities"] == []
        assert board.sessions["s1"].state is SessionState.READY
        assert not board.sessions["s1"].grant.allows("channels.register")


async def test_the_effective_grant_is_the_advertisement_intersected_with_the_host_policy(
    tmp_path: Path,
) -> None:
    fake = FakeConnector(mcpl={"version": "0.5", "channels": {"register": True, "publish": True}})
    async with board_with(tmp_path, fake, grant=["channels.*", "pushEvents"]):
        (policy,) = fake.got("featureSets/update")
    assert sorted(policy["effectiveCapabilities"]) == ["channels.publish", "channels.register"]
    assert "pushEvents" not in policy["effectiveCapabilities"]


async def test_the_handshake_sends_initialize_with_mcpl_then_initialized_then_the_policy(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake):
        methods = [m for m, _ in fake.requests]
        (init,) = fake.got("initialize")
    assert methods[:2] == ["initialize", "featureSets/update"]
    assert init["capabilities"]["experimental"]["mcpl"]["version"] == "0.5"
    assert ("notifications/initialized", {}) in fake.notifications


async def test_a_privileged_method_before_the_policy_exchange_is_denied_with_its_capability(
    tmp_path: Path,
) -> None:
    """§5.3: before ready, inbound privileged methods get -32002 with data.capability."""
    answers: list[Any] = []
    fake = FakeConnector()

    async def policy_after_trying_to_register(method: str, params: Any) -> Any:
        try:
            await fake.call("channels/register", {"channels": [descriptor("early")]})
        except RpcError as exc:
            answers.append(exc)
        return {"accepted": True}

    fake.extra["featureSets/update"] = policy_after_trying_to_register
    async with board_with(tmp_path, fake) as board:
        assert ChannelRef("s1", "early") not in board.registry
    (denied,) = answers
    assert denied.code == -32002
    assert denied.data == {"capability": "channels.register"}


async def test_a_register_sent_straight_after_the_receipt_is_accepted(tmp_path: Path) -> None:
    """The receipt makes the session ready before the next inbound message is dispatched."""
    store = await MessageStore.open(tmp_path / "s.sqlite")
    cc = ConnectorConfig(id="s1", command=["unused"])
    board = Switchboard(Config(connectors=[cc], store=StoreConfig(path="unused")), store)
    host_link, far = memory_link_pair()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(board.serve_link, cc, host_link)
            with anyio.fail_after(10):
                init = orjson.loads(await far.receive())
                await far.send(
                    orjson.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": init["id"],
                            "result": {
                                "capabilities": {"experimental": {"mcpl": {"channels": True}}}
                            },
                        }
                    )
                )
                policy: dict[str, Any] = {}
                while policy.get("method") != "featureSets/update":
                    policy = orjson.loads(await far.receive())
                receipt = {"jsonrpc": "2.0", "id": policy["id"], "result": {"accepted": True}}
                register = {
                    "jsonrpc": "2.0",
                    "id": "r1",
                    "method": "channels/register",
                    "params": {"channels": [descriptor("fast")]},
                }
                # Both frames in one write: the register is read right behind the receipt.
                await far.send_many([orjson.dumps(receipt), orjson.dumps(register)])
                answer = orjson.loads(await far.receive())
            tg.cancel_scope.cancel()
    finally:
        await store.aclose()
    assert answer["id"] == "r1"
    assert answer["result"]["results"] == [{"id": "fast", "accepted": True}]


async def test_a_connector_that_does_not_know_the_policy_request_is_served_in_legacy_mode(
    tmp_path: Path,
) -> None:
    """peers.md: -32601 on the Request marks a pre-0.5 server; the degradation is logged."""
    fake = FakeConnector(policy="method-not-found")
    async with board_with(tmp_path, fake) as board:
        session = board.sessions["s1"]
        assert session.legacy_policy
        assert session.state is SessionState.READY
        with anyio.fail_after(5):
            while not any(m == "featureSets/update" for m, _ in fake.notifications):
                await anyio.lowlevel.checkpoint()
        results = await fake.call("channels/register", {"channels": [descriptor("old")]})
    assert results["results"] == [{"id": "old", "accepted": True}]


async def test_a_connector_without_mcpl_is_kept_as_plain_mcp(tmp_path: Path) -> None:
    fake = FakeConnector(mcpl=None)
    async with board_with(tmp_path, fake) as board:
        with anyio.fail_after(5):
            while board.sessions["s1"].state is SessionState.CONNECTING:
                await anyio.lowlevel.checkpoint()
        assert board.sessions["s1"].state is SessionState.MCP_ONLY
        assert fake.got("featureSets/update") == []


async def test_registration_results_are_itemized_and_each_descriptor_is_authorized_alone(
    tmp_path: Path,
) -> None:
    """§14.5: one permitted descriptor never carries a forbidden one in."""
    fake = FakeConnector()
    async with board_with(tmp_path, fake, channels=["ok:*"]) as board:
        answer = await fake.call(
            "channels/register",
            {"channels": [descriptor("ok:1"), descriptor("bad:2"), {"type": "x"}]},
        )
        refs = {e.ref for e in board.registry.entries()}
    results = answer["results"]
    assert [r["accepted"] for r in results] == [True, False, False]
    assert results[0]["id"] == "ok:1"
    assert results[1] == {"id": "bad:2", "accepted": False, "reason": "capability_denied"}
    assert results[2]["reason"]
    assert refs == {ChannelRef("s1", "ok:1")}


async def test_changed_rejects_an_update_of_an_unregistered_channel_and_applies_removals(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await fake.call("channels/register", {"channels": [descriptor("a"), descriptor("b")]})
        answer = await fake.call(
            "channels/changed",
            {"removed": ["a"], "updated": [descriptor("ghost")], "added": [descriptor("c")]},
        )
        ids = {e.ref.channel_id for e in board.registry.entries()}
    by_id = {r["id"]: r for r in answer["results"]}
    assert by_id["a"]["accepted"] is True
    assert by_id["ghost"]["accepted"] is False
    assert by_id["c"]["accepted"] is True
    assert ids == {"b", "c"}


async def test_changed_itemizes_numeric_and_unusable_removed_ids_instead_of_failing_whole(
    tmp_path: Path,
) -> None:
    """T53, channel-registry.md §11.2 (issue #10, part 5): a number in ``removed`` names the
    channel whose id is its decimal string and is answered with its id as sent; an item that is
    neither a string nor an integer is refused alone. Nothing fails the whole change."""
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await fake.call("channels/register", {"channels": [descriptor("123"), descriptor("b")]})
        answer = await fake.call(
            "channels/changed",
            {
                "removed": [123, "nope", 456, None, {"id": "b"}, 1.5],
                "updated": [descriptor("ghost")],
                "added": [{}],
            },
        )
        ids = {e.ref.channel_id for e in board.registry.entries()}
    results = answer["results"]
    assert results[:3] == [
        {"id": 123, "accepted": True},
        {"id": "nope", "accepted": False, "reason": "not registered"},
        {"id": 456, "accepted": False, "reason": "not registered"},
    ]
    unusable = results[3:6]
    assert [r["id"] for r in unusable] == [None, {"id": "b"}, 1.5]
    assert all(r["accepted"] is False for r in unusable)
    assert all("string or an integer" in r["reason"] for r in unusable)
    assert results[6:] == [
        {"id": "ghost", "accepted": False, "reason": UPDATE_UNREGISTERED},
        {"id": "", "accepted": False, "reason": results[7]["reason"]},
    ]
    assert results[7]["reason"].startswith("malformed: id: Field required")
    assert ids == {"b"}


async def test_changed_as_a_notification_is_applied_item_by_item(tmp_path: Path) -> None:
    fake = FakeConnector()
    recorder = Recorder()
    async with board_with(tmp_path, fake, recorder=recorder) as board:
        assert fake.peer is not None
        await fake.peer.notify("channels/changed", {"added": [descriptor("n1")]})
        await recorder.wait_kind(ChannelsChanged)
        assert ChannelRef("s1", "n1") in board.registry


async def test_incoming_is_checked_per_message_against_the_channels_this_connection_registered(
    tmp_path: Path,
) -> None:
    """§14.5: a claimed channel id that was never registered confers nothing."""
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await fake.call(
            "channels/register",
            {"channels": [descriptor("room"), descriptor("out", direction="outbound")]},
        )
        answer = await fake.call(
            "channels/incoming",
            {"messages": [message("room", "m1"), message("never", "m2"), message("out", "m3"), {}]},
        )
        stored = await board.store.read(0, 10)
    accepted = [r["accepted"] for r in answer["results"]]
    assert accepted == [True, False, False, False]
    assert [m.message_id for m in stored] == ["m1"]


async def test_incoming_is_denied_when_the_current_grant_lacks_it(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake, grant=["channels.register"]):
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        with pytest.raises(RpcError) as caught:
            await fake.call("channels/incoming", {"messages": [message("room", "m1")]})
    assert caught.value.code == -32002
    assert caught.value.data == {"capability": "channels.incoming"}


async def test_a_duplicate_incoming_message_is_accepted_again_but_stored_once(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        for _ in range(2):
            answer = await fake.call("channels/incoming", {"messages": [message("room", "m1")]})
            assert answer["results"][0]["accepted"] is True
        assert await board.store.count() == 1


async def test_inbound_channels_list_is_answered_with_this_connections_channels(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake):
        await fake.call(
            "channels/register", {"channels": [descriptor("x", address={"channelId": "9"})]}
        )
        answer = await fake.call("channels/list", {})
    assert [c["id"] for c in answer["channels"]] == ["x"]
    assert answer["channels"][0]["address"] == {"channelId": "9"}


async def test_unknown_and_removed_methods_get_method_not_found(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake):
        for method in ("state/update", "context/afterInference", "no/such"):
            with pytest.raises(RpcError) as caught:
                await fake.call(method, {})
            assert caught.value.code == -32601


async def test_bad_params_get_invalid_params_and_the_session_lives_on(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        with pytest.raises(RpcError) as caught:
            await fake.call("channels/register", {"channels": "nope"})
        assert caught.value.code == -32602
        answer = await fake.call("channels/register", {"channels": [descriptor("fine")]})
        assert answer["results"][0]["accepted"] is True
        assert board.sessions["s1"].state is SessionState.READY


async def test_a_push_event_from_an_enabled_feature_set_is_stored(tmp_path: Path) -> None:
    fake = FakeConnector(
        mcpl={
            "version": "0.5",
            "pushEvents": True,
            "featureSets": {"beats": {"description": "d", "uses": ["pushEvents"]}},
        }
    )
    event = {
        "featureSet": "beats",
        "eventId": "e1",
        "timestamp": "2026-11-29T12:00:00Z",
        "payload": {"content": [{"type": "text", "text": "tick"}]},
    }
    async with board_with(tmp_path, fake) as board:
        answer = await fake.call("push/event", event)
        with pytest.raises(RpcError) as unknown:
            await fake.call("push/event", {**event, "featureSet": "nope"})
        stored = await board.store.read(0, 10)
    assert answer == {"accepted": True}
    assert unknown.value.code == -32003
    assert [m.message_id for m in stored] == ["event:e1"]


async def test_a_lost_link_drops_the_connectors_channels(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        assert fake.peer is not None
        await fake.peer.aclose()
        with anyio.fail_after(5):
            while board.sessions["s1"].state is not SessionState.CLOSED:
                await anyio.lowlevel.checkpoint()
            while len(board.registry):
                await anyio.lowlevel.checkpoint()


async def test_incoming_the_store_cannot_take_is_answered_with_an_error_not_accepted(
    tmp_path: Path,
) -> None:
    """Nothing counts as accepted unless it was committed; the connector keeps it to retry."""
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        await board.store.aclose()
        with pytest.raises(RpcError) as caught:
            await fake.call("channels/incoming", {"messages": [message("room", "m1")]})
        listed = await fake.call("channels/list", {})
    assert caught.value.code == -32603
    assert [c["id"] for c in listed["channels"]] == ["room"]
