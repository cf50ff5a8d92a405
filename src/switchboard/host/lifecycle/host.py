"""The host's desired lifecycle state: decided, durably recorded, replayed and reconciled.

What this module knows: :class:`LifecycleHost`, reached as ``board.lifecycle``. It owns the
:class:`~switchboard.channels.LifecycleBook` and the one path every decision takes:

1. the book *proposes* (the overwrite rules of channel-registry.md §5.2 live there);
2. the :class:`~switchboard.host.lifecycle.journal.DecisionJournal` appends the event to the
   decision log, and only once it committed applies it to memory. A failed append raises
   :class:`~switchboard.host.lifecycle.journal.DecisionNotRecorded`: the decision was not made,
   and the caller tells the agent so;
3. reconciliation (:mod:`switchboard.host.lifecycle.reconcile`) drives the connector toward the
record.

A channel's decision is proposed only once the previous decision on it is applied
(:class:`~switchboard.host.lifecycle.queue.DecisionGate`). Start-up replays the journal
(:meth:`LifecycleHost.restore`: snapshot, then the events after it).

It follows host events (:meth:`LifecycleHost.observe`, which the board subscribes to its
:class:`~switchboard.host.events.EventBus`): a channel admitted by ``channels/register`` or
``channels/changed`` (added) gets its initial record from the connector's subscription policy
(:mod:`.admission`; policy and ``initiallyOpen`` lift a ``default-closed`` record and
never override a decision), then is reconciled, each channel on its own queue; accepted traffic
marks a channel's transport open; a connector that exits takes its transport marks with it. A
connector whose grant lacks ``channels.lifecycle`` is never admitted or reconciled: it keeps its
channels as it chooses.

The verbs are :mod:`.verbs` (``open``, ``close``) and :mod:`.decline`
(``decline``), for an agent or a module (:class:`~.lifecycle_answers.Origin`); the speech rules
are :mod:`.speech_gate` (``board.lifecycle.speech``). This class exposes them.

Joining the journal (for the tune-out book): ``board.lifecycle.journal.join(name, part)``
before ``board.restore()``; see the contract in :mod:`switchboard.host.lifecycle.journal`. A
tune-out host also sets :attr:`LifecycleHost.covered_by_tune_out`, which the explicit-open
guard of machine closes reads.

What it deliberately does not know: names and tool results, tune-out epochs beyond the records
they make, and the wire beyond what :mod:`~switchboard.host.lifecycle.reconcile` sends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from switchboard.channels import ChannelEntry, ChannelRef, ChannelRegistry, LifecycleBook
from switchboard.channels.lifecycle.book import SelectedForOpening, SubscriptionPolicy
from switchboard.channels.lifecycle.decisions import (
    MACHINE_CLOSE_SOURCES,
    Append,
    DesiredRecord,
    DesiredState,
    NoChange,
    Source,
    Vetoed,
)
from switchboard.channels.lifecycle.events import DecisionEvent, DesiredStateSet
from switchboard.channels.lifecycle.speech import ChannelFacts, Reach
from switchboard.config import Config
from switchboard.host.connection.session import ConnectorSession, SessionState
from switchboard.host.connection.transport_marks import TransportMarks
from switchboard.host.events import (
    ChannelsChanged,
    ChannelsRegistered,
    ConnectorExited,
    ConnectorReady,
    EventBus,
    HostEvent,
    LifecycleStep,
    LifecycleStepKind,
    MessagesAccepted,
)
from switchboard.host.lifecycle.admission import admit_channels, subscription_policy
from switchboard.host.lifecycle.answers import LifecycleAnswer, Origin
from switchboard.host.lifecycle.background import BackgroundWork
from switchboard.host.lifecycle.book_state import book_from_snapshot, book_snapshot
from switchboard.host.lifecycle.decline import Decliner
from switchboard.host.lifecycle.journal import (
    DecisionJournal,
    DecisionNotRecorded,
    DecisionSink,
    Restored,
)
from switchboard.host.lifecycle.queue import DecisionGate, LifecycleQueue
from switchboard.host.lifecycle.reconcile import Reconciler
from switchboard.host.lifecycle.speech_gate import SpeechGate
from switchboard.host.lifecycle.verbs import LifecycleVerbs

__all__ = ["Decision", "LifecycleBoard", "LifecycleHost"]

log = structlog.get_logger(__name__)


class LifecycleBoard(Protocol):
    """What the lifecycle host reads of the board (``Switchboard`` provides it)."""

    config: Config
    registry: ChannelRegistry
    sessions: dict[str, ConnectorSession]


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


class LifecycleHost:
    """Desired state, its decisions, replay and reconciliation (see the module docstring)."""

    def __init__(
        self,
        board: LifecycleBoard,
        *,
        events: EventBus,
        clock: Callable[[], float] = time.time,
        sink: DecisionSink | None = None,
    ) -> None:
        self._board = board
        self._events = events
        self._clock = clock
        self.registry = board.registry
        self.sessions = board.sessions
        self.book = LifecycleBook()
        self.journal = DecisionJournal(sink, snapshot_every=board.config.store.snapshot_every)
        self.journal.join("lifecycle", self)
        self.queue = LifecycleQueue()
        self.gate = DecisionGate()
        self.marks = TransportMarks(self.registry)
        self.reconciler = Reconciler(
            registry=self.registry,
            sessions=self.sessions,
            book=lambda: self.book,
            marks=self.marks,
            queue=self.queue,
            events=events,
        )
        self.verbs = LifecycleVerbs(self)
        self.decliner = Decliner(self)
        self.speech = SpeechGate(self)
        #: Whether an active tune-out (of any scope) covers a channel; a tune-out host sets it.
        self.covered_by_tune_out: Callable[[ChannelRef], bool] = lambda ref: False
        #: Called with a channel whose close was just recorded (the board stops typing there).
        self.on_close: Callable[[ChannelRef], object] = lambda ref: None
        self.background = BackgroundWork("lifecycle")

    def now(self) -> float:
        """The host clock."""
        return self._clock()

    # -- journal part ------------------------------------------------------------------------

    def apply(self, event: DecisionEvent) -> object:
        """Apply one committed event to the book (called by the journal only)."""
        return self.book.apply(event)

    def take_snapshot(self) -> object:
        """The book as a JSON value (see :mod:`.book_state`)."""
        return book_snapshot(self.book)

    def restore_snapshot(self, state: object | None) -> None:
        """Rebuild the book from :meth:`take_snapshot`'s value (None: start empty)."""
        self.book = book_from_snapshot(state)

    async def restore(self) -> Restored:
        """Rebuild the book (and every joined part) from the decision log."""
        return await self.journal.restore()

    # -- reading -----------------------------------------------------------------------------

    def record(self, ref: ChannelRef) -> DesiredRecord | None:
        """The channel's desired record."""
        return self.book.record(ref)

    def desired_state(self, ref: ChannelRef) -> str:
        """``open``, ``closed``, ``tuned-out``, or ``unknown`` without a record."""
        record = self.book.record(ref)
        return "unknown" if record is None else record.state.value

    def reach(self, server_id: str) -> Reach:
        """How reachable a connector is now."""
        session = self.sessions.get(server_id)
        if session is None:
            return Reach.GONE
        if session.state is SessionState.READY:
            return Reach.UP
        if session.state is SessionState.CONNECTING:
            return Reach.CONNECTING
        if session.state is SessionState.CLOSED and session.config.restart:
            return Reach.RECONNECTING
        return Reach.GONE

    def directs(self, server_id: str) -> bool:
        """Whether the host may open and close the server's channels now."""
        return self.reconciler.lifecycle_session(server_id) is not None

    def facts(self, entry: ChannelEntry) -> ChannelFacts:
        """What the host knows about one registration, for the speech rules."""
        ref = entry.ref
        transport = self.marks.get(entry)
        return ChannelFacts(
            registered=True,
            transport_open=transport.open,
            directs_lifecycle=self.directs(ref.server_id),
            reach=self.reach(ref.server_id),
            inbound_only=entry.descriptor.direction == "inbound",
            answered_elsewhere=transport.answered_elsewhere,
            lifecycle_pending=self.queue.pending(ref),
        )

    def policy_for(self, server_id: str) -> SubscriptionPolicy:
        """The server's subscription policy (manual when nothing configures one)."""
        session = self.sessions.get(server_id)
        if session is not None:
            return subscription_policy(session.config)
        for config in self._board.config.connectors:
            if config.id == server_id:
                return subscription_policy(config)
        return SubscriptionPolicy.manual()

    # -- deciding ----------------------------------------------------------------------------

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
        gate = self.gate
        await gate.wait_free((ref,))
        gate.take((ref,))
        try:
            before = self.book.record(ref)
            covered = source in MACHINE_CLOSE_SOURCES and self.covered_by_tune_out(ref)
            answer = self.book.propose(
                ref,
                state,
                source,
                self._clock(),
                by_agent=by_agent,
                override_explicit_open=override_explicit_open,
                covered_by_tune_out=covered,
            )
            if isinstance(answer, Append):
                await self.journal.record((answer.event,))
            return Decision(answer, before, self.book.record(ref))
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
        entry = self.registry.get(ref)
        gate = self.gate
        await gate.wait_free((ref,))
        gate.take((ref,))
        try:
            answer = self.book.put_back(
                ref,
                written,
                displaced,
                self._clock(),
                policy=self.policy_for(ref.server_id),
                initially_open=None if entry is None else entry.descriptor.initially_open,
                raw_id=None if entry is None else entry.raw_id,
            )
            if isinstance(answer.decision, Append):
                try:
                    await self.journal.record((answer.decision.event,))
                except DecisionNotRecorded as exc:
                    log.warning("put_back_not_recorded", server_id=ref.server_id, error=str(exc))
                    return SelectedForOpening.UNRECORDED
            return answer.selected
        finally:
            gate.release((ref,))

    async def note(self, event: DecisionEvent) -> None:
        """Record an audit event that changes no record (``invitation-declined``)."""
        await self.journal.record((event,))

    # -- the verbs (channel_open, channel_close, channel_decline) ------------------------------

    async def open(
        self,
        ref: ChannelRef,
        *,
        origin: Origin = Origin.AGENT,
        by_agent: str | None = None,
        backscroll: int = 0,
        before_message_id: str | None = None,
    ) -> LifecycleAnswer:
        """Open ``ref`` for an agent or a module (see :mod:`.verbs`)."""
        return await self.verbs.open(
            ref,
            origin=origin,
            by_agent=by_agent,
            backscroll=backscroll,
            before_message_id=before_message_id,
        )

    async def close(
        self,
        ref: ChannelRef,
        *,
        origin: Origin = Origin.AGENT,
        source: str | None = None,
        override_explicit_open: bool = False,
        by_agent: str | None = None,
    ) -> LifecycleAnswer:
        """Close ``ref``; a module may pass a machine ``source`` and an idle lease."""
        return await self.verbs.close(
            ref,
            origin=origin,
            source=source,
            override_explicit_open=override_explicit_open,
            by_agent=by_agent,
        )

    async def decline(
        self,
        ref: ChannelRef,
        *,
        message_id: str,
        acknowledge: str | None = None,
        by_agent: str | None = None,
    ) -> LifecycleAnswer:
        """Stay out of ``ref`` after being addressed there (see :mod:`.decline`)."""
        return await self.decliner.decline(
            ref, message_id=message_id, acknowledge=acknowledge, by_agent=by_agent
        )

    # -- admission and reconciliation --------------------------------------------------------

    async def admit(self, server_id: str, channel_ids: Iterable[str]) -> None:
        """Give newly registered channels their initial record, then reconcile them."""
        await admit_channels(self, server_id, channel_ids)

    def observe(self, event: HostEvent) -> None:
        """A host event listener: admit and reconcile new channels, follow traffic and exits."""
        match event:
            case MessagesAccepted(server_id=server_id, messages=messages):
                self.marks.traffic(server_id, {m["channelId"] for m in messages})
            case ChannelsRegistered(server_id=server_id, channel_ids=accepted):
                self.background.spawn(server_id, self.admit, server_id, list(accepted))
            case ChannelsChanged(server_id=server_id, added=added) if added:
                self.background.spawn(server_id, self.admit, server_id, list(added))
            case ConnectorReady(server_id=server_id):
                known = [e.ref.channel_id for e in self.registry.server_entries(server_id)]
                if known:
                    self.background.spawn(server_id, self.admit, server_id, known)
            case ConnectorExited(server_id=server_id):
                self.marks.drop_server(server_id)

    # -- background work ---------------------------------------------------------------------

    async def run(self) -> None:
        """Host background lifecycle work (reconciliation) until cancelled."""
        await self.background.run()

    def serving(self, server_id: str) -> AbstractAsyncContextManager[None]:
        """Host the background work of one connection served outside :meth:`run`."""
        return self.background.serving(server_id)

    def speech_opened(self, ref: ChannelRef, source: Source | None) -> None:
        """Speech or a reply opened a closed channel (``opened-by-delivery``/``-by-reply``)."""
        self.emit(
            ref.server_id,
            LifecycleStepKind.OPENED_BY_SEND,
            channel_id=ref.channel_id,
            source=None if source is None else source.value,
        )

    def emit(
        self,
        server_id: str,
        kind: LifecycleStepKind,
        *,
        channel_id: str | None = None,
        **detail: Any,
    ) -> None:
        """Tell the host's listeners about a lifecycle step (:class:`LifecycleStep`)."""
        self._events.emit(LifecycleStep(server_id, kind, channel_id, detail))
