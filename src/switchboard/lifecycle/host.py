"""The host's desired lifecycle state: decided, durably recorded, replayed and reconciled.

:class:`LifecycleHost` (``board.lifecycle``) builds the lifecycle's parts over what it shares
with the tune-outs (the book, the decision journal, the gate), answers the verbs (open, close,
decline), admits newly registered channels under each connector's subscription policy, lets
speech into closed channels wait or open them first, restores the book from the log before any
connector starts, and follows host events to keep the transport marks honest.

What it deliberately does not know: names and tool results, tune-out epochs beyond whether one
covers a channel, and the rest of the host.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import ClassVar

from switchboard.channels import ChannelEntry, ChannelRef, ChannelRegistry
from switchboard.config import ConnectorConfig
from switchboard.connections.owner import Owners
from switchboard.events import (
    ChannelsChanged,
    ChannelsRegistered,
    ConnectorExited,
    ConnectorReady,
    EventBus,
    HostEvent,
    MessagesAccepted,
)
from switchboard.lifecycle.admission import Admission
from switchboard.lifecycle.answers import LifecycleAnswer, Origin
from switchboard.lifecycle.background import BackgroundWork
from switchboard.lifecycle.decider import Decider, Decision, TuneOutCover
from switchboard.lifecycle.decline import Decliner
from switchboard.lifecycle.journal import DecisionJournal, Restored
from switchboard.lifecycle.parts import Connectors, LifecycleParts
from switchboard.lifecycle.queue import DecisionGate, LifecycleQueue
from switchboard.lifecycle.reconcile import Reconciler
from switchboard.lifecycle.rules.book import LifecycleBook
from switchboard.lifecycle.rules.decisions import DesiredRecord, DesiredState, Source
from switchboard.lifecycle.rules.speech import ChannelFacts
from switchboard.lifecycle.speech import SpeechGate
from switchboard.lifecycle.transport_marks import TransportMarks
from switchboard.lifecycle.verbs import LifecycleVerbs

__all__ = ["LifecycleHost"]


class LifecycleHost:
    """Desired state, its decisions, replay and reconciliation.

    What it knows: :class:`LifecycleHost`, reached as ``board.lifecycle``. It is handed the
    lower-level objects it shares with the tune-outs (the
    :class:`~switchboard.lifecycle.rules.book.LifecycleBook`, the
    :class:`~switchboard.lifecycle.journal.DecisionJournal` that keeps it, the
    :class:`~switchboard.lifecycle.queue.DecisionGate`, and whether a tune-out covers a channel),
    builds its own parts in dependency order, and hands each only what it uses:

    1. the :class:`~switchboard.lifecycle.queue.LifecycleQueue`, the transport marks and the
       :class:`~switchboard.lifecycle.reconcile.Reconciler`, which drives a connector toward the
       record;
    2. :class:`~switchboard.lifecycle.parts.Connectors` (reach, direction, policy, facts);
    3. the :class:`~switchboard.lifecycle.decider.Decider`, the one path every decision takes (the
       book proposes, the journal appends, then applies);
    4. the verbs (:mod:`.verbs`: ``open``, ``close``; :mod:`.decline`: ``decline``), for an agent or
       a module (:class:`~.answers.Origin`), and the speech rules (:mod:`.speech_gate`,
       ``board.lifecycle.speech``), over one :class:`~switchboard.lifecycle.parts.LifecycleParts`;
    5. :class:`~switchboard.lifecycle.admission.Admission`.

    Start-up replays the journal (:meth:`LifecycleHost.restore`: snapshot, then the events after it)
    into the same book every part was handed.

    It follows host events (:meth:`LifecycleHost.observe`, which the board subscribes to its
    :class:`~switchboard.events.EventBus`): a channel admitted by ``channels/register`` or
    ``channels/changed`` (added) gets its initial record from the connector's subscription policy
    (:mod:`.admission`; policy and ``initiallyOpen`` lift a ``default-closed`` record and never
    override a decision), then is reconciled, each channel on its own queue; accepted traffic marks
    a channel's transport open; a connector that exits takes its transport marks with it. A
    connector whose grant lacks ``channels.lifecycle`` is never admitted or reconciled: it keeps its
    channels as it chooses.

    Args:
        registry: The channel registry.
        owners: The owner of each connector (the board's map, kept up to date).
        configs: Every configured connector.
        book: The lifecycle book (a part of ``journal``).
        journal: The decision journal the book is kept from.
        gate: One decision per channel at a time (shared with the tune-outs).
        tune_outs: Whether a tune-out covers a channel (the explicit-open guard reads it).
        on_close: Told each channel whose close was just recorded (the board stops typing).
        events: Where lifecycle steps are told.
        clock: The host clock.
    """

    def __init__(
        self,
        *,
        registry: ChannelRegistry,
        owners: Owners,
        configs: Sequence[ConnectorConfig],
        book: LifecycleBook,
        journal: DecisionJournal,
        gate: DecisionGate,
        tune_outs: TuneOutCover,
        on_close: Callable[[ChannelRef], object],
        events: EventBus,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._registry = registry
        self.book = book
        self.journal = journal
        self.gate = gate
        self._tune_outs = tune_outs
        self.queue = LifecycleQueue()
        self.marks = TransportMarks(registry)
        self.reconciler = Reconciler(
            registry=registry,
            owners=owners,
            book=book,
            marks=self.marks,
            queue=self.queue,
            events=events,
        )
        self.connectors = Connectors(
            owners=owners,
            configs=configs,
            reconciler=self.reconciler,
            marks=self.marks,
            queue=self.queue,
        )
        self.decider = Decider(
            registry=registry,
            book=book,
            journal=journal,
            gate=gate,
            tune_outs=tune_outs,
            connectors=self.connectors,
            clock=clock,
        )
        parts = LifecycleParts(
            registry=registry,
            book=book,
            decider=self.decider,
            connectors=self.connectors,
            marks=self.marks,
            queue=self.queue,
            reconciler=self.reconciler,
        )
        self.verbs = LifecycleVerbs(parts, on_close=on_close)
        self.decliner = Decliner(parts, owners=owners)
        self.speech = SpeechGate(parts, owners=owners, events=events)
        self.admission = Admission(
            registry=registry,
            book=book,
            journal=journal,
            gate=gate,
            connectors=self.connectors,
            reconciler=self.reconciler,
            events=events,
            clock=clock,
        )
        self.background = BackgroundWork("lifecycle")

    async def restore(self) -> Restored:
        """Rebuild the book (and every other part of the journal) from the decision log."""
        return await self.journal.restore()

    # -- reading -----------------------------------------------------------------------------

    def record(self, ref: ChannelRef) -> DesiredRecord | None:
        """The channel's desired record."""
        return self.book.record(ref)

    #: Sources that record a state nobody decided: shown as ``default``, not ``closed``.
    UNDECIDED: ClassVar[frozenset[Source]] = frozenset(
        {Source.DEFAULT_CLOSED, Source.SUBSCRIPTION_GC, Source.HOUSEKEEPING}
    )

    def desired_state(self, ref: ChannelRef) -> str:
        """``open``, ``closed``, ``tuned-out``, or ``unknown`` without a record."""
        record = self.book.record(ref)
        return "unknown" if record is None else record.state.value

    def desired_shown(self, ref: ChannelRef) -> str:
        """What the agent and its operator are shown as the channel's desired state: ``open``,
        ``closed`` or ``tuned-out`` as someone decided it (the agent, a module, the
        connector's ``initiallyOpen`` or subscription policy, speech that opened it), or
        ``default`` when nobody decided (no record, or only the default or a machine's close):
        then the defaults apply (docs/lifecycle.md, "States"). ``closed`` there
        would read as a decision the channel contradicts (docs/lifecycle.md)."""
        record = self.book.record(ref)
        if record is None or record.source in self.UNDECIDED:
            return "default"
        return record.state.value

    def covered_by_tune_out(self, ref: ChannelRef) -> bool:
        """Whether an active tune-out (of any scope) covers ``ref`` (machine closes read it)."""
        return self._tune_outs.covers(ref)

    def directs(self, server_id: str) -> bool:
        """Whether the host may open and close the server's channels now."""
        return self.connectors.directs(server_id)

    def facts(self, entry: ChannelEntry) -> ChannelFacts:
        """What the host knows about one registration, for the speech rules."""
        return self.connectors.facts(entry)

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
        return await self.decider.decide(
            ref, state, source, by_agent=by_agent, override_explicit_open=override_explicit_open
        )

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

    #: The events :meth:`observe` takes (it subscribes to only these).
    OBSERVES: ClassVar[tuple[type, ...]] = (
        MessagesAccepted,
        ChannelsRegistered,
        ChannelsChanged,
        ConnectorReady,
        ConnectorExited,
    )

    def observe(self, event: HostEvent) -> None:
        """A host event listener: admit and reconcile new channels, follow traffic and exits."""
        match event:
            case MessagesAccepted(server_id=server_id):
                self.marks.traffic(server_id, event.channels)
            case ChannelsRegistered(server_id=server_id, channel_ids=accepted):
                self.background.spawn(server_id, self.admission.admit, server_id, list(accepted))
            case ChannelsChanged(server_id=server_id, added=added) if added:
                self.background.spawn(server_id, self.admission.admit, server_id, list(added))
            case ConnectorReady(server_id=server_id):
                known = [e.ref.channel_id for e in self._registry.server_entries(server_id)]
                if known:
                    self.background.spawn(server_id, self.admission.admit, server_id, known)
            case ConnectorExited(server_id=server_id):
                self.marks.drop_server(server_id)

    # -- background work ---------------------------------------------------------------------

    async def run(self) -> None:
        """Host background lifecycle work (reconciliation) until cancelled."""
        await self.background.run()

    def serving(self, server_id: str) -> AbstractAsyncContextManager[None]:
        """Host the background work of one connection served outside :meth:`run`."""
        return self.background.serving(server_id)
