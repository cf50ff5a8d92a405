"""The inbox watchers tell each message once, in seq order, from what the committer had in hand.

Commits are answered out of seq order at times (a batch committed at once is answered before a
group held earlier in the same turn of the event loop); the watchers must neither drop such a
batch nor read it back from the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import anyio
import pytest

from switchboard.agents.inbox.watch import Arrival, InboxWatchers
from switchboard.events import EventBus, MessagesAccepted
from switchboard.store import StoredMessage
from switchboard.store.wire import StoredSlice
from switchboard.tuneouts.rules.epochs import TuneOutBook

pytestmark = pytest.mark.anyio


class _Store:
    """A head and nothing below it: a read back from here would find nothing."""

    def __init__(self) -> None:
        self.latest_seq = 0
        self.reads: list[tuple[int, int]] = []
        self._listeners: list[Callable[[int], None]] = []

    def watch_head(self, listener: Callable[[int], None]) -> None:
        self._listeners.append(listener)

    def move(self, head: int) -> None:
        self.latest_seq = head
        for listener in self._listeners:
            listener(head)

    async def read_slices(self, after_seq: int, limit: int = 100) -> list[StoredSlice]:
        self.reads.append((after_seq, limit))
        return []


class _Everyone:
    """Every message routed to every agent."""

    def routes_wire(self, agent: str, server_id: str, message: Mapping[str, Any]) -> bool:
        return True

    def routes_every(self, agent: str, server_id: str) -> bool:
        return True

    def wire_reader(self, agent: str, server_id: str) -> Callable[[Mapping[str, Any]], bool]:
        return lambda _m: True

    def routed(self, agent: str, batch: Iterable[StoredMessage]) -> list[StoredMessage]:
        return list(batch)


class _NoTuneOuts:
    book = TuneOutBook()


def _batch(first: int, last: int) -> list[dict[str, Any]]:
    return [
        {"channelId": "c1", "messageId": f"m{seq}", "author": {"name": "a"}, "content": []}
        for seq in range(first, last + 1)
    ]


def _accepted(first: int, last: int) -> MessagesAccepted:
    return MessagesAccepted("s1", _batch(first, last), last_seq=last)


async def test_a_batch_answered_before_the_batches_committed_before_it_waits_for_them() -> None:
    store, events = _Store(), EventBus()
    watchers = InboxWatchers(store, _Everyone(), _NoTuneOuts(), events)  # type: ignore[arg-type]
    told: list[Arrival] = []

    def listener(arrivals: Sequence[Arrival]) -> None:
        told.extend(arrivals)

    watchers.watch("@agent", listener)
    store.move(6)
    events.emit(_accepted(5, 6))  # committed at once, answered before the group held before
    assert told == []
    events.emit(_accepted(1, 2))
    events.emit(_accepted(3, 4))
    events.emit(_accepted(7, 8))  # the next in order: told at once
    assert [a.message_id for a in told] == [f"m{seq}" for seq in range(1, 9)]
    events.emit(_accepted(5, 6))  # told already: not again
    assert len(told) == 8
    store.move(8)
    with anyio.move_on_after(0.2):
        await watchers.run()
    assert store.reads == []
    assert watchers.read_back == 0
