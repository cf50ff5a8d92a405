"""What became of a publish: delivered, failed or unknown.

``delivered`` is only ever set on the connector's own word (a ``channels/publish`` result with
``delivered: true``). ``failed`` means nothing went out, and the outcome carries the
:class:`~switchboard.refusals.refusal.Refusal` that says why: Switchboard refused before sending, or
the connector refused for certain (``connector-failed``). ``unknown`` means the request was
sent but not confirmed (an error that is not a definite refusal, a timeout, a lost link, a
malformed answer, or a connector that only takes the notification form); which answer is which
is decided in :mod:`switchboard.connections.publish_request`.

What it deliberately does not know: how a publish is decided or sent, and result shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from switchboard.refusals.refusal import Refusal

__all__ = ["PublishOutcome", "PublishStatus"]


class PublishStatus(StrEnum):
    DELIVERED = "delivered"
    FAILED = "failed"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class PublishOutcome:
    """The result of one publish, as the agent and the logs see it.

    Attributes:
        status: Delivered, failed or unknown.
        server_id: The server it went to (or was meant to), if one was chosen.
        channel_id: The channel it went to (or was meant to), if one was chosen.
        message_id: The connector's id of the delivered message.
        reason: Why it failed or is unknown, as a clause or sentence.
        refusal: For ``failed``: why nothing went out (its ``message`` is the ``reason``).
    """

    status: PublishStatus
    server_id: str | None
    channel_id: str | None
    message_id: str | None = None
    reason: str | None = None
    refusal: Refusal | None = None

    @property
    def delivered(self) -> bool:
        return self.status is PublishStatus.DELIVERED

    @classmethod
    def refused(cls, refusal: Refusal) -> PublishOutcome:
        """Nothing went out, for the reason ``refusal`` gives (its channel, if it names one)."""
        return cls(
            PublishStatus.FAILED,
            refusal.server_id,
            refusal.channel_id,
            reason=refusal.message,
            refusal=refusal,
        )
