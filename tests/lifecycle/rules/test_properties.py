"""Property tests of the desired-state book under random decision sequences.

Every sequence is played the way the host plays it: ``propose``, and on an ``Append`` the
event goes to the log (a list here) and then to memory. Afterwards, the log replayed (as it
is, and after a trip through JSON text) must give the very same book; along the way, a machine
close never replaces a closed record, ``propose`` never changes memory, and every record keeps
a source from the vocabulary that fits its state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.channels.ref import ChannelRef
from switchboard.lifecycle.rules.book import LifecycleBook, SubscriptionPolicy
from switchboard.lifecycle.rules.decisions import (
    CLOSE_SOURCES,
    MACHINE_CLOSE_SOURCES,
    OPEN_SOURCES,
    Append,
    DesiredState,
    NoChange,
    NoChangeReason,
    Source,
)
from switchboard.lifecycle.rules.events import DecisionEvent, decode_events

REFS = [ChannelRef("a", "b:room"), ChannelRef("a:b", "room"), ChannelRef("s", "g")]
VALID = [(DesiredState.OPEN, s) for s in sorted(OPEN_SOURCES)] + [
    (DesiredState.CLOSED, s) for s in sorted(CLOSE_SOURCES)
]


@dataclass(frozen=True)
class Propose:
    ref: ChannelRef
    state: DesiredState
    source: Source
    by_agent: str | None
    lease: bool
    covered: bool


@dataclass(frozen=True)
class Admit:
    ref: ChannelRef
    initially_open: bool | None
    auto: bool


@dataclass(frozen=True)
class SpeechOpenFails:
    ref: ChannelRef
    decided_meanwhile: bool
    auto: bool


def _propose(ref: ChannelRef, pair: tuple[DesiredState, Source], agent: str | None,
             lease: bool, covered: bool) -> Propose:  # fmt: skip
    return Propose(ref, pair[0], pair[1], agent, lease, covered)


refs = st.sampled_from(REFS)
ops = st.lists(
    st.one_of(
        st.builds(_propose, refs, st.sampled_from(VALID), st.sampled_from([None, "ada"]),
                  st.booleans(), st.booleans()),
        st.builds(Admit, refs, st.sampled_from([None, True, False]), st.booleans()),
        st.builds(SpeechOpenFails, refs, st.booleans(), st.booleans()),
    ),
    max_size=40,
)  # fmt: skip


def _record(book: LifecycleBook, log: list[DecisionEvent], answer: object) -> None:
    if isinstance(answer, Append):
        log.append(answer.event)
        book.apply(answer.event)


def _play(op: Propose | Admit | SpeechOpenFails, book: LifecycleBook, log: list[DecisionEvent],
          now: float) -> None:  # fmt: skip
    if isinstance(op, Propose):
        before = list(book.items())
        current = book.record(op.ref)
        answer = book.propose(
            op.ref,
            op.state,
            op.source,
            now,
            by_agent=op.by_agent,
            override_explicit_open=op.lease,
            covered_by_tune_out=op.covered,
        )
        assert list(book.items()) == before
        if op.source in MACHINE_CLOSE_SOURCES and current and current.state is DesiredState.CLOSED:
            assert isinstance(answer, NoChange)
            assert answer.reason is NoChangeReason.CLOSED_ALREADY
        _record(book, log, answer)
        if op.source in MACHINE_CLOSE_SOURCES and current and current.state is DesiredState.CLOSED:
            assert book.record(op.ref) is current
    elif isinstance(op, Admit):
        policy = SubscriptionPolicy(auto=op.auto)
        admission = book.ensure_initial(
            op.ref, now, policy=policy, initially_open=op.initially_open
        )
        _record(book, log, admission.decision)
    else:
        displaced = book.record(op.ref)
        answer = book.propose(op.ref, DesiredState.OPEN, Source.OPENED_BY_DELIVERY, now)
        if not isinstance(answer, Append):
            return
        log.append(answer.event)
        written = book.apply(answer.event)
        assert written is not None
        if op.decided_meanwhile:
            _record(book, log, book.propose(op.ref, DesiredState.CLOSED, Source.AGENT_TOOL, now))
        policy = SubscriptionPolicy(auto=op.auto)
        put = book.put_back(op.ref, written, displaced, now, policy=policy)
        if op.decided_meanwhile:
            assert isinstance(put.decision, NoChange)
        _record(book, log, put.decision)


def _check_vocabulary(book: LifecycleBook) -> None:
    for _, record in book.items():
        assert record.source in Source.__members__.values()
        assert record.source is not Source.UNKNOWN
        if record.state is DesiredState.OPEN:
            assert record.source in OPEN_SOURCES
        else:
            assert record.state is DesiredState.CLOSED
            assert record.source in CLOSE_SOURCES
        assert record.epoch_id is None


@settings(max_examples=300, deadline=None)
@given(ops)
def test_replaying_the_log_gives_the_same_book_as_applying_it_live(
    sequence: list[Propose | Admit | SpeechOpenFails],
) -> None:
    live = LifecycleBook()
    log: list[DecisionEvent] = []
    for at, op in enumerate(sequence):
        _play(op, live, log, float(at))
        _check_vocabulary(live)
    assert LifecycleBook.replay(log) == live
    stored = [json.loads(json.dumps(event.to_json())) for event in log]
    assert LifecycleBook.replay(decode_events(stored)) == live


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(VALID), max_size=20), st.sampled_from(sorted(MACHINE_CLOSE_SOURCES))
)
def test_a_machine_close_never_replaces_a_closed_record_whatever_came_before(
    history: list[tuple[DesiredState, Source]], machine: Source
) -> None:
    book = LifecycleBook()
    ref = REFS[0]
    for at, (state, source) in enumerate(history):
        _record(book, [], book.propose(ref, state, source, float(at), override_explicit_open=True))
    current = book.record(ref)
    answer = book.propose(ref, DesiredState.CLOSED, machine, 99.0, override_explicit_open=True)
    if current is None:
        assert isinstance(answer, Append)
        assert answer.event.source is Source.DEFAULT_CLOSED
    elif current.state is DesiredState.CLOSED:
        assert isinstance(answer, NoChange)
    else:
        assert isinstance(answer, Append)
        assert answer.event.source is machine
