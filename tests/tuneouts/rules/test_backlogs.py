"""What an ended tune-out hands over (the capped backlog and its note)."""

from __future__ import annotations

import pytest

from switchboard.channels.ref import ChannelRef
from switchboard.lifecycle.rules.decisions import ScopeKind, Source, TuneOutEpoch, TuneOutScope
from switchboard.lifecycle.rules.events import EndReason
from switchboard.tuneouts.rules.backlogs import deliver_backlog
from switchboard.tuneouts.rules.epochs import ActiveTuneOut

G = ChannelRef("a", "g")
NOTHING: list[str] = []


def ended(cap: int, *, kind: ScopeKind = ScopeKind.CHANNEL, max_wakes: int | None = None) -> (
    ActiveTuneOut
):  # fmt: skip
    epoch = TuneOutEpoch("e1", "ada", TuneOutScope(G, kind), 0.0, cap, max_wakes=max_wakes)
    return ActiveTuneOut(epoch, Source.AGENT_TOOL)


def test_a_backlog_within_the_cap_is_handed_over_whole_to_the_owner() -> None:
    delivery = deliver_backlog(ended(5), EndReason.CANCELLED, ["m1", "m2"], shown='"g"')
    assert delivery.recipient == "ada"
    assert delivery.messages == ("m1", "m2")
    assert delivery.held_back == 0
    assert 'channel "g"' in delivery.note
    assert "cancelled" in delivery.note
    assert "2 messages" in delivery.note


def test_past_the_cap_the_latest_messages_come_raw_with_a_digest_note_for_the_rest() -> None:
    backlog = [f"m{i}" for i in range(10)]
    delivery = deliver_backlog(
        ended(3), EndReason.EXPIRED, backlog, shown='"g"', digest=" mostly deploy chatter "
    )
    assert delivery.messages == ("m7", "m8", "m9")
    assert delivery.held_back == 7
    assert "10 messages" in delivery.note
    assert "latest 3" in delivery.note
    assert "The 7 before them" in delivery.note
    assert "digest of them: mostly deploy chatter." in delivery.note
    assert "history" in delivery.note
    assert "time ran out" in delivery.note


def test_without_a_digest_the_note_says_none_was_written() -> None:
    delivery = deliver_backlog(ended(1), EndReason.CANCELLED, ["a", "b"], shown='"g"')
    assert delivery.messages == ("b",)
    assert "no digest" in delivery.note


def test_a_cap_of_zero_hands_over_nothing_raw_and_says_so() -> None:
    delivery = deliver_backlog(ended(0), EndReason.CANCELLED, ["a", "b"], shown='"g"')
    assert delivery.messages == ()
    assert delivery.held_back == 2
    assert "none is shown raw" in delivery.note


def test_an_empty_backlog_still_tells_the_owner_the_tune_out_ended() -> None:
    delivery = deliver_backlog(ended(5), EndReason.CANCELLED, NOTHING, shown='"g"')
    assert delivery.messages == ()
    assert "ended" in delivery.note
    assert "No messages" in delivery.note


def test_one_message_is_spoken_of_in_the_singular() -> None:
    note = deliver_backlog(ended(5), EndReason.CANCELLED, ["m"], shown='"g"').note
    assert "1 message arrived" in note
    assert "it is below" in note


def test_an_all_except_tune_out_names_the_channel_it_left_out() -> None:
    delivery = deliver_backlog(
        ended(5, kind=ScopeKind.ALL_EXCEPT), EndReason.CANCELLED, NOTHING, shown='"g"'
    )
    assert 'every channel except "g"' in delivery.note


@pytest.mark.parametrize(("budget", "words"), [(1, "budget of 1 wake"), (4, "budget of 4 wakes")])
def test_an_end_at_the_wake_budget_says_what_the_budget_was(budget: int, words: str) -> None:
    note = deliver_backlog(
        ended(5, max_wakes=budget), EndReason.WAKE_BUDGET, NOTHING, shown='"g"'
    ).note
    assert words in note
