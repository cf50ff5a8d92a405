"""Reconciliation planning: which ``channels/open`` and ``channels/close`` bring a connector to
the recorded desired state, and what each answer means.

:class:`TransportState` is what the host believes about one registration's transport, with
the marks that keep it honest; :class:`Convergence` plans the next command of a run and gives
up after a bounded number of steps; ``judge_open_answer`` and ``judge_close_answer`` say what an
answer means (channel-registry.md §2.3, §5.6). Pure.

What it deliberately does not know: the wire, queues and awaits.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

from switchboard.channels.ref import ChannelRef
from switchboard.lifecycle.rules.book import LifecycleBook
from switchboard.lifecycle.rules.decisions import DesiredRecord, DesiredState

__all__ = [
    "MAX_CONVERGE_ATTEMPTS",
    "OPEN_STATE",
    "CloseVerdict",
    "Converged",
    "Convergence",
    "GaveUp",
    "LifecycleCommand",
    "LifecycleErrorKind",
    "Op",
    "OpenVerdict",
    "ReconcilePlan",
    "ReconcileSkip",
    "Step",
    "TransportState",
    "command_for",
    "judge_close_answer",
    "judge_open_answer",
    "wanted_op",
]

MAX_CONVERGE_ATTEMPTS: Final = 4
"""Commands one channel's run may send before it gives up with a ``converge`` failure."""


class LifecycleErrorKind(StrEnum):
    """Why a lifecycle request did not do what it was for."""

    CONVERGE = "converge"
    """The desired state kept changing; the run gave up."""
    CANCELLED = "cancelled"
    """The run was cancelled (the connector went away)."""
    SUBSTITUTED = "substituted"
    """The open was answered for a different channel."""
    OVERTAKEN = "overtaken"
    """A decision recorded during the round trip wants something else now."""
    REMOVED = "removed"
    """The channel was removed meanwhile."""
    SUPERSEDED = "superseded"
    """A close was answered, but a later decision to keep the channel open came first."""


class Op(StrEnum):
    """A lifecycle request."""

    OPEN = "open"
    CLOSE = "close"


@dataclass(frozen=True, slots=True)
class TransportState:
    """What the host believes about one registration's transport.

    What it knows (channel-registry.md §2.3 marks, §5.6):

    - :class:`TransportState`, what the host believes about one registration's transport: open or
      not, and the marks that keep it honest. ``unconfirmed``: the channel may be open though no
      receipt says so (a lost open receipt, a push placeholder, a lost connection, a descriptor that
      opens itself with ``initiallyOpen``). ``failed_close``: a close failed, so it may still be
      open. ``answered_elsewhere``: the last open was answered for another channel. Nothing here
      pretends a channel closed without a close answer.
    - :func:`command_for`: the one command that moves a transport toward a record (open for
      ``open``/``tuned-out``, close for ``closed`` while the channel may be open, nothing without a
      record).
    - :class:`Convergence`: bounded retry bookkeeping. Each channel's run counts its commands; when
      the desired state keeps changing under requests in flight, the run gives up after
      :data:`MAX_CONVERGE_ATTEMPTS` with a ``converge`` failure instead of chasing it forever.
    - :meth:`Convergence.plan`: the ordered commands of a (re)connect, and the skip of a connector
      whose grant lacks ``channels.lifecycle`` (it keeps its channels as it chooses).
    - :func:`judge_open_answer` / :func:`judge_close_answer`: the state after an answer, an open
      answered for another channel (``substituted``), and a decision that overtook a request.

    Every method returns a new state; a new registration starts from :meth:`fresh`.
    """

    open: bool = False
    unconfirmed: bool = False
    failed_close: bool = False
    answered_elsewhere: bool = False

    @classmethod
    def fresh(cls, *, may_be_open: bool = False) -> TransportState:
        """A new registration; ``may_be_open`` for a push placeholder or ``initiallyOpen``.

        The two answers are made once: states are frozen, and a frozen dataclass costs over a
        microsecond to build, which every publish paid.
        """
        return _FRESH_MAY_BE_OPEN if may_be_open else _FRESH

    @property
    def may_be_open(self) -> bool:
        """Whether a close is needed to be sure the channel is closed."""
        return self.open or self.unconfirmed or self.failed_close

    def open_refused(self) -> TransportState:
        """A definite open failure: nothing changed at the connector."""
        return self

    def open_unanswered(self) -> TransportState:
        """An open with no receipt (timeout, lost link): it may have opened."""
        return replace(self, unconfirmed=True)

    def close_failed(self) -> TransportState:
        """A close failed or went unanswered: it may still be open."""
        return replace(self, failed_close=True)

    def traffic(self) -> TransportState:
        """The connector's traffic on the channel is evidence it is open."""
        return replace(self, open=True, unconfirmed=False, failed_close=False)

    def transport_lost(self) -> TransportState:
        """The connection dropped: nothing is confirmed any more."""
        return replace(self, open=False, unconfirmed=True)


_FRESH: Final = TransportState()
_FRESH_MAY_BE_OPEN: Final = TransportState(unconfirmed=True)
OPEN_STATE: Final = TransportState(open=True)
"""A registration known to be open (one shared value: states are frozen)."""


def wanted_op(record: DesiredRecord | None) -> Op | None:
    """The transport a record wants: open for ``open``/``tuned-out``, close for ``closed``."""
    if record is None:
        return None
    return Op.CLOSE if record.state is DesiredState.CLOSED else Op.OPEN


def command_for(record: DesiredRecord | None, transport: TransportState) -> Op | None:
    """The command that moves ``transport`` toward ``record``, or None when it is there.

    No record means the host does not direct this channel (yet): nothing is sent.
    """
    want = wanted_op(record)
    if want is Op.OPEN:
        return None if transport.open else Op.OPEN
    if want is Op.CLOSE:
        return Op.CLOSE if transport.may_be_open else None
    return None


@dataclass(frozen=True, slots=True)
class LifecycleCommand:
    """Send ``op`` for ``ref``; ``attempt`` counts this channel's commands in the run (1-based)."""

    op: Op
    ref: ChannelRef
    attempt: int


@dataclass(frozen=True, slots=True)
class Converged:
    """The transport matches the record; the run is over."""

    ref: ChannelRef


@dataclass(frozen=True, slots=True)
class GaveUp:
    """The run sent ``attempts`` commands and the target kept moving: a ``converge`` failure."""

    ref: ChannelRef
    attempts: int
    kind: LifecycleErrorKind = LifecycleErrorKind.CONVERGE


Step = LifecycleCommand | Converged | GaveUp
"""What a channel's run does next."""


class ReconcileSkip(StrEnum):
    """Why a connector's channels are not reconciled at all."""

    LIFECYCLE_NOT_GRANTED = "lifecycle-not-granted"
    """The grant lacks ``channels.lifecycle``; the connector keeps its channels as it chooses."""


@dataclass(frozen=True, slots=True)
class ReconcilePlan:
    """What a (re)connect sends.

    Attributes:
        commands: The first command of every channel that needs one, in the given order.
        unrecorded: Channels without a record (not admitted yet): nothing is sent for them.
        skipped: Set when nothing is reconciled for this connector, with why.
    """

    commands: tuple[LifecycleCommand, ...] = ()
    unrecorded: tuple[ChannelRef, ...] = ()
    skipped: ReconcileSkip | None = None


class Convergence:
    """Attempt counters of the channels whose lifecycle run is in progress.

    A host runs each channel on its own queue: it asks :meth:`step`, sends the command, feeds
    the answer through :func:`judge_open_answer`/:func:`judge_close_answer`, and asks
    :meth:`step` again with the record as it stands *then*. A failure ends the run: call
    :meth:`abandon`.
    """

    __slots__ = ("_attempts", "limit")

    def __init__(self, limit: int = MAX_CONVERGE_ATTEMPTS) -> None:
        if limit < 1:
            raise ValueError("a run needs at least one attempt")
        self.limit = limit
        self._attempts: dict[ChannelRef, int] = {}

    def attempts(self, ref: ChannelRef) -> int:
        """Commands sent in the channel's current run (0 when none is in progress)."""
        return self._attempts.get(ref, 0)

    def in_progress(self, ref: ChannelRef) -> bool:
        """Whether the channel has a run in progress."""
        return ref in self._attempts

    def step(
        self, ref: ChannelRef, record: DesiredRecord | None, transport: TransportState
    ) -> Step:
        """The next step of the channel's run, counting a command it returns."""
        op = command_for(record, transport)
        if op is None:
            self._attempts.pop(ref, None)
            return Converged(ref)
        sent = self._attempts.get(ref, 0)
        if sent >= self.limit:
            del self._attempts[ref]
            return GaveUp(ref, sent)
        self._attempts[ref] = sent + 1
        return LifecycleCommand(op, ref, sent + 1)

    def abandon(self, ref: ChannelRef) -> None:
        """End the channel's run (a failure, a removal or a cancellation)."""
        self._attempts.pop(ref, None)

    def plan(
        self,
        book: LifecycleBook,
        channels: Iterable[tuple[ChannelRef, TransportState]],
        *,
        directs_lifecycle: bool,
    ) -> ReconcilePlan:
        """Plan a (re)connect: bring each channel to its recorded state.

        Admit the channels first (:meth:`LifecycleBook.ensure_initial`, appended and applied),
        then plan. Every planned channel starts a new run. Without the lifecycle grant nothing
        is planned, and the caller must not admit the channels either: the host never directs
        a lifecycle it was not granted.

        Args:
            book: The desired states.
            channels: The connector's registrations and their transport states, in order.
            directs_lifecycle: Whether the grant includes ``channels.lifecycle``.
        """
        if not directs_lifecycle:
            return ReconcilePlan(skipped=ReconcileSkip.LIFECYCLE_NOT_GRANTED)
        commands: list[LifecycleCommand] = []
        unrecorded: list[ChannelRef] = []
        for ref, transport in channels:
            record = book.record(ref)
            if record is None:
                unrecorded.append(ref)
                continue
            self._attempts.pop(ref, None)
            step = self.step(ref, record, transport)
            if isinstance(step, LifecycleCommand):
                commands.append(step)
        return ReconcilePlan(tuple(commands), tuple(unrecorded))


@dataclass(frozen=True, slots=True)
class OpenVerdict:
    """What an open's answer means.

    Attributes:
        transport: The transport state after the answer.
        error: ``substituted`` (answered for another channel) or ``overtaken`` (the record
            no longer wants it open), else None.
        close_next: The answer was for another channel and the record wants the channel
            closed: close it through its queue.
    """

    transport: TransportState
    error: LifecycleErrorKind | None = None
    close_next: bool = False


def judge_open_answer(
    ref: ChannelRef,
    answered_id: object,
    record: DesiredRecord | None,
    transport: TransportState,
) -> OpenVerdict:
    """Read a ``channels/open`` result for ``ref``.

    Args:
        ref: The channel the open was for.
        answered_id: ``result.channel.id`` as received (anything, not only a string).
        record: The channel's record as it stands now.
        transport: The state before the answer.
    """
    if type(answered_id) is not str or answered_id != ref.channel_id:
        after = replace(transport, open=False, unconfirmed=True, answered_elsewhere=True)
        closes = wanted_op(record) is Op.CLOSE
        return OpenVerdict(after, LifecycleErrorKind.SUBSTITUTED, close_next=closes)
    after = OPEN_STATE
    overtaken = wanted_op(record) is Op.CLOSE
    return OpenVerdict(after, LifecycleErrorKind.OVERTAKEN if overtaken else None)


@dataclass(frozen=True, slots=True)
class CloseVerdict:
    """What a close's answer means.

    Attributes:
        transport: The state after the answer (``answered_elsewhere`` is kept: a close answer
            names no channel).
        error: ``superseded`` when the record wants the channel open again, else None.
    """

    transport: TransportState
    error: LifecycleErrorKind | None = None


def judge_close_answer(record: DesiredRecord | None, transport: TransportState) -> CloseVerdict:
    """Read a successful ``channels/close`` answer against the record as it stands now."""
    after = TransportState(answered_elsewhere=transport.answered_elsewhere)
    superseded = wanted_op(record) is Op.OPEN
    return CloseVerdict(after, LifecycleErrorKind.SUPERSEDED if superseded else None)
