"""``channels/publish`` as a Request to one connector, and what its answer means.

What this module knows: the publish params, the per-connector publish timeout, the fallback to
the Notification form for connectors that only take that (peers.md: mcpl-editor), and how an
answer maps to a :class:`PublishOutcome`: ``delivered`` only on ``{"delivered": true,
"messageId": ...}``, ``failed`` on an error answer or ``delivered: false``, ``unknown`` on
silence, a lost link or a malformed answer (the message may have gone out).

What it deliberately does not know: whether the publish is allowed (the caller checks the
channel, the session state and the grant first), or agents.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from switchboard.host.outcome import PublishOutcome, PublishStatus
from switchboard.host.refusal import Refusal, RefusalKind
from switchboard.transport import METHOD_NOT_FOUND, LinkClosedError, RequestTimeoutError, RpcError

if TYPE_CHECKING:
    from switchboard.host.connection.session import ConnectorSession

__all__ = ["publish_over"]


async def publish_over(
    session: ConnectorSession, channel_id: str, content: list[dict[str, Any]], conversation_id: str
) -> PublishOutcome:
    """Send ``channels/publish`` as a Request and report what the connector said.

    ``delivered`` only on ``{"delivered": true, "messageId": ...}``; an error answer is
    ``failed``; silence, a lost link or a malformed answer is ``unknown`` (it may have gone out).
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
            return _unconfirmed(
                sid, channel_id, "sent as a notification; this connector gives no receipt"
            )
        result = await peer.request("channels/publish", params, timeout=timeout)
    except RpcError as exc:
        if exc.code == METHOD_NOT_FOUND and not session.publish_notification_only:
            # A connector that only takes the notification form (peers.md: mcpl-editor).
            session.publish_notification_only = True
            session.log.warning("publish_request_unsupported_using_notification")
            await peer.notify("channels/publish", params)
            return _unconfirmed(
                sid, channel_id, "sent as a notification; this connector gives no receipt"
            )
        return PublishOutcome.refused(
            Refusal(
                RefusalKind.CONNECTOR_FAILED,
                f"the connector refused the publish: {exc.message} (code {exc.code})",
                server_id=sid,
                channel_id=channel_id,
                code=exc.code,
                data=exc.data,
            )
        )
    except RequestTimeoutError:
        return _unconfirmed(sid, channel_id, f"no answer from the connector within {timeout:g} s")
    except LinkClosedError:
        return _unconfirmed(
            sid, channel_id, "the link to the connector was lost before it answered"
        )
    if isinstance(result, Mapping):
        delivered = result.get("delivered")
        message_id = result.get("messageId")
        if delivered is True and isinstance(message_id, str | int):
            return PublishOutcome(
                PublishStatus.DELIVERED, sid, channel_id, message_id=str(message_id)
            )
        if delivered is False:
            return PublishOutcome.refused(
                Refusal(
                    RefusalKind.CONNECTOR_FAILED,
                    "the connector reported that the message was not delivered",
                    server_id=sid,
                    channel_id=channel_id,
                    result=dict(result),
                )
            )
    return _unconfirmed(sid, channel_id, "the connector's answer did not confirm delivery")


def _unconfirmed(server_id: str, channel_id: str, reason: str) -> PublishOutcome:
    return PublishOutcome(PublishStatus.UNKNOWN, server_id, channel_id, reason=reason)
