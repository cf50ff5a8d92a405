"""``channels/publish`` as a Request to one connector, and what its answer means.

``delivered`` only on ``{"delivered": true, "messageId"}``; ``failed`` only when the connector
said for certain that nothing was posted (:data:`DEFINITE_REFUSALS`); ``unknown`` for
everything else after a sent request, because it may have been posted and sending it again
could post it twice (channel-registry.md §8.1). A connector that answers ``-32601`` gets the
Notification form from then on.

What it deliberately does not know: whether the publish is allowed (the caller checks first),
or agents.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Protocol

from structlog.typing import FilteringBoundLogger as BoundLogger

from switchboard.config import ConnectorConfig
from switchboard.protocol import CapabilityDenied, ChannelNotPermitted, McplError, UnknownChannel
from switchboard.refusals.outcome import PublishOutcome, PublishStatus
from switchboard.refusals.refusal import Refusal, RefusalKind
from switchboard.transport import (
    METHOD_NOT_FOUND,
    LinkClosedError,
    Peer,
    RequestTimeoutError,
    RpcError,
)

__all__ = ["DEFINITE_REFUSALS", "MAY_HAVE_POSTED", "PublishingSession", "publish_over"]


class PublishingSession(Protocol):
    """What a publish reads and changes of its connection (a ``ConnectorSession``)."""

    server_id: str
    config: ConnectorConfig
    log: BoundLogger
    publish_notification_only: bool

    @property
    def peer(self) -> Peer | None: ...


DEFINITE_REFUSALS: Final[Mapping[type[McplError], str]] = MappingProxyType(
    {
        UnknownChannel: "it does not know this channel",
        ChannelNotPermitted: "it may not post in this channel",
        CapabilityDenied: "its grant does not let it publish",
    }
)
"""The error answers to ``channels/publish`` that mean nothing was posted (``failed``), each
with what it tells the agent. The connector checks these before it posts (MCPL §14.6, §5.4):
-32023 unknown channel, -32017 channel not permitted, -32002 capability denied. Any other error
is ``unknown``: the connector may have posted before it failed. docs/tools.md and
docs/connectors.md show this table."""

MAY_HAVE_POSTED: Final = (
    "the message may have been posted, and sending it again could post it twice"
)
"""How every ``unknown`` publish ends: what the agent must weigh before sending again."""

_NOTIFIED = "it was sent as a notification, which gets no receipt from this connector"


async def publish_over(
    session: PublishingSession, channel_id: str, content: list[dict[str, Any]], conversation_id: str
) -> PublishOutcome:
    """Send ``channels/publish`` as a Request and report what the connector said.

    What it knows: the publish params, the per-connector publish timeout, the fallback to the
    Notification form for connectors that only take that (peers.md: mcpl-editor), and how an answer
    maps to a :class:`PublishOutcome` (channel-registry.md §8.1, T42):

    - ``delivered`` only on ``{"delivered": true, "messageId": ...}``;
    - ``failed`` (nothing was posted) only when the connector said so for certain: a ``{"delivered":
      false}`` receipt with no ``messageId`` (missing or null), or an error whose code is a definite
      refusal in :data:`DEFINITE_REFUSALS` (the one table of them);
    - ``unknown`` (it may have been posted; sending it again could post it twice) for everything
      else that followed a sent request: any other error (``-32603`` included), ``delivered: false``
      beside a ``messageId``, an empty or malformed receipt, silence, a lost link, or the
      Notification form (which has no receipt). Every ``unknown`` reason is worded once, by
      :func:`_unconfirmed`, and ends with :data:`MAY_HAVE_POSTED`.

    ``-32601`` (method not found) is not an outcome: the connector only takes the Notification form,
    so the publish is sent again that way (and every later one goes that way at once).

    ``delivered`` only on ``{"delivered": true, "messageId": ...}``; ``failed`` only on a
    definite refusal (:data:`DEFINITE_REFUSALS`, or ``delivered: false`` with no
    ``messageId``); anything else after the request went out is ``unknown``.
    """
    sid = session.server_id
    peer = session.peer
    if peer is None:
        return PublishOutcome.refused(
            Refusal(
                RefusalKind.SERVER_GONE,
                f"server {sid} is not connected",
                server_id=sid,
                channel_id=channel_id,
            )
        )
    params = {"conversationId": conversation_id, "channelId": channel_id, "content": content}
    timeout = session.config.publish_timeout
    try:
        if session.publish_notification_only:
            await peer.notify("channels/publish", params)
            return _unconfirmed(sid, channel_id, _NOTIFIED)
        result = await peer.request("channels/publish", params, timeout=timeout)
    except RpcError as exc:
        if exc.code == METHOD_NOT_FOUND and not session.publish_notification_only:
            # A connector that only takes the notification form (peers.md: mcpl-editor).
            session.publish_notification_only = True
            session.log.warning("publish_request_unsupported_using_notification")
            await peer.notify("channels/publish", params)
            return _unconfirmed(sid, channel_id, _NOTIFIED)
        return _error_answer(sid, channel_id, exc)
    except RequestTimeoutError:
        return _unconfirmed(sid, channel_id, f"the connector did not answer within {timeout:g} s")
    except LinkClosedError:
        return _unconfirmed(
            sid, channel_id, "the link to the connector was lost before it answered"
        )
    return _receipt(sid, channel_id, result)


def _error_answer(sid: str, channel_id: str, exc: RpcError) -> PublishOutcome:
    """An error answer: ``failed`` for a definite refusal, else ``unknown``."""
    said = f"{exc.message} (code {exc.code})"
    for cls, meaning in DEFINITE_REFUSALS.items():
        if isinstance(exc, cls):
            return PublishOutcome.refused(
                Refusal(
                    RefusalKind.CONNECTOR_FAILED,
                    f"the connector refused the publish, so nothing was posted: {meaning} ({said})",
                    server_id=sid,
                    channel_id=channel_id,
                    code=exc.code,
                    data=exc.data,
                )
            )
    return _unconfirmed(
        sid,
        channel_id,
        f"the connector answered with an error that does not say it posted nothing: {said}",
    )


def _receipt(sid: str, channel_id: str, result: Any) -> PublishOutcome:
    """A result answer: only a well-formed receipt is ``delivered`` or ``failed``."""
    # type() first: an ABC isinstance costs a microsecond on every confirmed publish.
    if type(result) is not dict and not isinstance(result, Mapping):
        return _unconfirmed(sid, channel_id, "the connector's answer is not a delivery receipt")
    delivered = result.get("delivered")
    message_id = result.get("messageId")
    if delivered is True and isinstance(message_id, str | int):
        return PublishOutcome(PublishStatus.DELIVERED, sid, channel_id, message_id=str(message_id))
    if delivered is False and message_id is None:
        said = result.get("reason")
        because = f": {said}" if isinstance(said, str) and said else ""
        return PublishOutcome.refused(
            Refusal(
                RefusalKind.CONNECTOR_FAILED,
                f"the connector reported that the message was not delivered{because}",
                server_id=sid,
                channel_id=channel_id,
                result=dict(result),
            )
        )
    if delivered is False:
        return _unconfirmed(
            sid,
            channel_id,
            f"the connector answered delivered: false but gave a message id ({message_id!r})",
        )
    return _unconfirmed(sid, channel_id, "the connector's answer is not a valid delivery receipt")


def _unconfirmed(server_id: str, channel_id: str, why: str) -> PublishOutcome:
    """An ``unknown`` outcome: ``why`` it is not confirmed, then :data:`MAY_HAVE_POSTED`."""
    reason = f"Delivery is not confirmed: {why}; {MAY_HAVE_POSTED}."
    return PublishOutcome(PublishStatus.UNKNOWN, server_id, channel_id, reason=reason)
