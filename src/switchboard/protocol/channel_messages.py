"""Params and results of the ``channels/*`` methods (spec §14; mcpl-protocol.md 4.2-4.10).

What this module knows: the wire shape of every channel method, including the fleet's
de-facto extensions (``initiallyOpen``, descriptor ``capabilities``, ``channels/open``
by ``channelId`` with ``history``, typing's ``op``/``typing``, acknowledge's ``intent``),
and how to validate the items of a batch (descriptors, incoming messages) one by one so a
malformed item is answered ``accepted:false`` instead of sinking the whole call (4.3, 4.8).

What it deliberately does not know: whether a channel is registered, authorized, open or
permitted. Batch params keep their items as ``list[Any]``; the host runs
:func:`validate_descriptors` / :func:`validate_incoming` and decides per item.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Self

from pydantic import Field, TypeAdapter, model_validator

from .content import ContentBlock
from .wire import JsonObject, WireModel, validate_batch

__all__ = [
    "AcknowledgeParams",
    "AcknowledgeResult",
    "Author",
    "ChangedParams",
    "ChannelDescriptor",
    "CloseParams",
    "CloseResult",
    "DescriptorProblem",
    "Direction",
    "HistoryRequest",
    "IncomingItemResult",
    "IncomingMessage",
    "IncomingParams",
    "IncomingResult",
    "ItemResult",
    "ListResult",
    "MessageProblem",
    "OpenParams",
    "OpenResult",
    "OutgoingChunkParams",
    "OutgoingCompleteParams",
    "PublishParams",
    "PublishResult",
    "RegisterParams",
    "RegisterResult",
    "TypingParams",
    "validate_descriptors",
    "validate_incoming",
]

Direction = Literal["inbound", "outbound", "bidirectional"]


class ChannelDescriptor(WireModel):
    """A channel as a server describes it (§14.2). ``id`` is unique per connection only."""

    id: str = Field(min_length=1)
    type: str
    label: str
    direction: Direction
    address: JsonObject | None = None
    metadata: JsonObject | None = None
    initially_open: bool | None = Field(default=None, alias="initiallyOpen")
    capabilities: JsonObject | None = None


class Author(WireModel):
    """Who wrote an incoming message."""

    id: str
    name: str


class IncomingMessage(WireModel):
    """One message of ``channels/incoming`` (§14.3), also used for ``channels/open`` history.

    ``timestamp`` is ISO 8601 by the spec; it is kept as the peer's string and only checked
    to be non-empty.
    """

    channel_id: str = Field(alias="channelId", min_length=1)
    message_id: str = Field(alias="messageId", min_length=1)
    thread_id: str | None = Field(default=None, alias="threadId")
    author: Author
    timestamp: str = Field(min_length=1)
    content: list[ContentBlock]
    metadata: JsonObject | None = None
    tags: list[str] | None = None


@dataclass(frozen=True, slots=True)
class DescriptorProblem:
    """A descriptor that failed validation: its ``id`` if it had a string one, and why."""

    id: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class MessageProblem:
    """An incoming message that failed validation: its ``messageId`` if readable, and why."""

    message_id: str | None
    reason: str


def _string_member(item: Any, key: str) -> str | None:
    if isinstance(item, dict):
        value = item.get(key)
        if isinstance(value, str):
            return value
    return None


def _descriptor_problem(item: Any, reason: str) -> DescriptorProblem:
    return DescriptorProblem(id=_string_member(item, "id"), reason=f"malformed: {reason}")


def _message_problem(item: Any, reason: str) -> MessageProblem:
    return MessageProblem(
        message_id=_string_member(item, "messageId"), reason=f"malformed: {reason}"
    )


_DESCRIPTORS: TypeAdapter[list[ChannelDescriptor]] = TypeAdapter(list[ChannelDescriptor])
_DESCRIPTOR: TypeAdapter[ChannelDescriptor] = TypeAdapter(ChannelDescriptor)
_MESSAGES: TypeAdapter[list[IncomingMessage]] = TypeAdapter(list[IncomingMessage])
_MESSAGE: TypeAdapter[IncomingMessage] = TypeAdapter(IncomingMessage)


def validate_descriptors(items: list[Any]) -> list[ChannelDescriptor | DescriptorProblem]:
    """Validate descriptors independently; one entry per item, in order (§14.5, 4.3).

    Raises:
        TypeError: if ``items`` is not a list (the params as a whole are malformed).
    """
    return validate_batch(_DESCRIPTORS, _DESCRIPTOR, items, _descriptor_problem)


def validate_incoming(items: list[Any]) -> list[IncomingMessage | MessageProblem]:
    """Validate incoming messages independently; one entry per item, in order (4.8).

    Raises:
        TypeError: if ``items`` is not a list (the params as a whole are malformed).
    """
    return validate_batch(_MESSAGES, _MESSAGE, items, _message_problem)


class RegisterParams(WireModel):
    """``channels/register`` params; items are validated one by one by the host."""

    channels: list[Any]


class ItemResult(WireModel):
    """One itemized answer to a descriptor: ``{id, accepted, reason?}``."""

    id: str | None
    accepted: bool
    reason: str | None = None


class RegisterResult(WireModel):
    """``channels/register`` result, also the Request form of ``channels/changed``."""

    results: list[ItemResult]


class ChangedParams(WireModel):
    """``channels/changed`` params; ``added``/``updated`` are validated like register, and
    ``removed`` ids one by one by the host (a number names the channel whose id is its decimal
    string; anything else is refused alone, channel-registry.md §11.2)."""

    added: list[Any] | None = None
    removed: list[Any] | None = None
    updated: list[Any] | None = None


class ListResult(WireModel):
    """``channels/list`` result (shape unspecified by the spec; the libraries' form, A-23)."""

    channels: list[ChannelDescriptor]


class HistoryRequest(WireModel):
    """The fleet's ``history`` member of ``channels/open``."""

    limit: int = Field(ge=0)
    before_message_id: str | None = Field(default=None, alias="beforeMessageId")
    since_last_seen: bool | None = Field(default=None, alias="sinceLastSeen")


class OpenParams(WireModel):
    """``channels/open`` params: ``{type, address}`` by the spec, or the fleet's ``channelId``.

    At least one way of naming the channel is required: ``channelId``, or both ``type`` and
    ``address``.
    """

    type: str | None = None
    address: JsonObject | None = None
    metadata: JsonObject | None = None
    channel_id: str | None = Field(default=None, alias="channelId", min_length=1)
    history: HistoryRequest | None = None

    @model_validator(mode="after")
    def _names_a_channel(self) -> Self:
        if self.channel_id is None and (self.type is None or self.address is None):
            raise ValueError("needs channelId, or both type and address")
        return self


class OpenResult(WireModel):
    """``channels/open`` result; ``history`` is oldest first."""

    channel: ChannelDescriptor
    history: list[IncomingMessage] | None = None
    history_truncated: bool | None = Field(default=None, alias="historyTruncated")


class CloseParams(WireModel):
    """``channels/close`` params."""

    channel_id: str = Field(alias="channelId", min_length=1)


class CloseResult(WireModel):
    """``channels/close`` result."""

    closed: bool


class PublishParams(WireModel):
    """``channels/publish`` params (Notification or Request)."""

    conversation_id: str | None = Field(default=None, alias="conversationId")
    channel_id: str = Field(alias="channelId", min_length=1)
    stream: bool | None = None
    content: list[ContentBlock]


class PublishResult(WireModel):
    """``channels/publish`` Request result; only ``delivered is True`` counts as delivered."""

    delivered: bool
    message_id: str | None = Field(default=None, alias="messageId")


class IncomingParams(WireModel):
    """``channels/incoming`` params; messages are validated one by one by the host."""

    messages: list[Any]


class IncomingItemResult(WireModel):
    """One itemized answer to an incoming message; ``reason`` is not in the spec (A-17)."""

    message_id: str | None = Field(alias="messageId")
    accepted: bool
    conversation_id: str | None = Field(default=None, alias="conversationId")
    reason: str | None = None


class IncomingResult(WireModel):
    """``channels/incoming`` result, one entry per submitted message."""

    results: list[IncomingItemResult]


class TypingParams(WireModel):
    """``channels/typing`` params; the fleet reads ``op`` or ``typing`` (4.10, A-1)."""

    channel_id: str = Field(alias="channelId", min_length=1)
    op: Literal["start", "stop"] | None = None
    typing: bool | None = None
    metadata: JsonObject | None = None


class AcknowledgeParams(WireModel):
    """``channels/acknowledge`` params (fleet shape; unspecified by the spec, A-1)."""

    channel_id: str = Field(alias="channelId", min_length=1)
    message_id: str = Field(alias="messageId", min_length=1)
    intent: str
    value: str | None = None


class AcknowledgeResult(WireModel):
    """``channels/acknowledge`` result (fleet shape)."""

    acknowledged: bool
    representation: str | None = None
    reason: str | None = None


class OutgoingChunkParams(WireModel):
    """``channels/outgoing/chunk``: ``index`` rises per inference across channels (4.9)."""

    inference_id: str = Field(alias="inferenceId")
    conversation_id: str = Field(alias="conversationId")
    channel_id: str = Field(alias="channelId", min_length=1)
    index: int = Field(ge=0)
    delta: str


class OutgoingCompleteParams(WireModel):
    """``channels/outgoing/complete``: the full moderated text for one channel (4.9)."""

    inference_id: str = Field(alias="inferenceId")
    conversation_id: str = Field(alias="conversationId")
    channel_id: str = Field(alias="channelId", min_length=1)
    content: list[ContentBlock]
