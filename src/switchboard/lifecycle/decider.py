"""The one path a lifecycle decision takes: propose, record durably, then apply.

The book proposes (the overwrite rules live there), the decision journal appends the event to
the durable log, and only once it committed is memory changed; a decision holds its channel in
the decision gate from proposal to apply, so each is proposed against the memory its
predecessors left.

What it deliberately does not know: the wire (reconciliation follows a decision elsewhere),
names and tools.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import structlog

from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.lifecycle.journal import DecisionJournal, DecisionNotRecorded
from switchboard.lifecycle.queue import DecisionGate
from switchboard.lifecycle.rules.book import LifecycleBook, SelectedForOpening, SubscriptionPolicy
from switchboard.lifecycle.rules.decisions import (
    MACHINE_CLOSE_SOURCES,
    Append,
    DesiredRecord,
    DesiredState,
    NoChange,
    Source,
    Vetoed,
)
from switchboard.lifecycle.rules.events import DecisionEvent, DesiredStateSet

__all__ = ["Decider", "Decision", "Policies", "TuneOutCover"]

log = structlog.get_logger(__name__)


class Policies(Protocol):
    """Each server's subscription policy (:class:`~switchboard.lifecycle.parts.Connectors`)."""

    def policy_for(self, server_id: str) -> SubscriptionPolicy: ...


class TuneOutCover(Protocol):
    """Whether an active tune-out (of any scope) covers a channel."""

    def covers(self, ref: ChannelRef) -> bool: ...


@dataclass(frozen=True, slots=True)
class Decision:
    """What became of one proposal.

    Attributes:
        answer: The book's answer (an :class:`Append` was recorded and applied).
        before: The record before.
        after: The record now (for an :class:`Append`, the very object that was written).
    """

    answer: Append[DesiredStateSet] | NoChange | Vetoed
    before: DesiredRecord | None
    after: DesiredRecord | None

    @property
    def made(self) -> bool:
        """Whether a new record was written."""
        return isinstance(self.answer, Append)


class Decider:
    """Proposes, records and applies lifecycle decisions.

    What it knows: :class:`Decider`.

    1. The :class:`~switchboard.lifecycle.rules.book.LifecycleBook` *proposes* (the overwrite rules
       of channel-registry.md §5.2 live there).
    2. The :class:`~switchboard.lifecycle.journal.DecisionJournal` appends the event to the decision
       log, and only once it committed applies it to memory. A failed append raises
       :class:`~switchboard.lifecycle.journal.DecisionNotRecorded`: the decision was not made, and
       the caller tells the agent so.

    A channel's decision is proposed only once the previous decision on it is applied
    (:class:`~switchboard.lifecycle.queue.DecisionGate`). A machine close of a channel an active
    tune-out covers is judged as a close of stated intent: the decider asks a :class:`TuneOutCover`
    (the tune-out state, built before the decider).

    Args:
        registry: The channel registry (a put-back reads the registration's descriptor).
        book: The lifecycle book the journal applies to.
        journal: Records every event before memory changes.
        gate: One decision per channel between its proposal and its apply.
        tune_outs: Whether a tune-out covers a channel (for the explicit-open guard).
        connectors: Each server's subscription policy (for a put-back).
        clock: The host clock.
    """

    __slots__ = ("_book", "_clock", "_connectors", "_gate", "_journal", "_registry", "_tune_outs")

    def __init__(
        self,
        *,
        registry: ChannelRegistry,
        book: LifecycleBook,
        journal: DecisionJournal,
        gate: DecisionGate,
        tune_outs: TuneOutCover,
        connectors: Policies,
        clock: Callable[[], float],
    ) -> None:
        self._registry = registry
        self._book = book
        self._journal = journal
        self._gate = gate
        self._tune_outs = tune_outs
        self._connectors = connectors
        self._clock = clock

    def now(self) -> float:
        """The host clock."""
        return self._clock()

    async def decide(
        self,
        ref: ChannelRef,
        state: DesiredState,
        source: Source,
        *,
        by_agent: str | None = None,
        override_explicit_open: bool = False,
    ) -> Decision:
        """Propose ``state`` by ``source`` for ``ref``; record and apply it if the rules say so.

        Raises:
            DecisionNotRecorded: The log refused the event; nothing changed.
        """
        gate, book = self._gate, self._book
        await gate.wait_free((ref,))
        gate.take((ref,))
        try:
            before = book.record(ref)
            covered = source in MACHINE_CLOSE_SOURCES and self._tune_outs.covers(ref)
            answer = book.propose(
                ref,
                state,
                source,
                self._clock(),
                by_agent=by_agent,
                override_explicit_open=override_explicit_open,
                covered_by_tune_out=covered,
            )
            if isinstance(answer, Append):
                await self._journal.record((answer.event,))
            return Decision(answer, before, book.record(ref))
        finally:
            gate.release((ref,))

    async def put_back(
        self, ref: ChannelRef, written: DesiredRecord | None, displaced: DesiredRecord | None
    ) -> SelectedForOpening | None:
        """Undo a speech- or reply-open that failed (unless a decision came meanwhile).

        Returns:
            Why the channel stays selected for opening, if it does (``unrecorded`` when the
            put-back itself could not be recorded).
        """
        if written is None:
            return None
        entry = self._registry.get(ref)
        gate = self._gate
        await gate.wait_free((ref,))
        gate.take((ref,))
        try:
            answer = self._book.put_back(
                ref,
                written,
                displaced,
                self._clock(),
                policy=self._connectors.policy_for(ref.server_id),
                initially_open=None if entry is None else entry.descriptor.initially_open,
                raw_id=None if entry is None else entry.raw_id,
            )
            if isinstance(answer.decision, Append):
                try:
                    await self._journal.record((answer.decision.event,))
                except DecisionNotRecorded as exc:
                    log.warning("put_back_not_recorded", server_id=ref.server_id, error=str(exc))
                    return SelectedForOpening.UNRECORDED
            return answer.selected
        finally:
            gate.release((ref,))

    async def note(self, event: DecisionEvent) -> None:
        """Record an audit event that changes no record (``invitation-declined``)."""
        await self._journal.record((event,))
