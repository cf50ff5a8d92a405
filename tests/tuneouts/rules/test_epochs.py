"""Tune-out epochs (§5.3, §5.4, §6): start, divert, refuse, wake, expire, cancel, replay."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard.channels.ref import ChannelRef
from switchboard.lifecycle.rules.book import LifecycleBook
from switchboard.lifecycle.rules.decisions import (
    Append,
    DesiredRecord,
    DesiredState,
    NoChange,
    NoChangeReason,
    ScopeKind,
    Source,
    TuneOutScope,
    Vetoed,
    VetoReason,
)
from switchboard.lifecycle.rules.events import (
    DecisionEvent,
    DesiredStateSet,
    EndReason,
    TuneOutEnded,
    TuneOutStarted,
    TuneOutWake,
)
from switchboard.tuneouts.rules.epochs import ActiveTuneOut, TuneOutBook, TuneOutTerms

G = ChannelRef("a", "g")
H = ChannelRef("a", "h")
OPEN, CLOSED, TUNED_OUT = DesiredState.OPEN, DesiredState.CLOSED, DesiredState.TUNED_OUT


class Host:
    """Both books and the log, played the way the host plays them: append, then apply."""

    def __init__(self) -> None:
        self.lifecycle = LifecycleBook()
        self.tuneouts = TuneOutBook()
        self.log: list[DecisionEvent] = []

    def commit(self, answer: object) -> ActiveTuneOut | None:
        assert isinstance(answer, Append), answer
        self.log.append(answer.event)
        self.lifecycle.apply(answer.event)
        return self.tuneouts.apply(answer.event)

    def decide(self, ref: ChannelRef, state: DesiredState, source: Source) -> None:
        self.commit(self.lifecycle.propose(ref, state, source, 0.0))

    def start(
        self,
        epoch_id: str,
        scope: TuneOutScope,
        *,
        owner: str = "ada",
        now: float = 10.0,
        terms: TuneOutTerms | None = None,
    ) -> Append[TuneOutStarted] | Vetoed:
        return self.tuneouts.start(
            epoch_id, owner, scope, now, lifecycle=self.lifecycle, terms=terms
        )


def test_a_one_channel_tune_out_holds_the_channel_open_and_diverts_only_its_owner() -> None:
    host = Host()
    host.decide(G, OPEN, Source.AGENT_TOOL)
    answer = host.start("e1", TuneOutScope(G), terms=TuneOutTerms(reader="reader"))
    assert isinstance(answer, Append)
    assert answer.event.resume == DesiredRecord(OPEN, Source.AGENT_TOOL, 0.0)
    host.commit(answer)
    record = host.lifecycle.record(G)
    assert record == DesiredRecord(TUNED_OUT, Source.AGENT_TOOL, 10.0, "ada", "e1")
    held = host.tuneouts.diverts(G, "ada")
    assert held is not None
    assert held.epoch.reader == "reader"
    assert host.tuneouts.diverts(G, "bob") is None
    assert host.tuneouts.diverts(H, "ada") is None
    assert host.tuneouts.covers(G)
    assert not host.tuneouts.covers(H)


@pytest.mark.parametrize(
    ("state", "source", "reason"),
    [
        (OPEN, Source.AGENT_TOOL, VetoReason.TUNED_OUT),
        (CLOSED, Source.AGENT_TOOL, VetoReason.TUNED_OUT),
        (CLOSED, Source.INVITATION_DECLINED, VetoReason.TUNED_OUT),
        (CLOSED, Source.MODULE_TOOL, VetoReason.TUNED_OUT),
        (CLOSED, Source.SUBSCRIPTION_GC, VetoReason.EXPLICIT_OPEN),
        (CLOSED, Source.HOUSEKEEPING, VetoReason.EXPLICIT_OPEN),
    ],
)
def test_channel_tools_and_machine_closes_are_refused_on_a_tuned_out_channel(
    state: DesiredState, source: Source, reason: VetoReason
) -> None:
    host = Host()
    host.commit(host.start("e1", TuneOutScope(G)))
    answer = host.lifecycle.propose(
        G, state, source, 11.0, covered_by_tune_out=host.tuneouts.covers(G)
    )
    assert isinstance(answer, Vetoed)
    assert answer.reason is reason


def test_a_cancel_restores_the_record_the_tune_out_displaced_and_hands_back_the_epoch() -> None:
    host = Host()
    host.decide(G, OPEN, Source.SUBSCRIPTION_POLICY)
    host.commit(host.start("e1", TuneOutScope(G)))
    answer = host.tuneouts.cancel("e1", 20.0, by_agent="ada")
    assert isinstance(answer, Append)
    assert answer.event.reason is EndReason.CANCELLED
    assert answer.event.by_agent == "ada"
    ended = host.commit(answer)
    assert ended is not None
    assert ended.epoch.epoch_id == "e1"
    assert host.lifecycle.record(G) == DesiredRecord(OPEN, Source.SUBSCRIPTION_POLICY, 0.0)
    assert host.tuneouts.on_channel(G) is None
    assert len(host.tuneouts) == 0
    # With the tune-out gone the agent's tools work again.
    assert isinstance(host.lifecycle.propose(G, CLOSED, Source.AGENT_TOOL, 21.0), Append)


def test_a_tune_out_of_a_channel_without_a_record_leaves_it_without_one_when_it_ends() -> None:
    host = Host()
    host.commit(host.start("e1", TuneOutScope(G)))
    assert host.lifecycle.state(G) is TUNED_OUT
    host.commit(host.tuneouts.cancel("e1", 20.0))
    assert host.lifecycle.record(G) is None


def test_a_tune_out_of_a_closed_channel_goes_back_to_the_close_when_it_ends() -> None:
    host = Host()
    host.decide(G, CLOSED, Source.AGENT_TOOL)
    host.commit(host.start("e1", TuneOutScope(G)))
    host.commit(host.tuneouts.cancel("e1", 20.0))
    assert host.lifecycle.record(G) == DesiredRecord(CLOSED, Source.AGENT_TOOL, 0.0)


def test_re_entering_replaces_the_epoch_resets_wakes_and_keeps_the_original_record() -> None:
    host = Host()
    host.decide(G, OPEN, Source.AGENT_TOOL)
    host.commit(host.start("e1", TuneOutScope(G)))
    host.commit(host.tuneouts.wake("e1", 11.0))
    answer = host.start("e2", TuneOutScope(G), now=12.0)
    assert isinstance(answer, Append)
    assert answer.event.replaces == "e1"
    assert answer.event.resume == DesiredRecord(OPEN, Source.AGENT_TOOL, 0.0)
    replaced = host.commit(answer)
    assert replaced is not None
    assert replaced.epoch.epoch_id == "e1"
    assert replaced.wake_count == 1
    held = host.tuneouts.on_channel(G)
    assert held is not None
    assert (held.epoch.epoch_id, held.wake_count) == ("e2", 0)
    assert host.tuneouts.active("e1") is None


def test_another_agents_tune_out_holds_the_channel_against_a_second_owner() -> None:
    host = Host()
    host.commit(host.start("e1", TuneOutScope(G)))
    answer = host.start("e2", TuneOutScope(G), owner="bob")
    assert isinstance(answer, Vetoed)
    assert answer.reason is VetoReason.TUNED_OUT_BY_ANOTHER


def test_an_all_except_tune_out_diverts_every_other_channel_and_records_no_state() -> None:
    host = Host()
    host.decide(H, OPEN, Source.SUBSCRIPTION_POLICY)
    host.commit(host.start("e1", TuneOutScope(G, ScopeKind.ALL_EXCEPT)))
    assert host.lifecycle.record(G) is None
    assert host.lifecycle.state(H) is OPEN
    assert host.tuneouts.diverts(H, "ada") is not None
    assert host.tuneouts.diverts(ChannelRef("z", "new"), "ada") is not None
    assert host.tuneouts.diverts(G, "ada") is None
    assert host.tuneouts.diverts(H, "bob") is None
    assert host.tuneouts.covers(H)
    assert not host.tuneouts.covers(G)
    gc = host.lifecycle.propose(
        H, CLOSED, Source.SUBSCRIPTION_GC, 11.0, covered_by_tune_out=host.tuneouts.covers(H)
    )
    assert isinstance(gc, Vetoed)
    assert gc.reason is VetoReason.EXPLICIT_OPEN
    assert isinstance(host.lifecycle.propose(H, CLOSED, Source.AGENT_TOOL, 11.0), Append)


def test_two_owners_all_except_tune_outs_cover_a_channel_until_both_leave_it_out() -> None:
    host = Host()
    host.commit(host.start("e1", TuneOutScope(G, ScopeKind.ALL_EXCEPT)))
    host.commit(host.start("e2", TuneOutScope(H, ScopeKind.ALL_EXCEPT), owner="bob"))
    assert host.tuneouts.covers(G)  # bob's epoch covers G
    assert host.tuneouts.covers(H)  # ada's epoch covers H
    host.commit(host.tuneouts.cancel("e2", 11.0))
    assert not host.tuneouts.covers(G)
    assert host.tuneouts.covers(H)


def test_a_second_all_except_tune_out_of_the_same_owner_replaces_the_first() -> None:
    host = Host()
    host.commit(host.start("e1", TuneOutScope(G, ScopeKind.ALL_EXCEPT)))
    answer = host.start("e2", TuneOutScope(H, ScopeKind.ALL_EXCEPT))
    assert isinstance(answer, Append)
    assert answer.event.replaces == "e1"
    host.commit(answer)
    assert host.tuneouts.all_except_of("ada") is host.tuneouts.active("e2")
    assert host.tuneouts.covers(G)
    assert not host.tuneouts.covers(H)


def test_the_first_wake_past_the_budget_ends_the_tune_out() -> None:
    host = Host()
    host.commit(host.start("e1", TuneOutScope(G), terms=TuneOutTerms(max_wakes=2)))
    for count in (1, 2):
        wake = host.tuneouts.wake("e1", 10.0 + count)
        assert isinstance(wake, Append)
        assert wake.event == TuneOutWake("e1", count, 10.0 + count)
        host.commit(wake)
    past = host.tuneouts.wake("e1", 13.0)
    assert isinstance(past, Append)
    assert isinstance(past.event, TuneOutEnded)
    assert past.event.reason is EndReason.WAKE_BUDGET
    ended = host.commit(past)
    assert ended is not None
    assert ended.wake_count == 2


def test_a_wake_budget_of_zero_ends_the_tune_out_at_its_first_wake() -> None:
    host = Host()
    host.commit(host.start("e1", TuneOutScope(G), terms=TuneOutTerms(max_wakes=0)))
    answer = host.tuneouts.wake("e1", 11.0)
    assert isinstance(answer, Append)
    assert isinstance(answer.event, TuneOutEnded)


def test_a_tune_out_ends_by_itself_when_its_duration_runs_out() -> None:
    host = Host()
    host.commit(host.start("e1", TuneOutScope(G), terms=TuneOutTerms(duration=60.0)))
    host.commit(host.start("e2", TuneOutScope(H), now=20.0, terms=TuneOutTerms(duration=30.0)))
    host.commit(host.start("e3", TuneOutScope(ChannelRef("b", "x"))))
    assert host.tuneouts.next_deadline() == 50.0
    assert host.tuneouts.expire(49.9) == ()
    due = host.tuneouts.expire(70.0)
    assert [a.event.epoch_id for a in due] == ["e2", "e1"]
    assert all(a.event.reason is EndReason.EXPIRED for a in due)
    for answer in due:
        host.commit(answer)
    assert host.tuneouts.next_deadline() is None
    assert [held.epoch.epoch_id for held in host.tuneouts.epochs()] == ["e3"]


def test_a_wake_at_or_after_the_deadline_ends_the_tune_out_as_expired() -> None:
    host = Host()
    host.commit(host.start("e1", TuneOutScope(G), terms=TuneOutTerms(duration=5.0)))
    answer = host.tuneouts.wake("e1", 15.0)
    assert isinstance(answer, Append)
    assert isinstance(answer.event, TuneOutEnded)
    assert answer.event.reason is EndReason.EXPIRED


def test_cancelling_or_waking_an_epoch_not_in_effect_changes_nothing() -> None:
    book = TuneOutBook()
    for answer in (book.cancel("nope", 1.0), book.wake("nope", 1.0)):
        assert isinstance(answer, NoChange)
        assert answer.reason is NoChangeReason.NOT_ACTIVE


def test_replay_takes_wake_counts_only_from_the_epoch_in_effect() -> None:
    host = Host()
    first = host.start("E1", TuneOutScope(G))
    assert isinstance(first, Append)
    second = host.tuneouts.start("E2", "ada", TuneOutScope(G), 20.0, lifecycle=LifecycleBook())
    assert isinstance(second, Append)
    log: list[DecisionEvent] = [
        first.event,
        TuneOutWake("E1", 3, 11.0),
        TuneOutStarted(second.event.epoch, Source.AGENT_TOOL, None, "E1"),
        TuneOutWake("E1", 5, 21.0),
    ]
    tuneouts = TuneOutBook.replay(log)
    lifecycle = LifecycleBook.replay(log)
    held = tuneouts.on_channel(G)
    assert held is not None
    assert (held.epoch.epoch_id, held.wake_count) == ("E2", 0)
    assert tuneouts.active("E1") is None
    record = lifecycle.record(G)
    assert record is not None
    assert (record.state, record.epoch_id) == (TUNED_OUT, "E2")


def test_a_wake_after_its_epoch_ended_is_ignored_on_replay() -> None:
    host = Host()
    host.commit(host.start("e1", TuneOutScope(G)))
    host.commit(host.tuneouts.cancel("e1", 11.0))
    host.log.append(TuneOutWake("e1", 4, 12.0))
    assert TuneOutBook.replay(host.log) == TuneOutBook()
    assert LifecycleBook.replay(host.log) == host.lifecycle


def test_a_stale_end_does_not_touch_a_later_epochs_record() -> None:
    host = Host()
    host.commit(host.start("e1", TuneOutScope(G)))
    stale = host.tuneouts.cancel("e1", 11.0)
    assert isinstance(stale, Append)
    host.commit(host.start("e2", TuneOutScope(G), now=12.0))
    host.commit(stale)  # a late end of e1 (e.g. in a merged log)
    record = host.lifecycle.record(G)
    assert record is not None
    assert record.epoch_id == "e2"
    assert host.tuneouts.on_channel(G) is not None


def test_replaying_the_log_rebuilds_epochs_and_wake_counts() -> None:
    host = Host()
    host.commit(host.start("e1", TuneOutScope(G), terms=TuneOutTerms(max_wakes=9)))
    host.commit(host.start("e2", TuneOutScope(H, ScopeKind.ALL_EXCEPT), owner="bob"))
    host.commit(host.tuneouts.wake("e1", 11.0))
    host.commit(host.tuneouts.wake("e1", 12.0))
    rebuilt = TuneOutBook.replay(host.log)
    assert rebuilt == host.tuneouts
    held = rebuilt.active("e1")
    assert held is not None
    assert held.wake_count == 2
    assert rebuilt.covers(G)
    assert LifecycleBook.replay(host.log) == host.lifecycle


def test_a_decision_recorded_over_a_tune_out_in_a_foreign_log_ends_it_in_both_books() -> None:
    host = Host()
    host.commit(host.start("e1", TuneOutScope(G)))
    host.log.append(DesiredStateSet(G, CLOSED, Source.AGENT_TOOL, 12.0))
    tuneouts = TuneOutBook.replay(host.log)
    assert tuneouts.on_channel(G) is None
    assert not tuneouts.covers(G)
    assert LifecycleBook.replay(host.log).state(G) is CLOSED


@pytest.mark.parametrize(
    "terms",
    [
        {"backlog_cap": -1},
        {"max_wakes": -1},
        {"duration": 0.0},
        {"duration": -5.0},
        {"cadence_seconds": 0.0},
    ],
)
def test_terms_that_make_no_sense_are_rejected(terms: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must"):
        TuneOutTerms(**terms)


def test_a_start_needs_a_tune_out_source_and_a_fresh_epoch_id() -> None:
    host = Host()
    with pytest.raises(ValueError, match="cannot start"):
        host.tuneouts.start(
            "e1", "ada", TuneOutScope(G), 1.0, lifecycle=host.lifecycle, source=Source.HOUSEKEEPING
        )
    host.commit(host.start("e1", TuneOutScope(G)))
    with pytest.raises(ValueError, match="already"):
        host.start("e1", TuneOutScope(H))


def test_a_module_may_start_a_tune_out_which_machine_closes_still_respect() -> None:
    host = Host()
    answer = host.tuneouts.start(
        "e1", "ada", TuneOutScope(G), 1.0, lifecycle=host.lifecycle, source=Source.MODULE_TOOL
    )
    host.commit(answer)
    gc = host.lifecycle.propose(G, CLOSED, Source.SUBSCRIPTION_GC, 2.0)
    assert isinstance(gc, Vetoed)
    assert gc.reason is VetoReason.TUNED_OUT
