"""Models of the channels/* methods and per-item batch validation (§14)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from switchboard.protocol import (
    AcknowledgeParams,
    AcknowledgeResult,
    ChangedParams,
    ChannelDescriptor,
    CloseParams,
    CloseResult,
    DescriptorProblem,
    IncomingItemResult,
    IncomingMessage,
    IncomingResult,
    ItemResult,
    ListResult,
    MessageProblem,
    OpenParams,
    OpenResult,
    OutgoingChunkParams,
    OutgoingCompleteParams,
    PublishParams,
    PublishResult,
    RegisterParams,
    RegisterResult,
    TextContent,
    TypingParams,
    dump,
    validate_descriptors,
    validate_incoming,
)


def _descriptor(i: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "id": f"discord:100:{i}",
        "type": "discord",
        "label": f"#c{i} (Test Guild)",
        "direction": "bidirectional",
        **extra,
    }


def _message(i: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "channelId": "discord:100:1",
        "messageId": f"m{i}",
        "author": {"id": "u1", "name": "Carol"},
        "timestamp": "2026-08-01T12:00:00.000Z",
        "content": [{"type": "text", "text": f"hello {i}"}],
        **extra,
    }


DISCORD_DESCRIPTOR: dict[str, Any] = _descriptor(
    address={"guildId": "100", "channelId": "1"},
    metadata={"channelType": "text"},
    initiallyOpen=False,
    capabilities={
        "history": {"maxMessages": 100, "supportsBeforeMessage": True},
        "acknowledgment": {"kind": "reaction", "supportsValue": True},
    },
)


def test_a_discord_descriptor_with_fleet_extensions_round_trips() -> None:
    """§14.2 plus the fleet's initiallyOpen and capabilities (mcpl-protocol.md 4.2)."""
    descriptor = ChannelDescriptor.model_validate(DISCORD_DESCRIPTOR)
    assert descriptor.id == "discord:100:1"
    assert descriptor.initially_open is False
    assert descriptor.address == {"guildId": "100", "channelId": "1"}
    assert dump(descriptor) == DISCORD_DESCRIPTOR


def test_unknown_descriptor_members_survive_a_round_trip() -> None:
    """§8: peers add members; a host keeps them."""
    wire = _descriptor(topic="general chat", position=3)
    descriptor = ChannelDescriptor.model_validate(wire)
    assert descriptor.model_extra == {"topic": "general chat", "position": 3}
    assert dump(descriptor) == wire


@pytest.mark.parametrize(
    ("change", "loc"),
    [
        ({"label": None}, ("label",)),
        ({"direction": "sideways"}, ("direction",)),
        ({"id": ""}, ("id",)),
        ({"id": 7}, ("id",)),
        ({"address": "not an object"}, ("address",)),
    ],
)
def test_a_bad_descriptor_is_rejected_at_the_offending_field(
    change: dict[str, Any], loc: tuple[str, ...]
) -> None:
    wire = {k: v for k, v in {**_descriptor(), **change}.items() if v is not None}
    with pytest.raises(ValidationError) as info:
        ChannelDescriptor.model_validate(wire)
    assert info.value.errors()[0]["loc"] == loc


def test_models_are_immutable_values() -> None:
    descriptor = ChannelDescriptor.model_validate(_descriptor())
    with pytest.raises(ValidationError):
        descriptor.label = "renamed"  # type: ignore[misc]


def test_validate_descriptors_marks_just_the_malformed_items() -> None:
    """§14.5 (4.3): one malformed descriptor gets accepted:false, the rest go on."""
    items: list[Any] = [
        _descriptor(1),
        {"id": "discord:100:2", "type": "discord"},
        "junk",
        _descriptor(4),
    ]
    out = validate_descriptors(items)
    assert [type(x) for x in out] == [
        ChannelDescriptor,
        DescriptorProblem,
        DescriptorProblem,
        ChannelDescriptor,
    ]
    second, third = out[1], out[2]
    assert isinstance(second, DescriptorProblem)
    assert second.id == "discord:100:2"
    assert "label" in second.reason
    assert "direction" in second.reason
    assert isinstance(third, DescriptorProblem)
    assert third.id is None
    assert isinstance(out[3], ChannelDescriptor)
    assert out[3].id == "discord:100:4"


def test_validate_descriptors_keeps_order_across_chunks() -> None:
    items: list[Any] = [_descriptor(i) for i in range(3000)]
    for bad in (5, 1024, 2999):
        items[bad] = {"id": f"bad{bad}"}
    out = validate_descriptors(items)
    assert len(out) == 3000
    problems = [i for i, x in enumerate(out) if isinstance(x, DescriptorProblem)]
    assert problems == [5, 1024, 2999]
    assert all(
        x.id == f"discord:100:{i}" for i, x in enumerate(out) if isinstance(x, ChannelDescriptor)
    )


def test_validate_descriptors_on_an_all_good_batch_returns_models_only() -> None:
    out = validate_descriptors([_descriptor(i) for i in range(10)])
    assert all(isinstance(x, ChannelDescriptor) for x in out)
    assert validate_descriptors([]) == []


def test_batch_validation_refuses_params_that_are_not_a_list() -> None:
    with pytest.raises(TypeError):
        validate_descriptors({"id": "x"})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        validate_incoming("x")  # type: ignore[arg-type]


def test_an_incoming_message_round_trips_with_nested_extras() -> None:
    """§14.3: channelId, messageId, author, timestamp, content; tags and metadata optional."""
    wire = _message(
        threadId="t1",
        tags=["chat:ambient", "chat:from-human"],
        metadata={"isMention": False, "rawContent": "hello"},
        replyTo="m0",
    )
    wire["author"]["isBot"] = False
    message = IncomingMessage.model_validate(wire)
    assert message.channel_id == "discord:100:1"
    assert message.thread_id == "t1"
    assert message.author.name == "Carol"
    assert isinstance(message.content[0], TextContent)
    assert dump(message) == wire


def test_validate_incoming_marks_just_the_malformed_messages() -> None:
    """4.8: per-message failures are itemized, never a whole-call failure."""
    items: list[Any] = [
        _message(1),
        _message(2, content=[{"type": "hologram"}]),
        _message(3, author={"id": "u"}),
        _message(4),
    ]
    out = validate_incoming(items)
    assert isinstance(out[0], IncomingMessage)
    assert isinstance(out[3], IncomingMessage)
    bad_content, bad_author = out[1], out[2]
    assert isinstance(bad_content, MessageProblem)
    assert bad_content.message_id == "m2"
    assert bad_content.reason.startswith("malformed: content.0")
    assert isinstance(bad_author, MessageProblem)
    assert "author.name" in bad_author.reason


def test_an_empty_timestamp_is_rejected_but_any_string_is_kept() -> None:
    assert IncomingMessage.model_validate(_message(timestamp="yesterday")).timestamp == "yesterday"
    with pytest.raises(ValidationError) as info:
        IncomingMessage.model_validate(_message(timestamp=""))
    assert info.value.errors()[0]["loc"] == ("timestamp",)


def test_register_and_incoming_params_keep_items_unvalidated() -> None:
    params = RegisterParams.model_validate({"channels": [_descriptor(), 3]})
    assert params.channels[1] == 3
    incoming = IncomingMessage.model_validate(_message())
    assert incoming.tags is None


def test_itemized_results_serialize_with_wire_names() -> None:
    """4.3 and 4.8: one entry per item; reason only when present."""
    register = RegisterResult(
        results=[
            ItemResult(id="a", accepted=True),
            ItemResult(id="b", accepted=False, reason="capability_denied"),
        ]
    )
    assert dump(register) == {
        "results": [
            {"id": "a", "accepted": True},
            {"id": "b", "accepted": False, "reason": "capability_denied"},
        ]
    }
    incoming = IncomingResult(
        results=[IncomingItemResult(message_id="m1", accepted=True, conversation_id="c1")]
    )
    assert dump(incoming) == {
        "results": [{"messageId": "m1", "accepted": True, "conversationId": "c1"}]
    }


def test_changed_params_accept_any_subset_of_members() -> None:
    """§14.3: added, removed, updated are all optional."""
    assert dump(ChangedParams.model_validate({"removed": ["a"]})) == {"removed": ["a"]}
    changed = ChangedParams.model_validate({"added": [_descriptor()], "updated": []})
    assert changed.added == [_descriptor()]
    # Removed ids are itemized by the host (a number names a channel, T53); only a removed
    # member that is not a list fails the whole change.
    assert ChangedParams.model_validate({"removed": [1, "a", None]}).removed == [1, "a", None]
    with pytest.raises(ValidationError):
        ChangedParams.model_validate({"removed": "a"})


def test_a_list_result_holds_descriptors() -> None:
    result = ListResult.model_validate({"channels": [_descriptor()]})
    assert result.channels[0].label == "#c1 (Test Guild)"


@pytest.mark.parametrize(
    "wire",
    [
        {"type": "discord", "address": {"channelId": "1"}},
        {"channelId": "discord:100:1", "history": {"limit": 20, "sinceLastSeen": True}},
        {"channelId": "x", "history": {"limit": 5, "beforeMessageId": "m9"}, "metadata": {}},
    ],
)
def test_open_params_name_a_channel_by_address_or_by_id(wire: dict[str, Any]) -> None:
    """§14.3 {type, address} and the fleet's {channelId, history} (4.6)."""
    assert dump(OpenParams.model_validate(wire)) == wire


def test_open_params_without_a_way_to_name_the_channel_are_rejected() -> None:
    with pytest.raises(ValidationError):
        OpenParams.model_validate({"type": "discord"})
    with pytest.raises(ValidationError) as info:
        OpenParams.model_validate({"channelId": "x", "history": {"limit": -1}})
    assert info.value.errors()[0]["loc"] == ("history", "limit")


def test_an_open_result_carries_the_descriptor_and_history() -> None:
    result = OpenResult.model_validate(
        {"channel": _descriptor(), "history": [_message(1), _message(2)], "historyTruncated": True}
    )
    assert result.history_truncated is True
    assert result.history is not None
    assert [m.message_id for m in result.history] == ["m1", "m2"]


def test_close_and_publish_shapes() -> None:
    """§14.3: close {channelId} -> {closed}; publish -> {delivered, messageId?}."""
    assert CloseParams(channel_id="c").model_dump(by_alias=True) == {"channelId": "c"}
    assert CloseResult.model_validate({"closed": True}).closed
    publish = PublishParams(
        conversation_id="conv", channel_id="c", content=[TextContent(text="hi")]
    )
    assert dump(publish) == {
        "conversationId": "conv",
        "channelId": "c",
        "content": [{"type": "text", "text": "hi"}],
    }
    ack = PublishResult.model_validate({"delivered": True, "messageId": "m1", "ts": 1})
    assert (ack.delivered, ack.message_id) == (True, "m1")
    assert PublishResult.model_validate({"delivered": False}).message_id is None


def test_typing_params_accept_each_fleet_variant() -> None:
    """4.10: {channelId}, op start/stop, matrix's typing bool, zulip's metadata.topic."""
    for wire in (
        {"channelId": "c"},
        {"channelId": "c", "op": "start"},
        {"channelId": "c", "op": "stop", "typing": False},
        {"channelId": "c", "metadata": {"topic": "t"}},
    ):
        assert dump(TypingParams.model_validate(wire)) == wire
    with pytest.raises(ValidationError) as info:
        TypingParams.model_validate({"channelId": "c", "op": "pause"})
    assert info.value.errors()[0]["loc"] == ("op",)


def test_acknowledge_uses_the_fleet_shape() -> None:
    params = AcknowledgeParams(
        channel_id="c", message_id="m", intent="seen-not-opening", value="👀"
    )
    assert dump(params) == {
        "channelId": "c",
        "messageId": "m",
        "intent": "seen-not-opening",
        "value": "👀",
    }
    result = AcknowledgeResult.model_validate({"acknowledged": True, "representation": "👀"})
    assert result.representation == "👀"


def test_outgoing_chunk_and_complete_shapes() -> None:
    """4.9: index starts at 0 and is never negative; complete carries full content."""
    chunk = OutgoingChunkParams(
        inference_id="i", conversation_id="c", channel_id="ch", index=0, delta="He"
    )
    assert dump(chunk) == {
        "inferenceId": "i",
        "conversationId": "c",
        "channelId": "ch",
        "index": 0,
        "delta": "He",
    }
    with pytest.raises(ValidationError):
        OutgoingChunkParams(
            inference_id="i", conversation_id="c", channel_id="ch", index=-1, delta=""
        )
    complete = OutgoingCompleteParams.model_validate(
        {
            "inferenceId": "i",
            "conversationId": "c",
            "channelId": "ch",
            "content": [{"type": "text", "text": "Hello"}],
        }
    )
    assert complete.content == [TextContent(text="Hello")]
