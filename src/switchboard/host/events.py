"""Host events: what happened on the host, as typed values, and the bus that carries them.

What this module knows:

- **The events.** One frozen dataclass per thing that happens, each naming the connector it
  concerns (``server_id``) and carrying typed fields. :data:`HostEvent` is their union;
  listeners take it apart with ``match event:`` and class patterns. The set:

  * :class:`ConnectorReady`, :class:`ConnectorMcpOnly` (the session's handshake);
  * :class:`ConnectorToolsChanged` (the connector's MCP tools as the host holds them changed);
  * :class:`ChannelsRegistered`, :class:`ChannelsChanged` (``channels/register``,
    ``channels/changed``) and :class:`ChannelsRemoved` (the host dropped a live connection's
    registrations after a manifest change);
  * :class:`MessagesAccepted` (one committed ``channels/incoming`` batch) and
    :class:`PushAccepted` (one committed ``push/event``);
  * :class:`Published` (an agent's publish was carried out, ``Switchboard.publish_to``);
  * :class:`ConnectorExited`, :class:`ConnectorRestartScheduled` (the supervisor);
  * :class:`ConnectorStarted` (the supervisor opened the link: spawned or dialled),
    :class:`ConnectorFailed` (the connector was stopped for good by a permanent error; no
    restart follows), :class:`ConnectorRefused` (the host refused something the connector sent:
    one per refusal the session's ``RefusalLog`` counts);
  * :class:`ManifestApplied` (the session, after a changed manifest was fetched);
  * :class:`LifecycleStep` (lifecycle admission, reconciliation and speech opening a channel);
  * :class:`StorageFailed`, :class:`StorageRecovered` (the message store's disk refused a write,
    and the first write that succeeded after; host-wide, so their ``server_id`` is ``""``).

- **The bus** (:class:`EventBus`): created once by the host and handed to the parts that emit.
  :meth:`EventBus.subscribe` adds a listener, for every event or only for the classes it
  ``takes``; :meth:`EventBus.emit` calls every listener of the event, in subscription order.
  The contract for a listener: it runs inside the emitter (often a message handler in the
  peer's reader), so it **must not block** and must not await; work that needs to wait is
  started in a task group the listener's owner keeps. A listener that raises is logged with
  the event's type and skipped: the other listeners and the emitter go on.
  Listeners subscribed while an event is being delivered hear the next event, not this one.
- **The log line** of each event (:func:`log_event`, a listener the host subscribes first):
  traffic at DEBUG, one line per batch; everything else at INFO. What a connector can repeat
  without end (registrations, changes of its channels, lifecycle steps, manifest and tool
  changes) goes through :class:`ConnectorLogs`, the host's per-connector rate-limited log
  (the first occurrence of each in a connection in full, then counted summaries).

What it deliberately does not know: who listens, or what a listener does with an event. The
wire messages inside :class:`MessagesAccepted` and :class:`PushAccepted` stay the validated
wire mappings the store took: a batch is one event object, never one object per message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from logging import DEBUG
from typing import Any, Final, assert_never, get_args

import structlog

from switchboard.host.connection.manifest_diff import Impact
from switchboard.host.outcome import PublishOutcome
from switchboard.logging import enabled_for
from switchboard.protocol.fastpath import CheckedMessage
from switchboard.ratelog import DEFAULT_LOG_INTERVAL, RateLimitedLog

__all__ = [
    "OTHER_EVENTS",
    "TRAFFIC_EVENTS",
    "ChannelsChanged",
    "ChannelsRegistered",
    "ChannelsRemoved",
    "ConnectorExited",
    "ConnectorFailed",
    "ConnectorLogs",
    "ConnectorMcpOnly",
    "ConnectorReady",
    "ConnectorRefused",
    "ConnectorRestartScheduled",
    "ConnectorStarted",
    "ConnectorToolsChanged",
    "EventBus",
    "HostEvent",
    "LifecycleStep",
    "LifecycleStepKind",
    "Listener",
    "ManifestApplied",
    "MessagesAccepted",
    "Published",
    "PushAccepted",
    "StorageFailed",
    "StorageRecovered",
    "log_event",
]

log = structlog.get_logger(__name__)


# -- connections -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConnectorReady:
    """The handshake finished with MCPL in force (the policy receipt was accepted).

    Attributes:
        grant: The granted capability leaves, sorted.
        legacy_policy: Whether the policy went out in the pre-0.5 Notification form.
        dialect: ``mcpl-0.5``, or ``mcpl-0.4`` when the host reads the connector the pre-0.5
            way (compatibility mode).
        mcpl_version: The MCPL version the connector's manifest declared, if any.
        enabled: The feature sets enabled, sorted.
        disabled: The feature sets left disabled, sorted.
    """

    server_id: str
    grant: tuple[str, ...]
    legacy_policy: bool
    dialect: str = "mcpl-0.5"
    mcpl_version: str | None = None
    enabled: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ConnectorMcpOnly:
    """The server answered ``initialize`` without MCPL: it runs as plain MCP."""

    server_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class ConnectorToolsChanged:
    """The connector's MCP tools the host holds changed: fetched anew, or dropped when its
    session ended.

    Attributes:
        tools: The connector's names of the tools held now (empty: none).
    """

    server_id: str
    tools: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ConnectorExited:
    """A supervised connection ended; its registrations were dropped.

    Attributes:
        dropped: The channel ids that were registered when it ended.
        exit_code: A stdio connector's exit status when it exited by itself (``None``: not a
            process, never started, or ended by a signal).
        signal: The name of the signal that ended a stdio connector (``SIGKILL`` ...).
    """

    server_id: str
    dropped: tuple[str, ...]
    exit_code: int | None = None
    signal: str | None = None


@dataclass(frozen=True, slots=True)
class ConnectorRestartScheduled:
    """The supervisor will reconnect after ``delay`` seconds (``failures`` in a row so far)."""

    server_id: str
    delay: float
    failures: int


@dataclass(frozen=True, slots=True)
class ConnectorStarted:
    """The supervisor opened the connector's link (a child spawned, or a socket dialled).

    Attributes:
        pid: The child's process id for a stdio connector, else None.
        link: The link's description (``stdio:<id>[pid N]``, a URL ...).
        command: A stdio connector's command line, else empty.
    """

    server_id: str
    pid: int | None
    link: str
    command: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ConnectorFailed:
    """The connector was stopped for good: a permanent error (a missing executable, a bad URL
    scheme ...) that a restart cannot mend. No :class:`ConnectorRestartScheduled` follows.

    Attributes:
        error: What went wrong, in words an operator can act on.
    """

    server_id: str
    error: str


@dataclass(frozen=True, slots=True)
class ConnectorRefused:
    """The host refused something the connector sent (counted by the session's refusal log).

    Attributes:
        kind: The refusal kind (``capability_denied``, ``incoming_refused`` ...:
            ``host.connection.diagnostics.REFUSAL_KINDS``).
        method: The method refused.
        reason: Why, as logged.
        count: How many refusals this one event stands for (a whole batch refused: its size).
    """

    server_id: str
    kind: str
    method: str
    reason: str
    count: int = 1


@dataclass(frozen=True, slots=True)
class ManifestApplied:
    """A fetched manifest that differed is in force, with the narrowed grant.

    Attributes:
        revision: The manifest's revision as the server wrote it.
        grant: The granted capability leaves now, sorted.
        impacts: The change receipt's lines.
    """

    server_id: str
    revision: str | None
    grant: tuple[str, ...]
    impacts: tuple[Impact, ...]


# -- channels --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChannelsRegistered:
    """A ``channels/register`` was answered; ``channel_ids`` were accepted (maybe none)."""

    server_id: str
    channel_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ChannelsChanged:
    """A ``channels/changed`` was applied (as a Request or a Notification).

    Attributes:
        added: The channel ids it added.
        removed: The channel ids it removed.
    """

    server_id: str
    added: tuple[str, ...]
    removed: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ChannelsRemoved:
    """The host dropped a live connection's registrations (a manifest change revoked
    ``channels.register``); the connection stays up."""

    server_id: str
    channel_ids: tuple[str, ...]


# -- traffic ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessagesAccepted:
    """One ``channels/incoming`` batch was committed to the store.

    Attributes:
        messages: The accepted wire messages that were new (duplicates left out), in arrival
            order; never empty.
        channel_ids: The distinct ``channelId`` values of ``messages`` when the sender already
            had them (the ingest path does), else None: see :attr:`channels`.
        checked: ``messages`` as the transport read and checked them, one for one, when the
            sender had them (the ingest path, for a batch it stored whole), else None: a
            listener that needs a few members of a message reads them there, not by
            decoding the message again (issue #14).
    """

    server_id: str
    messages: Sequence[Mapping[str, Any]]
    channel_ids: Collection[str] | None = None
    checked: Sequence[CheckedMessage] | None = None

    @property
    def channels(self) -> Collection[str]:
        """The distinct channel ids of :attr:`messages` (given, or worked out now)."""
        given = self.channel_ids
        if given is not None:
            return given
        return {m["channelId"] for m in self.messages}


@dataclass(frozen=True, slots=True)
class PushAccepted:
    """A ``push/event`` was committed to the store as ``message`` (never a duplicate)."""

    server_id: str
    message: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Published:
    """An agent's publish was carried out (``outcome`` says whether it was delivered)."""

    server_id: str
    channel_id: str
    text: str
    outcome: PublishOutcome


# -- lifecycle -------------------------------------------------------------------------------


class LifecycleStepKind(StrEnum):
    """The steps of channel lifecycle work that are reported (docs/lifecycle.md)."""

    AUTO_OPENED = "auto-opened"
    OPENED_BY_SEND = "opened-by-send"
    RECONCILED = "reconciled"
    RECONCILE_SKIPPED = "reconcile-skipped"
    RECONCILE_FAILED = "reconcile-failed"
    OPEN_FAILED = "open-failed"
    OPEN_UNANSWERED = "open-unanswered"
    CLOSE_FAILED = "close-failed"
    SUBSTITUTED = "substituted"
    CONVERGE_FAILED = "converge-failed"


@dataclass(frozen=True, slots=True)
class LifecycleStep:
    """A lifecycle step on one server (or one of its channels).

    Attributes:
        kind: Which step.
        channel_id: The channel concerned, when the step is about one.
        detail: What a person watching wants to know about the step (the error, the source,
            the announced channels ...); it differs per kind and no host part reads it.
    """

    server_id: str
    kind: LifecycleStepKind
    channel_id: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StorageFailed:
    """The message store's storage refused a write (disk full, I/O error, read-only): ingest
    is refused with ``storage-unavailable`` until a write succeeds again. Told once per outage.

    Attributes:
        cause: what the storage said (``database or disk is full``).
        server_id: always ``""``: the store is the host's, not one connector's.
    """

    cause: str
    server_id: str = ""


@dataclass(frozen=True, slots=True)
class StorageRecovered:
    """A write to the message store succeeded after a :class:`StorageFailed`.

    Attributes:
        cause: what the storage had said while it refused writes.
        seconds: how long it refused them.
        server_id: always ``""``.
    """

    cause: str
    seconds: float
    server_id: str = ""


HostEvent = (
    ConnectorReady
    | ConnectorMcpOnly
    | ConnectorExited
    | ConnectorRestartScheduled
    | ConnectorStarted
    | ConnectorFailed
    | ConnectorRefused
    | ConnectorToolsChanged
    | ManifestApplied
    | ChannelsRegistered
    | ChannelsChanged
    | ChannelsRemoved
    | MessagesAccepted
    | PushAccepted
    | Published
    | LifecycleStep
    | StorageFailed
    | StorageRecovered
)
"""Everything the host tells its listeners."""

Listener = Callable[[HostEvent], None]
"""A host event listener: must not block, should not raise (see the module docstring)."""


# -- the bus ---------------------------------------------------------------------------------


class EventBus:
    """Delivers host events to listeners, in subscription order (see the module docstring)."""

    __slots__ = ("_listeners", "_routes")

    def __init__(self) -> None:
        self._listeners: tuple[tuple[Listener, tuple[type, ...] | None], ...] = ()
        # The listeners of each event class, worked out on its first emit: a listener that
        # takes a few kinds of event is not called for the traffic it ignores (issue #14).
        self._routes: dict[type, tuple[Listener, ...]] = {}

    def subscribe(self, listener: Listener, *, takes: tuple[type, ...] | None = None) -> None:
        """Call ``listener`` for every event emitted from now on, after earlier listeners;
        with ``takes``, only for the events that are instances of those classes."""
        self._listeners = (*self._listeners, (listener, takes))
        self._routes = {}

    def _route(self, cls: type) -> tuple[Listener, ...]:
        route = tuple(
            listener
            for listener, takes in self._listeners
            if takes is None or issubclass(cls, takes)
        )
        self._routes[cls] = route
        return route

    def emit(self, event: HostEvent) -> None:
        """Tell every listener about ``event``; a listener that raises is logged and skipped."""
        route = self._routes.get(type(event))
        if route is None:
            route = self._route(type(event))
        for listener in route:
            try:
                listener(event)
            except Exception:
                log.exception(
                    "host_event_listener_failed",
                    event_type=type(event).__name__,
                    server_id=event.server_id,
                    listener=getattr(listener, "__qualname__", repr(listener)),
                )


# -- the log line of each event --------------------------------------------------------------


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
    :class:`~switchboard.ratelog.RateLimitedLog` per server (its lines carry ``server_id``),
    which its sessions and :func:`log_event` note into. Each connection's end restarts it
    (:meth:`RateLimitedLog.restart`: summaries owed are written, and the next connection is
    told in full again); the counts go on across connections, for the status surface.

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
    :func:`~switchboard.logging.enabled_for` first, so the hot paths pay only for that check.
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
