"""The events of the channel lifecycle log: one frozen value per decision, with its JSON form.

Each kind (a desired state set, a tune-out started, woken or ended, an invitation declined)
has a ``kind`` tag and a ``to_json()``/``from_json()`` pair that round-trips exactly; replay
reads them back through :func:`decode_event`, which skips junk instead of failing start-up.

What it deliberately does not know: when an event may be written (the rules in :mod:`.book`
and :mod:`switchboard.tuneouts.rules.epochs` decide that), and how it changes memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from switchboard.channels.ref import ChannelRef
from switchboard.lifecycle.rules.decisions import (
    DecodeError,
    DesiredRecord,
    DesiredState,
    Source,
    TuneOutEpoch,
    TuneOutScope,
    read_float,
    read_mapping,
    read_opt_int,
    read_opt_str,
    read_ref,
    read_source,
    read_str,
    ref_json,
)

__all__ = [
    "DecisionEvent",
    "DesiredStateSet",
    "EndReason",
    "InvitationDeclined",
    "TuneOutEnded",
    "TuneOutStarted",
    "TuneOutWake",
    "decode_event",
    "decode_events",
]


class EndReason(StrEnum):
    """Why a tune-out epoch ended. Every end delivers the diverted backlog."""

    CANCELLED = "cancelled"
    """The owner or the reader cancelled it."""
    EXPIRED = "expired"
    """Its duration ran out."""
    WAKE_BUDGET = "wake-budget"
    """A wake came past its wake budget."""


def _record_or_none(data: Mapping[str, object], key: str) -> DesiredRecord | None:
    """A record to restore: absent, or an ``open``/``closed`` record (never a tune-out)."""
    if data.get(key) is None:
        return None
    record = DesiredRecord.from_json(read_mapping(data, key))
    if record.state is DesiredState.TUNED_OUT:
        raise DecodeError(f"{key!r} cannot be a tuned-out record")
    return record


def _check_kind(data: Mapping[str, object], kind: str) -> None:
    if data.get("kind") != kind:
        raise DecodeError(f"expected kind {kind!r}")


@dataclass(frozen=True, slots=True)
class DesiredStateSet:
    """A channel's desired state became ``state``, decided by ``source``.

    Attributes:
        ref: The channel.
        state: ``open`` or ``closed`` (a tune-out has its own events).
        source: What is recorded as having decided (a machine close on a channel without a
            record is recorded as ``default-closed``).
        decided_at: When.
        by_agent: The agent that decided, when an agent did.
    """

    kind: ClassVar[str] = "desired-state"
    ref: ChannelRef
    state: DesiredState
    source: Source
    decided_at: float
    by_agent: str | None = None

    def record(self) -> DesiredRecord:
        """The record this event makes."""
        return DesiredRecord(self.state, self.source, self.decided_at, self.by_agent)

    def to_json(self) -> dict[str, object]:
        """The log's JSON object."""
        out: dict[str, object] = {"kind": self.kind, **ref_json(self.ref)}
        out.update(desired=self.state.value, source=self.source.value, at=self.decided_at)
        if self.by_agent is not None:
            out["byAgent"] = self.by_agent
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> DesiredStateSet:
        """Read :meth:`to_json`'s form; an unknown source reads as ``unknown``."""
        _check_kind(data, cls.kind)
        desired = data.get("desired")
        if desired not in (DesiredState.OPEN.value, DesiredState.CLOSED.value):
            raise DecodeError("'desired' must be open or closed")
        return cls(
            read_ref(data),
            DesiredState(desired),
            read_source(data.get("source")),
            read_float(data, "at"),
            read_opt_str(data, "byAgent"),
        )


@dataclass(frozen=True, slots=True)
class TuneOutStarted:
    """A tune-out epoch began.

    Attributes:
        epoch: Its terms.
        source: Who started it (``agent-tool`` or ``module-tool``); a one-channel epoch
            records the channel as ``tuned-out`` with this source.
        resume: For a one-channel epoch, the record to restore when it ends (None when the
            channel had no record).
        replaces: The epoch this one replaces (the owner's earlier epoch on the same channel,
            or its earlier all-except epoch), if any.
    """

    kind: ClassVar[str] = "tune-out-started"
    epoch: TuneOutEpoch
    source: Source
    resume: DesiredRecord | None = None
    replaces: str | None = None

    def to_json(self) -> dict[str, object]:
        """The log's JSON object."""
        out: dict[str, object] = {
            "kind": self.kind,
            "epoch": self.epoch.to_json(),
            "source": self.source.value,
        }
        if self.resume is not None:
            out["resume"] = self.resume.to_json()
        if self.replaces is not None:
            out["replaces"] = self.replaces
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> TuneOutStarted:
        """Read :meth:`to_json`'s form."""
        _check_kind(data, cls.kind)
        return cls(
            TuneOutEpoch.from_json(read_mapping(data, "epoch")),
            read_source(data.get("source")),
            _record_or_none(data, "resume"),
            read_opt_str(data, "replaces"),
        )


@dataclass(frozen=True, slots=True)
class TuneOutWake:
    """An epoch woke its owner once more; its wake count is now ``wake_count``.

    Attributes:
        epoch_id: The epoch. A wake of an epoch no longer in effect is ignored on replay.
        wake_count: The count after this wake (1 for the first).
        at: When.
    """

    kind: ClassVar[str] = "tune-out-wake"
    epoch_id: str
    wake_count: int
    at: float

    def to_json(self) -> dict[str, object]:
        """The log's JSON object."""
        return {
            "kind": self.kind,
            "epochId": self.epoch_id,
            "wakeCount": self.wake_count,
            "at": self.at,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> TuneOutWake:
        """Read :meth:`to_json`'s form."""
        _check_kind(data, cls.kind)
        count = read_opt_int(data, "wakeCount")
        if count is None or count < 0:
            raise DecodeError("'wakeCount' must be a non-negative integer")
        return cls(read_str(data, "epochId"), count, read_float(data, "at"))


@dataclass(frozen=True, slots=True)
class TuneOutEnded:
    """A tune-out epoch ended.

    Attributes:
        epoch_id: The epoch.
        scope: Its scope (a one-channel scope names the record to restore).
        reason: Why it ended.
        at: When.
        restore: For a one-channel epoch, the record the channel goes back to (None: the
            channel had no record before, and has none again).
        by_agent: Who cancelled it, for a cancel.
    """

    kind: ClassVar[str] = "tune-out-ended"
    epoch_id: str
    scope: TuneOutScope
    reason: EndReason
    at: float
    restore: DesiredRecord | None = None
    by_agent: str | None = None

    def to_json(self) -> dict[str, object]:
        """The log's JSON object."""
        out: dict[str, object] = {
            "kind": self.kind,
            "epochId": self.epoch_id,
            "scope": self.scope.to_json(),
            "reason": self.reason.value,
            "at": self.at,
        }
        if self.restore is not None:
            out["restore"] = self.restore.to_json()
        if self.by_agent is not None:
            out["byAgent"] = self.by_agent
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> TuneOutEnded:
        """Read :meth:`to_json`'s form."""
        _check_kind(data, cls.kind)
        try:
            reason = EndReason(read_str(data, "reason"))
        except ValueError as exc:
            raise DecodeError("'reason' must be cancelled, expired or wake-budget") from exc
        return cls(
            read_str(data, "epochId"),
            TuneOutScope.from_json(read_mapping(data, "scope")),
            reason,
            read_float(data, "at"),
            _record_or_none(data, "restore"),
            read_opt_str(data, "byAgent"),
        )


@dataclass(frozen=True, slots=True)
class InvitationDeclined:
    """An audit line: the agent declined an invitation (the close is its own event).

    Attributes:
        ref: The channel.
        message_id: The message that invited the agent.
        at: When.
        acknowledgment: What was posted as acknowledgment, if anything.
    """

    kind: ClassVar[str] = "invitation-declined"
    ref: ChannelRef
    message_id: str
    at: float
    acknowledgment: str | None = None

    def to_json(self) -> dict[str, object]:
        """The log's JSON object."""
        out: dict[str, object] = {"kind": self.kind, **ref_json(self.ref)}
        out.update(messageId=self.message_id, at=self.at)
        if self.acknowledgment is not None:
            out["acknowledgment"] = self.acknowledgment
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> InvitationDeclined:
        """Read :meth:`to_json`'s form."""
        _check_kind(data, cls.kind)
        return cls(
            read_ref(data),
            read_str(data, "messageId"),
            read_float(data, "at"),
            read_opt_str(data, "acknowledgment"),
        )


DecisionEvent = DesiredStateSet | TuneOutStarted | TuneOutWake | TuneOutEnded | InvitationDeclined
"""Every record kind of the lifecycle log."""

_DECODERS: dict[str, type[DecisionEvent]] = {
    cls.kind: cls
    for cls in (DesiredStateSet, TuneOutStarted, TuneOutWake, TuneOutEnded, InvitationDeclined)
}


def decode_event(data: object) -> DecisionEvent | None:
    """Read one logged record; None for anything that is not a well-formed event.

    What it knows: every kind of record the lifecycle log holds, and its JSON object form. Each
    event has a ``kind`` tag and a ``to_json()``/``from_json()`` pair that round-trips exactly;
    channels appear as separate ``serverId``/``channelId`` fields, never one joined string. The
    store appends exactly the dicts :meth:`to_json` returns, and replay reads them back through
    :func:`decode_event`, which skips junk (non-objects, unknown kinds, missing fields) instead of
    failing: a log written by an older or broken process must not stop the host from starting.

    ======================  ==================================================================
    kind                    meaning
    ======================  ==================================================================
    ``desired-state``       a channel's desired state became ``open`` or ``closed``
    ``tune-out-started``    an epoch began (a one-channel epoch also makes its record tuned-out)
    ``tune-out-wake``       an epoch's wake count became ``wakeCount``
    ``tune-out-ended``      an epoch ended; a one-channel epoch restores the record it displaced
    ``invitation-declined`` an audit line for ``channel_decline``; replay changes nothing for it
    ======================  ==================================================================

    Args:
        data: One record as the store returns it (normally a dict from :meth:`to_json`).

    Returns:
        The event, or None for a non-object, an unknown kind or a malformed record.
    """
    if not isinstance(data, Mapping):
        return None
    kind = data.get("kind")
    decoder = _DECODERS.get(kind) if type(kind) is str else None
    if decoder is None:
        return None
    try:
        return decoder.from_json(data)
    except DecodeError:
        return None


def decode_events(records: Iterable[object]) -> Iterator[DecisionEvent]:
    """The well-formed events among ``records``, in order; junk is skipped."""
    for data in records:
        event = decode_event(data)
        if event is not None:
            yield event
