"""What became of a publish: delivered, failed or unknown.

``delivered`` is only ever set on the connector's own word (a ``channels/publish`` result with
``delivered: true``). ``failed`` means nothing went out: either Switchboard refused before
sending (``refusal`` names why) or the connector answered with an error. ``unknown`` means the
request was sent but not confirmed (a timeout, a lost link, a malformed answer, or a connector
that only takes the notification form).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class PublishStatus(StrEnum):
    DELIVERED = "delivered"
    FAILED = "failed"
    UNKNOWN = "unknown"


class Refusal(StrEnum):
    """Why a publish was refused before anything was sent (channel-registry.md §8.2)."""

    UNKNOWN_CHANNEL = "unknown-channel"
    AMBIGUOUS_CHANNEL = "ambiguous-channel"
    INBOUND_ONLY = "inbound-only"
    SERVER_GONE = "server-gone"
    SERVER_CONNECTING = "server-connecting"
    NOT_GRANTED = "not-granted"
    EMPTY_CONTENT = "empty-content"
    NO_CHANNEL = "no-channel"
    """No channel was named and there is none to default to (the turn has no channel)."""
    CHANNEL_NOT_OPEN = "channel-not-open"
    """Speech would have opened the channel first, and it could not be opened (or its open was
    answered for another channel); ``detail["lifecycle"]`` says which (channel-registry.md §8.3)."""


@dataclass(frozen=True, slots=True)
class PublishOutcome:
    """The result of one publish, as the agent and the logs see it."""

    status: PublishStatus
    server_id: str | None
    channel_id: str | None
    message_id: str | None = None
    reason: str | None = None
    refusal: Refusal | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def delivered(self) -> bool:
        return self.status is PublishStatus.DELIVERED

    @classmethod
    def refused(
        cls,
        refusal: Refusal,
        reason: str,
        *,
        server_id: str | None = None,
        channel_id: str | None = None,
        **detail: Any,
    ) -> PublishOutcome:
        return cls(
            PublishStatus.FAILED,
            server_id,
            channel_id,
            reason=reason,
            refusal=refusal,
            detail=dict(detail),
        )
