"""The log line of each host event: :func:`log_event`, the listener the host subscribes first.

Traffic at DEBUG, one line per batch; everything else at INFO (a connector gone MCP-only is a
warning).
"""

from __future__ import annotations

from logging import DEBUG
from typing import Final, assert_never

import structlog

from switchboard.events.kinds import (
    ChannelsChanged,
    ChannelsRegistered,
    ChannelsRemoved,
    ConnectorExited,
    ConnectorFailed,
    ConnectorMcpOnly,
    ConnectorReady,
    ConnectorRefused,
    ConnectorRestartScheduled,
    ConnectorStarted,
    ConnectorToolsChanged,
    HostEvent,
    LifecycleStep,
    ManifestApplied,
    MessagesAccepted,
    Published,
    PushAccepted,
    StorageFailed,
    StorageRecovered,
)
from switchboard.runtime.logs import enabled_for

__all__ = ["log_event"]

log = structlog.get_logger(__name__)

_TRAFFIC: Final = frozenset({MessagesAccepted, PushAccepted, Published})


def log_event(event: HostEvent) -> None:
    """Log one line for ``event``.

    Connection, channel and lifecycle events are INFO (a connector that went MCP-only is a
    warning). Traffic (:class:`MessagesAccepted`, :class:`PushAccepted`, :class:`Published`)
    is DEBUG, one line per batch and never one per message, asked for with
    :func:`~switchboard.runtime.logs.enabled_for` first, so the hot paths pay only for that check.
    """
    # Traffic first: with DEBUG off (the usual case) it costs one set lookup and one check.
    if type(event) in _TRAFFIC and not enabled_for(DEBUG):
        return
    match event:
        case MessagesAccepted(server_id=sid, messages=messages):
            if enabled_for(DEBUG):
                log.debug("messages_accepted", server_id=sid, count=len(messages))
        case PushAccepted(server_id=sid, message=message):
            if enabled_for(DEBUG):
                log.debug("push_accepted", server_id=sid, message_id=message.get("messageId"))
        case Published(server_id=sid, channel_id=cid, outcome=outcome):
            if enabled_for(DEBUG):
                log.debug("published", server_id=sid, channel_id=cid, status=outcome.status.value)
        case ConnectorReady(server_id=sid, grant=grant, legacy_policy=legacy):
            log.info(
                "connector_connected",
                server_id=sid,
                dialect=event.dialect,
                mcpl_version=event.mcpl_version,
                grant=list(grant),
                enabled=list(event.enabled),
                disabled=list(event.disabled),
                legacy_policy=legacy,
            )
        case ConnectorMcpOnly(server_id=sid, reason=reason):
            log.warning("connector_mcp_only", server_id=sid, reason=reason)
        case ConnectorExited(server_id=sid, dropped=dropped, exit_code=code, signal=sig):
            log.info(
                "connector_exited",
                server_id=sid,
                channels_dropped=len(dropped),
                **({} if code is None else {"exit_code": code}),
                **({} if sig is None else {"signal": sig}),
            )
        case ConnectorRestartScheduled(server_id=sid, delay=delay, failures=failures):
            log.info(
                "connector_restart_scheduled",
                server_id=sid,
                delay=round(delay, 3),
                failures=failures,
            )
        case ConnectorStarted(server_id=sid, pid=pid, link=link, command=command):
            log.info(
                "connector_started",
                server_id=sid,
                link=link,
                **({} if pid is None else {"pid": pid}),
                **({"command": list(command)} if command else {}),
            )
        case ConnectorFailed(server_id=sid, error=error):
            log.debug("connector_failed_permanently", server_id=sid, error=error)
        case ConnectorRefused():
            pass  # the session's RefusalLog logs refusals, rate-limited
        case ConnectorToolsChanged(server_id=sid, tools=tools):
            log.info("connector_tools_changed", server_id=sid, tools=len(tools))
        case ManifestApplied(server_id=sid, revision=revision, impacts=impacts):
            log.info("manifest_applied", server_id=sid, revision=revision, impacts=len(impacts))
        case ChannelsRegistered(server_id=sid, channel_ids=ids):
            log.info("channels_registered", server_id=sid, count=len(ids))
        case ChannelsChanged(server_id=sid, added=added, removed=removed):
            log.info("channels_changed", server_id=sid, added=len(added), removed=len(removed))
        case ChannelsRemoved(server_id=sid, channel_ids=ids):
            log.info("channels_removed", server_id=sid, removed=len(ids))
        case LifecycleStep(server_id=sid, kind=kind, channel_id=cid, detail=detail):
            log.info(
                "channel_lifecycle",
                lifecycle=kind.value,
                server_id=sid,
                **({} if cid is None else {"channel_id": cid}),
                **detail,
            )
        case StorageFailed(cause=cause):
            log.error(
                "storage_failed",
                cause=cause,
                effect="incoming messages are refused unacknowledged (connectors resend) and "
                "agents get storage-unavailable until a write succeeds",
            )
        case StorageRecovered(cause=cause, seconds=seconds):
            log.info("storage_recovered", cause=cause, seconds=round(seconds, 3))
        case _:
            assert_never(event)
