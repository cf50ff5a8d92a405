"""Admission: the initial desired record of newly registered channels, then reconciliation.

What this module knows (channel-registry.md §5.5, §5.6, §11.1-§11.2): :class:`Admission`,
whose :meth:`~Admission.admit` runs after the ``channels/register`` (or ``changed.added``)
answer is on the wire. Every channel of the batch first gets its initial record
(:meth:`~switchboard.lifecycle.rules.book.LifecycleBook.ensure_initial`: ``initiallyOpen`` or the
connector's subscription policy (:func:`~switchboard.lifecycle.parts.subscription_policy`)
lift a ``default-closed`` record, a real decision is never overridden), recorded as one batch;
fresh policy opens are announced once (a ``LifecycleStep`` ``auto-opened``); then each channel
is reconciled on its own queue, and a ``LifecycleStep`` ``reconciled`` reports the end. A
connector whose grant lacks ``channels.lifecycle`` is not admitted at all (its channels get no
record: the host never directs a lifecycle it was not granted), and an ``auto`` or allow-list
policy does nothing for it.

What it deliberately does not know: the wire (see :mod:`.reconcile`), tools and speech.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import anyio
import structlog
from anyio.lowlevel import checkpoint

from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.connections.owner import ANSWER_WAIT
from switchboard.events import EventBus, LifecycleStep, LifecycleStepKind
from switchboard.lifecycle.journal import DecisionJournal, DecisionNotRecorded
from switchboard.lifecycle.parts import Connectors
from switchboard.lifecycle.queue import DecisionGate
from switchboard.lifecycle.reconcile import Reconciler
from switchboard.lifecycle.rules.book import LifecycleBook
from switchboard.lifecycle.rules.decisions import Append
from switchboard.lifecycle.rules.events import DesiredStateSet
from switchboard.lifecycle.rules.speech import Reach

__all__ = ["Admission"]

#: Channels given their initial record between two turns of the event loop. Admitting 100,000
#: channels takes seconds; in slices the registration's answer, other connectors' traffic and
#: the agents keep moving meanwhile (the answer to a large ``channels/register``
#: waited behind the whole admission).
ADMIT_SLICE = 128


log = structlog.get_logger(__name__)


class Admission:
    """Admits newly registered channels (see the module docstring).

    Args:
        registry: The channel registry (the batch's registrations).
        book: The lifecycle book (its ``ensure_initial`` proposes the initial records).
        journal: Records the batch before memory changes.
        gate: Holds the batch's channels while their records are decided.
        connectors: Reach, direction and subscription policy of the server.
        reconciler: Runs each admitted channel to its record.
        events: Where the admission's lifecycle steps are told.
        clock: The host clock.
    """

    __slots__ = (
        "_book",
        "_clock",
        "_connectors",
        "_events",
        "_gate",
        "_journal",
        "_reconciler",
        "_registry",
    )

    def __init__(
        self,
        *,
        registry: ChannelRegistry,
        book: LifecycleBook,
        journal: DecisionJournal,
        gate: DecisionGate,
        connectors: Connectors,
        reconciler: Reconciler,
        events: EventBus,
        clock: Callable[[], float],
    ) -> None:
        self._registry = registry
        self._book = book
        self._journal = journal
        self._gate = gate
        self._connectors = connectors
        self._reconciler = reconciler
        self._events = events
        self._clock = clock

    async def admit(self, server_id: str, channel_ids: Iterable[str]) -> None:
        """Give newly registered channels their initial record, then reconcile them.

        Starts once the host's answer to the registration has left (at most
        :data:`ANSWER_WAIT` later): the answer to 100,000 channels is about 4 MB, written
        while the connector reads it, and the first steps of an admission (the batch's ids
        and the gate, a few C-level passes over 100,000 ids) would hold up its last
        megabytes for tens of milliseconds.
        """
        connectors = self._connectors
        with anyio.move_on_after(ANSWER_WAIT):
            await connectors.output_written(server_id)
        distinct = dict.fromkeys(channel_ids)
        if not distinct:
            return
        if not connectors.directs(server_id):
            if connectors.reach(server_id) is Reach.UP:
                self._step(
                    server_id,
                    LifecycleStepKind.RECONCILE_SKIPPED,
                    reason="channels.lifecycle not granted",
                )
            return
        policy = connectors.policy_for(server_id)
        events: list[DesiredStateSet] = []
        announced: list[dict[str, Any]] = []
        # Each channel's ref is its registration's own (none is built for a channel still
        # registered); the gate is taken by channel id. Nothing proportional to the batch runs
        # before the first slice but these C-level passes (the answer to a large
        # channels/register is still being written while this starts).
        refs: list[ChannelRef] = []
        gate = self._gate
        await gate.wait_free_channels(server_id, distinct)
        gate.take_channels(server_id, distinct)
        try:
            now = self._clock()
            ensure = self._book.ensure_initial
            registry = self._registry
            ids = list(distinct)
            keep = refs.append
            for start in range(0, len(ids), ADMIT_SLICE):
                if start:
                    await checkpoint()
                channels = registry.server_channels(server_id)  # afresh after each await
                for channel_id in ids[start : start + ADMIT_SLICE]:
                    entry = channels.get(channel_id)
                    if entry is None:
                        keep(ChannelRef(server_id, channel_id))
                        continue
                    ref = entry.ref
                    keep(ref)
                    descriptor = entry.descriptor
                    admission = ensure(
                        ref,
                        now,
                        policy=policy,
                        initially_open=descriptor.initially_open,
                        raw_id=entry.raw_id,
                    )
                    if isinstance(admission.decision, Append):
                        events.append(admission.decision.event)
                    if admission.announce:
                        announced.append({"channel_id": ref.channel_id, "label": descriptor.label})
            if events:
                await self._journal.record(events)
        except DecisionNotRecorded as exc:
            log.error("admission_not_recorded", server_id=server_id, error=str(exc))
            announced = []
        finally:
            gate.release_channels(server_id, distinct)
        if announced:
            self._step(
                server_id,
                LifecycleStepKind.AUTO_OPENED,
                source="subscription-policy",
                channels=announced,
            )
        runs = await self._reconciler.reconcile(refs)
        self._step(server_id, LifecycleStepKind.RECONCILED, channels=len(refs), runs=runs)

    def _step(self, server_id: str, kind: LifecycleStepKind, **detail: Any) -> None:
        self._events.emit(LifecycleStep(server_id, kind, None, detail))
