"""Initial state and the subscription policy (§5.5), and the put-back of a failed open (§5.6)."""

from __future__ import annotations

import pytest

from switchboard.channels.ref import ChannelRef
from switchboard.lifecycle.rules.book import (
    LifecycleBook,
    SelectedForOpening,
    SubscriptionPolicy,
)
from switchboard.lifecycle.rules.decisions import (
    Append,
    DesiredRecord,
    DesiredState,
    NoChange,
    NoChangeReason,
    Source,
    TuneOutEpoch,
    TuneOutScope,
)
from switchboard.lifecycle.rules.events import DesiredStateSet, TuneOutStarted

G = ChannelRef("a", "g")
OPEN, CLOSED = DesiredState.OPEN, DesiredState.CLOSED
S = Source
MANUAL = SubscriptionPolicy.manual()
AUTO = SubscriptionPolicy.automatic()


def test_the_policy_wants_every_channel_when_auto_and_only_listed_ones_otherwise() -> None:
    allow = SubscriptionPolicy.allowing(["g", "raw-7"])
    assert AUTO.wants("anything")
    assert not MANUAL.wants("g", "raw-7")
    assert allow.wants("g")
    assert allow.wants("other", "raw-7")
    assert not allow.wants("other", "raw-8")
    assert not allow.wants("other")


# (existing record, initiallyOpen, policy, raw id, expected record source or None, announce)
Seed = tuple[DesiredState, Source] | None
INITIAL: list[tuple[str, Seed, bool | None, SubscriptionPolicy, Source | None, bool]] = [
    ("nothing wants a new channel open", None, None, MANUAL, S.DEFAULT_CLOSED, False),
    ("the descriptor opens a new channel", None, True, MANUAL, S.SERVER_BOOTSTRAP, False),
    ("an explicit initiallyOpen false stays closed", None, False, MANUAL, S.DEFAULT_CLOSED, False),
    ("auto policy opens a new channel and announces it", None, None, AUTO, S.SUBSCRIPTION_POLICY,
     True),
    ("an allow-listed id opens a new channel", None, None, SubscriptionPolicy.allowing(["g"]),
     S.SUBSCRIPTION_POLICY, True),
    ("an allow-listed raw id opens a new channel", None, None,
     SubscriptionPolicy.allowing(["raw-7"]), S.SUBSCRIPTION_POLICY, True),
    ("an allow-list that names neither leaves it closed", None, None,
     SubscriptionPolicy.allowing(["h"]), S.DEFAULT_CLOSED, False),
    ("initiallyOpen wins over the policy and is not announced", None, True, AUTO,
     S.SERVER_BOOTSTRAP, False),
    ("the policy lifts default-closed", (CLOSED, S.DEFAULT_CLOSED), None, AUTO,
     S.SUBSCRIPTION_POLICY, True),
    ("the descriptor lifts default-closed", (CLOSED, S.DEFAULT_CLOSED), True, MANUAL,
     S.SERVER_BOOTSTRAP, False),
    ("nothing lifts default-closed under a manual policy", (CLOSED, S.DEFAULT_CLOSED), None,
     MANUAL, None, False),
    ("the policy never reopens the agent's close", (CLOSED, S.AGENT_TOOL), True, AUTO, None,
     False),
    ("the policy never reopens a decline", (CLOSED, S.INVITATION_DECLINED), None, AUTO, None,
     False),
    ("the policy never reopens a module close", (CLOSED, S.MODULE_TOOL), True, AUTO, None, False),
    ("the policy never reopens a machine close recorded over an open",
     (CLOSED, S.SUBSCRIPTION_GC), None, AUTO, None, False),
    ("an open record stays as it is", (OPEN, S.OPENED_BY_DELIVERY), None, AUTO, None, False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("seed", "initially_open", "policy", "expect", "announce"),
    [case[1:] for case in INITIAL],
    ids=[case[0] for case in INITIAL],
)
def test_an_admitted_channel_gets_its_initial_state(
    seed: Seed,
    initially_open: bool | None,
    policy: SubscriptionPolicy,
    expect: Source | None,
    announce: bool,
) -> None:
    book = LifecycleBook()
    if seed is not None:
        book.apply(DesiredStateSet(G, seed[0], seed[1], 0.0))
    before = book.record(G)
    admission = book.ensure_initial(
        G, 1.0, policy=policy, initially_open=initially_open, raw_id="raw-7"
    )
    assert admission.announce is announce
    if expect is None:
        assert isinstance(admission.decision, NoChange)
        assert book.record(G) is before
        return
    assert isinstance(admission.decision, Append)
    event = admission.decision.event
    state = CLOSED if expect is S.DEFAULT_CLOSED else OPEN
    assert event == DesiredStateSet(G, state, expect, 1.0)


def test_a_tuned_out_channel_keeps_its_tune_out_when_admitted_again() -> None:
    book = LifecycleBook()
    book.apply(TuneOutStarted(TuneOutEpoch("e", "ada", TuneOutScope(G), 0.0, 5), S.AGENT_TOOL))
    admission = book.ensure_initial(G, 1.0, policy=AUTO, initially_open=True)
    assert isinstance(admission.decision, NoChange)
    assert not admission.announce


def test_a_policy_open_is_announced_once_ever_even_across_a_restart() -> None:
    book = LifecycleBook()
    first = book.ensure_initial(G, 1.0, policy=AUTO)
    assert first.announce
    assert isinstance(first.decision, Append)
    book.apply(first.decision.event)
    assert not book.ensure_initial(G, 2.0, policy=AUTO).announce
    rebooted = LifecycleBook.replay([first.decision.event])
    assert not rebooted.ensure_initial(G, 3.0, policy=AUTO).announce


# -- put-back ------------------------------------------------------------------------------------


def opened_over(displaced: DesiredRecord | None) -> tuple[LifecycleBook, DesiredRecord]:
    """A book where speech just recorded ``open/opened-by-delivery`` over ``displaced``."""
    book = LifecycleBook()
    if displaced is not None:
        book.apply(DesiredStateSet(G, displaced.state, displaced.source, 0.0, displaced.by_agent))
    written = book.apply(DesiredStateSet(G, OPEN, S.OPENED_BY_DELIVERY, 1.0))
    assert written is not None
    return book, written


DEFAULT = DesiredRecord(CLOSED, S.DEFAULT_CLOSED, 0.0)
GC = DesiredRecord(CLOSED, S.SUBSCRIPTION_GC, 0.0)


@pytest.mark.parametrize(
    ("displaced", "initially_open", "policy", "expect", "selected"),
    [
        (DEFAULT, None, MANUAL, (CLOSED, S.DEFAULT_CLOSED), None),
        (None, None, MANUAL, (CLOSED, S.DEFAULT_CLOSED), None),
        (GC, None, MANUAL, (CLOSED, S.SUBSCRIPTION_GC), None),
        (GC, True, AUTO, (CLOSED, S.SUBSCRIPTION_GC), None),
        (DEFAULT, True, MANUAL, (OPEN, S.SERVER_BOOTSTRAP), SelectedForOpening.ANNOUNCEMENT),
        (DEFAULT, None, AUTO, (OPEN, S.SUBSCRIPTION_POLICY), SelectedForOpening.POLICY),
        (None, None, AUTO, (OPEN, S.SUBSCRIPTION_POLICY), SelectedForOpening.POLICY),
    ],
    ids=[
        "default-closed comes back",
        "no record comes back as default-closed",
        "a machine close comes back",
        "a machine close is not lifted by the policy",
        "the announcement keeps it selected for opening",
        "the policy keeps it selected for opening",
        "the policy keeps a channel without a record selected",
    ],
)
def test_a_failed_speech_open_puts_back_the_default_it_displaced(
    displaced: DesiredRecord | None,
    initially_open: bool | None,
    policy: SubscriptionPolicy,
    expect: tuple[DesiredState, Source],
    selected: SelectedForOpening | None,
) -> None:
    book, written = opened_over(displaced)
    answer = book.put_back(G, written, displaced, 2.0, policy=policy, initially_open=initially_open)
    assert answer.selected is selected
    assert isinstance(answer.decision, Append)
    assert answer.decision.event == DesiredStateSet(G, expect[0], expect[1], 2.0)


def test_a_decision_made_during_the_round_trip_is_not_put_back() -> None:
    book, written = opened_over(DEFAULT)
    book.apply(DesiredStateSet(G, OPEN, S.AGENT_TOOL, 1.5, "ada"))
    answer = book.put_back(G, written, DEFAULT, 2.0, policy=MANUAL)
    assert isinstance(answer.decision, NoChange)
    assert answer.decision.reason is NoChangeReason.DECIDED_MEANWHILE
    assert answer.selected is None


def test_an_equal_record_written_again_still_counts_as_a_decision_meanwhile() -> None:
    book, written = opened_over(DEFAULT)
    book.apply(DesiredStateSet(G, OPEN, S.OPENED_BY_DELIVERY, 1.0))
    assert book.record(G) == written
    answer = book.put_back(G, written, DEFAULT, 2.0, policy=MANUAL)
    assert isinstance(answer.decision, NoChange)


def test_an_open_never_displaces_a_tune_out_so_putting_one_back_is_an_error() -> None:
    book, written = opened_over(None)
    held = DesiredRecord(DesiredState.TUNED_OUT, S.AGENT_TOOL, 0.0, "ada", "e")
    with pytest.raises(ValueError, match="tuned-out"):
        book.put_back(G, written, held, 2.0, policy=MANUAL)
