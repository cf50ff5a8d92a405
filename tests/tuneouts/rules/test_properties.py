"""Property tests: random decisions and tune-outs, played through both books and replayed.

After every step the two books agree (a channel's record is tuned out exactly when a
one-channel epoch holds it, under that epoch's id), no epoch has more wakes than its budget,
and every record's source is in the vocabulary. At the end, replaying the log (as it is, and
after a trip through JSON text) rebuilds both books exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.channels.ref import ChannelRef
from switchboard.lifecycle.rules.book import LifecycleBook
from switchboard.lifecycle.rules.decisions import (
    CLOSE_SOURCES,
    OPEN_SOURCES,
    TUNE_OUT_SOURCES,
    Append,
    DesiredState,
    ScopeKind,
    Source,
    TuneOutScope,
)
from switchboard.lifecycle.rules.events import DecisionEvent, decode_events
from switchboard.tuneouts.rules.epochs import TuneOutBook, TuneOutTerms

REFS = [ChannelRef("a", "b:room"), ChannelRef("a:b", "room"), ChannelRef("s", "g")]
OWNERS = ["ada", "bob"]
PAIRS = [(DesiredState.OPEN, s) for s in sorted(OPEN_SOURCES)] + [
    (DesiredState.CLOSED, s) for s in sorted(CLOSE_SOURCES)
]


@dataclass(frozen=True)
class Decide:
    ref: ChannelRef
    pair: tuple[DesiredState, Source]
    lease: bool


@dataclass(frozen=True)
class Start:
    ref: ChannelRef
    kind: ScopeKind
    owner: str
    source: Source
    max_wakes: int | None
    duration: float | None


@dataclass(frozen=True)
class Cancel:
    pick: int


@dataclass(frozen=True)
class Wake:
    pick: int


@dataclass(frozen=True)
class Expire:
    pass


refs = st.sampled_from(REFS)
ops = st.lists(
    st.one_of(
        st.builds(Decide, refs, st.sampled_from(PAIRS), st.booleans()),
        st.builds(Start, refs, st.sampled_from(list(ScopeKind)), st.sampled_from(OWNERS),
                  st.sampled_from(sorted(TUNE_OUT_SOURCES)), st.none() | st.integers(0, 3),
                  st.none() | st.sampled_from([1.0, 5.0, 30.0])),
        st.builds(Cancel, st.integers(0, 5)),
        st.builds(Wake, st.integers(0, 5)),
        st.builds(Expire),
    ),
    max_size=40,
)  # fmt: skip


class Host:
    def __init__(self) -> None:
        self.lifecycle = LifecycleBook()
        self.tuneouts = TuneOutBook()
        self.log: list[DecisionEvent] = []
        self.serial = 0

    def commit(self, answer: object) -> None:
        if isinstance(answer, Append):
            self.log.append(answer.event)
            self.lifecycle.apply(answer.event)
            self.tuneouts.apply(answer.event)

    def pick(self, index: int) -> str | None:
        epochs = [held.epoch.epoch_id for held in self.tuneouts.epochs()]
        return epochs[index % len(epochs)] if epochs else None

    def play(self, op: Decide | Start | Cancel | Wake | Expire, now: float) -> None:
        if isinstance(op, Decide):
            before = self.lifecycle.record(op.ref)
            answer = self.lifecycle.propose(
                op.ref,
                op.pair[0],
                op.pair[1],
                now,
                override_explicit_open=op.lease,
                covered_by_tune_out=self.tuneouts.covers(op.ref),
            )
            if before is not None and before.state is DesiredState.TUNED_OUT:
                assert not isinstance(answer, Append), "a tune-out changes only by its own end"
            self.commit(answer)
        elif isinstance(op, Start):
            self.serial += 1
            terms = TuneOutTerms(backlog_cap=3, max_wakes=op.max_wakes, duration=op.duration)
            self.commit(
                self.tuneouts.start(
                    f"e{self.serial}",
                    op.owner,
                    TuneOutScope(op.ref, op.kind),
                    now,
                    lifecycle=self.lifecycle,
                    terms=terms,
                    source=op.source,
                )
            )
        elif isinstance(op, Cancel | Wake):
            epoch_id = self.pick(op.pick)
            if epoch_id is not None:
                verb = self.tuneouts.cancel if isinstance(op, Cancel) else self.tuneouts.wake
                self.commit(verb(epoch_id, now))
        else:
            for ending in self.tuneouts.expire(now):
                self.commit(ending)

    def check(self) -> None:
        for ref, record in self.lifecycle.items():
            held = self.tuneouts.on_channel(ref)
            if record.state is DesiredState.TUNED_OUT:
                assert held is not None
                assert held.epoch.epoch_id == record.epoch_id
                assert record.source in TUNE_OUT_SOURCES
            else:
                assert held is None
                allowed = OPEN_SOURCES if record.state is DesiredState.OPEN else CLOSE_SOURCES
                assert record.source in allowed
        for held in self.tuneouts.epochs():
            epoch = held.epoch
            if epoch.scope.kind is ScopeKind.CHANNEL:
                assert self.lifecycle.state(epoch.scope.ref) is DesiredState.TUNED_OUT
            if epoch.max_wakes is not None:
                assert held.wake_count <= epoch.max_wakes


@settings(max_examples=300, deadline=None)
@given(ops)
def test_replay_rebuilds_both_books_and_they_always_agree(
    sequence: list[Decide | Start | Cancel | Wake | Expire],
) -> None:
    host = Host()
    for step, op in enumerate(sequence):
        host.play(op, float(step * 4))
        host.check()
    assert LifecycleBook.replay(host.log) == host.lifecycle
    assert TuneOutBook.replay(host.log) == host.tuneouts
    stored = [json.loads(json.dumps(event.to_json())) for event in host.log]
    assert LifecycleBook.replay(decode_events(stored)) == host.lifecycle
    assert TuneOutBook.replay(decode_events(stored)) == host.tuneouts
