"""Speech and closed channels: the lifecycle predicates, and what words must wait for.

:class:`ChannelFacts` is what the host knows about one channel besides its record;
:func:`plan_speech` says whether words go now, wait, open the channel first, or are refused,
and :func:`plan_send_open` the same for an explicit send (channel-registry.md §5.1, §5.7, §8.3,
§8.6). Pure.

What it deliberately does not know: the publish grant and the connector's reach for sending.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from switchboard.channels.names.wording import q
from switchboard.lifecycle.rules.book import SelectedForOpening
from switchboard.lifecycle.rules.decisions import (
    DesiredRecord,
    DesiredState,
    Source,
    is_close_decision,
)
from switchboard.lifecycle.rules.reconcile import LifecycleErrorKind

__all__ = [
    "ChannelFacts",
    "ClosedByAgent",
    "Reach",
    "SendAnswer",
    "SendOpenOutcome",
    "SendOpenPlan",
    "SpeechBlock",
    "SpeechPlan",
    "SpeechStep",
    "after_speech_failure",
    "answered_elsewhere_text",
    "close_decided",
    "close_stands",
    "closed_by_agent",
    "lifecycle_withheld",
    "lifecycle_withheld_text",
    "plan_send_open",
    "plan_speech",
    "refusal_gives_way",
    "send_open_outcome",
    "speech_leaves_as_it_stands",
    "speech_leaves_closed",
    "speech_opens",
]

_OPEN_STATES = frozenset({DesiredState.OPEN, DesiredState.TUNED_OUT})


class Reach(StrEnum):
    """How reachable a connector is."""

    UP = "up"
    CONNECTING = "connecting"
    RECONNECTING = "reconnecting"
    GONE = "gone"


@dataclass(frozen=True, slots=True)
class ChannelFacts:
    """What the host knows about one channel, besides its desired record.

    Attributes:
        registered: A registration exists for the ref.
        transport_open: The host believes the connector holds it open.
        directs_lifecycle: The connector's grant includes ``channels.lifecycle``.
        reach: The connector's reach.
        inbound_only: The descriptor says ``direction: inbound``.
        answered_elsewhere: The registration's last open was answered for another channel.
        lifecycle_pending: Lifecycle work is queued for the channel.
    """

    registered: bool = True
    transport_open: bool = False
    directs_lifecycle: bool = True
    reach: Reach = Reach.UP
    inbound_only: bool = False
    answered_elsewhere: bool = False
    lifecycle_pending: bool = False


class ClosedByAgent(StrEnum):
    """How the agent itself closed a channel."""

    CLOSED = "closed"
    DECLINED = "declined"


def lifecycle_withheld(facts: ChannelFacts) -> bool:
    """The connector is up and does not grant the lifecycle. A connector that is not up has
    an empty grant since its drop, which says nothing about what it grants."""
    return not facts.directs_lifecycle and facts.reach is Reach.UP


def close_stands(record: DesiredRecord | None, facts: ChannelFacts) -> bool:
    """A close is recorded and the host may close there (without the grant it holds nothing
    back)."""
    return record is not None and record.state is DesiredState.CLOSED and facts.directs_lifecycle


def close_decided(record: DesiredRecord | None) -> bool:
    """The record is a deliberate close (the agent's close or decline, or a module's close)."""
    return (
        record is not None
        and record.state is DesiredState.CLOSED
        and is_close_decision(record.source)
    )


def speech_leaves_as_it_stands(record: DesiredRecord | None, facts: ChannelFacts) -> bool:
    """Speech goes in without opening: a close was decided, or the lifecycle is withheld."""
    return close_decided(record) or lifecycle_withheld(facts)


def speech_opens(record: DesiredRecord | None, facts: ChannelFacts) -> bool:
    """Speech opens the channel first: it is registered, not open (or a close stands), and
    not one speech leaves as it stands. A tuned-out channel is opened for its traffic and
    keeps its tune-out."""
    return (
        facts.registered
        and (not facts.transport_open or close_stands(record, facts))
        and not speech_leaves_as_it_stands(record, facts)
    )


def speech_leaves_closed(record: DesiredRecord | None, facts: ChannelFacts) -> bool:
    """Speech goes into a registered channel that is not open, and leaves it closed."""
    return (
        facts.registered and not facts.transport_open and speech_leaves_as_it_stands(record, facts)
    )


def closed_by_agent(record: DesiredRecord | None, facts: ChannelFacts) -> ClosedByAgent | None:
    """``closed`` or ``declined`` when the agent's own decision closed a registered channel."""
    if not facts.registered or record is None or record.state is not DesiredState.CLOSED:
        return None
    if record.source is Source.AGENT_TOOL:
        return ClosedByAgent.CLOSED
    if record.source is Source.INVITATION_DECLINED:
        return ClosedByAgent.DECLINED
    return None


def refusal_gives_way(
    record: DesiredRecord | None, facts: ChannelFacts, *, converge_failure: bool
) -> bool:
    """Words a wait or an open refused still go in: the channel became one speech leaves as
    it stands (say, the agent closed it while they waited), unless the address itself kept
    changing (a ``converge`` failure).

    Args:
        record: The record as it stands after the failure.
        facts: The facts as they stand after the failure.
        converge_failure: The failure, or one it was caused by, is a ``converge``.
    """
    return speech_leaves_as_it_stands(record, facts) and not converge_failure


class SpeechStep(StrEnum):
    """What a publish does next."""

    WAIT = "wait"
    """Lifecycle work is queued: wait for it to settle, then plan again."""
    OPEN_FIRST = "open-first"
    """Record ``open`` with the plan's source, open, wait; the words go in only if it opened."""
    SEND = "send"
    """The channel is open: the words go in."""
    SEND_AS_IT_STANDS = "send-as-it-stands"
    """The words go into the closed channel without opening it."""
    REFUSE = "refuse"
    """Nothing is posted."""


class SpeechBlock(StrEnum):
    """Why a publish posts nothing (lifecycle reasons only)."""

    NOT_REGISTERED = "channel-not-registered"
    INBOUND_ONLY = "inbound-only"
    ANSWERED_ELSEWHERE = "answered-elsewhere"
    """Words by its id may not reach it: its last open was answered for another channel."""
    PREVENTED = "prevented"
    """A lifecycle failure stands in the way and does not give way."""


@dataclass(frozen=True, slots=True)
class SpeechPlan:
    """One publish decision.

    Attributes:
        step: What to do.
        open_source: For ``open-first``: the source to record the open with; None when the
            record already wants it open (``open``, or ``tuned-out``, which keeps its
            tune-out): only the transport is opened.
        block: For ``refuse``: why.
    """

    step: SpeechStep
    open_source: Source | None = None
    block: SpeechBlock | None = None


def plan_speech(
    record: DesiredRecord | None,
    facts: ChannelFacts,
    *,
    open_source: Source = Source.OPENED_BY_DELIVERY,
) -> SpeechPlan:
    """Decide what words bound for a channel do, as far as its lifecycle goes.

    What it knows (channel-registry.md §5.1, §5.7, §8.3, §8.6):

    - :class:`ChannelFacts`, what the host knows about one channel besides its desired record:
      registered or not, transport open or not, whether its connector grants the lifecycle and is
      up, inbound-only, marked answered-elsewhere, lifecycle work queued.
    - The predicates: :func:`lifecycle_withheld`, :func:`close_stands`, :func:`close_decided`,
      :func:`speech_leaves_as_it_stands`, :func:`speech_opens`, :func:`speech_leaves_closed`,
      :func:`closed_by_agent` and :func:`refusal_gives_way`.
    - The rule they add up to: speech opens first a channel only a default or a machine closed; it
      goes in *as it stands*, with no open, into a channel the agent or a module closed, or whose
      lifecycle the host does not direct. Words never go into a channel speech would open unless it
      opened. :func:`plan_speech` returns that decision; :func:`plan_send_open` and
      :func:`send_open_outcome` return the answers of an explicit send tool (``opened``,
      ``already-open``, ``stays-closed``, ``open-failed``).

    Call it after the reach and publish-grant checks, again after every wait, and with the
    record and facts as they stand *now*.

    Args:
        record: The channel's desired record.
        facts: The channel's facts.
        open_source: The source of an open speech makes (``opened-by-delivery`` for speech
            and publishes, ``opened-by-reply`` for an explicit send's reply path).
    """
    if not facts.registered:
        return SpeechPlan(SpeechStep.REFUSE, block=SpeechBlock.NOT_REGISTERED)
    if facts.inbound_only:
        return SpeechPlan(SpeechStep.REFUSE, block=SpeechBlock.INBOUND_ONLY)
    if facts.lifecycle_pending:
        return SpeechPlan(SpeechStep.WAIT)
    if speech_opens(record, facts):
        wants_open = record is not None and record.state in _OPEN_STATES
        return SpeechPlan(SpeechStep.OPEN_FIRST, open_source=None if wants_open else open_source)
    if facts.transport_open and not close_stands(record, facts):
        return SpeechPlan(SpeechStep.SEND)
    if facts.answered_elsewhere:
        return SpeechPlan(SpeechStep.REFUSE, block=SpeechBlock.ANSWERED_ELSEWHERE)
    return SpeechPlan(SpeechStep.SEND_AS_IT_STANDS)


def after_speech_failure(
    record: DesiredRecord | None, facts: ChannelFacts, *, converge_failure: bool
) -> SpeechPlan:
    """Decide after a wait or a speech-open failed, with the record and facts as they stand.

    The words go in as the channel stands when the refusal gives way; otherwise nothing is
    posted (``prevented``).
    """
    if refusal_gives_way(record, facts, converge_failure=converge_failure):
        return plan_speech(record, replace(facts, lifecycle_pending=False))
    return SpeechPlan(SpeechStep.REFUSE, block=SpeechBlock.PREVENTED)


class SendAnswer(StrEnum):
    """What an explicit send tool is told about the channel it sent into."""

    OPENED = "opened"
    ALREADY_OPEN = "already-open"
    STAYS_CLOSED = "stays-closed"
    OPEN_FAILED = "open-failed"


@dataclass(frozen=True, slots=True)
class SendOpenPlan:
    """What to do after an explicit send delivered into a channel.

    Attributes:
        answer: The answer when no open is attempted; None means: record ``open`` with
            ``opened-by-reply``, open, wait, then call :func:`send_open_outcome`.
        opening: The open changes the desired state (it was neither open nor tuned out).
    """

    answer: SendAnswer | None
    opening: bool = False


def _leaves(record: DesiredRecord | None, facts: ChannelFacts) -> SendAnswer:
    if facts.transport_open and not close_stands(record, facts):
        return SendAnswer.ALREADY_OPEN
    return SendAnswer.STAYS_CLOSED


def plan_send_open(record: DesiredRecord | None, facts: ChannelFacts) -> SendOpenPlan:
    """Decide whether an explicit send opens the channel it delivered into."""
    wants_open = record is not None and record.state in _OPEN_STATES
    if facts.transport_open and wants_open:
        return SendOpenPlan(SendAnswer.ALREADY_OPEN)
    if speech_leaves_as_it_stands(record, facts):
        return SendOpenPlan(_leaves(record, facts))
    return SendOpenPlan(None, opening=not wants_open)


@dataclass(frozen=True, slots=True)
class SendOpenOutcome:
    """The explicit send tool's answer.

    Attributes:
        answer: One of :class:`SendAnswer`.
        opening: For ``open-failed``: whether the open was changing the desired state.
        selected: For ``open-failed``: why the channel is still selected for opening.
    """

    answer: SendAnswer
    opening: bool = False
    selected: SelectedForOpening | None = None


def send_open_outcome(
    record: DesiredRecord | None,
    facts: ChannelFacts,
    *,
    opening: bool,
    opened: bool,
    error: LifecycleErrorKind | None = None,
    converge_failure: bool = False,
    selected: SelectedForOpening | None = None,
) -> SendOpenOutcome:
    """The answer after the open of :func:`plan_send_open` ran.

    Args:
        record: The record as it stands now.
        facts: The facts as they stand now.
        opening: :attr:`SendOpenPlan.opening`.
        opened: The channel opened.
        error: The failure's kind, when it has one.
        converge_failure: The failure is, or was caused by, a ``converge``.
        selected: From the put-back (or ``unrecorded`` when it could not be recorded).
    """
    if opened:
        return SendOpenOutcome(SendAnswer.OPENED if opening else SendAnswer.ALREADY_OPEN)
    converge = converge_failure or error is LifecycleErrorKind.CONVERGE
    if refusal_gives_way(record, facts, converge_failure=converge):
        return SendOpenOutcome(_leaves(record, facts))
    if error is LifecycleErrorKind.OVERTAKEN:
        opening = False
    return SendOpenOutcome(SendAnswer.OPEN_FAILED, opening, selected)


def lifecycle_withheld_text(server_id: str) -> str:
    """Tell the agent that a connector keeps its channels open or closed as it chooses."""
    return (
        f"server {q(server_id)} has not let this host open or close its channels "
        "(no channels.lifecycle grant), so it keeps each one open or closed as it chooses"
    )


def answered_elsewhere_text(server_id: str) -> str:
    """Why words into a channel marked answered-elsewhere are not sent."""
    return (
        f"server {q(server_id)} answered the last open of this channel for a different "
        "channel, so words sent by its id might land elsewhere; they go in again once an open "
        "of it is answered for this channel"
    )
