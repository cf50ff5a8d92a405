"""The host reads a connector's error answers as their MCPL classes, and answers with the
transport's standard error objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from switchboard.protocol import ChannelNotPermitted, UnknownChannel
from switchboard.transport import ParamProblem, RpcError, invalid_params, method_not_found
from tests.fake import FakeConnector, board_with

pytestmark = pytest.mark.anyio


async def test_a_request_the_connector_refuses_with_an_mcpl_code_raises_its_class(
    tmp_path: Path,
) -> None:
    async def refuse(method: str, params: Any) -> Any:
        if method == "channels/close":
            raise UnknownChannel(params["channelId"])
        raise ChannelNotPermitted(params["channelId"])

    fake = FakeConnector(extra={"channels/close": refuse, "channels/typing": refuse})
    async with board_with(tmp_path, fake) as board:
        peer = board.sessions["s1"].peer
        assert peer is not None
        with anyio.fail_after(5):
            with pytest.raises(UnknownChannel) as unknown:
                await peer.request("channels/close", {"channelId": "gone"})
            with pytest.raises(ChannelNotPermitted) as not_permitted:
                await peer.request("channels/typing", {"channelId": "theirs"})
            with pytest.raises(RpcError) as other:
                await peer.request("no/such", {})
    assert unknown.value.channel_id == "gone"
    assert not_permitted.value.channel_id == "theirs"
    assert type(other.value) is RpcError


async def test_an_unknown_method_is_answered_with_the_one_method_not_found_form(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake):
        with anyio.fail_after(5), pytest.raises(RpcError) as caught:
            await fake.call("no/such", {})
    assert caught.value.to_wire() == method_not_found("no/such").to_wire()


async def test_a_batch_that_is_not_an_array_gets_invalid_params_in_the_one_data_shape(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake):
        with anyio.fail_after(5), pytest.raises(RpcError) as caught:
            await fake.call("channels/incoming", {"messages": "nope"})
    assert (
        caught.value.to_wire()
        == invalid_params(ParamProblem("messages", "must be an array of messages")).to_wire()
    )
