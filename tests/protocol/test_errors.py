"""MCPL error codes, their classes and their wire form (mcpl-protocol.md 3.17, 4.12)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from switchboard.protocol import (
    ERROR_CLASSES,
    CapabilityDenied,
    ChannelNotPermitted,
    ChannelOpenFailed,
    CheckpointNotFound,
    ErrorCode,
    FeatureSetNotEnabled,
    McplError,
    ProtocolError,
    UnknownChannel,
    UnknownFeatureSet,
    from_rpc,
    read_error,
)
from switchboard.transport import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Peer,
    RpcError,
    TransportError,
    memory_link_pair,
    method_not_found,
)

#: One error of each class, as a handler raises it, with the code and data it must carry.
EACH_CLASS = [
    (CapabilityDenied("pushEvents"), -32002, {"capability": "pushEvents"}),
    (FeatureSetNotEnabled("discord.messaging"), -32001, {"featureSet": "discord.messaging"}),
    (UnknownFeatureSet("nope"), -32003, {"featureSet": "nope"}),
    (CheckpointNotFound("cp-1"), -32005, {"checkpoint": "cp-1"}),
    (ChannelNotPermitted("discord:1:2"), -32017, {"channelId": "discord:1:2"}),
    (UnknownChannel("discord:1:2"), -32023, {"channelId": "discord:1:2"}),
    (ChannelOpenFailed("c", "gone"), -32024, {"channelId": "c", "reason": "gone"}),
    (ChannelOpenFailed(None, "gone"), -32024, {"reason": "gone"}),
]


def test_the_error_codes_are_the_spec_values() -> None:
    """§3.17: the MCPL codes are fixed numbers peers already rely on."""
    assert {code.name: int(code) for code in ErrorCode} == {
        "FEATURE_SET_NOT_ENABLED": -32001,
        "CAPABILITY_DENIED": -32002,
        "UNKNOWN_FEATURE_SET": -32003,
        "CHECKPOINT_NOT_FOUND": -32005,
        "CHANNEL_NOT_PERMITTED": -32017,
        "UNKNOWN_CHANNEL": -32023,
        "CHANNEL_OPEN_FAILED": -32024,
    }


@pytest.mark.parametrize(("error", "code", "data"), EACH_CLASS)
def test_each_error_type_fixes_its_code_and_builds_its_data(
    error: McplError, code: int, data: dict[str, Any]
) -> None:
    """§3.17: the data member names what was refused (-32002 carries {capability})."""
    wire = error.to_wire()
    assert wire["code"] == code
    assert wire["data"] == data
    assert isinstance(wire["message"], str)
    assert wire["message"]
    assert isinstance(error, McplError)
    assert isinstance(error, Exception)


def test_an_mcpl_error_is_an_rpc_error_and_a_protocol_error() -> None:
    error = UnknownChannel("x")
    assert isinstance(error, RpcError)
    assert isinstance(error, TransportError)
    assert isinstance(error, ProtocolError)
    assert str(error) == "[-32023] Unknown channel"


def test_an_error_without_data_leaves_data_out_of_the_wire_form() -> None:
    assert McplError(-32001, "Feature set not enabled").to_wire() == {
        "code": -32001,
        "message": "Feature set not enabled",
    }


def test_every_mcpl_code_maps_to_its_class_and_the_class_back_to_the_code() -> None:
    assert set(ERROR_CLASSES) == set(ErrorCode)
    assert set(ERROR_CLASSES.values()) == {type(error) for error, _, _ in EACH_CLASS}
    for code in ErrorCode:
        read = read_error({"code": int(code), "message": "m"})
        assert type(read) is ERROR_CLASSES[code]
        assert ERROR_CLASSES[code].CODE is code
        assert read.to_wire() == {"code": int(code), "message": "m"}


@pytest.mark.parametrize(("error", "code", "data"), EACH_CLASS)
def test_an_error_read_from_the_wire_becomes_its_class_and_keeps_message_and_data(
    error: McplError, code: int, data: dict[str, Any]
) -> None:
    wire = {"code": code, "message": "said the peer", "data": {**data, "extra": 1}}
    read = read_error(wire)
    assert type(read) is type(error)
    assert (read.code, read.message, read.data) == (code, "said the peer", {**data, "extra": 1})
    assert read.to_wire() == wire


def test_the_typed_attributes_of_an_error_read_from_the_wire_come_from_its_data() -> None:
    read = read_error({"code": -32024, "message": "no", "data": {"reason": "gone"}})
    assert isinstance(read, ChannelOpenFailed)
    assert (read.channel_id, read.reason) == (None, "gone")
    bare = read_error({"code": -32023, "message": "Unknown channel"})
    assert isinstance(bare, UnknownChannel)
    assert bare.channel_id is None


@pytest.mark.parametrize("code", [METHOD_NOT_FOUND, INVALID_PARAMS, -32004, 0, 42])
def test_an_error_with_a_code_that_is_not_mcpl_stays_a_plain_rpc_error(code: int) -> None:
    read = read_error({"code": code, "message": "m", "data": [1]})
    assert type(read) is RpcError
    assert (read.code, read.message, read.data) == (code, "m", [1])


def test_from_rpc_upgrades_a_plain_rpc_error_and_leaves_the_rest_as_they_are() -> None:
    plain = RpcError(-32017, "not yours", {"channelId": "c"})
    upgraded = from_rpc(plain)
    assert isinstance(upgraded, ChannelNotPermitted)
    assert (upgraded.message, upgraded.channel_id) == ("not yours", "c")
    already = UnknownChannel("c")
    assert from_rpc(already) is already
    other = method_not_found("x")
    assert from_rpc(other) is other


def test_a_sloppy_wire_error_still_becomes_an_error_with_the_transport_fallbacks() -> None:
    """One reading of error objects: the transport's fallbacks hold for MCPL parties too."""
    error = read_error({"code": "bad", "message": 7})
    assert type(error) is RpcError
    assert (error.code, error.message, error.data) == (-32603, "7", None)


def test_an_error_keeps_typed_attributes_for_handlers() -> None:
    error = ChannelOpenFailed("discord:1:2", "no access")
    assert error.channel_id == "discord:1:2"
    assert error.reason == "no access"
    assert "no access" in error.message
    assert CapabilityDenied("tools").capability == "tools"
    assert UnknownFeatureSet("f").feature_set == "f"
    assert CheckpointNotFound("cp").checkpoint == "cp"
    assert "CapabilityDenied" in repr(CapabilityDenied("tools"))


@pytest.mark.anyio
async def test_a_request_answered_with_an_mcpl_code_can_be_caught_as_its_class() -> None:
    async def answer(method: str, params: Any) -> Any:
        if method == "channels/close":
            raise UnknownChannel(params["channelId"])
        raise method_not_found(method)

    server_link, host_link = memory_link_pair()
    server = Peer(server_link, on_request=answer, name="server")
    host = Peer(host_link, name="host", read_error=read_error)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run)
            tg.start_soon(host.run)
            with pytest.raises(UnknownChannel) as unknown:
                await host.request("channels/close", {"channelId": "gone"})
            with pytest.raises(RpcError) as other:
                await host.request("no/such")
            await host.aclose()
            await server.aclose()
    assert unknown.value.channel_id == "gone"
    assert type(other.value) is RpcError
    assert other.value.to_wire() == method_not_found("no/such").to_wire()
