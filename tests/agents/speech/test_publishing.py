"""Publishing: delivered only on the connector's word; refused early where it must be (issue #2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from switchboard.refusals.outcome import PublishStatus
from switchboard.refusals.refusal import RefusalKind
from switchboard.transport import RpcError
from tests.fake import FakeConnector, board_with, descriptor

pytestmark = pytest.mark.anyio


async def _registered(fake: FakeConnector, *descriptors: dict[str, Any]) -> None:
    await fake.call("channels/register", {"channels": list(descriptors)})


async def test_a_confirmed_publish_is_delivered_with_the_connectors_message_id(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await _registered(fake, descriptor("room"))
        outcome = await board.publisher.publish("room", "hello")
    assert outcome.status is PublishStatus.DELIVERED
    assert outcome.message_id is not None
    assert outcome.message_id.startswith("msg-")
    (sent,) = fake.got("channels/publish")
    assert sent["channelId"] == "room"
    assert sent["content"] == [{"type": "text", "text": "hello"}]


async def test_a_publish_the_connector_refuses_has_failed_with_its_reason(tmp_path: Path) -> None:
    fake = FakeConnector()

    async def refuse(method: str, params: Any) -> Any:
        raise RpcError(-32017, "Channel not permitted")

    fake.extra["channels/publish"] = refuse
    async with board_with(tmp_path, fake) as board:
        await _registered(fake, descriptor("room"))
        outcome = await board.publisher.publish("room", "hello")
    assert outcome.status is PublishStatus.FAILED
    assert outcome.reason is not None
    assert "-32017" in outcome.reason


async def test_an_unanswered_publish_is_unknown_never_delivered(tmp_path: Path) -> None:
    fake = FakeConnector()
    never = anyio.Event()

    async def hang(method: str, params: Any) -> Any:
        await never.wait()
        return {"delivered": True, "messageId": "late"}

    fake.extra["channels/publish"] = hang
    async with board_with(tmp_path, fake, publish_timeout=0.2) as board:
        await _registered(fake, descriptor("room"))
        outcome = await board.publisher.publish("room", "hello")
    assert outcome.status is PublishStatus.UNKNOWN
    assert outcome.message_id is None


@pytest.mark.parametrize(
    "answer",
    [{}, {"delivered": "yes"}, {"delivered": True}, None, [1]],
    ids=["empty", "string-flag", "no-message-id", "null", "array"],
)
async def test_a_malformed_publish_answer_is_unknown(tmp_path: Path, answer: Any) -> None:
    fake = FakeConnector()

    async def odd(method: str, params: Any) -> Any:
        return answer

    fake.extra["channels/publish"] = odd
    async with board_with(tmp_path, fake) as board:
        await _registered(fake, descriptor("room"))
        outcome = await board.publisher.publish("room", "hello")
    assert outcome.status is PublishStatus.UNKNOWN


async def test_a_connector_saying_not_delivered_is_a_failure(tmp_path: Path) -> None:
    fake = FakeConnector()

    async def no(method: str, params: Any) -> Any:
        return {"delivered": False}

    fake.extra["channels/publish"] = no
    async with board_with(tmp_path, fake) as board:
        await _registered(fake, descriptor("room"))
        outcome = await board.publisher.publish("room", "hello")
    assert outcome.status is PublishStatus.FAILED


async def test_a_publish_to_an_unregistered_channel_is_refused_before_sending(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        outcome = await board.publisher.publish("nowhere", "hello")
    assert outcome.refusal is not None
    assert outcome.refusal.kind is RefusalKind.UNKNOWN_CHANNEL
    assert fake.got("channels/publish") == []


async def test_a_publish_to_an_inbound_only_channel_is_refused_before_sending(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await _registered(fake, descriptor("feed", direction="inbound"))
        outcome = await board.publisher.publish("feed", "hello")
    assert outcome.refusal is not None
    assert outcome.refusal.kind is RefusalKind.INBOUND_ONLY
    assert fake.got("channels/publish") == []


async def test_a_publish_without_the_publish_grant_is_refused_before_sending(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake, grant=["channels.register"]) as board:
        await _registered(fake, descriptor("room"))
        outcome = await board.publisher.publish("room", "hello")
    assert outcome.refusal is not None
    assert outcome.refusal.kind is RefusalKind.NOT_GRANTED
    assert fake.got("channels/publish") == []


async def test_a_publish_to_a_server_that_is_still_connecting_is_refused(tmp_path: Path) -> None:
    fake = FakeConnector()
    gate = anyio.Event()

    async def slow_policy(method: str, params: Any) -> Any:
        await gate.wait()
        return {"accepted": True}

    fake.extra["featureSets/update"] = slow_policy
    fake.policy = "refuse"  # so board_with does not wait for readiness
    async with board_with(tmp_path, fake) as board:
        outcome = await board.publisher.publish("room", "hello", server_id="s1")
        gate.set()
    assert outcome.refusal is not None
    assert outcome.refusal.kind is RefusalKind.SERVER_CONNECTING


async def test_a_publish_to_a_server_that_is_gone_is_refused(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await _registered(fake, descriptor("room"))
        assert fake.peer is not None
        await fake.peer.aclose()
        with anyio.fail_after(5):
            while board.sessions["s1"].peer is not None:
                await anyio.lowlevel.checkpoint()
        outcome = await board.publisher.publish("room", "hello", server_id="s1")
    assert outcome.refusal is not None
    assert outcome.refusal.kind is RefusalKind.SERVER_GONE


async def test_an_empty_text_is_refused(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await _registered(fake, descriptor("room"))
        outcome = await board.publisher.publish("room", "   ")
    assert outcome.refusal is not None
    assert outcome.refusal.kind is RefusalKind.EMPTY_CONTENT
