"""Reconciliation planning (§5.6): commands toward the record, bounded retries, honest marks."""

from __future__ import annotations

import pytest

from switchboard.channels.ref import ChannelRef
from switchboard.lifecycle.rules.book import LifecycleBook
from switchboard.lifecycle.rules.decisions import (
    DesiredRecord,
    DesiredState,
    Source,
    TuneOutEpoch,
    TuneOutScope,
)
from switchboard.lifecycle.rules.events import DesiredStateSet, TuneOutStarted
from switchboard.lifecycle.rules.reconcile import (
    MAX_CONVERGE_ATTEMPTS,
    Converged,
    Convergence,
    GaveUp,
    LifecycleCommand,
    LifecycleErrorKind,
    Op,
    ReconcileSkip,
    TransportState,
    command_for,
    judge_close_answer,
    judge_open_answer,
)

R = ChannelRef
OPEN_REC = DesiredRecord(DesiredState.OPEN, Source.AGENT_TOOL, 0.0)
CLOSED_REC = DesiredRecord(DesiredState.CLOSED, Source.AGENT_TOOL, 0.0)
DEFAULT_REC = DesiredRecord(DesiredState.CLOSED, Source.DEFAULT_CLOSED, 0.0)
TUNED_REC = DesiredRecord(DesiredState.TUNED_OUT, Source.AGENT_TOOL, 0.0, "ada", "e")
FRESH = TransportState.fresh()


@pytest.mark.parametrize(
    ("record", "transport", "op"),
    [
        (OPEN_REC, FRESH, Op.OPEN),
        (TUNED_REC, FRESH, Op.OPEN),
        (OPEN_REC, TransportState(open=True), None),
        (CLOSED_REC, FRESH, None),
        (CLOSED_REC, TransportState(open=True), Op.CLOSE),
        (CLOSED_REC, TransportState.fresh(may_be_open=True), Op.CLOSE),
        (DEFAULT_REC, TransportState(failed_close=True), Op.CLOSE),
        (CLOSED_REC, FRESH.open_unanswered(), Op.CLOSE),
        (CLOSED_REC, TransportState(open=True).transport_lost(), Op.CLOSE),
        (None, TransportState(open=True), None),
        (None, FRESH, None),
    ],
    ids=[
        "a desired-open channel is opened",
        "a tuned-out channel is opened for its traffic",
        "an open channel that should be open is left alone",
        "a fresh registration that should be closed needs nothing",
        "an open channel that should be closed is closed",
        "a placeholder or initiallyOpen channel that should be closed is closed",
        "a channel whose close failed is closed again",
        "a channel whose open receipt was lost is closed",
        "a channel whose connection dropped is closed",
        "no record: the host does not direct it",
        "no record and closed: nothing",
    ],
)
def test_the_command_moves_the_transport_toward_the_record(
    record: DesiredRecord | None, transport: TransportState, op: Op | None
) -> None:
    assert command_for(record, transport) is op


def book_of(**records: tuple[DesiredState, Source] | str) -> LifecycleBook:
    book = LifecycleBook()
    for channel, seed in records.items():
        ref = R("s", channel)
        if seed == "tuned-out":
            epoch = TuneOutEpoch(f"e-{channel}", "ada", TuneOutScope(ref), 0.0, 5)
            book.apply(TuneOutStarted(epoch, Source.AGENT_TOOL))
        else:
            assert isinstance(seed, tuple)
            book.apply(DesiredStateSet(ref, seed[0], seed[1], 0.0))
    return book


def test_a_reconnect_opens_what_should_be_open_and_closes_what_should_be_closed_in_order() -> None:
    book = book_of(
        a=(DesiredState.OPEN, Source.SUBSCRIPTION_POLICY),
        b=(DesiredState.CLOSED, Source.AGENT_TOOL),
        c="tuned-out",
        d=(DesiredState.CLOSED, Source.DEFAULT_CLOSED),
    )
    channels = [
        (R("s", "a"), FRESH),
        (R("s", "b"), TransportState.fresh(may_be_open=True)),
        (R("s", "c"), FRESH),
        (R("s", "d"), FRESH),
        (R("s", "unadmitted"), FRESH),
    ]
    plan = Convergence().plan(book, channels, directs_lifecycle=True)
    assert plan.skipped is None
    assert plan.commands == (
        LifecycleCommand(Op.OPEN, R("s", "a"), 1),
        LifecycleCommand(Op.CLOSE, R("s", "b"), 1),
        LifecycleCommand(Op.OPEN, R("s", "c"), 1),
    )
    assert plan.unrecorded == (R("s", "unadmitted"),)


def test_a_connector_without_the_lifecycle_grant_keeps_its_channels_as_it_chooses() -> None:
    book = book_of(a=(DesiredState.OPEN, Source.AGENT_TOOL))
    convergence = Convergence()
    plan = convergence.plan(book, [(R("s", "a"), FRESH)], directs_lifecycle=False)
    assert plan.commands == ()
    assert plan.skipped is ReconcileSkip.LIFECYCLE_NOT_GRANTED
    assert not convergence.in_progress(R("s", "a"))


def test_a_run_whose_target_keeps_moving_gives_up_after_the_attempt_limit() -> None:
    ref = R("s", "a")
    convergence = Convergence()
    record, transport = OPEN_REC, FRESH
    ops = []
    for _ in range(MAX_CONVERGE_ATTEMPTS):
        step = convergence.step(ref, record, transport)
        assert isinstance(step, LifecycleCommand)
        ops.append(step.op)
        # The connector answers, but a decision flipped the record during the round trip.
        if step.op is Op.OPEN:
            transport = judge_open_answer(ref, "a", record, transport).transport
            record = CLOSED_REC
        else:
            transport = judge_close_answer(record, transport).transport
            record = OPEN_REC
    assert convergence.attempts(ref) == MAX_CONVERGE_ATTEMPTS
    assert ops == [Op.OPEN, Op.CLOSE, Op.OPEN, Op.CLOSE]
    gave_up = convergence.step(ref, record, transport)
    assert gave_up == GaveUp(ref, MAX_CONVERGE_ATTEMPTS)
    assert gave_up.kind is LifecycleErrorKind.CONVERGE
    assert not convergence.in_progress(ref)


def test_a_run_that_reaches_the_record_ends_and_forgets_its_count() -> None:
    ref = R("s", "a")
    convergence = Convergence(limit=2)
    step = convergence.step(ref, OPEN_REC, FRESH)
    assert step == LifecycleCommand(Op.OPEN, ref, 1)
    verdict = judge_open_answer(ref, "a", OPEN_REC, FRESH)
    assert verdict.error is None
    assert convergence.step(ref, OPEN_REC, verdict.transport) == Converged(ref)
    assert convergence.attempts(ref) == 0
    assert convergence.step(ref, CLOSED_REC, verdict.transport) == LifecycleCommand(
        Op.CLOSE, ref, 1
    )
    convergence.abandon(ref)
    assert not convergence.in_progress(ref)


def test_planning_a_reconnect_starts_every_channel_on_a_fresh_count() -> None:
    ref = R("s", "a")
    book = book_of(a=(DesiredState.OPEN, Source.AGENT_TOOL))
    convergence = Convergence(limit=1)
    convergence.step(ref, OPEN_REC, FRESH)
    plan = convergence.plan(book, [(ref, FRESH)], directs_lifecycle=True)
    assert plan.commands == (LifecycleCommand(Op.OPEN, ref, 1),)


def test_a_run_needs_at_least_one_attempt() -> None:
    with pytest.raises(ValueError, match="attempt"):
        Convergence(limit=0)


# -- answers -------------------------------------------------------------------------------------


def test_an_open_answered_for_this_channel_confirms_it_and_clears_every_mark() -> None:
    marked = TransportState(unconfirmed=True, failed_close=True, answered_elsewhere=True)
    verdict = judge_open_answer(R("s", "g"), "g", OPEN_REC, marked)
    assert verdict.transport == TransportState(open=True)
    assert verdict.error is None
    assert not verdict.close_next


@pytest.mark.parametrize("answered", ["other", None, 7, ["g"]])
def test_an_open_answered_for_a_different_channel_is_marked_and_nothing_pretends_it_opened(
    answered: object,
) -> None:
    verdict = judge_open_answer(R("s", "g"), answered, OPEN_REC, FRESH)
    assert verdict.error is LifecycleErrorKind.SUBSTITUTED
    assert verdict.transport.answered_elsewhere
    assert not verdict.transport.open
    assert verdict.transport.unconfirmed
    assert not verdict.close_next


def test_a_substituted_answer_for_a_channel_that_should_be_closed_is_followed_by_a_close() -> None:
    verdict = judge_open_answer(R("s", "g"), "other", CLOSED_REC, FRESH)
    assert verdict.close_next
    assert command_for(CLOSED_REC, verdict.transport) is Op.CLOSE


def test_an_open_overtaken_by_a_close_decision_says_so_and_the_run_closes_next() -> None:
    ref = R("s", "g")
    convergence = Convergence()
    convergence.step(ref, OPEN_REC, FRESH)
    verdict = judge_open_answer(ref, "g", CLOSED_REC, FRESH)
    assert verdict.error is LifecycleErrorKind.OVERTAKEN
    assert convergence.step(ref, CLOSED_REC, verdict.transport) == LifecycleCommand(
        Op.CLOSE, ref, 2
    )


def test_a_close_answer_names_no_channel_so_it_keeps_the_answered_elsewhere_mark() -> None:
    before = TransportState(open=True, failed_close=True, answered_elsewhere=True)
    verdict = judge_close_answer(CLOSED_REC, before)
    assert verdict.transport == TransportState(answered_elsewhere=True)
    assert verdict.error is None


def test_a_close_answered_after_a_decision_to_keep_it_open_is_superseded() -> None:
    verdict = judge_close_answer(OPEN_REC, TransportState(open=True))
    assert verdict.error is LifecycleErrorKind.SUPERSEDED
    assert not verdict.transport.open


def test_a_failed_close_is_tracked_so_the_channel_still_counts_as_maybe_open() -> None:
    failed = TransportState(open=True).close_failed()
    assert failed.may_be_open
    assert command_for(CLOSED_REC, failed) is Op.CLOSE
    assert failed.traffic() == TransportState(open=True)


def test_traffic_confirms_the_transport_but_never_clears_answered_elsewhere() -> None:
    marked = TransportState(unconfirmed=True, answered_elsewhere=True)
    assert marked.traffic() == TransportState(open=True, answered_elsewhere=True)


def test_a_definite_open_refusal_changes_nothing_and_a_lost_receipt_leaves_it_unconfirmed() -> None:
    assert FRESH.open_refused() == FRESH
    assert FRESH.open_unanswered() == TransportState(unconfirmed=True)
