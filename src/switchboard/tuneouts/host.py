"""Tune-outs on the host: durable decisions, expiry, and what tools ask of them.

:class:`TuneOutHost` starts, cancels, wakes and expires epochs; every decision goes through the
decision journal (appended first, applied once committed) and holds its channel in the
decision gate, and a one-channel epoch is reconciled through the lifecycle
(channel-registry.md §5.3, §6).

What it deliberately does not know: MCP, inbox reads and backlog contents
(``agents.inbox``), and how the transport is reconciled.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import structlog

from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.lifecycle.journal import DecisionNotRecorded
from switchboard.lifecycle.queue import DecisionGate
from switchboard.lifecycle.rules.book import LifecycleBook
from switchboard.lifecycle.rules.decisions import (
    Append,
    NoChange,
    ScopeKind,
    Source,
    TuneOutScope,
    Vetoed,
)
from switchboard.lifecycle.rules.events import (
    DecisionEvent,
    EndReason,
    TuneOutEnded,
    TuneOutStarted,
    TuneOutWake,
)
from switchboard.refusals.refusal import Refusal
from switchboard.store import MessageStoreProtocol
from switchboard.tuneouts.records import Delivered, Settled
from switchboard.tuneouts.rules.epochs import ActiveTuneOut, TuneOutBook, TuneOutTerms
from switchboard.tuneouts.state import DecisionRecorder, TuneOutState
from switchboard.tuneouts.words import (
    another_agent,
    not_in_effect,
    not_recorded,
    overlap_refusal,
)

__all__ = ["DecisionRecorder", "Reconciling", "StartedTuneOut", "TuneOutHost"]

log = structlog.get_logger(__name__)

_Record = DecisionEvent | Settled | Delivered
_RETRY_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class StartedTuneOut:
    """A started epoch, and the owner's earlier epoch it replaced (whose backlog is owed)."""

    held: ActiveTuneOut
    replaced: Settled | None = None


class Reconciling(Protocol):
    """What the tune-outs need of the lifecycle's reconciler: run channels to their records."""

    async def reconcile(self, refs: Sequence[ChannelRef]) -> int: ...


def _new_epoch_id() -> str:
    return f"to-{uuid.uuid4().hex[:16]}"


class TuneOutHost:
    """The host's tune-outs.

    What it knows (channel-registry.md §5.3, §6):

    - :class:`TuneOutHost` starts, cancels, wakes and expires epochs. Every decision goes through
      the decision journal (:mod:`~switchboard.lifecycle.journal`): appended to the log first,
      applied to memory (its :attr:`~TuneOutHost.state`, and the lifecycle book, which a one-channel
      epoch turns ``tuned-out`` and back) only once committed. A failed append raises a
      :class:`~switchboard.refusals.refusal.Refusal` (``not-recorded``): nothing happened. Decisions
      are taken one at a time, a one-channel decision holding its channel in the lifecycle decision
      gate, so each is proposed against the memory its predecessors left.
    - After a one-channel start or end the lifecycle's reconciler (a :class:`Reconciling`) brings
      the transport to the record (a tuned-out channel stays open, since its traffic must keep
      arriving).
    - Restarting the owner's epoch in the same slot ends the old one (its backlog is owed) and
      starts the new one, in one batch. One owner's epochs never overlap.
    - Expiry: :meth:`TuneOutHost.run_timer` sleeps until the next deadline (the clock is injected);
      every inbox read of an owner also ends what is due first.
    - :meth:`TuneOutHost.covers`, for machine closes, which a tune-out refuses as stated intent.

    It is built after the lower-level objects it shares with the lifecycle: its
    :class:`~switchboard.tuneouts.state.TuneOutState` (a part of the decision journal, which the
    lifecycle also asks whether a tune-out covers a channel), the journal, the lifecycle book, the
    decision gate and the reconciler.

    Args:
        registry: The channel registry (how the tune-out words name a channel).
        store: The message store (where an epoch draws its line).
        state: The tune-out memory, a part of ``journal``.
        journal: Records every tune-out decision before memory changes.
        lifecycle: The lifecycle book (a one-channel epoch is proposed against its record).
        gate: The lifecycle decision gate (a one-channel decision holds its channel).
        reconciler: Brings a channel whose record a tune-out changed to that record.
        clock: The host clock.
        new_epoch_id: Makes a fresh epoch id.
    """

    def __init__(
        self,
        *,
        registry: ChannelRegistry,
        store: MessageStoreProtocol,
        state: TuneOutState,
        journal: DecisionRecorder,
        lifecycle: LifecycleBook,
        gate: DecisionGate,
        reconciler: Reconciling,
        clock: Callable[[], float] = time.time,
        new_epoch_id: Callable[[], str] = _new_epoch_id,
    ) -> None:
        self.registry = registry
        self.store = store
        self.clock = clock
        #: The memory (epochs and owed backlogs), kept from the decision journal.
        self.state = state
        self._journal = journal
        self._lifecycle = lifecycle
        self._gate = gate
        self._reconciler = reconciler
        self._new_epoch_id = new_epoch_id
        self._lock = anyio.Lock()
        self._read_upto: dict[str, int] = {}

    # -- reading -----------------------------------------------------------------------------

    @property
    def book(self) -> TuneOutBook:
        """The epochs in effect (read-only use)."""
        return self.state.book

    def covers(self, ref: ChannelRef) -> bool:
        """Whether any epoch covers ``ref``: a machine close of it is refused as stated intent."""
        return self.state.covers(ref)

    def holding(self, ref: ChannelRef) -> ActiveTuneOut | None:
        """The one-channel epoch that holds ``ref`` (its desired state is tuned-out), or None."""
        return self.state.book.on_channel(ref)

    def find(self, agent: str, scope: TuneOutScope) -> ActiveTuneOut | None:
        """The epoch with ``scope`` that ``agent`` owns or reads, or None."""
        if scope.kind is ScopeKind.CHANNEL:
            held = self.state.book.on_channel(scope.ref)
            if held is not None and agent in (held.epoch.owner, held.epoch.reader):
                return held
            return None
        return next(
            (
                h
                for h in self.state.book.epochs()
                if agent in (h.epoch.owner, h.epoch.reader) and h.epoch.scope == scope
            ),
            None,
        )

    def owed(self, owner: str) -> Iterator[Settled]:
        """The ended epochs of ``owner`` whose backlog it has not been handed, in end order."""
        return self.state.owed.owed(owner)

    def withholding(self, owner: str) -> tuple[Settled, ...]:
        """Ended epochs of ``owner`` whose withheld range its inbox cursor has not passed."""
        return self.state.owed.withholding(owner)

    def forget_passed(self, owner: str, cursor: int) -> None:
        """Drop ``owner``'s delivered epochs whose range lies at or below ``cursor``."""
        self.state.owed.forget_passed(owner, cursor)

    def read_upto(self, agent: str, seq: int) -> None:
        """``agent``'s inbox has sorted every message up to ``seq`` (diverted or shown).

        A read can see a commit before the store reports it in ``latest_seq``; an epoch's
        range must start and end at or above what the owner's inbox already sorted, so that
        no message is both shown and in a backlog, or withheld and in none.
        """
        if seq > self._read_upto.get(agent, 0):
            self._read_upto[agent] = seq

    def sorted_upto(self, agent: str) -> int:
        """The highest seq ``agent``'s inbox has sorted so far in this process (0 if none)."""
        return self._read_upto.get(agent, 0)

    def _position(self, owner: str) -> int:
        """Where an epoch of ``owner`` starting or ending now draws its line."""
        return max(self.store.latest_seq, self._read_upto.get(owner, 0))

    # -- deciding ----------------------------------------------------------------------------

    async def start(
        self,
        owner: str,
        scope: TuneOutScope,
        terms: TuneOutTerms,
        *,
        source: Source = Source.AGENT_TOOL,
    ) -> StartedTuneOut:
        """Start an epoch for ``owner``; it diverts traffic committed from now on.

        Raises:
            Refusal: Another agent's tune-out holds the channel, the owner's tune-outs would
                overlap, or the decision could not be recorded.
        """
        async with self._deciding(_refs(scope)):
            book = self.state.book
            overlap = overlap_refusal(
                owner, scope, book.epochs(), book.all_except_of(owner), self._shown
            )
            if overlap is not None:
                raise overlap
            now, position = self.clock(), self._position(owner)
            answer = book.start(
                self._new_epoch_id(),
                owner,
                scope,
                now,
                lifecycle=self._lifecycle,
                terms=terms,
                source=source,
                started_at_sequence=position,
            )
            if isinstance(answer, Vetoed):
                other = book.on_channel(scope.ref)
                raise another_agent(self._shown(scope.ref), other.epoch.owner if other else None)
            started = answer.event
            batch: list[_Record] = []
            replaced: Settled | None = None
            old = None if started.replaces is None else book.active(started.replaces)
            if old is not None:
                ended = book.cancel(old.epoch.epoch_id, now, by_agent=owner)
                if isinstance(ended, Append):
                    replaced = Settled(old.epoch, EndReason.CANCELLED, now, position, replaced=True)
                    batch += [ended.event, replaced]
            batch.append(started)
            await self._record(batch)
            held = self.state.book.active(started.epoch.epoch_id)
            assert held is not None
        await self._follow(started)
        return StartedTuneOut(held, replaced)

    async def cancel(self, epoch_id: str, by_agent: str, digest: str | None = None) -> Settled:
        """End an epoch on request (its owner's or its reader's); its backlog becomes owed.

        Raises:
            Refusal: The epoch is not in effect, or the end could not be recorded.
        """
        held = self.state.book.active(epoch_id)
        if held is None:
            raise not_in_effect()
        async with self._deciding(_refs(held.epoch.scope)):
            answer = self.state.book.cancel(epoch_id, self.clock(), by_agent=by_agent)
            if isinstance(answer, NoChange):
                raise not_in_effect()
            settled = self._settle(answer.event, digest)
            await self._record([answer.event, settled])
        await self._follow(answer.event)
        return settled

    async def wake(self, epoch_id: str) -> Settled | None:
        """Count one wake of an epoch. Returns the settled epoch when the wake ended it (past
        its wake budget, or past its deadline); None otherwise.

        Raises:
            Refusal: The wake could not be recorded (nothing changed).
        """
        held = self.state.book.active(epoch_id)
        if held is None:
            return None
        async with self._deciding(_refs(held.epoch.scope)):
            answer = self.state.book.wake(epoch_id, self.clock())
            if isinstance(answer, NoChange):
                return None
            event = answer.event
            if isinstance(event, TuneOutWake):
                await self._record([event])
                return None
            settled = self._settle(event)
            await self._record([event, settled])
        await self._follow(event)
        return settled

    async def expire_due(self) -> list[Settled]:
        """End every epoch whose duration ran out; returns what ended.

        Raises:
            Refusal: The ends could not be recorded (nothing changed).
        """
        due = self.state.book.expire(self.clock())
        if not due:
            return []
        refs = [r for end in due for r in _refs(end.event.scope)]
        async with self._deciding(refs):
            ends = [end.event for end in self.state.book.expire(self.clock())]
            batch: list[_Record] = []
            settled: list[Settled] = []
            for end in ends:
                settled.append(self._settle(end))
                batch += [end, settled[-1]]
            if batch:
                await self._record(batch)
        for end in ends:
            await self._follow(end)
        return settled

    async def mark_delivered(self, epoch_ids: Iterable[str]) -> None:
        """Record that the owner's inbox handed over these epochs' backlogs.

        Raises:
            Refusal: It could not be recorded (the backlogs stay owed).
        """
        now = self.clock()
        batch: list[_Record] = [Delivered(e, now) for e in epoch_ids]
        if batch:
            async with self._deciding(()):
                await self._record(batch)

    @asynccontextmanager
    async def _deciding(self, refs: Sequence[ChannelRef]) -> AsyncIterator[None]:
        """One tune-out decision at a time; its channels held in the lifecycle gate."""
        async with self._lock:
            gate = self._gate
            if not refs:
                yield
                return
            await gate.wait_free(refs)
            gate.take(refs)
            try:
                yield
            finally:
                gate.release(refs)

    def _settle(self, ended: TuneOutEnded, digest: str | None = None) -> Settled:
        held = self.state.book.active(ended.epoch_id)
        assert held is not None
        end_seq = self._position(held.epoch.owner)
        return Settled(held.epoch, ended.reason, ended.at, end_seq, digest)

    def _shown(self, ref: ChannelRef) -> str:
        return self.registry.names.quoted_shown(ref)

    async def _record(self, batch: list[_Record]) -> None:
        """Append ``batch`` through the journal (memory changes once it committed)."""
        try:
            await self._journal.record(batch)
        except DecisionNotRecorded as exc:
            log.warning("tuneout_not_recorded", error=str(exc), records=len(batch))
            raise not_recorded(exc) from exc

    async def _follow(self, event: DecisionEvent) -> None:
        """Bring a channel whose record a tune-out changed to its record (best effort)."""
        ref = _channel_of(event)
        if ref is not None:
            try:
                await self._reconciler.reconcile([ref])
            except Exception:
                log.exception("tuneout_reconcile_failed", server_id=ref.server_id)

    # -- expiry timer ------------------------------------------------------------------------

    def poke(self) -> None:
        """Make the timer look at the deadlines again (after the clock moved, in tests)."""
        self.state.changed()

    async def restore_owed(self, tail: Sequence[Mapping[str, Any]]) -> None:
        """After the journal restored the state: apply the owed backlogs logged after the
        snapshot (``tail``, the records the journal read; it replays decision events only);
        forget those already passed."""
        await self.state.restore_owed(tail, self.store.get_cursor)

    async def run_timer(self) -> None:
        """End epochs when their duration runs out, until cancelled."""
        while True:
            wakeup = self.state.wakeup = anyio.Event()
            deadline = self.state.book.next_deadline()
            wait = math.inf if deadline is None else deadline - self.clock()
            if wait <= 0:
                try:
                    await self.expire_due()
                    continue
                except Refusal:
                    wait = _RETRY_SECONDS  # logged by _record; try again shortly
            with anyio.move_on_after(wait):
                await wakeup.wait()


def _refs(scope: TuneOutScope) -> tuple[ChannelRef, ...]:
    """The channel whose record an epoch of ``scope`` changes: one channel, or none."""
    return (scope.ref,) if scope.kind is ScopeKind.CHANNEL else ()


def _channel_of(event: DecisionEvent) -> ChannelRef | None:
    """The channel whose desired record a tune-out event changes, if any."""
    if isinstance(event, TuneOutStarted):
        refs = _refs(event.epoch.scope)
    elif isinstance(event, TuneOutEnded):
        refs = _refs(event.scope)
    else:
        return None
    return refs[0] if refs else None
