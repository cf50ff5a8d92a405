"""The vocabulary of channel lifecycle decisions, and the values a decision is made of.

The closed vocabularies (:class:`DesiredState`, :class:`Source` and its classes), a proposal's
three answers (:class:`Append`, :class:`NoChange`, :class:`Vetoed`), :class:`DesiredRecord`, the
tune-out scope and epoch values, and the field readers their JSON codecs share. Channels are
``serverId``/``channelId`` fields, never one joined string.

What it deliberately does not know: the rules that choose between answers (:mod:`.book`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Generic, TypeVar

from switchboard.channels.errors import ChannelsError
from switchboard.channels.ref import ChannelRef

__all__ = [
    "AGENT_DECISION_SOURCES",
    "CLOSE_SOURCES",
    "MACHINE_CLOSE_SOURCES",
    "OPEN_SOURCES",
    "TUNE_OUT_SOURCES",
    "Append",
    "DecodeError",
    "DesiredRecord",
    "DesiredState",
    "NoChange",
    "NoChangeReason",
    "ScopeKind",
    "Source",
    "TuneOutEpoch",
    "TuneOutScope",
    "VetoReason",
    "Vetoed",
    "is_close_decision",
]


class DesiredState(StrEnum):
    """What the host wants for a channel. ``default-closed`` is a source, never a state."""

    OPEN = "open"
    CLOSED = "closed"
    TUNED_OUT = "tuned-out"
    """Open at the transport; its traffic goes to a reader instead of the owner agent."""


class Source(StrEnum):
    """Who or what decided a desired state (a closed vocabulary)."""

    AGENT_TOOL = "agent-tool"
    """The agent's own ``channel_open``/``channel_close`` (or ``tune_out``)."""
    INVITATION_DECLINED = "invitation-declined"
    """The agent's ``channel_decline``: a close."""
    MODULE_TOOL = "module-tool"
    """A module's deliberate ``channel_close`` (or tune-out) without a machine source."""
    SUBSCRIPTION_GC = "subscription-gc"
    """A machine close by subscription garbage collection: not a decision."""
    HOUSEKEEPING = "housekeeping"
    """A machine close by housekeeping: not a decision."""
    DEFAULT_CLOSED = "default-closed"
    """Nobody decided: nothing wanted it open, or only a machine closed it."""
    SERVER_BOOTSTRAP = "server-bootstrap"
    """The descriptor said ``initiallyOpen``."""
    SUBSCRIPTION_POLICY = "subscription-policy"
    """The connector's subscription policy wants it open."""
    OPENED_BY_DELIVERY = "opened-by-delivery"
    """Speech opened it before its words went in."""
    OPENED_BY_REPLY = "opened-by-reply"
    """An explicit send tool's reply opened it."""
    LEGACY_RECIPE_MIGRATION = "legacy-recipe-migration"
    """The one-time migration of a retired recipe policy."""
    UNKNOWN = "unknown"
    """A replayed record whose source was missing or outside this vocabulary."""


AGENT_DECISION_SOURCES: Final = frozenset({Source.AGENT_TOOL, Source.INVITATION_DECLINED})
"""The agent's own decisions; they write over an equal state any other source recorded."""

MACHINE_CLOSE_SOURCES: Final = frozenset({Source.SUBSCRIPTION_GC, Source.HOUSEKEEPING})
"""Closes made by machinery. They never replace a closed record, and on a channel without a
record they record ``default-closed`` so that policy and bootstrap can still lift it."""

_CLOSE_DECISIONS: Final = AGENT_DECISION_SOURCES | {Source.MODULE_TOOL}

OPEN_SOURCES: Final = frozenset(
    {
        Source.AGENT_TOOL,
        Source.MODULE_TOOL,
        Source.SERVER_BOOTSTRAP,
        Source.SUBSCRIPTION_POLICY,
        Source.OPENED_BY_DELIVERY,
        Source.OPENED_BY_REPLY,
        Source.LEGACY_RECIPE_MIGRATION,
    }
)
"""The sources a proposal may record ``open`` with."""

CLOSE_SOURCES: Final = frozenset(
    {
        Source.AGENT_TOOL,
        Source.INVITATION_DECLINED,
        Source.MODULE_TOOL,
        Source.SUBSCRIPTION_GC,
        Source.HOUSEKEEPING,
        Source.DEFAULT_CLOSED,
        Source.LEGACY_RECIPE_MIGRATION,
    }
)
"""The sources a proposal may record ``closed`` with."""

TUNE_OUT_SOURCES: Final = frozenset({Source.AGENT_TOOL, Source.MODULE_TOOL})
"""Who may start a tune-out: the agent (stated intent machine closes respect) or a module."""


def is_close_decision(source: Source) -> bool:
    """True for a deliberate close: the agent's close or decline, or a module's close."""
    return source in _CLOSE_DECISIONS


class NoChangeReason(StrEnum):
    """Why a rule found nothing to record."""

    SAME_STATE = "same-state"
    """The record already says this, and no overwrite rule applies."""
    CLOSED_ALREADY = "closed-already"
    """A machine close never replaces a closed record."""
    DECIDED_MEANWHILE = "decided-meanwhile"
    """A decision was recorded after the record a put-back would undo."""
    NOT_ACTIVE = "not-active"
    """The tune-out epoch is not in effect (ended, replaced, or never started)."""


class VetoReason(StrEnum):
    """Why the book vetoed a proposal; the host reports each as the refusal of the same name."""

    TUNED_OUT = "tuned-out"
    """The channel is tuned out: only the tune-out's own end changes its record."""
    EXPLICIT_OPEN = "explicit-open"
    """A machine close of a channel the agent opened or tuned out (stated intent)."""
    TUNED_OUT_BY_ANOTHER = "tuned-out-by-another-agent"
    """Another agent's tune-out already holds this channel."""


_E = TypeVar("_E")


@dataclass(frozen=True, slots=True)
class Append(Generic[_E]):
    """A decision was made: append ``event`` to the log, and only then apply it to memory.

    If the append fails the decision was not made; apply nothing and say so.
    """

    event: _E


@dataclass(frozen=True, slots=True)
class NoChange:
    """Nothing to record.

    Attributes:
        reason: Why.
        record: The channel's record as it stands (None when it has none).
    """

    reason: NoChangeReason
    record: DesiredRecord | None = None


@dataclass(frozen=True, slots=True)
class Vetoed:
    """The proposal goes against stated intent; nothing is recorded or sent.

    Attributes:
        reason: Which veto.
        record: The channel's record as it stands.
    """

    reason: VetoReason
    record: DesiredRecord | None = None


class DecodeError(ChannelsError):
    """A JSON value did not have the shape of a decision value or event."""


# -- JSON field readers (package-internal: decision_events reads its fields with them) --------


def read_str(data: Mapping[str, object], key: str) -> str:
    """``data[key]`` as a string, or raise :class:`DecodeError`."""
    value = data.get(key)
    if type(value) is not str:
        raise DecodeError(f"{key!r} must be a string")
    return value


def read_opt_str(data: Mapping[str, object], key: str) -> str | None:
    """``data[key]`` as a string, None when absent or null; raise on another type."""
    value = data.get(key)
    if value is None:
        return None
    if type(value) is not str:
        raise DecodeError(f"{key!r} must be a string or absent")
    return value


def read_float(data: Mapping[str, object], key: str) -> float:
    """``data[key]`` as a float (an int is accepted, a bool is not)."""
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DecodeError(f"{key!r} must be a number")
    return float(value)


def read_opt_float(data: Mapping[str, object], key: str) -> float | None:
    """``data[key]`` as a float, or None when absent or null."""
    return None if data.get(key) is None else read_float(data, key)


def read_opt_int(data: Mapping[str, object], key: str) -> int | None:
    """``data[key]`` as an int (not a bool), or None when absent or null."""
    value = data.get(key)
    if value is None:
        return None
    if type(value) is not int:
        raise DecodeError(f"{key!r} must be an integer or absent")
    return value


def read_mapping(data: Mapping[str, object], key: str) -> Mapping[str, object]:
    """``data[key]`` as a JSON object."""
    value = data.get(key)
    if not isinstance(value, Mapping):
        raise DecodeError(f"{key!r} must be an object")
    return value


def read_ref(data: Mapping[str, object]) -> ChannelRef:
    """The ``serverId``/``channelId`` pair of ``data``; the two are never joined."""
    return ChannelRef(read_str(data, "serverId"), read_str(data, "channelId"))


def ref_json(ref: ChannelRef) -> dict[str, object]:
    """The JSON form of a ref: two fields, never one joined string."""
    return {"serverId": ref.server_id, "channelId": ref.channel_id}


def read_source(value: object) -> Source:
    """A logged source; anything missing or outside the vocabulary reads as ``unknown``."""
    if type(value) is str:
        try:
            return Source(value)
        except ValueError:
            return Source.UNKNOWN
    return Source.UNKNOWN


def _put(out: dict[str, object], key: str, value: object) -> None:
    """Set ``out[key]`` unless ``value`` is None: absence is the general path."""
    if value is not None:
        out[key] = value


# -- values ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DesiredRecord:
    """One channel's desired state.

    Attributes:
        state: What the host wants.
        source: Who or what decided.
        decided_at: When (seconds, as passed in by the caller).
        by_agent: The agent that decided, when an agent did.
        epoch_id: The tune-out epoch, present exactly when ``state`` is ``tuned-out``.
    """

    state: DesiredState
    source: Source
    decided_at: float
    by_agent: str | None = None
    epoch_id: str | None = None

    def to_json(self) -> dict[str, object]:
        """The JSON object form."""
        out: dict[str, object] = {
            "state": self.state.value,
            "source": self.source.value,
            "decidedAt": self.decided_at,
        }
        _put(out, "byAgent", self.by_agent)
        _put(out, "epochId", self.epoch_id)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> DesiredRecord:
        """Read :meth:`to_json`'s form; raise :class:`DecodeError` when malformed."""
        try:
            state = DesiredState(read_str(data, "state"))
        except ValueError as exc:
            raise DecodeError("'state' must be open, closed or tuned-out") from exc
        epoch_id = read_opt_str(data, "epochId")
        if (state is DesiredState.TUNED_OUT) != (epoch_id is not None):
            raise DecodeError("a tuned-out record, and only one, carries an epochId")
        return cls(
            state,
            read_source(data.get("source")),
            read_float(data, "decidedAt"),
            read_opt_str(data, "byAgent"),
            epoch_id,
        )


class ScopeKind(StrEnum):
    """What a tune-out covers."""

    CHANNEL = "channel"
    """One channel."""
    ALL_EXCEPT = "all-except"
    """Every channel but one, now and later."""


@dataclass(frozen=True, slots=True)
class TuneOutScope:
    """The channels one tune-out covers.

    Attributes:
        ref: The channel tuned out (``channel``) or the one left out (``all-except``).
        kind: Which of the two.
    """

    ref: ChannelRef
    kind: ScopeKind = ScopeKind.CHANNEL

    def covers(self, ref: ChannelRef) -> bool:
        """Whether traffic on ``ref`` falls under this scope."""
        return (ref == self.ref) is (self.kind is ScopeKind.CHANNEL)

    def to_json(self) -> dict[str, object]:
        """``{serverId, channelId}`` for one channel, ``{kind, except: {...}}`` otherwise."""
        if self.kind is ScopeKind.CHANNEL:
            return ref_json(self.ref)
        return {"kind": self.kind.value, "except": ref_json(self.ref)}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> TuneOutScope:
        """Read :meth:`to_json`'s form."""
        kind = data.get("kind", ScopeKind.CHANNEL.value)
        if kind == ScopeKind.CHANNEL.value:
            return cls(read_ref(data))
        if kind == ScopeKind.ALL_EXCEPT.value:
            return cls(read_ref(read_mapping(data, "except")), ScopeKind.ALL_EXCEPT)
        raise DecodeError("a scope's 'kind' must be channel or all-except")


@dataclass(frozen=True, slots=True)
class TuneOutEpoch:
    """The terms of one tune-out epoch (an attention policy for one owner agent).

    Attributes:
        epoch_id: Unique among epochs; wakes and ends name the epoch by it.
        owner: The agent whose attention is governed.
        scope: What it covers.
        started_at: When it began.
        backlog_cap: The most diverted messages handed over raw when it ends.
        reader: The agent that reads the diverted traffic, if any.
        max_wakes: The wake budget; the first wake past it ends the epoch. None: unlimited.
        cadence_seconds: How often the reader may deliver a summary, if it does.
        expires_at: When it ends by itself; None lasts until cancelled.
        started_at_sequence: The store sequence where it began, when the caller knows it.
    """

    epoch_id: str
    owner: str
    scope: TuneOutScope
    started_at: float
    backlog_cap: int
    reader: str | None = None
    max_wakes: int | None = None
    cadence_seconds: float | None = None
    expires_at: float | None = None
    started_at_sequence: int | None = None

    def to_json(self) -> dict[str, object]:
        """The JSON object form."""
        out: dict[str, object] = {
            "epochId": self.epoch_id,
            "owner": self.owner,
            "scope": self.scope.to_json(),
            "startedAt": self.started_at,
            "backlogCap": self.backlog_cap,
        }
        _put(out, "reader", self.reader)
        _put(out, "maxWakes", self.max_wakes)
        _put(out, "cadenceSeconds", self.cadence_seconds)
        _put(out, "expiresAt", self.expires_at)
        _put(out, "startedAtSequence", self.started_at_sequence)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> TuneOutEpoch:
        """Read :meth:`to_json`'s form; raise :class:`DecodeError` when malformed."""
        cap = read_opt_int(data, "backlogCap")
        if cap is None or cap < 0:
            raise DecodeError("'backlogCap' must be a non-negative integer")
        return cls(
            read_str(data, "epochId"),
            read_str(data, "owner"),
            TuneOutScope.from_json(read_mapping(data, "scope")),
            read_float(data, "startedAt"),
            cap,
            read_opt_str(data, "reader"),
            read_opt_int(data, "maxWakes"),
            read_opt_float(data, "cadenceSeconds"),
            read_opt_float(data, "expiresAt"),
            read_opt_int(data, "startedAtSequence"),
        )
