"""What an operator sees of a running host: :class:`HostStatus`, kept from the host's events.

Per connector its state, dialect, grant, feature sets, restarts, errors and traffic; the agents
and their sessions; the store; two bounded rings of recent traffic and refusals; and readiness
(docs/operations.md). Observing an event is O(1); what needs a pass over channels happens when a
snapshot is asked for.

What it deliberately does not know: HTTP, JSON encoding, Prometheus, and how any part decides
what it reports.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Protocol

from switchboard.agents.roster.attach import Attachments
from switchboard.agents.roster.roster import Roster
from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.config import ConnectorConfig
from switchboard.connections.diagnostics import INFERENCE_REFUSED
from switchboard.connections.session import ConnectorSession, SessionState
from switchboard.events import (
    ConnectorExited,
    ConnectorFailed,
    ConnectorLogs,
    ConnectorMcpOnly,
    ConnectorReady,
    ConnectorRefused,
    ConnectorRestartScheduled,
    ConnectorStarted,
    HostEvent,
    InferenceAnswered,
    LifecycleStep,
    LifecycleStepKind,
    ManifestApplied,
    MessagesAccepted,
    Published,
    PushAccepted,
    StorageFailed,
    StorageRecovered,
)
from switchboard.refusals.outcome import PublishStatus
from switchboard.store import MessageStoreProtocol

__all__ = [
    "RING",
    "TEXT_CUT",
    "ConnectorState",
    "ConnectorStatus",
    "HostStatus",
    "Readiness",
]

#: Entries kept in each of the rings of recent traffic and recent refusals.
RING: Final = 100

#: Characters of a message's text kept in the traffic ring.
TEXT_CUT: Final = 280

_FAILED_STEPS: Final = frozenset(
    {
        LifecycleStepKind.RECONCILE_FAILED,
        LifecycleStepKind.OPEN_FAILED,
        LifecycleStepKind.OPEN_UNANSWERED,
        LifecycleStepKind.CLOSE_FAILED,
        LifecycleStepKind.CONVERGE_FAILED,
    }
)


class ConnectorState(StrEnum):
    """Where a configured connector is (docs/operations.md)."""

    STARTING = "starting"
    CONNECTED = "connected"
    RESTARTING = "restarting"
    STOPPED = "stopped"
    FAILED = "failed"


#: A connector another instance of the cluster runs, as ``/status`` shows its state.
ELSEWHERE: Final = "elsewhere"

#: The states in which a connector's process (its pid) is alive.
_LIVE: Final = frozenset({ConnectorState.STARTING, ConnectorState.CONNECTED})


@dataclass(slots=True)
class ConnectorStatus:
    """What is known of one configured connector (mutable: :class:`HostStatus` keeps it)."""

    id: str
    transport: str
    restart: bool
    state: ConnectorState = ConnectorState.STARTING
    since: float = 0.0
    pid: int | None = None
    link: str | None = None
    dialect: str | None = None
    grant: tuple[str, ...] = ()
    restarts: int = 0
    next_restart_at: float | None = None
    last_error: str | None = None
    last_error_at: float | None = None
    last_refusal: str | None = None
    last_refusal_at: float | None = None
    last_exit: str | None = None
    messages_in: int = 0
    publishes: dict[str, int] = field(default_factory=dict)
    refusals: int = 0
    inference_answered: int = 0
    inference_refused: int = 0


class ClusterView(Protocol):
    """What the status surface shows of the cluster, in cluster mode (docs/cluster.md)."""

    def runs_here(self, server_id: str) -> bool:
        """Whether this instance holds ``server_id``'s lease."""
        ...

    def not_ready(self) -> list[str]:
        """Why this instance is not ready as a member (no database, no NATS, a connector
        nobody owns), empty when it is."""
        ...

    def snapshot(self) -> dict[str, Any]:
        """Instances, leases and counters (the ``cluster`` part of ``/status``)."""
        ...


@dataclass(frozen=True, slots=True)
class Readiness:
    """Whether the host is ready (see :class:`HostStatus`), and why not."""

    ready: bool
    reasons: tuple[str, ...]


def _transport(config: ConnectorConfig) -> str:
    if config.command is not None:
        return "stdio"
    url = config.url or ""
    return url.partition("://")[0] or "unknown"


#: A batch of messages in, as the traffic ring keeps it: (accepted at, connector, the wire
#: messages). One entry per batch, whatever its size; shaped into rows at a snapshot.
_Arrived = tuple[float, str, Sequence[Mapping[str, Any]]]


#: A publish, as the traffic ring keeps it: (carried out at, the event); shaped at a snapshot.
_Sent = tuple[float, Published]

#: Each publish status as the plain string the counts are keyed by.
_STATUS_KEYS: Final[dict[PublishStatus, str]] = {status: status.value for status in PublishStatus}

_Entry = dict[str, Any] | _Arrived | _Sent


def _sent_row(now: float, event: Published) -> dict[str, Any]:
    """One row of ``recent_traffic`` for a publish, shaped now."""
    text = event.text
    return {
        "at": now,
        "direction": "out",
        "connector": event.server_id,
        "channel": event.channel_id,
        "author": "",
        "text": text if len(text) <= TEXT_CUT else text[: TEXT_CUT - 1] + "…",
        "outcome": event.outcome.status.value,
    }


def _arrived_row(now: float, sid: str, message: Mapping[str, Any]) -> dict[str, Any]:
    """One row of ``recent_traffic`` for a message in, shaped now."""
    return {
        "at": now,
        "direction": "in",
        "connector": sid,
        "channel": str(message.get("channelId", "")),
        "author": _author_of(message),
        "text": _text_of(message),
    }


def _text_of(message: Mapping[str, Any]) -> str:
    """The text blocks of a wire message, joined and cut to :data:`TEXT_CUT` characters."""
    parts: list[str] = []
    content = message.get("content")
    if isinstance(content, list):
        for block in content[:8]:
            if isinstance(block, Mapping):
                text = block.get("text")
                parts.append(text if isinstance(text, str) else f"[{block.get('type', '?')}]")
    text = " ".join(parts)
    return text if len(text) <= TEXT_CUT else text[: TEXT_CUT - 1] + "…"


def _author_of(message: Mapping[str, Any]) -> str:
    author = message.get("author")
    if isinstance(author, Mapping):
        for key in ("name", "displayName", "id"):
            value = author.get(key)
            if isinstance(value, str) and value:
                return value
    return ""


class HostStatus:
    """The status model of one host.

    What it knows (docs/operations.md, "Status, health and metrics"):

    - **Per connector** (:class:`ConnectorStatus`): its state (:class:`ConnectorState`: starting,
      connected, restarting, stopped, failed), the child's pid, the dialect it speaks (``mcpl-0.5``,
      ``mcpl-0.4`` or ``mcp``) and the protocol version its manifest declares, its grant, the
      feature sets enabled and disabled, restarts, the last error and the last refusal (time and
      text), and its traffic counters (messages in, publishes out by outcome, refusals).
    - **Agents**: every configured identity with its attached sessions and last activity (read from
      :class:`~switchboard.agents.roster.attach.Attachments` when a snapshot is taken).
    - **The store**: file and WAL bytes (two ``stat`` calls per snapshot), the writer's backlog
      (jobs queued and not yet taken: the store's lag, O(1)), the highest committed seq, and what
      the storage said while it refuses writes (``StorageFailed`` until ``StorageRecovered``).
    - **Recent traffic and recent refusals**: two bounded rings (the last :data:`RING` rows each;
      the traffic ring holds a batch in as one entry) with text cut to :data:`TEXT_CUT` characters,
      for the live page.
    - **Readiness** (:meth:`HostStatus.readiness`): the store is open and every configured connector
      has arrived somewhere: connected, or stopped for good (``failed``, or ``stopped`` with
      ``restart = false``), and the storage takes writes. A connector still starting or restarting,
      or a store refusing writes, is a reason for 503.

    Cost: :meth:`HostStatus.observe` (a bus listener) is O(1) per event: a batch adds its size to a
    counter and itself, as one entry, to the ring (shaped into rows at a snapshot). What needs a
    pass over channels (counts per connector, the channel table) happens when a snapshot is asked
    for, bounded by ``channel_limit`` rows.

    Args:
        configs: the configured connectors, in config order.
        sessions: each server's current session (the host's map; read at snapshot time).
        registry: the channel registry (channel counts and the channel table).
        desired: the recorded desired lifecycle state of a channel (``open``, ``closed``,
            ``tuned-out``, ``unknown``).
        roster: the configured agent identities.
        attachments: which agents have sessions attached.
        store: the message store.
        store_path: the store's file (its ``-wal`` companion is beside it).
        clock: Unix seconds.
        ring: entries kept in each ring.
        retention: the retention task's summary (``RetentionTask.last_pass``), shown under
            ``store.retention``.
        logs: the host's per-server log of what connectors cause (``log_events`` and
            ``log_lines`` of each connector).
    """

    def __init__(
        self,
        *,
        configs: Sequence[ConnectorConfig],
        sessions: Mapping[str, ConnectorSession],
        registry: ChannelRegistry,
        desired: Callable[[ChannelRef], str],
        roster: Roster,
        attachments: Attachments,
        store: MessageStoreProtocol,
        store_path: str,
        clock: Callable[[], float] = time.time,
        ring: int = RING,
        retention: Callable[[], Mapping[str, object]] | None = None,
        logs: ConnectorLogs | None = None,
        cluster: ClusterView | None = None,
    ) -> None:
        self._clock = clock
        self._logs = logs
        self._cluster = cluster
        self._retention = retention
        self.started_at = clock()
        self._sessions = sessions
        self._registry = registry
        self._desired = desired
        self._roster = roster
        self._attachments = attachments
        self._store = store
        self._store_path = store_path
        self.connectors: dict[str, ConnectorStatus] = {
            c.id: ConnectorStatus(c.id, _transport(c), c.restart, since=self.started_at)
            for c in configs
        }
        self.traffic: deque[_Entry] = deque()
        """Recent traffic: a row, or a batch of messages in or a publish kept as it came until a
        snapshot
        (see :meth:`_keep_traffic`; :meth:`recent_traffic` gives the last :data:`RING` rows)."""
        self._traffic_held = 0
        self._traffic_rows: deque[int] = deque()  # the rows of each entry of traffic, in step
        self.refusals: deque[dict[str, Any]] = deque(maxlen=ring)
        self._ring = ring
        #: Raised by one on every event: a watcher sends a new snapshot when it moved.
        self.version = 0
        self.messages_in = 0
        self.publishes_out = 0
        self.refusals_total = 0
        #: What the storage said while it refuses writes (None: it takes them).
        self.storage_error: str | None = None
        self.storage_error_at: float | None = None

    # -- following the bus -------------------------------------------------------------------

    def _connector(self, server_id: str) -> ConnectorStatus:
        status = self.connectors.get(server_id)
        if status is None:  # a link served outside supervision (serve_link)
            status = self.connectors[server_id] = ConnectorStatus(
                server_id, "link", False, since=self._clock()
            )
        return status

    def _move(self, status: ConnectorStatus, state: ConnectorState, now: float) -> None:
        if status.state is not state:
            status.state = state
            status.since = now

    def _keep_traffic(self, entry: _Entry, rows: int = 1) -> None:
        """Add one entry of ``rows`` rows to the traffic ring; drop the oldest while the rest
        hold a full ring.

        O(1) amortized per entry, whatever a batch's size: the ring holds at most :data:`RING`
        rows plus one entry's worth. Each entry's rows are kept beside it, so dropping one
        reckons nothing.
        """
        ring, counts = self.traffic, self._traffic_rows
        ring.append(entry)
        counts.append(rows)
        held = self._traffic_held + rows
        limit = self._ring
        while len(counts) > 1 and held - counts[0] >= limit:
            held -= counts.popleft()
            ring.popleft()
        self._traffic_held = held

    def recent_traffic(self) -> list[dict[str, Any]]:
        """The last :data:`RING` rows of traffic, oldest first, messages in shaped now."""
        rows: list[dict[str, Any]] = []
        for entry in self.traffic:
            if isinstance(entry, dict):
                rows.append(entry)
            elif len(entry) == 2:
                rows.append(_sent_row(*entry))
            else:
                now, sid, messages = entry
                rows.extend(_arrived_row(now, sid, m) for m in messages[-self._ring :])
        return rows[-self._ring :]

    def observe(self, event: HostEvent) -> None:
        """Take one host event into the model: O(1) (a bus listener; never blocks)."""
        self.version += 1
        now = self._clock()
        if isinstance(event, Published):  # once per publish: before the match
            self._published(event, now)
            return
        match event:
            case MessagesAccepted(server_id=sid, messages=messages):
                status = self._connector(sid)
                status.messages_in += len(messages)
                self.messages_in += len(messages)
                # The hot ingest path: the batch is kept as it is, one entry, and shaped into
                # rows only when a snapshot is taken.
                self._keep_traffic((now, sid, messages), len(messages))
            case InferenceAnswered(server_id=sid):
                self._connector(sid).inference_answered += 1
            case PushAccepted(server_id=sid, message=message):
                status = self._connector(sid)
                status.messages_in += 1
                self.messages_in += 1
                self._keep_traffic(
                    {
                        "at": now,
                        "direction": "push",
                        "connector": sid,
                        "channel": str(message.get("channelId", "")),
                        "author": _author_of(message),
                        "text": _text_of(message),
                    }
                )
            case ConnectorRefused(server_id=sid, kind=kind, method=method, reason=reason):
                status = self._connector(sid)
                status.refusals += event.count
                self.refusals_total += event.count
                if kind == INFERENCE_REFUSED:
                    status.inference_refused += event.count
                status.last_refusal = f"{method}: {reason}"
                status.last_refusal_at = now
                self.refusals.append(
                    {
                        "at": now,
                        "connector": sid,
                        "kind": kind,
                        "method": method,
                        "reason": reason,
                        "count": event.count,
                    }
                )
            case ConnectorStarted(server_id=sid, pid=pid, link=link):
                status = self._connector(sid)
                status.pid = pid
                status.link = link
                status.next_restart_at = None
                self._move(status, ConnectorState.STARTING, now)
            case ConnectorReady(server_id=sid, grant=grant, legacy_policy=legacy):
                status = self._connector(sid)
                session = self._sessions.get(sid)
                compat = session is not None and session.compat_reason is not None
                status.dialect = "mcpl-0.4" if legacy or compat else "mcpl-0.5"
                status.grant = grant
                self._move(status, ConnectorState.CONNECTED, now)
            case ConnectorMcpOnly(server_id=sid, reason=reason):
                status = self._connector(sid)
                status.dialect = "mcp"
                status.grant = ()
                self._move(status, ConnectorState.CONNECTED, now)
            case ManifestApplied(server_id=sid, grant=grant):
                self._connector(sid).grant = grant
            case ConnectorExited(server_id=sid, exit_code=code, signal=signame):
                status = self._connector(sid)
                if signame is not None:
                    status.last_exit = f"killed by {signame}"
                elif code is not None:
                    status.last_exit = f"exit code {code}"
                if status.state is not ConnectorState.FAILED:
                    self._move(status, ConnectorState.STOPPED, now)
            case ConnectorRestartScheduled(server_id=sid, delay=delay):
                status = self._connector(sid)
                status.restarts += 1
                status.next_restart_at = now + delay
                if status.state is not ConnectorState.FAILED:
                    self._move(status, ConnectorState.RESTARTING, now)
            case ConnectorFailed(server_id=sid, error=error):
                status = self._connector(sid)
                status.last_error = error
                status.last_error_at = now
                status.next_restart_at = None
                self._move(status, ConnectorState.FAILED, now)
            case LifecycleStep(server_id=sid, kind=kind, channel_id=cid, detail=detail):
                if kind in _FAILED_STEPS:
                    status = self._connector(sid)
                    what = detail.get("error") or detail.get("reason") or ""
                    where = f" {cid}" if cid else ""
                    status.last_error = f"{kind.value}{where}: {what}".rstrip(": ")
                    status.last_error_at = now
            case StorageFailed(cause=cause):
                self.storage_error = cause
                self.storage_error_at = now
            case StorageRecovered():
                self.storage_error = None
                self.storage_error_at = None
            case _:
                # Channel events and the rest: channel counts are read from the registry when
                # a snapshot is taken; other events are not shown.
                pass

    def _published(self, event: Published, now: float) -> None:
        status = self._connector(event.server_id)
        # A plain str key: an enum's .value is a property, a third of a microsecond on every
        # publish.
        key = _STATUS_KEYS[event.outcome.status]
        status.publishes[key] = status.publishes.get(key, 0) + 1
        self.publishes_out += 1
        # Kept as it came, one tuple; shaped into a row only at a snapshot.
        self._keep_traffic((now, event))

    # -- reading -----------------------------------------------------------------------------

    def readiness(self) -> Readiness:
        """Ready when the store is open and no connector is still on its way (module docstring)."""
        reasons: list[str] = []
        if self._store.closed:
            reasons.append("the message store is closed")
        if self.storage_error is not None:
            reasons.append(f"the message store refuses writes: {self.storage_error}")
        cluster = self._cluster
        if cluster is not None:
            reasons.extend(cluster.not_ready())
        for status in self.connectors.values():
            if cluster is not None and not cluster.runs_here(status.id):
                continue  # another instance runs it; the cluster says when nobody does
            if status.state in (ConnectorState.STARTING, ConnectorState.RESTARTING):
                reasons.append(f"connector {status.id!r} is {status.state.value}")
            elif status.state is ConnectorState.STOPPED and status.restart:
                reasons.append(f"connector {status.id!r} is stopped")
        return Readiness(not reasons, tuple(reasons))

    def store_status(self) -> dict[str, Any]:
        """The store's file sizes, backlog and highest committed seq."""
        sizes: dict[str, int] = {}
        for suffix, key in (("", "file_bytes"), ("-wal", "wal_bytes")):
            try:
                sizes[key] = os.stat(self._store_path + suffix).st_size
            except OSError:
                sizes[key] = 0
        return {
            "path": self._store_path,
            **sizes,
            "total_bytes": sizes["file_bytes"] + sizes["wal_bytes"],
            "write_backlog": self._store.write_backlog,
            "latest_seq": self._store.latest_seq,
            "open": not self._store.closed,
            "storage_error": self.storage_error,
            "storage_error_at": self.storage_error_at,
            "retention": None if self._retention is None else dict(self._retention()),
        }

    def _session_facts(self, sid: str) -> dict[str, Any]:
        session = self._sessions.get(sid)
        if session is None:
            return {
                "session": None,
                "protocol_version": None,
                "enabled_feature_sets": [],
                "disabled_feature_sets": [],
                "inference_in_flight": 0,
            }
        manifest = session.manifest
        return {
            "session": session.state.value,
            "protocol_version": None if manifest is None else manifest.version,
            "enabled_feature_sets": sorted(session.enabled_feature_sets),
            "disabled_feature_sets": [d.to_json() for d in session.disabled_feature_sets],
            "inference_in_flight": session.inference.in_flight,
        }

    def _state_shown(self, sid: str, state: ConnectorState) -> str:
        """The connector's state here; ``elsewhere`` when another instance of the cluster runs
        it (the ``cluster`` part says which, with its lease)."""
        cluster = self._cluster
        if (
            cluster is not None
            and not cluster.runs_here(sid)
            and state is not ConnectorState.CONNECTED
        ):
            return ELSEWHERE
        return state.value

    def snapshot(self, *, channel_limit: int = 500) -> dict[str, Any]:
        """The whole model as JSON-ready values (the ``/status`` body)."""
        now = self._clock()
        counts: dict[str, int] = {}
        channels: list[dict[str, Any]] = []
        total = 0
        for entry in self._registry.entries():
            ref = entry.ref
            counts[ref.server_id] = counts.get(ref.server_id, 0) + 1
            total += 1
            if len(channels) < channel_limit:
                d = entry.descriptor
                channels.append(
                    {
                        "connector": ref.server_id,
                        "id": ref.channel_id,
                        "label": d.label or "",
                        "direction": d.direction or "bidirectional",
                        "desired": self._desired(ref),
                        "confirmed": "open" if entry.transport_open else "closed",
                    }
                )
        connectors = []
        for sid, status in self.connectors.items():
            facts = self._session_facts(sid)
            live = facts["session"] in (SessionState.READY.value, SessionState.MCP_ONLY.value)
            noted, lines = (0, 0) if self._logs is None else self._logs.counts(sid)
            connectors.append(
                {
                    "id": sid,
                    "state": self._state_shown(sid, status.state),
                    "since": status.since,
                    "transport": status.transport,
                    "pid": status.pid if status.state in _LIVE else None,
                    "link": status.link,
                    "dialect": status.dialect,
                    "protocol_version": facts["protocol_version"],
                    "grant": list(status.grant) if live else [],
                    "enabled_feature_sets": facts["enabled_feature_sets"] if live else [],
                    "disabled_feature_sets": facts["disabled_feature_sets"] if live else [],
                    "channels": counts.get(sid, 0),
                    "restarts": status.restarts,
                    "next_restart_in": (
                        None
                        if status.next_restart_at is None
                        else max(0.0, round(status.next_restart_at - now, 3))
                    ),
                    "last_error": status.last_error,
                    "last_error_at": status.last_error_at,
                    "last_refusal": status.last_refusal,
                    "last_refusal_at": status.last_refusal_at,
                    "last_exit": status.last_exit,
                    "messages_in": status.messages_in,
                    "publishes": dict(status.publishes),
                    "refusals": status.refusals,
                    "inference": {
                        "answered": status.inference_answered,
                        "refused": status.inference_refused,
                        "in_flight": facts["inference_in_flight"],
                    },
                    "log_events": noted,
                    "log_lines": lines,
                }
            )
        agents = []
        for identity in self._roster:
            name = identity.name
            agents.append(
                {
                    "handle": f"@{name}",
                    "sessions": self._attachments.count(name),
                    "last_active": self._attachments.last_active(name),
                }
            )
        readiness = self.readiness()
        return {
            "now": now,
            "started_at": self.started_at,
            "uptime": round(now - self.started_at, 3),
            "version": self.version,
            "ready": readiness.ready,
            "not_ready": list(readiness.reasons),
            "connectors": connectors,
            "channels": channels,
            "channels_total": total,
            "agents": agents,
            "store": self.store_status(),
            "traffic": {
                "messages_in": self.messages_in,
                "publishes_out": self.publishes_out,
                "refusals": self.refusals_total,
            },
            "recent_traffic": self.recent_traffic(),
            "recent_refusals": list(self.refusals),
            **({} if self._cluster is None else {"cluster": self._cluster.snapshot()}),
        }
