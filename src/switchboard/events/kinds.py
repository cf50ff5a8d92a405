"""Host events: what happened on the host, as typed values.

One frozen dataclass per thing that happens, each naming the connector it concerns
(``server_id``; ``""`` for host-wide ones) and carrying typed fields: the session's handshake,
the connector's tools and manifest, registrations, committed traffic (one event per batch,
never one per message; the wire messages stay the validated mappings the store took),
publishes, the supervisor's starts, exits and restarts, lifecycle steps, and storage outages.
:data:`HostEvent` is their union; listeners take it apart with ``match``. The bus that carries
them is :mod:`.bus`, their log lines :mod:`.logline`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from switchboard.protocol.fastpath import CheckedMessage
from switchboard.protocol.manifest_diff import Impact
from switchboard.refusals.outcome import PublishOutcome

__all__ = [
    "ChannelsChanged",
    "ChannelsRegistered",
    "ChannelsRemoved",
    "ConnectorExited",
    "ConnectorFailed",
    "ConnectorMcpOnly",
    "ConnectorReady",
    "ConnectorRefused",
    "ConnectorRestartScheduled",
    "ConnectorStarted",
    "ConnectorToolsChanged",
    "HostEvent",
    "InferenceAnswered",
    "LifecycleStep",
    "LifecycleStepKind",
    "ManifestApplied",
    "MessagesAccepted",
    "Published",
    "PushAccepted",
    "StorageFailed",
    "StorageRecovered",
]


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
            decoding the message again.
        last_seq: The seq of the last of ``messages`` (they have consecutive seqs), when the
            sender knows it.
    """

    server_id: str
    messages: Sequence[Mapping[str, Any]]
    channel_ids: Collection[str] | None = None
    checked: Sequence[CheckedMessage] | None = None
    last_seq: int | None = None

    @property
    def channels(self) -> Collection[str]:
        """The distinct channel ids of :attr:`messages` (given, or worked out now)."""
        given = self.channel_ids
        if given is not None:
            return given
        return {m["channelId"] for m in self.messages}


@dataclass(frozen=True, slots=True)
class PushAccepted:
    """A ``push/event`` was committed to the store as ``message`` (never a duplicate), with the
    seq ``seq`` when the sender knows it."""

    server_id: str
    message: Mapping[str, Any]
    seq: int | None = None


@dataclass(frozen=True, slots=True)
class InferenceAnswered:
    """An ``inference/request`` of the connector was answered by ``agent``'s sampling client,
    which reported ``model``."""

    server_id: str
    agent: str
    model: str


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
    | InferenceAnswered
    | Published
    | LifecycleStep
    | StorageFailed
    | StorageRecovered
)
"""Everything the host tells its listeners."""
