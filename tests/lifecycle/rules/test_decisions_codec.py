"""The lifecycle log's events: a stable JSON form that round-trips, and junk that is skipped."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from switchboard.channels.ref import ChannelRef
from switchboard.lifecycle.rules.decisions import (
    AGENT_DECISION_SOURCES,
    MACHINE_CLOSE_SOURCES,
    DecodeError,
    DesiredRecord,
    DesiredState,
    ScopeKind,
    Source,
    TuneOutEpoch,
    TuneOutScope,
    is_close_decision,
)
from switchboard.lifecycle.rules.events import (
    DecisionEvent,
    DesiredStateSet,
    EndReason,
    InvitationDeclined,
    TuneOutEnded,
    TuneOutStarted,
    TuneOutWake,
    decode_event,
    decode_events,
)

R = ChannelRef
COLONS = R("a", "b:room")
OPEN_AGENT = DesiredRecord(DesiredState.OPEN, Source.AGENT_TOOL, 1.0, "ada")
EPOCH = TuneOutEpoch(
    "e1",
    "ada",
    TuneOutScope(COLONS),
    10.0,
    20,
    reader="reader",
    max_wakes=3,
    cadence_seconds=60.0,
    expires_at=70.0,
    started_at_sequence=42,
)
BROAD = TuneOutEpoch("e2", "ada", TuneOutScope(R("a:b", "room"), ScopeKind.ALL_EXCEPT), 5, 0)

EVENTS: list[DecisionEvent] = [
    DesiredStateSet(COLONS, DesiredState.OPEN, Source.AGENT_TOOL, 1.5, "ada"),
    DesiredStateSet(R("s", "x"), DesiredState.CLOSED, Source.DEFAULT_CLOSED, 2.0),
    TuneOutStarted(EPOCH, Source.AGENT_TOOL, OPEN_AGENT),
    TuneOutStarted(BROAD, Source.MODULE_TOOL, None, "e0"),
    TuneOutWake("e1", 2, 11.0),
    TuneOutEnded("e1", TuneOutScope(COLONS), EndReason.CANCELLED, 12.0, OPEN_AGENT, "ada"),
    TuneOutEnded("e2", BROAD.scope, EndReason.WAKE_BUDGET, 13.0),
    InvitationDeclined(COLONS, "m1", 3.0, "👀"),
    InvitationDeclined(R("s", "x"), "m2", 4.0),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.kind)
def test_every_event_round_trips_through_json_text_unchanged(event: DecisionEvent) -> None:
    data = json.loads(json.dumps(event.to_json()))
    assert data["kind"] == event.kind
    assert type(event).from_json(data) == event
    assert decode_event(data) == event


def test_a_desired_state_record_names_its_channel_in_two_fields_never_one_joined_string() -> None:
    data = EVENTS[0].to_json()
    assert data == {
        "kind": "desired-state",
        "serverId": "a",
        "channelId": "b:room",
        "desired": "open",
        "source": "agent-tool",
        "at": 1.5,
        "byAgent": "ada",
    }
    assert "a:b:room" not in json.dumps(data)


def test_absent_optional_fields_are_left_out_rather_than_written_as_null() -> None:
    data = DesiredStateSet(R("s", "x"), DesiredState.CLOSED, Source.HOUSEKEEPING, 2).to_json()
    assert "byAgent" not in data
    assert None not in TuneOutWake("e", 1, 1.0).to_json().values()


def test_an_all_except_scope_is_written_with_its_excepted_channel_nested() -> None:
    assert BROAD.scope.to_json() == {
        "kind": "all-except",
        "except": {"serverId": "a:b", "channelId": "room"},
    }
    assert TuneOutScope(COLONS).to_json() == {"serverId": "a", "channelId": "b:room"}


def test_a_source_outside_the_vocabulary_or_missing_is_read_as_unknown() -> None:
    base = EVENTS[1].to_json()
    for source in ("janitor", 7, None):
        data = {**base, "source": source}
        event = decode_event(data)
        assert isinstance(event, DesiredStateSet)
        assert event.source is Source.UNKNOWN
    del base["source"]
    assert isinstance(decoded := decode_event(base), DesiredStateSet)
    assert decoded.source is Source.UNKNOWN


JUNK: list[object] = [
    None,
    "desired-state",
    ["kind", "desired-state"],
    {},
    {"kind": "no-such-kind"},
    {"kind": 3},
    {"kind": "desired-state", "channelId": "x", "desired": "open", "at": 1},
    {"kind": "desired-state", "serverId": 1, "channelId": "x", "desired": "open", "at": 1},
    {"kind": "desired-state", "serverId": "s", "channelId": "x", "desired": "tuned-out", "at": 1},
    {"kind": "desired-state", "serverId": "s", "channelId": "x", "desired": "open", "at": True},
    {"kind": "desired-state", "serverId": "s", "channelId": "x", "desired": "open", "at": "1"},
    {"kind": "tune-out-wake", "epochId": "e", "wakeCount": -1, "at": 1},
    {"kind": "tune-out-wake", "epochId": "e", "wakeCount": 1.5, "at": 1},
    {"kind": "tune-out-ended", "epochId": "e", "scope": {"kind": "nearby"}, "reason": "expired",
     "at": 1},
    {**EVENTS[5].to_json(), "reason": "bored"},
    {**EVENTS[5].to_json(), "restore": {"state": "tuned-out", "source": "agent-tool",
                                        "decidedAt": 1, "epochId": "e"}},
    {**EVENTS[2].to_json(), "epoch": {**EPOCH.to_json(), "backlogCap": -1}},
    {**EVENTS[2].to_json(), "resume": {"state": "open", "source": "agent-tool", "decidedAt": 1,
                                       "epochId": "e"}},
    {**EVENTS[7].to_json(), "messageId": None},
]  # fmt: skip


@pytest.mark.parametrize("data", JUNK)
def test_a_malformed_record_is_skipped_instead_of_stopping_replay(data: object) -> None:
    assert decode_event(data) is None


def test_decoding_a_log_keeps_the_well_formed_events_in_order_and_drops_the_junk() -> None:
    records = [JUNK[0], EVENTS[0].to_json(), JUNK[4], EVENTS[4].to_json(), JUNK[8]]
    assert list(decode_events(records)) == [EVENTS[0], EVENTS[4]]


def test_reading_one_kind_with_another_kinds_decoder_is_an_error() -> None:
    with pytest.raises(DecodeError):
        TuneOutWake.from_json(EVENTS[0].to_json())


def test_a_record_carries_an_epoch_id_exactly_when_it_is_tuned_out() -> None:
    with pytest.raises(DecodeError):
        DesiredRecord.from_json({"state": "tuned-out", "source": "agent-tool", "decidedAt": 1})
    with pytest.raises(DecodeError):
        DesiredRecord.from_json({"state": "paused", "source": "agent-tool", "decidedAt": 1})
    held = DesiredRecord(DesiredState.TUNED_OUT, Source.AGENT_TOOL, 1.0, "ada", "e1")
    assert DesiredRecord.from_json(held.to_json()) == held


def test_the_vocabularies_are_closed_and_spelled_as_on_the_wire() -> None:
    assert {s.value for s in DesiredState} == {"open", "closed", "tuned-out"}
    assert {s.value for s in Source} == {
        "agent-tool",
        "invitation-declined",
        "module-tool",
        "subscription-gc",
        "housekeeping",
        "default-closed",
        "server-bootstrap",
        "subscription-policy",
        "opened-by-delivery",
        "opened-by-reply",
        "legacy-recipe-migration",
        "unknown",
    }
    assert {s.value for s in MACHINE_CLOSE_SOURCES} == {"subscription-gc", "housekeeping"}
    assert {s.value for s in AGENT_DECISION_SOURCES} == {"agent-tool", "invitation-declined"}


@pytest.mark.parametrize(
    ("source", "decided"),
    [
        (Source.AGENT_TOOL, True),
        (Source.INVITATION_DECLINED, True),
        (Source.MODULE_TOOL, True),
        (Source.SUBSCRIPTION_GC, False),
        (Source.HOUSEKEEPING, False),
        (Source.DEFAULT_CLOSED, False),
        (Source.OPENED_BY_DELIVERY, False),
    ],
)
def test_only_the_agent_and_modules_make_deliberate_closes(source: Source, decided: bool) -> None:
    assert is_close_decision(source) is decided


def test_a_scope_covers_its_channel_or_everything_but_its_channel() -> None:
    one, other = R("a", "x"), R("a", "y")
    assert TuneOutScope(one).covers(one)
    assert not TuneOutScope(one).covers(other)
    assert not TuneOutScope(one, ScopeKind.ALL_EXCEPT).covers(one)
    assert TuneOutScope(one, ScopeKind.ALL_EXCEPT).covers(other)


# -- property: any event round-trips -----------------------------------------------------------

texts = st.text(max_size=8)
refs = st.builds(R, texts, texts)
times = st.floats(min_value=0, max_value=1e12, allow_nan=False)
plain_records = st.builds(
    DesiredRecord,
    st.sampled_from([DesiredState.OPEN, DesiredState.CLOSED]),
    st.sampled_from(list(Source)),
    times,
    st.none() | texts,
)
scopes = st.builds(TuneOutScope, refs, st.sampled_from(list(ScopeKind)))
epochs = st.builds(
    TuneOutEpoch,
    texts,
    texts,
    scopes,
    times,
    st.integers(0, 1000),
    st.none() | texts,
    st.none() | st.integers(0, 100),
    st.none() | st.floats(min_value=0.001, max_value=1e6),
    st.none() | times,
    st.none() | st.integers(0, 2**53),
)
events = st.one_of(
    st.builds(
        DesiredStateSet,
        refs,
        st.sampled_from([DesiredState.OPEN, DesiredState.CLOSED]),
        st.sampled_from(list(Source)),
        times,
        st.none() | texts,
    ),
    st.builds(TuneOutStarted, epochs, st.sampled_from(list(Source)), st.none() | plain_records,
              st.none() | texts),
    st.builds(TuneOutWake, texts, st.integers(0, 10**6), times),
    st.builds(TuneOutEnded, texts, scopes, st.sampled_from(list(EndReason)), times,
              st.none() | plain_records, st.none() | texts),
    st.builds(InvitationDeclined, refs, texts, times, st.none() | texts),
)  # fmt: skip


@given(events)
def test_any_event_survives_the_trip_through_json_text(event: DecisionEvent) -> None:
    assert decode_event(json.loads(json.dumps(event.to_json()))) == event
