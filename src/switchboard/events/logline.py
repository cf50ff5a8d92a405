"""The log line of each host event: :func:`log_event`, the listener the host subscribes first.

Traffic at DEBUG, one line per batch; everything else at INFO (a connector gone MCP-only is a
warning). What a connector can repeat without end (registrations, changes of its channels,
lifecycle steps, manifest and tool changes) goes through :class:`ConnectorLogs`, the host's
per-connector rate-limited log: the first of each in a connection in full, then counted
summaries. Why: a connector that churns must not flood the host's log.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from logging import DEBUG
from typing import Any, Final, assert_never, get_args

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
    InferenceAnswered,
    LifecycleStep,
    ManifestApplied,
    MessagesAccepted,
    Published,
    PushAccepted,
    StorageFailed,
    StorageRecovered,
)
from switchboard.runtime.logs import enabled_for
from switchboard.runtime.ratelog import DEFAULT_LOG_INTERVAL, RateLimitedLog

__all__ = ["OTHER_EVENTS", "TRAFFIC_EVENTS", "ConnectorLogs", "log_event"]

log = structlog.get_logger(__name__)

_TRAFFIC: Final = frozenset({MessagesAccepted, PushAccepted, Published})

TRAFFIC_EVENTS: Final[tuple[type, ...]] = (MessagesAccepted, PushAccepted, Published)
"""The events :func:`log_event` logs at DEBUG, one line per batch, and never rate-limits."""
OTHER_EVENTS: Final[tuple[type, ...]] = tuple(
    cls for cls in get_args(HostEvent) if cls not in TRAFFIC_EVENTS
)
"""Every other event: the host subscribes :func:`log_event` for these with its
:class:`ConnectorLogs`, and for the traffic without, so a batch costs no more than before."""


class ConnectorLogs:
    """What each connector causes the host to log, bounded: one
    :class:`~switchboard.runtime.ratelog.RateLimitedLog` per server (its lines carry
    ``server_id``), which its sessions and :func:`log_event` note into. Each connection's end
    restarts it (:meth:`RateLimitedLog.restart`: summaries owed are written, and the next
    connection is told in full again); the counts go on across connections, for the status
    surface.

    Args:
        interval: least seconds between two lines of one kind of event of one server.
        clock: a monotonic clock.
    """

    __slots__ = ("_clock", "_interval", "_logs")

    def __init__(
        self, *, interval: float = DEFAULT_LOG_INTERVAL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._interval = interval
        self._clock = clock
        self._logs: dict[str, RateLimitedLog] = {}

    def of(self, server_id: str) -> RateLimitedLog:
        """The rate-limited log of ``server_id`` (made on first use)."""
        found = self._logs.get(server_id)
        if found is None:
            found = self._logs[server_id] = RateLimitedLog(
                log.bind(server_id=server_id), interval=self._interval, clock=self._clock
            )
        return found

    def counts(self, server_id: str) -> tuple[int, int]:
        """``(events, lines)``: what ``server_id`` caused to be noted since the start, and the
        lines written for it (first occurrences and counted summaries)."""
        found = self._logs.get(server_id)
        return (0, 0) if found is None else (found.noted, found.lines)


def _noted(
    logs: ConnectorLogs | None,
    server_id: str,
    key: tuple[str, ...],
    fields: Mapping[str, Any],
    summed: tuple[str, ...] = (),
) -> None:
    """One INFO line a connector can cause again and again: rate-limited through ``logs``,
    or written as it is without them (a caller with no host, such as a test)."""
    if logs is None:
        log.info(key[0], server_id=server_id, **fields)
    else:
        logs.of(server_id).note(key, key[0], level="info", summed=summed, **fields)


def log_event(event: HostEvent, logs: ConnectorLogs | None = None) -> None:
    """Log one line for ``event`` (the host subscribes it with its :class:`ConnectorLogs`).

    Connection, channel and lifecycle events are INFO (a connector that went MCP-only is a
    warning). Traffic (:class:`MessagesAccepted`, :class:`PushAccepted`, :class:`Published`)
    is DEBUG, one line per batch and never one per message, asked for with
    :func:`~switchboard.runtime.logs.enabled_for` first, so the hot paths pay only for that check.
    What a connector can repeat without end (its registrations and changes, lifecycle steps
    of its channels, manifest and tool changes) is rate-limited through ``logs``, per server
    and kind (a lifecycle step per step kind): the first of each in a connection in full,
    then one summary a minute with ``count`` and ``total`` (and the channels added, removed
    or registered, summed). A connector's arrivals, departures and restarts are not: the
    supervisor's backoff bounds them.
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
        case InferenceAnswered(server_id=sid, agent=agent, model=model):
            _noted(logs, sid, ("inference_answered",), {"agent": agent, "model": model})
        case ConnectorToolsChanged(server_id=sid, tools=tools):
            _noted(logs, sid, ("connector_tools_changed",), {"tools": len(tools)})
        case ManifestApplied(server_id=sid, revision=revision, impacts=impacts):
            fields = {"revision": revision, "impacts": len(impacts)}
            _noted(logs, sid, ("manifest_applied",), fields)
        case ChannelsRegistered(server_id=sid, channel_ids=ids):
            _noted(logs, sid, ("channels_registered",), {"channels": len(ids)}, ("channels",))
        case ChannelsChanged(server_id=sid, added=added, removed=removed):
            fields = {"added": len(added), "removed": len(removed)}
            _noted(logs, sid, ("channels_changed",), fields, ("added", "removed"))
        case ChannelsRemoved(server_id=sid, channel_ids=ids):
            _noted(logs, sid, ("channels_removed",), {"removed": len(ids)}, ("removed",))
        case LifecycleStep(server_id=sid, kind=kind, channel_id=cid, detail=detail):
            step = {"lifecycle": kind.value, **({} if cid is None else {"channel_id": cid})}
            _noted(logs, sid, ("channel_lifecycle", kind.value), {**step, **detail})
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
