"""featureSets/update, the degradation receipt and push/event (mcpl-protocol.md 3.3-3.8)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from switchboard.protocol import (
    FeatureSetsUpdateParams,
    PushEventParams,
    PushEventResult,
    Receipt,
    TextContent,
    UnavailableFeature,
    dump,
    parse_receipt,
)

DISCORD_PUSH: dict[str, Any] = {
    "featureSet": "discord.messaging",
    "eventId": "discord_msg_123",
    "timestamp": "2026-08-01T12:00:00.000Z",
    "origin": {
        "source": "discord",
        "channelId": "555",
        "mcplChannelId": "discord:100:555",
        "isMention": True,
    },
    "tags": ["chat:mention", "chat:addressed", "chat:from-human"],
    "payload": {"content": [{"type": "text", "text": "[#general] Carol: @bot hi"}]},
}


def test_a_discord_push_event_is_read_and_round_trips() -> None:
    """§9 and peers.md §2: origin is opaque and kept as sent."""
    event = PushEventParams.model_validate(DISCORD_PUSH)
    assert event.feature_set == "discord.messaging"
    assert event.event_id == "discord_msg_123"
    assert event.origin is not None
    assert event.origin["mcplChannelId"] == "discord:100:555"
    assert event.payload.content == [TextContent(text="[#general] Carol: @bot hi")]
    assert dump(event) == DISCORD_PUSH


@pytest.mark.parametrize("missing", ["featureSet", "eventId", "timestamp", "payload"])
def test_a_push_event_without_a_required_member_is_rejected_there(missing: str) -> None:
    """§9: featureSet, eventId, timestamp and payload.content are required."""
    wire = {k: v for k, v in DISCORD_PUSH.items() if k != missing}
    with pytest.raises(ValidationError) as info:
        PushEventParams.model_validate(wire)
    assert info.value.errors()[0]["loc"] == (missing,)


def test_a_push_result_names_its_inference_when_accepted() -> None:
    assert dump(PushEventResult(accepted=True, inference_id="inf-1")) == {
        "accepted": True,
        "inferenceId": "inf-1",
    }
    assert PushEventResult.model_validate({"accepted": False, "reason": "muted"}).reason == "muted"


def test_the_policy_request_serializes_with_wire_names() -> None:
    """§5.3: effectiveCapabilities is the grant; enabled lists the selected sets."""
    params = FeatureSetsUpdateParams(
        effective_capabilities=["channels.publish", "pushEvents"], enabled=["discord.messaging"]
    )
    assert dump(params) == {
        "effectiveCapabilities": ["channels.publish", "pushEvents"],
        "enabled": ["discord.messaging"],
    }
    assert params.overlap() == frozenset()


def test_a_path_in_both_grant_and_denied_lists_is_reported_as_overlap() -> None:
    """§5.4, A-14: a path in both lists makes the policy malformed."""
    params = FeatureSetsUpdateParams.model_validate(
        {"effectiveCapabilities": ["tools", "pushEvents"], "deniedCapabilities": ["tools"]}
    )
    assert params.overlap() == {"tools"}


def test_a_bare_accepted_receipt_is_fine() -> None:
    """peers.md §2: discord answers {accepted:true} and nothing else."""
    receipt = parse_receipt({"accepted": True})
    assert receipt == Receipt(True, None, None, [], {"accepted": True})
    assert receipt.problems == ()


def test_an_unknown_receipt_mode_and_extra_members_are_kept() -> None:
    """peers.md §3: matrix sends mode "full"; a host must accept it."""
    receipt = parse_receipt({"accepted": True, "mode": "full", "enabledFeatures": ["x"]})
    assert receipt.accepted
    assert receipt.mode == "full"
    assert receipt.raw["enabledFeatures"] == ["x"]
    assert receipt.problems == ()


def test_a_degraded_receipt_lists_its_unavailable_features() -> None:
    """§6.7 (3.5): each unavailableFeatures entry carries featureSet, missing, effect."""
    receipt = parse_receipt(
        {
            "accepted": True,
            "mode": "degraded",
            "unavailableFeatures": [
                {
                    "featureSet": "memory.extraction",
                    "missingCapabilities": ["inferenceLifecycle"],
                    "effect": "disabled",
                },
                {"featureSet": "other", "missingCapabilities": ["tools", 3]},
                "junk",
            ],
            "notes": [],
        }
    )
    assert receipt.mode == "degraded"
    assert receipt.unavailable == [
        UnavailableFeature("memory.extraction", ("inferenceLifecycle",), "disabled"),
        UnavailableFeature("other", ("tools",), None),
    ]
    assert len(receipt.problems) == 2


def test_a_refusal_carries_its_fallback_and_reason() -> None:
    """3.5: accepted:false requires fallback mcp-only or close."""
    receipt = parse_receipt(
        {
            "accepted": False,
            "fallback": "mcp-only",
            "missingCapabilities": ["contextHooks.beforeInference.inject.system"],
            "reason": "needs system injection",
        }
    )
    assert not receipt.accepted
    assert receipt.fallback == "mcp-only"
    assert receipt.missing_capabilities == ("contextHooks.beforeInference.inject.system",)
    assert receipt.reason == "needs system injection"
    assert receipt.problems == ()


@pytest.mark.parametrize(
    "obj",
    [
        None,
        [],
        "ok",
        {},
        {"accepted": "yes"},
        {"accepted": False},
        {"accepted": False, "fallback": "x"},
    ],
)
def test_a_malformed_receipt_reads_as_not_accepted_with_problems(obj: Any) -> None:
    """Fail-closed: anything but accepted:true is a refusal, and the deviation is noted."""
    receipt = parse_receipt(obj)
    assert receipt.accepted is False
    assert receipt.problems
