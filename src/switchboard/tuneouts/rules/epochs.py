"""Tune-out epochs: start, cancel, expire and wake, with wake budgets, and their replay.

A tune-out is an attention policy of one owner agent over one channel, or every channel but
one: the channels stay open, their traffic is diverted from the owner to a backlog that an
optional reader may read, and it ends at its deadline, on cancel, or at the first wake past its
budget (channel-registry.md §5.3, §5.4, §6). :class:`TuneOutBook` keeps the epochs in effect.

What it deliberately does not know: messages (the host keeps the backlog), agents' turns and
the clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Final

from switchboard.channels.ref import ChannelRef
from switchboard.lifecycle.rules.book import LifecycleBook
from switchboard.lifecycle.rules.decisions import (
    TUNE_OUT_SOURCES,
    Append,
    DesiredRecord,
    DesiredState,
    NoChange,
    NoChangeReason,
    ScopeKind,
    Source,
    TuneOutEpoch,
    TuneOutScope,
    Vetoed,
    VetoReason,
)
from switchboard.lifecycle.rules.events import (
    DecisionEvent,
    DesiredStateSet,
    EndReason,
    TuneOutEnded,
    TuneOutStarted,
    TuneOutWake,
)

__all__ = [
    "DEFAULT_BACKLOG_CAP",
    "ActiveTuneOut",
    "TuneOutBook",
    "TuneOutTerms",
]

DEFAULT_BACKLOG_CAP: Final = 50
"""The most diverted messages handed over raw when an epoch ends, unless the start says."""


@dataclass(frozen=True, slots=True)
class TuneOutTerms:
    """What a start asks for, besides who, where and when.

    Attributes:
        reader: The agent that reads the diverted traffic, if any.
        backlog_cap: The most messages handed over raw at the end (a digest note covers more).
        max_wakes: The wake budget (None: unlimited).
        cadence_seconds: How often the reader may deliver a summary.
        duration: Seconds until it ends by itself (None: until cancelled).
    """

    reader: str | None = None
    backlog_cap: int = DEFAULT_BACKLOG_CAP
    max_wakes: int | None = None
    cadence_seconds: float | None = None
    duration: float | None = None

    def __post_init__(self) -> None:
        if self.backlog_cap < 0:
            raise ValueError("backlog_cap must not be negative")
        if self.max_wakes is not None and self.max_wakes < 0:
            raise ValueError("max_wakes must not be negative")
        if self.duration is not None and not self.duration > 0:
            raise ValueError("duration must be positive")
        if self.cadence_seconds is not None and not self.cadence_seconds > 0:
            raise ValueError("cadence_seconds must be positive")


@dataclass(frozen=True, slots=True)
class ActiveTuneOut:
    """An epoch in effect.

    Attributes:
        epoch: Its terms.
        source: Who started it.
        wake_count: Wakes so far in this epoch.
        resume: For a one-channel epoch, the record its end restores.
    """

    epoch: TuneOutEpoch
    source: Source
    wake_count: int = 0
    resume: DesiredRecord | None = None


class TuneOutBook:
    """The tune-out epochs in effect, with O(1) lookups by epoch, channel and owner.

    What it knows (channel-registry.md §5.3, §5.4, §6):

    - A tune-out is an attention policy epoch for one owner agent. Its scope is one channel, or
      every channel but one. The channels stay open at the transport; their incoming traffic is
      diverted (for the owner only) to a backlog, read by an optional reader agent.
    - One channel holds at most one one-channel epoch (its desired record says ``tuned-out`` and
      names the epoch); one owner holds at most one all-except epoch. A new epoch of the same owner
      in the same slot replaces the old one (and restarts the wake count); another owner's
      one-channel epoch holds the channel, so a start there is refused.
    - An epoch ends on a cancel, when its duration runs out (:meth:`TuneOutBook.expire`, or the
      first wake at or after its deadline), or at the first wake past its wake budget. A one-channel
      epoch's end restores the record that stood before it began. Every end delivers the backlog
      (see :mod:`~switchboard.tuneouts.rules.backlogs`).
    - Replay folds the log: epochs, and wake counts taken only from wakes of the epoch in effect (a
      wake of a stale epoch is ignored).

    The protocol with the store is the same as
    :class:`~switchboard.lifecycle.rules.book.LifecycleBook`'s: a verb answers
    :class:`~switchboard.lifecycle.rules.decisions.Append` (append, then ``apply`` the event to
    *both* books), :class:`~switchboard.lifecycle.rules.decisions.NoChange` or
    :class:`~switchboard.lifecycle.rules.decisions.Vetoed`, and changes nothing itself.
    """

    __slots__ = ("_active", "_all_except", "_deadlines", "_except_counts", "_on_channel")

    def __init__(self) -> None:
        self._active: dict[str, ActiveTuneOut] = {}
        self._on_channel: dict[ChannelRef, str] = {}
        self._all_except: dict[str, str] = {}
        self._except_counts: dict[ChannelRef, int] = {}
        self._deadlines: dict[str, float] = {}

    # -- reading -----------------------------------------------------------------------------

    def active(self, epoch_id: str) -> ActiveTuneOut | None:
        """The epoch in effect with this id, or None."""
        return self._active.get(epoch_id)

    def epochs(self) -> Iterator[ActiveTuneOut]:
        """Every epoch in effect, oldest first."""
        return iter(self._active.values())

    def on_channel(self, ref: ChannelRef) -> ActiveTuneOut | None:
        """The one-channel epoch holding ``ref``, or None."""
        epoch_id = self._on_channel.get(ref)
        return None if epoch_id is None else self._active[epoch_id]

    def all_except_of(self, owner: str) -> ActiveTuneOut | None:
        """The owner's all-except epoch, or None."""
        epoch_id = self._all_except.get(owner)
        return None if epoch_id is None else self._active[epoch_id]

    def diverts(self, ref: ChannelRef, agent: str) -> ActiveTuneOut | None:
        """The epoch that diverts ``agent``'s traffic on ``ref``, or None (normal attention)."""
        held = self.on_channel(ref)
        if held is not None and held.epoch.owner == agent:
            return held
        broad = self.all_except_of(agent)
        if broad is not None and broad.epoch.scope.covers(ref):
            return broad
        return None

    def covers(self, ref: ChannelRef) -> bool:
        """Whether any epoch, of any owner, covers ``ref`` (machine closes respect this)."""
        if ref in self._on_channel:
            return True
        return len(self._all_except) > self._except_counts.get(ref, 0)

    def next_deadline(self) -> float | None:
        """The earliest time an epoch ends by itself, or None."""
        return min(self._deadlines.values(), default=None)

    def __len__(self) -> int:
        return len(self._active)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TuneOutBook):
            return NotImplemented
        return self._active == other._active

    def __repr__(self) -> str:
        return f"TuneOutBook({len(self._active)} epochs)"

    # -- deciding ----------------------------------------------------------------------------

    def start(
        self,
        epoch_id: str,
        owner: str,
        scope: TuneOutScope,
        now: float,
        *,
        lifecycle: LifecycleBook,
        terms: TuneOutTerms | None = None,
        source: Source = Source.AGENT_TOOL,
        started_at_sequence: int | None = None,
    ) -> Append[TuneOutStarted] | Vetoed:
        """Start an epoch for ``owner``.

        Args:
            epoch_id: A new, unique epoch id (the caller mints it).
            owner: The agent whose attention is governed.
            scope: One channel, or all but one.
            now: When it starts.
            lifecycle: The desired states (a one-channel epoch remembers the record it
                displaces, to restore it at the end).
            terms: Reader, backlog cap, wake budget, cadence, duration.
            source: ``agent-tool`` (the agent's own tune-out) or ``module-tool``.
            started_at_sequence: The store sequence where it begins, if known.

        Returns:
            The event to append, or ``tuned-out-by-another-agent`` when another owner's
            one-channel epoch holds the channel.

        Raises:
            ValueError: The source cannot start a tune-out, or the epoch id is in use.
        """
        if source not in TUNE_OUT_SOURCES:
            raise ValueError(f"source {source.value!r} cannot start a tune-out")
        if epoch_id in self._active:
            raise ValueError(f"epoch {epoch_id!r} is already in effect")
        terms = terms or TuneOutTerms()
        resume: DesiredRecord | None = None
        if scope.kind is ScopeKind.CHANNEL:
            held = self.on_channel(scope.ref)
            if held is not None and held.epoch.owner != owner:
                return Vetoed(VetoReason.TUNED_OUT_BY_ANOTHER, lifecycle.record(scope.ref))
            if held is not None:
                resume = held.resume
            else:
                current = lifecycle.record(scope.ref)
                if current is not None and current.state is not DesiredState.TUNED_OUT:
                    resume = current
        else:
            held = self.all_except_of(owner)
        expires = None if terms.duration is None else now + terms.duration
        epoch = TuneOutEpoch(
            epoch_id,
            owner,
            scope,
            now,
            terms.backlog_cap,
            terms.reader,
            terms.max_wakes,
            terms.cadence_seconds,
            expires,
            started_at_sequence,
        )
        replaces = None if held is None else held.epoch.epoch_id
        return Append(TuneOutStarted(epoch, source, resume, replaces))

    def _end(
        self, held: ActiveTuneOut, reason: EndReason, now: float, by_agent: str | None = None
    ) -> Append[TuneOutEnded]:
        epoch = held.epoch
        restore = held.resume if epoch.scope.kind is ScopeKind.CHANNEL else None
        return Append(TuneOutEnded(epoch.epoch_id, epoch.scope, reason, now, restore, by_agent))

    def cancel(
        self, epoch_id: str, now: float, *, by_agent: str | None = None
    ) -> Append[TuneOutEnded] | NoChange:
        """End an epoch on request (the owner's ``tune_out`` cancel, or the reader's)."""
        held = self._active.get(epoch_id)
        if held is None:
            return NoChange(NoChangeReason.NOT_ACTIVE)
        return self._end(held, EndReason.CANCELLED, now, by_agent)

    def wake(
        self, epoch_id: str, now: float
    ) -> Append[TuneOutWake] | Append[TuneOutEnded] | NoChange:
        """Count one wake of an epoch; the first wake past its budget (or its deadline) ends it."""
        held = self._active.get(epoch_id)
        if held is None:
            return NoChange(NoChangeReason.NOT_ACTIVE)
        epoch = held.epoch
        if epoch.expires_at is not None and now >= epoch.expires_at:
            return self._end(held, EndReason.EXPIRED, now)
        count = held.wake_count + 1
        if epoch.max_wakes is not None and count > epoch.max_wakes:
            return self._end(held, EndReason.WAKE_BUDGET, now)
        return Append(TuneOutWake(epoch_id, count, now))

    def expire(self, now: float) -> tuple[Append[TuneOutEnded], ...]:
        """End every epoch whose duration ran out by ``now``, earliest deadline first."""
        due = sorted((at, epoch_id) for epoch_id, at in self._deadlines.items() if at <= now)
        return tuple(
            self._end(self._active[epoch_id], EndReason.EXPIRED, now) for _, epoch_id in due
        )

    # -- changing memory ---------------------------------------------------------------------

    def _add(self, held: ActiveTuneOut) -> None:
        epoch = held.epoch
        self._active[epoch.epoch_id] = held
        if epoch.scope.kind is ScopeKind.CHANNEL:
            self._on_channel[epoch.scope.ref] = epoch.epoch_id
        else:
            self._all_except[epoch.owner] = epoch.epoch_id
            ref = epoch.scope.ref
            self._except_counts[ref] = self._except_counts.get(ref, 0) + 1
        if epoch.expires_at is not None:
            self._deadlines[epoch.epoch_id] = epoch.expires_at

    def _remove(self, epoch_id: str | None) -> ActiveTuneOut | None:
        held = None if epoch_id is None else self._active.pop(epoch_id, None)
        if held is None:
            return None
        epoch = held.epoch
        self._deadlines.pop(epoch.epoch_id, None)
        if epoch.scope.kind is ScopeKind.CHANNEL:
            del self._on_channel[epoch.scope.ref]
        else:
            del self._all_except[epoch.owner]
            ref = epoch.scope.ref
            left = self._except_counts[ref] - 1
            if left:
                self._except_counts[ref] = left
            else:
                del self._except_counts[ref]
        return held

    def apply(self, event: DecisionEvent) -> ActiveTuneOut | None:
        """Change memory by one logged event (only after the append succeeded).

        Returns:
            The epoch the event ended or replaced (its backlog is due), or None.
        """
        if isinstance(event, TuneOutStarted):
            epoch = event.epoch
            gone = self._remove(event.replaces)
            # A well-formed log never needs these; a damaged one must not leave two holders.
            if epoch.scope.kind is ScopeKind.CHANNEL:
                gone = self._remove(self._on_channel.get(epoch.scope.ref)) or gone
            else:
                gone = self._remove(self._all_except.get(epoch.owner)) or gone
            self._remove(epoch.epoch_id)
            self._add(ActiveTuneOut(epoch, event.source, 0, event.resume))
            return gone
        if isinstance(event, TuneOutWake):
            held = self._active.get(event.epoch_id)
            if held is not None:  # a wake of a stale epoch is ignored
                self._active[event.epoch_id] = replace(held, wake_count=event.wake_count)
            return None
        if isinstance(event, TuneOutEnded):
            return self._remove(event.epoch_id)
        if isinstance(event, DesiredStateSet):
            # A decision recorded over a tune-out ends it without its cancel (the rules never
            # propose one; only a damaged or foreign log can hold it).
            return self._remove(self._on_channel.get(event.ref))
        return None

    @classmethod
    def replay(cls, events: Iterable[DecisionEvent]) -> TuneOutBook:
        """Rebuild the epochs in effect, with their wake counts, from the log."""
        book = cls()
        for event in events:
            book.apply(event)
        return book
