"""The status model's traffic ring keeps one entry per batch and still shows the last rows.

A batch of messages in is kept whole, as one entry, and shaped into rows only at a snapshot
(issue #14), so the ring is checked here against the plain model it replaces: a deque of the
last :data:`~switchboard.status.model.RING` rows.
"""

from __future__ import annotations

import random
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from switchboard.app.board import Switchboard
from switchboard.config import Config, ConnectorConfig, StoreConfig
from switchboard.events import MessagesAccepted, Published
from switchboard.refusals.outcome import PublishOutcome, PublishStatus
from switchboard.status.model import RING
from switchboard.store.sqlite import MessageStore

pytestmark = pytest.mark.anyio


def _message(i: int) -> dict[str, Any]:
    return {
        "channelId": f"c{i % 7}",
        "messageId": f"m{i}",
        "author": {"id": "u1", "name": "Ada"},
        "timestamp": "2026-12-01T12:00:00Z",
        "content": [{"type": "text", "text": f"text {i}"}],
    }


async def test_batches_and_publishes_of_any_size_show_exactly_the_last_ring_of_rows(
    tmp_path: Path,
) -> None:
    config = Config(
        connectors=[ConnectorConfig(id="a", command=["true"])],
        store=StoreConfig(path=str(tmp_path / "s.sqlite")),
    )
    rng = random.Random(14)
    expected: deque[tuple[str, str]] = deque(maxlen=RING)
    async with await MessageStore.open(config.store.path) as store:
        board = Switchboard(config, store)
        status = board.status
        n = 0
        for _ in range(300):
            if rng.random() < 0.3:
                outcome = PublishOutcome(PublishStatus.DELIVERED, "a", "c1", message_id="x")
                board.events.emit(Published("a", "c1", f"out {n}", outcome))
                expected.append(("out", f"out {n}"))
                n += 1
            else:
                size = rng.choice([0, 1, 2, 50, RING - 1, RING, RING + 1, 3 * RING])
                batch = [_message(n + i) for i in range(size)]
                n += size
                board.events.emit(MessagesAccepted("a", batch))
                expected.extend(("in", m["content"][0]["text"]) for m in batch)
            rows = status.recent_traffic()
            assert [(r["direction"], r["text"]) for r in rows] == list(expected)
            assert len(status.traffic) <= RING + 1
