"""The overwrite rules of the desired state, case by case (channel-registry.md §5.2, §15)."""

from __future__ import annotations

import pytest

from switchboard.channels.ref import ChannelRef
from switchboard.lifecycle.rules.book import LifecycleBook, SubscriptionPolicy
from switchboard.lifecycle.rules.decisions import (
    Append,
    DesiredRecord,
    DesiredState,
    NoChange,
    NoChangeReason,
    Source,
    TuneOutEpoch,
    TuneOutScope,
    Vetoed,
    VetoReason,
)
from switchboard.lifecycle.rules.events import DesiredStateSet, TuneOutStarted

G = ChannelRef("a", "g")
OPEN, CLOSED, TUNED_OUT = DesiredState.OPEN, DesiredState.CLOSED, DesiredState.TUNED_OUT
S = Source


def book_with(state: DesiredState | None, source: Source | None = None) -> LifecycleBook:
    """A book whose record for ``G`` is ``state``/``source`` (None: no record)."""
    book = LifecycleBook()
    if state is TUNED_OUT:
        assert source is not None
        epoch = TuneOutEpoch("e1", "ada", TuneOutScope(G), 0.0, 10)
        book.apply(TuneOutStarted(epoch, source))
    elif state is not None:
        assert source is not None
        book.apply(DesiredStateSet(G, state, source, 0.0))
    return book


Current = tuple[DesiredState, Source] | None
Expect = tuple[str, object]

# (current record, proposed state, proposed source, expected answer): the answer is
# ("append", source recorded), ("no-change", reason) or ("refused", reason).
CASES: list[tuple[str, Current, DesiredState, Source, Expect]] = [
    ("first decision is recorded", None, OPEN, S.AGENT_TOOL, ("append", S.AGENT_TOOL)),
    ("machine close without record records default-closed",
     None, CLOSED, S.SUBSCRIPTION_GC, ("append", S.DEFAULT_CLOSED)),
    ("housekeeping without record records default-closed",
     None, CLOSED, S.HOUSEKEEPING, ("append", S.DEFAULT_CLOSED)),
    ("agent open writes over a policy open",
     (OPEN, S.SUBSCRIPTION_POLICY), OPEN, S.AGENT_TOOL, ("append", S.AGENT_TOOL)),
    ("agent open writes over a delivery open",
     (OPEN, S.OPENED_BY_DELIVERY), OPEN, S.AGENT_TOOL, ("append", S.AGENT_TOOL)),
    ("agent open over agent open is nothing",
     (OPEN, S.AGENT_TOOL), OPEN, S.AGENT_TOOL, ("no-change", NoChangeReason.SAME_STATE)),
    ("policy open over delivery open is nothing",
     (OPEN, S.OPENED_BY_DELIVERY), OPEN, S.SUBSCRIPTION_POLICY,
     ("no-change", NoChangeReason.SAME_STATE)),
    ("agent close writes over default-closed",
     (CLOSED, S.DEFAULT_CLOSED), CLOSED, S.AGENT_TOOL, ("append", S.AGENT_TOOL)),
    ("decline after the agent's close becomes the decision",
     (CLOSED, S.AGENT_TOOL), CLOSED, S.INVITATION_DECLINED, ("append", S.INVITATION_DECLINED)),
    ("agent close after a decline becomes the decision",
     (CLOSED, S.INVITATION_DECLINED), CLOSED, S.AGENT_TOOL, ("append", S.AGENT_TOOL)),
    ("module close after the agent's close becomes the decision",
     (CLOSED, S.AGENT_TOOL), CLOSED, S.MODULE_TOOL, ("append", S.MODULE_TOOL)),
    ("agent close after a module close becomes the decision",
     (CLOSED, S.MODULE_TOOL), CLOSED, S.AGENT_TOOL, ("append", S.AGENT_TOOL)),
    ("module close over a machine close is recorded",
     (CLOSED, S.SUBSCRIPTION_GC), CLOSED, S.MODULE_TOOL, ("append", S.MODULE_TOOL)),
    ("the same deliberate close twice is nothing",
     (CLOSED, S.AGENT_TOOL), CLOSED, S.AGENT_TOOL, ("no-change", NoChangeReason.SAME_STATE)),
    ("the same module close twice is nothing",
     (CLOSED, S.MODULE_TOOL), CLOSED, S.MODULE_TOOL, ("no-change", NoChangeReason.SAME_STATE)),
    ("machine close never replaces the agent's close",
     (CLOSED, S.AGENT_TOOL), CLOSED, S.SUBSCRIPTION_GC,
     ("no-change", NoChangeReason.CLOSED_ALREADY)),
    ("machine close never replaces a decline",
     (CLOSED, S.INVITATION_DECLINED), CLOSED, S.HOUSEKEEPING,
     ("no-change", NoChangeReason.CLOSED_ALREADY)),
    ("machine close never replaces a module close",
     (CLOSED, S.MODULE_TOOL), CLOSED, S.SUBSCRIPTION_GC,
     ("no-change", NoChangeReason.CLOSED_ALREADY)),
    ("machine close never replaces default-closed",
     (CLOSED, S.DEFAULT_CLOSED), CLOSED, S.HOUSEKEEPING,
     ("no-change", NoChangeReason.CLOSED_ALREADY)),
    ("machine close never replaces another machine close",
     (CLOSED, S.SUBSCRIPTION_GC), CLOSED, S.HOUSEKEEPING,
     ("no-change", NoChangeReason.CLOSED_ALREADY)),
    ("machine close of a policy open is recorded as itself",
     (OPEN, S.SUBSCRIPTION_POLICY), CLOSED, S.SUBSCRIPTION_GC, ("append", S.SUBSCRIPTION_GC)),
    ("machine close of the agent's open is refused as stated intent",
     (OPEN, S.AGENT_TOOL), CLOSED, S.SUBSCRIPTION_GC, ("refused", VetoReason.EXPLICIT_OPEN)),
    ("machine close of the agent's tune-out is refused as stated intent",
     (TUNED_OUT, S.AGENT_TOOL), CLOSED, S.HOUSEKEEPING, ("refused", VetoReason.EXPLICIT_OPEN)),
    ("machine close of a module's tune-out is refused as tuned out",
     (TUNED_OUT, S.MODULE_TOOL), CLOSED, S.SUBSCRIPTION_GC, ("refused", VetoReason.TUNED_OUT)),
    ("module close of the agent's open is not guarded",
     (OPEN, S.AGENT_TOOL), CLOSED, S.MODULE_TOOL, ("append", S.MODULE_TOOL)),
    ("agent open of a tuned-out channel is refused",
     (TUNED_OUT, S.AGENT_TOOL), OPEN, S.AGENT_TOOL, ("refused", VetoReason.TUNED_OUT)),
    ("agent close of a tuned-out channel is refused",
     (TUNED_OUT, S.AGENT_TOOL), CLOSED, S.AGENT_TOOL, ("refused", VetoReason.TUNED_OUT)),
    ("decline of a tuned-out channel is refused",
     (TUNED_OUT, S.AGENT_TOOL), CLOSED, S.INVITATION_DECLINED,
     ("refused", VetoReason.TUNED_OUT)),
    ("module close of a tuned-out channel is refused",
     (TUNED_OUT, S.AGENT_TOOL), CLOSED, S.MODULE_TOOL, ("refused", VetoReason.TUNED_OUT)),
    ("delivery open of a tuned-out channel is refused",
     (TUNED_OUT, S.MODULE_TOOL), OPEN, S.OPENED_BY_DELIVERY,
     ("refused", VetoReason.TUNED_OUT)),
    ("a change of state is always recorded",
     (CLOSED, S.AGENT_TOOL), OPEN, S.OPENED_BY_DELIVERY, ("append", S.OPENED_BY_DELIVERY)),
    ("a put-back of default-closed over a delivery open is recorded",
     (OPEN, S.OPENED_BY_DELIVERY), CLOSED, S.DEFAULT_CLOSED, ("append", S.DEFAULT_CLOSED)),
    ("default-closed over a deliberate close is nothing",
     (CLOSED, S.AGENT_TOOL), CLOSED, S.DEFAULT_CLOSED, ("no-change", NoChangeReason.SAME_STATE)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("current", "state", "source", "expect"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_each_overwrite_rule_gives_its_answer(
    current: Current, state: DesiredState, source: Source, expect: Expect
) -> None:
    book = book_with(*(current or (None, None)))
    before = list(book.items())
    answer = book.propose(G, state, source, 5.0, by_agent="ada")
    assert list(book.items()) == before, "propose must never change memory"
    kind, detail = expect
    if kind == "append":
        assert isinstance(answer, Append)
        assert isinstance(detail, Source)
        assert answer.event == DesiredStateSet(G, state, detail, 5.0, "ada")
        assert book.apply(answer.event) == DesiredRecord(state, detail, 5.0, "ada")
    elif kind == "no-change":
        assert isinstance(answer, NoChange)
        assert answer.reason is detail
        assert answer.record == book.record(G)
    else:
        assert isinstance(answer, Vetoed)
        assert answer.reason is detail
        assert answer.record == book.record(G)


def test_an_idle_lease_lets_a_machine_close_through_the_explicit_open_guard() -> None:
    book = book_with(OPEN, S.AGENT_TOOL)
    answer = book.propose(G, CLOSED, S.SUBSCRIPTION_GC, 1.0, override_explicit_open=True)
    assert isinstance(answer, Append)
    assert answer.event.source is S.SUBSCRIPTION_GC


def test_an_idle_lease_does_not_let_a_machine_close_end_a_tune_out() -> None:
    book = book_with(TUNED_OUT, S.AGENT_TOOL)
    answer = book.propose(G, CLOSED, S.SUBSCRIPTION_GC, 1.0, override_explicit_open=True)
    assert isinstance(answer, Vetoed)
    assert answer.reason is VetoReason.TUNED_OUT


def test_a_machine_close_of_a_channel_a_tune_out_covers_is_refused_as_stated_intent() -> None:
    book = book_with(OPEN, S.SUBSCRIPTION_POLICY)
    answer = book.propose(G, CLOSED, S.HOUSEKEEPING, 1.0, covered_by_tune_out=True)
    assert isinstance(answer, Vetoed)
    assert answer.reason is VetoReason.EXPLICIT_OPEN
    leased = book.propose(
        G, CLOSED, S.HOUSEKEEPING, 1.0, covered_by_tune_out=True, override_explicit_open=True
    )
    assert isinstance(leased, Append)


def test_a_machine_close_of_a_closed_channel_a_tune_out_covers_is_simply_nothing() -> None:
    book = book_with(CLOSED, S.AGENT_TOOL)
    answer = book.propose(G, CLOSED, S.SUBSCRIPTION_GC, 1.0, covered_by_tune_out=True)
    assert isinstance(answer, NoChange)
    assert answer.reason is NoChangeReason.CLOSED_ALREADY


@pytest.mark.parametrize(
    ("state", "source"),
    [
        (TUNED_OUT, S.AGENT_TOOL),
        (OPEN, S.SUBSCRIPTION_GC),
        (OPEN, S.HOUSEKEEPING),
        (OPEN, S.INVITATION_DECLINED),
        (OPEN, S.DEFAULT_CLOSED),
        (OPEN, S.UNKNOWN),
        (CLOSED, S.OPENED_BY_DELIVERY),
        (CLOSED, S.OPENED_BY_REPLY),
        (CLOSED, S.SERVER_BOOTSTRAP),
        (CLOSED, S.SUBSCRIPTION_POLICY),
        (CLOSED, S.UNKNOWN),
    ],
)
def test_a_source_cannot_propose_a_state_outside_its_class(
    state: DesiredState, source: Source
) -> None:
    with pytest.raises(ValueError, match=r"tune-out|cannot record"):
        LifecycleBook().propose(G, state, source, 0.0)


# -- §15 desired-state cases, in our own words --------------------------------------------------


def append(book: LifecycleBook, answer: object) -> DesiredRecord | None:
    """Play the store: the append succeeds, then memory changes."""
    assert isinstance(answer, Append)
    return book.apply(answer.event)


def test_a_gc_close_of_a_placeholder_stays_liftable_and_the_policy_later_opens_it() -> None:
    book = LifecycleBook()
    append(book, book.propose(G, CLOSED, S.SUBSCRIPTION_GC, 1.0))
    assert book.record(G) == DesiredRecord(CLOSED, S.DEFAULT_CLOSED, 1.0)
    admission = book.ensure_initial(G, 2.0, policy=SubscriptionPolicy.automatic())
    assert admission.announce
    append(book, admission.decision)
    assert book.record(G) == DesiredRecord(OPEN, S.SUBSCRIPTION_POLICY, 2.0)


def test_after_the_agents_close_a_gc_close_and_the_policy_both_leave_it_closed() -> None:
    book = LifecycleBook()
    append(book, book.propose(G, CLOSED, S.AGENT_TOOL, 1.0, by_agent="ada"))
    gc = book.propose(G, CLOSED, S.SUBSCRIPTION_GC, 2.0)
    assert isinstance(gc, NoChange)
    admission = book.ensure_initial(G, 3.0, policy=SubscriptionPolicy.automatic())
    assert isinstance(admission.decision, NoChange)
    assert not admission.announce
    assert book.record(G) == DesiredRecord(CLOSED, S.AGENT_TOOL, 1.0, "ada")


def test_a_decline_after_the_agents_close_is_appended_as_the_decision_on_record() -> None:
    book = LifecycleBook()
    append(book, book.propose(G, CLOSED, S.AGENT_TOOL, 1.0))
    record = append(book, book.propose(G, CLOSED, S.INVITATION_DECLINED, 2.0))
    assert record is not None
    assert record.source is S.INVITATION_DECLINED


def test_the_agents_open_over_a_policy_open_is_appended_once_and_only_once() -> None:
    book = book_with(OPEN, S.SUBSCRIPTION_POLICY)
    append(book, book.propose(G, OPEN, S.AGENT_TOOL, 1.0))
    assert book.record(G) == DesiredRecord(OPEN, S.AGENT_TOOL, 1.0)
    assert isinstance(book.propose(G, OPEN, S.AGENT_TOOL, 2.0), NoChange)


def test_module_and_agent_closes_alternate_each_becoming_the_latest_decision() -> None:
    book = LifecycleBook()
    for at, source in enumerate([S.AGENT_TOOL, S.MODULE_TOOL, S.AGENT_TOOL]):
        record = append(book, book.propose(G, CLOSED, source, float(at)))
        assert record is not None
        assert record.source is source


def test_when_the_append_fails_memory_keeps_the_record_it_had() -> None:
    book = book_with(OPEN, S.SUBSCRIPTION_POLICY)
    before = book.record(G)
    answer = book.propose(G, CLOSED, S.AGENT_TOOL, 1.0)
    assert isinstance(answer, Append)
    # The store raised: the caller does not apply, and nothing changed.
    assert book.record(G) is before


def test_every_write_makes_a_new_record_object_even_for_an_equal_record() -> None:
    book = LifecycleBook()
    event = DesiredStateSet(G, OPEN, S.AGENT_TOOL, 1.0)
    first = book.apply(event)
    second = book.apply(event)
    assert first == second
    assert first is not second


def test_replaying_the_log_keeps_the_last_record_per_channel() -> None:
    other = ChannelRef("b", "g")
    events = [
        DesiredStateSet(G, OPEN, S.SUBSCRIPTION_POLICY, 1.0),
        DesiredStateSet(other, CLOSED, S.DEFAULT_CLOSED, 1.0),
        DesiredStateSet(G, CLOSED, S.AGENT_TOOL, 2.0, "ada"),
    ]
    book = LifecycleBook.replay(events)
    assert book.record(G) == DesiredRecord(CLOSED, S.AGENT_TOOL, 2.0, "ada")
    assert book.state(other) is CLOSED
    assert len(book) == 2
    assert G in book
    assert book.state(ChannelRef("c", "g")) is None
