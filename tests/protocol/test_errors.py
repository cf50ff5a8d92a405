"""MCPL error codes and their wire form (mcpl-protocol.md 3.17, 4.12)."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard.protocol import (
    CapabilityDenied,
    ChannelNotPermitted,
    ChannelOpenFailed,
    CheckpointNotFound,
    ErrorCode,
    FeatureSetNotEnabled,
    McplError,
    UnknownChannel,
    UnknownFeatureSet,
)


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


@pytest.mark.parametrize(
    ("error", "code", "data"),
    [
        (CapabilityDenied("pushEvents"), -32002, {"capability": "pushEvents"}),
        (FeatureSetNotEnabled("discord.messaging"), -32001, {"featureSet": "discord.messaging"}),
        (UnknownFeatureSet("nope"), -32003, {"featureSet": "nope"}),
        (CheckpointNotFound("cp-1"), -32005, {"checkpoint": "cp-1"}),
        (ChannelNotPermitted("discord:1:2"), -32017, {"channelId": "discord:1:2"}),
        (UnknownChannel("discord:1:2"), -32023, {"channelId": "discord:1:2"}),
        (ChannelOpenFailed("c", "gone"), -32024, {"channelId": "c", "reason": "gone"}),
        (ChannelOpenFailed(None, "gone"), -32024, {"reason": "gone"}),
    ],
)
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


def test_an_error_without_data_leaves_data_out_of_the_wire_form() -> None:
    assert McplError(-32001, "Feature set not enabled").to_wire() == {
        "code": -32001,
        "message": "Feature set not enabled",
    }


def test_an_error_read_from_the_wire_keeps_code_message_and_data() -> None:
    wire = {"code": -32023, "message": "Unknown channel", "data": {"channelId": "x"}}
    error = McplError.from_wire(wire)
    assert (error.code, error.message, error.data) == (
        -32023,
        "Unknown channel",
        {"channelId": "x"},
    )
    assert error.to_wire() == wire


def test_a_sloppy_wire_error_still_becomes_an_mcpl_error() -> None:
    error = McplError.from_wire({"code": "bad", "message": 7})
    assert (error.code, error.message, error.data) == (0, "", None)


def test_an_error_keeps_typed_attributes_for_handlers() -> None:
    error = ChannelOpenFailed("discord:1:2", "no access")
    assert error.channel_id == "discord:1:2"
    assert error.reason == "no access"
    assert "no access" in error.message
    assert CapabilityDenied("tools").capability == "tools"
    assert "CapabilityDenied" in repr(CapabilityDenied("tools"))
