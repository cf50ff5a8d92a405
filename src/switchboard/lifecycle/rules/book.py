"""The desired lifecycle state of every channel, and the rules that change it.

:class:`LifecycleBook` holds the desired record of every channel (O(1) per lookup) and decides
in three steps: :meth:`~LifecycleBook.propose` applies the overwrite rules of
channel-registry.md §5.2-§5.5 and answers what would be recorded, :meth:`~LifecycleBook.apply`
changes memory from a committed event, and admission says which newly registered channels a
subscription policy opens. Pure: no clock, no I/O.

What it deliberately does not know: registrations, transport state and grants.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum

from switchboard.channels.ref import ChannelRef
from switchboard.lifecycle.rules.decisions import (
    AGENT_DECISION_SOURCES,
    CLOSE_SOURCES,
    MACHINE_CLOSE_SOURCES,
    OPEN_SOURCES,
    Append,
    DesiredRecord,
    DesiredState,
    NoChange,
    NoChangeReason,
    ScopeKind,
    Source,
    Vetoed,
    VetoReason,
    is_close_decision,
)
from switchboard.lifecycle.rules.events import (
    DecisionEvent,
    DesiredStateSet,
    TuneOutEnded,
    TuneOutStarted,
)

__all__ = [
    "Admission",
    "LifecycleBook",
    "PutBack",
    "SelectedForOpening",
    "SubscriptionPolicy",
]

_OPEN, _CLOSED, _TUNED_OUT = DesiredState.OPEN, DesiredState.CLOSED, DesiredState.TUNED_OUT


@dataclass(frozen=True, slots=True)
class SubscriptionPolicy:
    """Which of a connector's channels the host wants open whenever they are discovered.

    The policy is ongoing, not a boot-time default: a channel it wants is opened whenever it
    is admitted and nobody decided otherwise.

    Attributes:
        auto: Every channel.
        allow: Channel ids or raw ``address.channelId`` values wanted open.
    """

    auto: bool = False
    allow: frozenset[str] = frozenset()

    @classmethod
    def manual(cls) -> SubscriptionPolicy:
        """Nothing is opened by policy."""
        return cls()

    @classmethod
    def automatic(cls) -> SubscriptionPolicy:
        """Every channel is opened by policy."""
        return cls(auto=True)

    @classmethod
    def allowing(cls, ids: Iterable[str]) -> SubscriptionPolicy:
        """The listed ids (channel ids or raw address ids) are opened by policy."""
        return cls(allow=frozenset(ids))

    def wants(self, channel_id: str, raw_id: str | None = None) -> bool:
        """Whether the policy wants the channel with this id (or raw id) open."""
        if self.auto or channel_id in self.allow:
            return True
        return raw_id is not None and raw_id in self.allow


class SelectedForOpening(StrEnum):
    """Why a channel whose speech- or reply-open failed is still to be opened."""

    ANNOUNCEMENT = "announcement"
    """The connector's latest descriptor says ``initiallyOpen``."""
    POLICY = "subscription-policy"
    """The subscription policy wants it."""
    UNRECORDED = "unrecorded"
    """The put-back could not be recorded (set by the caller when its append fails)."""


@dataclass(frozen=True, slots=True)
class Admission:
    """The initial-state answer for one admitted channel.

    Attributes:
        decision: What to record (if anything).
        announce: True for a fresh open by policy (not by ``initiallyOpen``); the caller
            announces these together, once per batch.
    """

    decision: Append[DesiredStateSet] | NoChange
    announce: bool


@dataclass(frozen=True, slots=True)
class PutBack:
    """The answer of :meth:`LifecycleBook.put_back`.

    Attributes:
        decision: What to record (NoChange when a decision came during the round trip).
        selected: Set when the channel remains selected for opening, with why.
    """

    decision: Append[DesiredStateSet] | NoChange
    selected: SelectedForOpening | None = None


def _check_proposal(state: DesiredState, source: Source) -> None:
    if state is _TUNED_OUT:
        raise ValueError("a tune-out starts through TuneOutBook.start, not a proposal")
    allowed = OPEN_SOURCES if state is _OPEN else CLOSE_SOURCES
    if source not in allowed:
        raise ValueError(f"source {source.value!r} cannot record {state.value!r}")


class LifecycleBook:
    """The desired state of every channel, changed only by applying logged events.

    What it knows (channel-registry.md §5.2-§5.5):

    - :class:`LifecycleBook`, the desired record of every channel keyed by
      :class:`~switchboard.channels.ref.ChannelRef` (O(1) per lookup), and its three verbs:
      :meth:`~LifecycleBook.propose` decides, :meth:`~LifecycleBook.apply` changes memory, and
      :meth:`~LifecycleBook.replay` folds a log back into a book.
    - The overwrite rules, exactly:

      1. writing the state a record already has changes nothing, except that
      2. the agent's open, close or decline writes over an equal-state record some other source made
         ("the agent decided" must be visible), and
      3. the latest deliberate close wins: an agent close, a decline or a module close writes over a
         closed record from any *other* source, including another deliberate close;
      4. a machine close (``subscription-gc``, ``housekeeping``) never replaces a closed record, and
         on a channel without a record it records ``default-closed``;
      5. a machine close of a channel the agent opened or tuned out, or that a tune-out covers, is
         refused as stated intent unless the caller holds an explicit idle lease; 6. a tuned-out
         record changes only through its tune-out's own events.

    - The subscription policy (:class:`SubscriptionPolicy`) and the initial state of an admitted
      channel (:meth:`~LifecycleBook.ensure_initial`): policy and ``initiallyOpen`` lift a
      ``default-closed`` record and never override a real decision.
    - The put-back after a speech- or reply-triggered open failed (:meth:`~LifecycleBook.put_back`).

    The protocol with the store: ``propose`` never changes memory. It answers :class:`Append`
    (append the event, *then* call ``apply``), :class:`NoChange` or :class:`Vetoed`. If the append
    fails, the caller skips ``apply`` and the decision was not made.
    """

    __slots__ = ("_records",)

    def __init__(self) -> None:
        self._records: dict[ChannelRef, DesiredRecord] = {}

    # -- reading -----------------------------------------------------------------------------

    def record(self, ref: ChannelRef) -> DesiredRecord | None:
        """The channel's desired record, or None when nothing was ever recorded."""
        return self._records.get(ref)

    def state(self, ref: ChannelRef) -> DesiredState | None:
        """The channel's desired state, or None without a record."""
        record = self._records.get(ref)
        return None if record is None else record.state

    def items(self) -> Iterator[tuple[ChannelRef, DesiredRecord]]:
        """Every record, in the order channels first got one."""
        return iter(self._records.items())

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, ref: object) -> bool:
        return ref in self._records

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LifecycleBook):
            return NotImplemented
        return self._records == other._records

    def __repr__(self) -> str:
        return f"LifecycleBook({len(self._records)} records)"

    # -- deciding ----------------------------------------------------------------------------

    def propose(
        self,
        ref: ChannelRef,
        state: DesiredState,
        source: Source,
        now: float,
        *,
        by_agent: str | None = None,
        override_explicit_open: bool = False,
        covered_by_tune_out: bool = False,
    ) -> Append[DesiredStateSet] | NoChange | Vetoed:
        """Decide whether ``source`` wanting ``state`` for ``ref`` is recorded.

        Args:
            ref: The channel.
            state: ``open`` or ``closed``.
            source: Who or what wants it; it must be able to record ``state``
                (:data:`~switchboard.lifecycle.rules.decisions.OPEN_SOURCES`,
                :data:`~switchboard.lifecycle.rules.decisions.CLOSE_SOURCES`).
            now: The time to record.
            by_agent: The deciding agent, when an agent decides.
            override_explicit_open: A machine close holds an explicit idle lease, so it may
                close a channel the agent opened (never a tuned-out one).
            covered_by_tune_out: An active tune-out (of any scope) covers the channel; a
                machine close of it is refused as stated intent.

        Returns:
            The event to append, or why nothing is recorded.

        Raises:
            ValueError: ``state`` is ``tuned-out``, or ``source`` cannot record ``state``.
        """
        _check_proposal(state, source)
        current = self._records.get(ref)
        machine = source in MACHINE_CLOSE_SOURCES
        if machine and current is not None and current.state is _CLOSED:
            return NoChange(NoChangeReason.CLOSED_ALREADY, current)
        if (
            machine
            and not override_explicit_open
            and (
                covered_by_tune_out
                or (
                    current is not None
                    and current.source is Source.AGENT_TOOL
                    and current.state is not _CLOSED
                )
            )
        ):
            return Vetoed(VetoReason.EXPLICIT_OPEN, current)
        if current is not None and current.state is _TUNED_OUT:
            return Vetoed(VetoReason.TUNED_OUT, current)
        if current is None:
            recorded = Source.DEFAULT_CLOSED if machine else source
            return Append(DesiredStateSet(ref, state, recorded, now, by_agent))
        if current.state is state:
            agent_over_other = (
                source in AGENT_DECISION_SOURCES and current.source not in AGENT_DECISION_SOURCES
            )
            latest_close = (
                state is _CLOSED and is_close_decision(source) and current.source is not source
            )
            if not (agent_over_other or latest_close):
                return NoChange(NoChangeReason.SAME_STATE, current)
        return Append(DesiredStateSet(ref, state, source, now, by_agent))

    def ensure_initial(
        self,
        ref: ChannelRef,
        now: float,
        *,
        policy: SubscriptionPolicy,
        initially_open: bool | None = None,
        raw_id: str | None = None,
    ) -> Admission:
        """The initial desired state of an admitted channel (on every registration).

        A channel the descriptor's ``initiallyOpen`` or the policy wants is recorded open
        (source ``server-bootstrap`` or ``subscription-policy``); any other new channel is
        recorded ``closed/default-closed``. An existing record is lifted from
        ``closed/default-closed`` to open when wanted; every other record stays.

        Args:
            ref: The channel.
            now: The time to record.
            policy: The connector's subscription policy.
            initially_open: The descriptor's ``initiallyOpen``.
            raw_id: The descriptor's raw ``address.channelId``, which an allow-list may name.
        """
        by_policy = policy.wants(ref.channel_id, raw_id)
        bootstrap = initially_open is True
        current = self._records.get(ref)
        if current is not None and not (
            current.state is _CLOSED and current.source is Source.DEFAULT_CLOSED
        ):
            return Admission(NoChange(NoChangeReason.SAME_STATE, current), announce=False)
        if bootstrap or by_policy:
            source = Source.SERVER_BOOTSTRAP if bootstrap else Source.SUBSCRIPTION_POLICY
            event = DesiredStateSet(ref, _OPEN, source, now)
            return Admission(Append(event), announce=by_policy and not bootstrap)
        if current is not None:
            return Admission(NoChange(NoChangeReason.SAME_STATE, current), announce=False)
        return Admission(Append(DesiredStateSet(ref, _CLOSED, Source.DEFAULT_CLOSED, now)), False)

    def put_back(
        self,
        ref: ChannelRef,
        written: DesiredRecord,
        displaced: DesiredRecord | None,
        now: float,
        *,
        policy: SubscriptionPolicy,
        initially_open: bool | None = None,
        raw_id: str | None = None,
    ) -> PutBack:
        """Undo a speech- or reply-triggered open that failed.

        Args:
            ref: The channel.
            written: The record the open wrote (the object :meth:`apply` returned). When the
                book no longer holds this very object, a decision came during the round trip
                and nothing is put back.
            displaced: The record the open replaced (None when there was none).
            now: The time to record.
            policy: The connector's subscription policy.
            initially_open: The connector's latest ``initiallyOpen`` for the channel.
            raw_id: The channel's raw address id.

        Returns:
            The event restoring the displaced default. When the announcement or the policy
            would lift that default again, the channel is recorded open by it instead and
            ``selected`` says why it remains selected for opening.

        Raises:
            ValueError: ``displaced`` is tuned out (an open never displaces a tune-out).
        """
        if displaced is not None and displaced.state is _TUNED_OUT:
            raise ValueError("an open never displaces a tuned-out record")
        if self._records.get(ref) is not written:
            return PutBack(NoChange(NoChangeReason.DECIDED_MEANWHILE, self._records.get(ref)))
        liftable = displaced is None or (
            displaced.state is _CLOSED and displaced.source is Source.DEFAULT_CLOSED
        )
        if liftable and initially_open is True:
            event = DesiredStateSet(ref, _OPEN, Source.SERVER_BOOTSTRAP, now)
            return PutBack(Append(event), SelectedForOpening.ANNOUNCEMENT)
        if liftable and policy.wants(ref.channel_id, raw_id):
            event = DesiredStateSet(ref, _OPEN, Source.SUBSCRIPTION_POLICY, now)
            return PutBack(Append(event), SelectedForOpening.POLICY)
        if displaced is None:
            event = DesiredStateSet(ref, _CLOSED, Source.DEFAULT_CLOSED, now)
        else:
            event = DesiredStateSet(ref, displaced.state, displaced.source, now, displaced.by_agent)
        return PutBack(Append(event))

    # -- changing memory ---------------------------------------------------------------------

    def apply(self, event: DecisionEvent) -> DesiredRecord | None:
        """Change memory by one logged event (call it only after the append succeeded).

        Returns:
            The channel's record after the event: a new object for every write, so a caller
            can later tell whether a decision came after its own (see :meth:`put_back`).
            None when the event changed no record or left the channel without one.
        """
        if isinstance(event, DesiredStateSet):
            record = event.record()
            self._records[event.ref] = record
            return record
        if isinstance(event, TuneOutStarted):
            epoch = event.epoch
            if epoch.scope.kind is not ScopeKind.CHANNEL:
                return None
            record = DesiredRecord(
                _TUNED_OUT, event.source, epoch.started_at, epoch.owner, epoch.epoch_id
            )
            self._records[epoch.scope.ref] = record
            return record
        if isinstance(event, TuneOutEnded) and event.scope.kind is ScopeKind.CHANNEL:
            ref = event.scope.ref
            current = self._records.get(ref)
            if current is None or current.epoch_id != event.epoch_id:
                return None  # a stale end: a later decision or epoch holds the channel
            if event.restore is None:
                del self._records[ref]
                return None
            old = event.restore
            record = DesiredRecord(old.state, old.source, old.decided_at, old.by_agent)
            self._records[ref] = record
            return record
        return None

    def clear(self) -> None:
        """Forget every record, so that a restore can replay the log into this same book."""
        self._records.clear()

    @classmethod
    def replay(cls, events: Iterable[DecisionEvent]) -> LifecycleBook:
        """Rebuild a book by applying ``events`` in order (the last record per channel wins)."""
        book = cls()
        for event in events:
            book.apply(event)
        return book
