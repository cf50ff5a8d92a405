"""Speech into closed channels: the predicates and the decisions of §5.7, §8.3 and §8.6."""

from __future__ import annotations

import pytest

from switchboard.lifecycle.rules.book import SelectedForOpening
from switchboard.lifecycle.rules.decisions import DesiredRecord, DesiredState, Source
from switchboard.lifecycle.rules.reconcile import LifecycleErrorKind
from switchboard.lifecycle.rules.speech import (
    ChannelFacts,
    ClosedByAgent,
    Reach,
    SendAnswer,
    SpeechBlock,
    SpeechStep,
    after_speech_failure,
    answered_elsewhere_text,
    close_decided,
    close_stands,
    closed_by_agent,
    lifecycle_withheld,
    lifecycle_withheld_text,
    plan_send_open,
    plan_speech,
    send_open_outcome,
    speech_leaves_as_it_stands,
    speech_leaves_closed,
    speech_opens,
)

S = Source


def rec(state: str, source: Source) -> DesiredRecord:
    epoch = "e1" if state == "tuned-out" else None
    return DesiredRecord(DesiredState(state), source, 0.0, None, epoch)


AGENT_CLOSED = rec("closed", S.AGENT_TOOL)
DECLINED = rec("closed", S.INVITATION_DECLINED)
MODULE_CLOSED = rec("closed", S.MODULE_TOOL)
GC_CLOSED = rec("closed", S.SUBSCRIPTION_GC)
DEFAULT = rec("closed", S.DEFAULT_CLOSED)
OPENED = rec("open", S.AGENT_TOOL)
TUNED = rec("tuned-out", S.AGENT_TOOL)

CLOSED_TRANSPORT = ChannelFacts()
OPEN_TRANSPORT = ChannelFacts(transport_open=True)
WITHHELD = ChannelFacts(directs_lifecycle=False)

# (case, record, facts, expected step, open source when opening first)
SPEECH: list[tuple[str, DesiredRecord | None, ChannelFacts, SpeechStep, Source | None]] = [
    ("the agent's close: words go in as it stands", AGENT_CLOSED, CLOSED_TRANSPORT,
     SpeechStep.SEND_AS_IT_STANDS, None),
    ("a decline: words go in as it stands", DECLINED, CLOSED_TRANSPORT,
     SpeechStep.SEND_AS_IT_STANDS, None),
    ("a module's close: words go in as it stands", MODULE_CLOSED, CLOSED_TRANSPORT,
     SpeechStep.SEND_AS_IT_STANDS, None),
    ("a machine close: speech opens it first", GC_CLOSED, CLOSED_TRANSPORT,
     SpeechStep.OPEN_FIRST, S.OPENED_BY_DELIVERY),
    ("default-closed: speech opens it first", DEFAULT, CLOSED_TRANSPORT, SpeechStep.OPEN_FIRST,
     S.OPENED_BY_DELIVERY),
    ("no record and closed: speech opens it first", None, CLOSED_TRANSPORT,
     SpeechStep.OPEN_FIRST, S.OPENED_BY_DELIVERY),
    ("no record and open: words go in", None, OPEN_TRANSPORT, SpeechStep.SEND, None),
    ("open and desired open: words go in", OPENED, OPEN_TRANSPORT, SpeechStep.SEND, None),
    ("desired open but not open yet: only the transport opens", OPENED, CLOSED_TRANSPORT,
     SpeechStep.OPEN_FIRST, None),
    ("tuned out and not open: opened for its traffic, tune-out kept", TUNED, CLOSED_TRANSPORT,
     SpeechStep.OPEN_FIRST, None),
    ("tuned out and open: words go in", TUNED, OPEN_TRANSPORT, SpeechStep.SEND, None),
    ("a machine close that failed (still open): speech reopens it", GC_CLOSED, OPEN_TRANSPORT,
     SpeechStep.OPEN_FIRST, S.OPENED_BY_DELIVERY),
    ("the agent's close that failed (still open): as it stands", AGENT_CLOSED, OPEN_TRANSPORT,
     SpeechStep.SEND_AS_IT_STANDS, None),
    ("lifecycle withheld and closed: as it stands", DEFAULT, WITHHELD,
     SpeechStep.SEND_AS_IT_STANDS, None),
    ("lifecycle withheld and open: words go in", None,
     ChannelFacts(transport_open=True, directs_lifecycle=False), SpeechStep.SEND, None),
    ("queued lifecycle work: wait first", DEFAULT, ChannelFacts(lifecycle_pending=True),
     SpeechStep.WAIT, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("record", "facts", "step", "source"),
    [case[1:] for case in SPEECH],
    ids=[case[0] for case in SPEECH],
)
def test_speech_into_a_channel_opens_it_only_when_nobody_decided_it_closed(
    record: DesiredRecord | None, facts: ChannelFacts, step: SpeechStep, source: Source | None
) -> None:
    plan = plan_speech(record, facts)
    assert plan.step is step
    assert plan.open_source is source
    assert plan.block is None
    if step is not SpeechStep.WAIT:  # the predicate ignores queued work; the plan waits first
        assert speech_opens(record, facts) is (step is SpeechStep.OPEN_FIRST)


def test_words_go_in_only_after_the_open_they_asked_for_has_taken() -> None:
    plan = plan_speech(GC_CLOSED, CLOSED_TRANSPORT)
    assert plan.step is SpeechStep.OPEN_FIRST
    recorded = rec("open", S.OPENED_BY_DELIVERY)
    # Recorded but the transport not open yet: the words still wait for the open.
    assert plan_speech(recorded, CLOSED_TRANSPORT).step is SpeechStep.OPEN_FIRST
    assert plan_speech(recorded, ChannelFacts(lifecycle_pending=True)).step is SpeechStep.WAIT
    assert plan_speech(recorded, OPEN_TRANSPORT).step is SpeechStep.SEND


def test_an_explicit_sends_reply_path_opens_with_its_own_source() -> None:
    plan = plan_speech(DEFAULT, CLOSED_TRANSPORT, open_source=S.OPENED_BY_REPLY)
    assert plan.open_source is S.OPENED_BY_REPLY


@pytest.mark.parametrize(
    ("record", "facts", "refusal"),
    [
        (DEFAULT, ChannelFacts(registered=False), SpeechBlock.NOT_REGISTERED),
        (OPENED, ChannelFacts(transport_open=True, inbound_only=True), SpeechBlock.INBOUND_ONLY),
        (AGENT_CLOSED, ChannelFacts(answered_elsewhere=True), SpeechBlock.ANSWERED_ELSEWHERE),
        (
            AGENT_CLOSED,
            ChannelFacts(transport_open=True, answered_elsewhere=True),
            SpeechBlock.ANSWERED_ELSEWHERE,
        ),
    ],
    ids=[
        "an unregistered channel posts nothing",
        "an inbound-only channel posts nothing and opens nothing",
        "words as it stands into a channel answered elsewhere are refused",
        "a standing close counts as not open for the answered-elsewhere check",
    ],
)
def test_speech_is_refused_where_its_words_could_not_land_safely(
    record: DesiredRecord, facts: ChannelFacts, refusal: SpeechBlock
) -> None:
    plan = plan_speech(record, facts)
    assert plan.step is SpeechStep.REFUSE
    assert plan.block is refusal


def test_a_channel_answered_elsewhere_that_speech_opens_gets_the_open_first() -> None:
    plan = plan_speech(DEFAULT, ChannelFacts(answered_elsewhere=True))
    assert plan.step is SpeechStep.OPEN_FIRST


def test_an_open_channel_answered_elsewhere_before_takes_the_words() -> None:
    plan = plan_speech(OPENED, ChannelFacts(transport_open=True, answered_elsewhere=True))
    assert plan.step is SpeechStep.SEND


def test_words_waiting_behind_an_open_go_in_when_the_agent_closes_the_channel_meanwhile() -> None:
    plan = after_speech_failure(
        AGENT_CLOSED, ChannelFacts(lifecycle_pending=True), converge_failure=False
    )
    assert plan.step is SpeechStep.SEND_AS_IT_STANDS


def test_words_are_refused_when_the_wait_failed_because_the_address_kept_changing() -> None:
    plan = after_speech_failure(AGENT_CLOSED, CLOSED_TRANSPORT, converge_failure=True)
    assert plan.step is SpeechStep.REFUSE
    assert plan.block is SpeechBlock.PREVENTED


def test_words_are_refused_after_a_failed_open_of_a_channel_speech_must_open() -> None:
    plan = after_speech_failure(DEFAULT, CLOSED_TRANSPORT, converge_failure=False)
    assert plan.block is SpeechBlock.PREVENTED


# -- predicates ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("directs", "reach", "withheld"),
    [
        (False, Reach.UP, True),
        (True, Reach.UP, False),
        (False, Reach.CONNECTING, False),
        (False, Reach.RECONNECTING, False),
        (False, Reach.GONE, False),
    ],
)
def test_the_lifecycle_counts_as_withheld_only_on_a_connector_that_is_up(
    directs: bool, reach: Reach, withheld: bool
) -> None:
    assert lifecycle_withheld(ChannelFacts(directs_lifecycle=directs, reach=reach)) is withheld


def test_a_close_stands_only_where_the_host_directs_the_lifecycle() -> None:
    assert close_stands(GC_CLOSED, CLOSED_TRANSPORT)
    assert not close_stands(GC_CLOSED, WITHHELD)
    assert not close_stands(OPENED, CLOSED_TRANSPORT)
    assert not close_stands(None, CLOSED_TRANSPORT)


def test_only_deliberate_closes_count_as_decided() -> None:
    assert [close_decided(r) for r in (AGENT_CLOSED, DECLINED, MODULE_CLOSED)] == [True] * 3
    assert [close_decided(r) for r in (GC_CLOSED, DEFAULT, OPENED, None)] == [False] * 4


def test_speech_leaves_closed_a_registered_closed_channel_it_goes_into_as_it_stands() -> None:
    assert speech_leaves_closed(AGENT_CLOSED, CLOSED_TRANSPORT)
    assert speech_leaves_closed(DEFAULT, WITHHELD)
    assert not speech_leaves_closed(AGENT_CLOSED, OPEN_TRANSPORT)
    assert not speech_leaves_closed(GC_CLOSED, CLOSED_TRANSPORT)
    assert not speech_leaves_closed(AGENT_CLOSED, ChannelFacts(registered=False))
    assert speech_leaves_as_it_stands(MODULE_CLOSED, OPEN_TRANSPORT)


@pytest.mark.parametrize(
    ("record", "facts", "answer"),
    [
        (AGENT_CLOSED, CLOSED_TRANSPORT, ClosedByAgent.CLOSED),
        (DECLINED, CLOSED_TRANSPORT, ClosedByAgent.DECLINED),
        (MODULE_CLOSED, CLOSED_TRANSPORT, None),
        (GC_CLOSED, CLOSED_TRANSPORT, None),
        (OPENED, OPEN_TRANSPORT, None),
        (AGENT_CLOSED, ChannelFacts(registered=False), None),
        (None, CLOSED_TRANSPORT, None),
    ],
)
def test_closed_by_agent_names_only_the_agents_own_close_or_decline(
    record: DesiredRecord | None, facts: ChannelFacts, answer: ClosedByAgent | None
) -> None:
    assert closed_by_agent(record, facts) is answer


# -- explicit send tools (§8.6) ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "facts", "answer", "opening"),
    [
        (AGENT_CLOSED, CLOSED_TRANSPORT, SendAnswer.STAYS_CLOSED, False),
        (AGENT_CLOSED, OPEN_TRANSPORT, SendAnswer.STAYS_CLOSED, False),
        (DEFAULT, CLOSED_TRANSPORT, None, True),
        (None, CLOSED_TRANSPORT, None, True),
        (GC_CLOSED, OPEN_TRANSPORT, None, True),
        (OPENED, CLOSED_TRANSPORT, None, False),
        (TUNED, CLOSED_TRANSPORT, None, False),
        (OPENED, OPEN_TRANSPORT, SendAnswer.ALREADY_OPEN, False),
        (TUNED, OPEN_TRANSPORT, SendAnswer.ALREADY_OPEN, False),
        (DEFAULT, WITHHELD, SendAnswer.STAYS_CLOSED, False),
        (
            None,
            ChannelFacts(transport_open=True, directs_lifecycle=False),
            SendAnswer.ALREADY_OPEN,
            False,
        ),
    ],
    ids=[
        "the agent's close stays closed with no open",
        "the agent's close stands even where its close failed",
        "a default-closed placeholder is opened, changing the desired state",
        "a channel without a record is opened",
        "a machine-closed channel whose close failed is opened again",
        "a desired-open channel not open yet is opened without a new decision",
        "a tuned-out channel is opened for its traffic",
        "an open channel is already open",
        "an open tuned-out channel is already open",
        "a withheld lifecycle leaves a closed channel closed",
        "a withheld lifecycle leaves an open channel open",
    ],
)
def test_an_explicit_send_opens_its_channel_only_where_speech_would(
    record: DesiredRecord | None, facts: ChannelFacts, answer: SendAnswer | None, opening: bool
) -> None:
    plan = plan_send_open(record, facts)
    assert plan.answer is answer
    assert plan.opening is opening


def test_a_send_open_that_took_answers_opened_or_already_open() -> None:
    opened = send_open_outcome(OPENED, OPEN_TRANSPORT, opening=True, opened=True)
    assert opened.answer is SendAnswer.OPENED
    kept = send_open_outcome(OPENED, OPEN_TRANSPORT, opening=False, opened=True)
    assert kept.answer is SendAnswer.ALREADY_OPEN


def test_a_failed_send_open_says_whether_it_was_opening_and_why_it_stays_selected() -> None:
    failed = send_open_outcome(
        DEFAULT,
        CLOSED_TRANSPORT,
        opening=True,
        opened=False,
        selected=SelectedForOpening.UNRECORDED,
    )
    assert failed.answer is SendAnswer.OPEN_FAILED
    assert failed.opening
    assert failed.selected is SelectedForOpening.UNRECORDED


def test_a_send_open_overtaken_by_a_decision_is_no_longer_opening() -> None:
    failed = send_open_outcome(
        OPENED, CLOSED_TRANSPORT, opening=True, opened=False, error=LifecycleErrorKind.OVERTAKEN
    )
    assert failed.answer is SendAnswer.OPEN_FAILED
    assert not failed.opening


def test_a_send_open_refused_after_the_agent_closed_the_channel_gives_way() -> None:
    outcome = send_open_outcome(AGENT_CLOSED, CLOSED_TRANSPORT, opening=True, opened=False)
    assert outcome.answer is SendAnswer.STAYS_CLOSED


def test_a_converge_failure_never_gives_way_even_after_the_agents_close() -> None:
    by_kind = send_open_outcome(
        AGENT_CLOSED,
        CLOSED_TRANSPORT,
        opening=True,
        opened=False,
        error=LifecycleErrorKind.CONVERGE,
    )
    by_cause = send_open_outcome(
        AGENT_CLOSED, CLOSED_TRANSPORT, opening=True, opened=False, converge_failure=True
    )
    assert by_kind.answer is by_cause.answer is SendAnswer.OPEN_FAILED


def test_the_agent_is_told_which_connector_keeps_its_channels_as_it_chooses() -> None:
    text = lifecycle_withheld_text("zulip:1")
    assert '"zulip:1"' in text
    assert "channels.lifecycle" in text
    assert "as it chooses" in text


def test_the_answered_elsewhere_refusal_names_the_connector_and_what_clears_it() -> None:
    text = answered_elsewhere_text("a")
    assert '"a"' in text
    assert "different channel" in text
    assert "answered for this channel" in text
