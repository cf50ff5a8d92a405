"""Speech and closed channels, carried out: what words wait for, and what they open first.

:class:`SpeechGate` runs the pure plans of :mod:`switchboard.lifecycle.rules.speech` inside a
publish, after the reach and grant checks (so a refused send opens nothing): queued lifecycle
work on the channel settles first, and a channel a default or a machine closed is opened first
(``opened-by-delivery``); an explicit send opens it after.

What it deliberately does not know: names beyond the send-target rule, and the publish itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from switchboard.channels import ChannelEntry, ChannelRef
from switchboard.channels.names.wording import q
from switchboard.connections.owner import Owners, SessionState
from switchboard.events import EventBus, LifecycleStep, LifecycleStepKind
from switchboard.lifecycle.errors import LifecycleError, is_converge_failure, removed_clause
from switchboard.lifecycle.journal import DecisionNotRecorded
from switchboard.lifecycle.parts import LifecycleParts
from switchboard.lifecycle.rules.decisions import DesiredRecord, DesiredState, Source, Vetoed
from switchboard.lifecycle.rules.reconcile import LifecycleErrorKind
from switchboard.lifecycle.rules.speech import (
    SendAnswer,
    SpeechBlock,
    SpeechPlan,
    SpeechStep,
    after_speech_failure,
    answered_elsewhere_text,
    plan_send_open,
    plan_speech,
    send_open_outcome,
)
from switchboard.refusals.outcome import PublishOutcome
from switchboard.refusals.refusal import Refusal, RefusalKind

__all__ = ["SendOpenResult", "SpeechGate"]

#: Plans a publish may go through before it gives up on a channel that keeps changing.
_MAX_ROUNDS: Final = 6


@dataclass(frozen=True, slots=True)
class SendOpenResult:
    """The answer of :meth:`SpeechGate.open_if_closed_for_send`.

    Attributes:
        answer: ``opened``, ``already-open``, ``stays-closed``, ``open-failed``,
            ``unknown-channel`` or ``ambiguous``.
        ref: The channel, when exactly one was named.
        label: Its label.
        opening: For ``open-failed``: the open was changing the desired state.
        selected: For ``open-failed``: why it is still selected for opening
            (``announcement``, ``subscription-policy``, ``unrecorded``), if it is.
        reason: For ``open-failed``: what went wrong.
    """

    answer: str
    ref: ChannelRef | None = None
    label: str | None = None
    opening: bool = False
    selected: str | None = None
    reason: str | None = None


def _lifecycle_failed(ref: ChannelRef, reason: str, kind: str) -> PublishOutcome:
    """Nothing was posted because of the channel's lifecycle (detail ``lifecycle``: why)."""
    return PublishOutcome.refused(
        Refusal(
            RefusalKind.CHANNEL_NOT_OPEN,
            reason,
            server_id=ref.server_id,
            channel_id=ref.channel_id,
            lifecycle=kind,
            sent=False,
        )
    )


class SpeechGate:
    """The lifecycle step of a publish, and the explicit-send open.

    What it knows (channel-registry.md §5.1, §8.3 steps 4-9, §8.6), executing the pure decisions of
    :mod:`switchboard.lifecycle.rules.speech`:

    - :meth:`SpeechGate.clear` runs inside ``Switchboard.publish_to`` after the reach, inbound-only
      and publish-grant checks (so a refused send opens nothing). Queued lifecycle work for the
      channel settles first. A channel only a default or a machine closed is opened first (recorded
      ``opened-by-delivery``); the words go in only if it opened. A channel the agent or a module
      closed, or whose lifecycle the host does not direct, takes the words *as it stands*, with no
      open. A failed wait or open still lets the words through when the channel became one speech
      leaves as it stands meanwhile (say, the agent closed it), unless the failure was a
      ``converge`` failure; a channel whose last open was answered for another channel takes no
      words as it stands. A speech-open that failed puts back the default it displaced.
    - :meth:`SpeechGate.open_if_closed_for_send`: after an explicit send tool delivered into a
      channel, open it if speech would (recorded ``opened-by-reply``), answering ``opened``,
      ``already-open``, ``stays-closed`` or ``open-failed`` (or ``unknown-channel``/``ambiguous``
      for a name that picks no single channel).

    One deliberate difference from the reference: after waiting for queued work that *succeeded*
    (for instance a reconcile close of a default-closed channel), speech plans again rather than
    refusing, so it opens the channel as it would have without the queued work.

    Args:
        parts: The lifecycle parts the gate works over.
        owners: The owner of each connector (rechecked after a wait).
        events: Where an open that speech or a reply caused is told.
    """

    __slots__ = ("_events", "_owners", "_parts")

    def __init__(
        self,
        parts: LifecycleParts,
        *,
        owners: Owners,
        events: EventBus,
    ) -> None:
        self._parts = parts
        self._owners = owners
        self._events = events

    def clear_now(self, entry: ChannelEntry) -> bool:
        """Whether words bound for ``entry``'s channel may go at once, with nothing to wait for.

        The common cases, decided as :func:`plan_speech` decides them (the caller has checked
        that the server is up and the channel takes words): an open channel whose record does
        not want it closed takes the words now, and so does any channel of a server whose
        lifecycle the host does not direct, unless its last open was answered for another
        channel. Synchronous, so a publish that needs no lifecycle work awaits nothing for it.
        False means :meth:`clear` has work to do or to wait for.
        """
        parts = self._parts
        ref = entry.ref
        if parts.queue.pending(ref):
            return False
        transport = parts.marks.get(entry)
        if transport.open:
            record = parts.book.record(ref)
            if record is None or record.state is not DesiredState.CLOSED:
                return True
        return not transport.answered_elsewhere and not parts.connectors.directs(ref.server_id)

    async def clear(
        self, entry: ChannelEntry, *, open_source: Source = Source.OPENED_BY_DELIVERY
    ) -> ChannelEntry | PublishOutcome:
        """Make way for words bound for ``entry``'s channel.

        Returns:
            The registration to publish into, or the failed outcome saying why nothing is.
        """
        if self.clear_now(entry):
            return entry
        parts = self._parts
        ref = entry.ref
        waited = False
        for _ in range(_MAX_ROUNDS):
            current = parts.registry.get(ref)
            if current is None:
                return _lifecycle_failed(ref, removed_clause(ref), "removed")
            facts = parts.connectors.facts(current)
            plan = plan_speech(parts.book.record(ref), facts, open_source=open_source)
            if plan.step is SpeechStep.WAIT:
                waited = True
                await parts.queue.settled(ref)
                failure = parts.reconciler.failures.get(ref)
                if failure is not None:
                    settled = self._after_failure(ref, failure)
                    if settled is not None:
                        return self._recheck(settled) if waited else settled
                continue
            if plan.step is SpeechStep.OPEN_FIRST:
                waited = True
                failed = await self._open_first(ref, plan)
                if failed is not None:
                    return self._recheck(failed)
                continue
            done = self._final(ref, current, plan)
            return self._recheck(done) if waited else done
        return _lifecycle_failed(
            ref,
            f"channel {q(ref.channel_id)} on server {q(ref.server_id)} kept changing while "
            "the words waited, so they were not sent",
            "prevented",
        )

    async def _open_first(
        self, ref: ChannelRef, plan: SpeechPlan
    ) -> ChannelEntry | PublishOutcome | None:
        """Open before speaking: None to plan again, else the entry or the failed outcome."""
        parts = self._parts
        written: DesiredRecord | None = None
        displaced: DesiredRecord | None = None
        if plan.open_source is not None:
            try:
                decision = await parts.decider.decide(ref, DesiredState.OPEN, plan.open_source)
            except DecisionNotRecorded as exc:
                reason = f"the open it needs first could not be recorded ({exc})"
                return _lifecycle_failed(ref, reason, "not-recorded")
            if isinstance(decision.answer, Vetoed):
                return None  # a tune-out or decision came first: plan against it
            if decision.made:
                written, displaced = decision.after, decision.before
        try:
            result = await parts.reconciler.run(ref)
        except LifecycleError as exc:
            await parts.decider.put_back(ref, written, displaced)
            settled = self._after_failure(ref, exc, "open-failed")
            if settled is not None:
                return settled
            return None  # it is open after all: plan again
        if result.open and written is not None:
            self._opened(ref, plan.open_source)
        if not result.directed:
            await parts.decider.put_back(ref, written, displaced)
        return None

    def _after_failure(
        self, ref: ChannelRef, error: LifecycleError, prevented: str = "prevented"
    ) -> ChannelEntry | PublishOutcome | None:
        """After a failed wait or open: the words' fate, or None when the channel is open."""
        parts = self._parts
        current = parts.registry.get(ref)
        if current is None:
            return _lifecycle_failed(ref, removed_clause(ref), "removed")
        record, facts = parts.book.record(ref), parts.connectors.facts(current)
        if facts.transport_open and not (
            record is not None and record.state is DesiredState.CLOSED and facts.directs_lifecycle
        ):
            return None
        plan = after_speech_failure(record, facts, converge_failure=is_converge_failure(error))
        if plan.step is SpeechStep.REFUSE and plan.block is SpeechBlock.PREVENTED:
            if error.kind is LifecycleErrorKind.CONVERGE:
                return _lifecycle_failed(ref, f"its lifecycle failed: {error.reason}", "converge")
            return _lifecycle_failed(ref, f"it could not be opened: {error.reason}", prevented)
        return self._final(ref, current, plan)

    def _final(
        self, ref: ChannelRef, entry: ChannelEntry, plan: SpeechPlan
    ) -> ChannelEntry | PublishOutcome:
        if plan.step in (SpeechStep.SEND, SpeechStep.SEND_AS_IT_STANDS):
            return entry
        if plan.block is SpeechBlock.ANSWERED_ELSEWHERE:
            return _lifecycle_failed(
                ref, answered_elsewhere_text(ref.server_id), "answered-elsewhere"
            )
        if plan.block is SpeechBlock.INBOUND_ONLY:
            return PublishOutcome.refused(
                Refusal(
                    RefusalKind.INBOUND_ONLY,
                    f"channel {q(ref.channel_id)} on server {q(ref.server_id)} is inbound-only",
                    server_id=ref.server_id,
                    channel_id=ref.channel_id,
                )
            )
        return _lifecycle_failed(ref, removed_clause(ref), "removed")

    def _recheck(self, done: ChannelEntry | PublishOutcome) -> ChannelEntry | PublishOutcome:
        """After a wait: the server must still be up and grant publishing (§8.3 step 9)."""
        if isinstance(done, PublishOutcome):
            return done
        sid = done.ref.server_id
        session = self._owners.get(sid)
        if session is None or session.state is not SessionState.READY:
            return PublishOutcome.refused(
                Refusal(
                    RefusalKind.SERVER_GONE,
                    f"server {q(sid)} went away while the words waited; nothing was sent",
                    server_id=sid,
                    channel_id=done.ref.channel_id,
                )
            )
        if not session.grant.allows("channels.publish"):
            return PublishOutcome.refused(
                Refusal(
                    RefusalKind.NOT_GRANTED,
                    f"server {q(sid)} stopped granting channels.publish while the words "
                    "waited; nothing was sent",
                    server_id=sid,
                    channel_id=done.ref.channel_id,
                )
            )
        return done

    # -- explicit send tools (§8.6) ----------------------------------------------------------

    async def open_if_closed_for_send(
        self, raw: str, *, server_id: str | None = None
    ) -> SendOpenResult:
        """After an explicit send into ``raw``: open the channel if speech would."""
        parts = self._parts
        targets = parts.registry.names.send_targets(raw, server_id=server_id or None)
        if not targets:
            return SendOpenResult("unknown-channel")
        if len(targets) > 1:
            return SendOpenResult("ambiguous")
        entry = targets[0]
        ref, label = entry.ref, entry.descriptor.label
        plan = plan_send_open(parts.book.record(ref), parts.connectors.facts(entry))
        if plan.answer is not None:
            return SendOpenResult(plan.answer.value, ref, label)
        written: DesiredRecord | None = None
        displaced: DesiredRecord | None = None
        if plan.opening:
            try:
                decision = await parts.decider.decide(
                    ref, DesiredState.OPEN, Source.OPENED_BY_REPLY
                )
            except DecisionNotRecorded as exc:
                return SendOpenResult("open-failed", ref, label, reason=f"not recorded: {exc}")
            if decision.made:
                written, displaced = decision.after, decision.before
        error: LifecycleError | None = None
        opened = False
        overtaken = False
        try:
            result = await parts.reconciler.run(ref)
            opened = result.open and result.directed
            overtaken = result.overtaken
        except LifecycleError as exc:
            error = exc
        selected = None
        if not opened:
            selected = await parts.decider.put_back(ref, written, displaced)
        elif written is not None:
            self._opened(ref, Source.OPENED_BY_REPLY)
        now = parts.registry.get(ref)
        if now is None:
            return SendOpenResult("open-failed", ref, label, reason=removed_clause(ref))
        kind = error.kind if error is not None else None
        if kind is None and overtaken and not opened:
            kind = LifecycleErrorKind.OVERTAKEN
        outcome = send_open_outcome(
            parts.book.record(ref),
            parts.connectors.facts(now),
            opening=plan.opening,
            opened=opened,
            error=kind,
            converge_failure=is_converge_failure(error),
            selected=selected,
        )
        opening = outcome.opening
        if outcome.answer is SendAnswer.OPENED:
            opening = plan.opening
        return SendOpenResult(
            outcome.answer.value,
            ref,
            label,
            opening=opening,
            selected=None if outcome.selected is None else outcome.selected.value,
            reason=None if error is None else error.reason,
        )

    def _opened(self, ref: ChannelRef, source: Source | None) -> None:
        """Speech or a reply opened a closed channel (``opened-by-delivery``/``-by-reply``)."""
        detail = {"source": None if source is None else source.value}
        self._events.emit(
            LifecycleStep(ref.server_id, LifecycleStepKind.OPENED_BY_SEND, ref.channel_id, detail)
        )
