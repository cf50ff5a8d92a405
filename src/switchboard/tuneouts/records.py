"""The host's own tune-out records in the decision log, and what counts as a wake.

:class:`Settled` is an ended epoch as the host must remember it until its owner has the
backlog (which messages it withheld: a range of the store's seqs); :class:`Delivered` records
that it was handed over; :class:`OwedBacklogs` keeps both in memory. A withheld message wakes
its epoch when it addresses the owner.

What it deliberately does not know: the books, the store, and when records are written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Final

from switchboard.channels.ref import ChannelRef
from switchboard.lifecycle.rules.decisions import DecodeError, TuneOutEpoch
from switchboard.lifecycle.rules.events import EndReason
from switchboard.store import StoredMessage
from switchboard.store.mailmark import is_mail

__all__ = [
    "ADDRESSING_TAGS",
    "Delivered",
    "OwedBacklogs",
    "Settled",
    "decode_host_record",
    "diverts_at_all",
    "is_addressed",
]

ADDRESSING_TAGS: Final = frozenset({"chat:addressed", "chat:mention", "chat:reply", "chat:dm"})
"""Tags that address the agent: ``chat:addressed`` and every core tag implying it."""


def is_addressed(tags: Sequence[str] | None) -> bool:
    """Whether a message with ``tags`` addresses the agent (and so would wake it)."""
    return bool(tags) and not ADDRESSING_TAGS.isdisjoint(tags or ())


def diverts_at_all(message: StoredMessage) -> bool:
    """Whether a tune-out may divert ``message``: channel traffic only, never a push event and
    never mail between agents (mail is no channel's traffic)."""
    if not message.channel_id or is_mail(message):
        return False
    meta = message.metadata
    return not (meta is not None and meta.get("kind") == "push/event")


def _int(data: Mapping[str, object], key: str) -> int:
    value = data.get(key)
    if type(value) is not int or value < 0:
        raise DecodeError(f"{key!r} must be a non-negative integer")
    return value


def _float(data: Mapping[str, object], key: str) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DecodeError(f"{key!r} must be a number")
    return float(value)


@dataclass(frozen=True, slots=True)
class Settled:
    """An ended epoch whose backlog is owed to its owner.

    What it knows:

    - :class:`Settled`: an ended tune-out epoch as the host must remember it until its owner has the
      backlog. The decision events say *that* an epoch ended; the host also needs *which messages*
      it withheld. Those are the messages the epoch covers with a store sequence number in
      ``(epoch.started_at_sequence, end_seq]``: a tune-out diverts by commit order, so the backlog
      is a durable query of the message store, never a copy. ``end_seq`` is the store's latest
      sequence number when the end was decided. A settled record is appended in the same batch as
      its :class:`~switchboard.lifecycle.rules.events.TuneOutEnded`, so an end is never recorded
      without it.
    - :class:`Delivered`: the owner's inbox has handed over that epoch's backlog.
    - :class:`OwedBacklogs`: the settled epochs in memory, per owner, until delivered and passed.
    - :func:`decode_host_record` reads both back; anything else is not a host record. Their kinds
      are unknown to :func:`~switchboard.lifecycle.rules.events.decode_events`, which skips them, so
      the books replay the same log unaffected.
    - :func:`is_addressed`: a diverted message "wakes" its owner when it addresses the agent: its
      tags, after the MCPL core closure, include ``chat:addressed`` (``chat:mention``,
      ``chat:reply`` and ``chat:dm`` imply it).
    - :func:`diverts_at_all`: push events are not channel traffic and are never diverted.

    Attributes:
        epoch: The ended epoch's terms (its owner, scope, cap and starting sequence).
        reason: Why it ended.
        ended_at: When (the board's clock).
        end_seq: The store's latest sequence number when it ended: the backlog is what the
            scope covers in ``(epoch.started_at_sequence, end_seq]``.
        digest: The reader's summary of the traffic, given with its cancel, if any.
        replaced: The owner started a new epoch in its place (the end of a replacement).
    """

    kind: ClassVar[str] = "tune-out-settled"
    epoch: TuneOutEpoch
    reason: EndReason
    ended_at: float
    end_seq: int
    digest: str | None = None
    replaced: bool = False

    @property
    def epoch_id(self) -> str:
        """The ended epoch's id."""
        return self.epoch.epoch_id

    @property
    def start_seq(self) -> int:
        """The store sequence number the epoch began after."""
        return self.epoch.started_at_sequence or 0

    def withheld(self, message: StoredMessage) -> bool:
        """Whether ``message`` belongs to this epoch's backlog."""
        return (
            self.start_seq < message.seq <= self.end_seq
            and diverts_at_all(message)
            and self.epoch.scope.covers(ChannelRef(message.server_id, message.channel_id))
        )

    def to_json(self) -> dict[str, object]:
        """The log's JSON object."""
        out: dict[str, object] = {
            "kind": self.kind,
            "epoch": self.epoch.to_json(),
            "reason": self.reason.value,
            "at": self.ended_at,
            "endSeq": self.end_seq,
        }
        if self.digest is not None:
            out["digest"] = self.digest
        if self.replaced:
            out["replaced"] = True
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Settled:
        """Read :meth:`to_json`'s form; raise :class:`DecodeError` when malformed."""
        epoch = data.get("epoch")
        if not isinstance(epoch, Mapping):
            raise DecodeError("'epoch' must be an object")
        try:
            reason = EndReason(str(data.get("reason")))
        except ValueError as exc:
            raise DecodeError("'reason' is not an end reason") from exc
        digest = data.get("digest")
        if digest is not None and type(digest) is not str:
            raise DecodeError("'digest' must be a string")
        return cls(
            TuneOutEpoch.from_json(epoch),
            reason,
            _float(data, "at"),
            _int(data, "endSeq"),
            digest,
            data.get("replaced") is True,
        )


@dataclass(frozen=True, slots=True)
class Delivered:
    """The owner's inbox handed over the backlog of epoch ``epoch_id``."""

    kind: ClassVar[str] = "tune-out-delivered"
    epoch_id: str
    at: float

    def to_json(self) -> dict[str, object]:
        """The log's JSON object."""
        return {"kind": self.kind, "epochId": self.epoch_id, "at": self.at}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Delivered:
        """Read :meth:`to_json`'s form; raise :class:`DecodeError` when malformed."""
        epoch_id = data.get("epochId")
        if type(epoch_id) is not str:
            raise DecodeError("'epochId' must be a string")
        return cls(epoch_id, _float(data, "at"))


HostRecord = Settled | Delivered


def decode_host_record(data: object) -> HostRecord | None:
    """A host tune-out record, or None for anything else (events, junk, malformed)."""
    if not isinstance(data, Mapping):
        return None
    kind = data.get("kind")
    try:
        if kind == Settled.kind:
            return Settled.from_json(data)
        if kind == Delivered.kind:
            return Delivered.from_json(data)
    except DecodeError:
        return None
    return None


class OwedBacklogs:
    """Ended epochs whose backlog is owed to their owner, or whose withheld range the owner's
    inbox cursor has not passed yet (so those messages stay out of its inbox)."""

    __slots__ = ("_by_owner", "_delivered")

    def __init__(self) -> None:
        self._by_owner: dict[str, dict[str, Settled]] = {}
        self._delivered: set[str] = set()

    def keep(self, settled: Settled, *, delivered: bool = False) -> None:
        """Remember an ended epoch (in end order per owner)."""
        self._by_owner.setdefault(settled.epoch.owner, {})[settled.epoch_id] = settled
        if delivered:
            self._delivered.add(settled.epoch_id)

    def mark_delivered(self, epoch_id: str) -> None:
        """The owner has been handed this epoch's backlog."""
        self._delivered.add(epoch_id)

    def owners(self) -> list[str]:
        """Every owner with a remembered epoch."""
        return list(self._by_owner)

    def owed(self, owner: str) -> Iterator[Settled]:
        """``owner``'s ended epochs whose backlog it has not been handed, in end order."""
        for epoch_id, settled in self._by_owner.get(owner, {}).items():
            if epoch_id not in self._delivered:
                yield settled

    def withholding(self, owner: str) -> tuple[Settled, ...]:
        """``owner``'s remembered ended epochs (their ranges stay out of its inbox)."""
        mine = self._by_owner.get(owner)
        return tuple(mine.values()) if mine else ()

    def forget_passed(self, owner: str, cursor: int) -> None:
        """Forget ``owner``'s delivered epochs whose range ends at or below ``cursor``."""
        mine = self._by_owner.get(owner)
        if not mine:
            return
        for epoch_id, settled in list(mine.items()):
            if epoch_id in self._delivered and settled.end_seq <= cursor:
                del mine[epoch_id]
                self._delivered.discard(epoch_id)
        if not mine:
            del self._by_owner[owner]

    def records(self) -> list[dict[str, object]]:
        """Log records that rebuild this state (for a snapshot)."""
        out: list[dict[str, object]] = []
        for mine in self._by_owner.values():
            for epoch_id, settled in mine.items():
                out.append(settled.to_json())
                if epoch_id in self._delivered:
                    out.append(Delivered(epoch_id, settled.ended_at).to_json())
        return out

    def __len__(self) -> int:
        return sum(len(mine) for mine in self._by_owner.values())
