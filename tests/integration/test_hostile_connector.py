"""A hostile connector meets the per-connector limits (issue #13, item 6).

The connector is a real subprocess over stdio (tests/integration/hostile_connector.py): it
registers 200 ``initiallyOpen`` channels against ``max_channels = 50``, sends a frame past
``max_frame_bytes`` and bursts past ``max_messages_per_second``. Every refusal carries a reason
the connector can act on, the first 50 channels work, and nothing refused for its rate is lost.
"""

from __future__ import annotations

import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from switchboard.connections.limits import CHANNEL_CAP_REASON
from switchboard.events import ChannelsRegistered, MessagesAccepted
from switchboard.store.sqlite import MessageStore
from tests.helpers import Recorder, connector, running_board

pytestmark = pytest.mark.anyio

HOSTILE = str(Path(__file__).with_name("hostile_connector.py"))


def _steps(out: Path) -> dict[str, Any]:
    return {s["step"]: s["answer"] for s in map(orjson.loads, out.read_bytes().splitlines())}


async def _stored_ids(path: Path) -> list[str]:
    async with await MessageStore.open(path) as store:
        return [m.message_id for m in await store.read(0, 1000)]


async def test_registrations_past_max_channels_are_refused_with_the_cap_and_the_first_50_work(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    out = tmp_path / "hostile.jsonl"
    hostile = connector(
        "h",
        [sys.executable, HOSTILE, str(out), "200", "--probe"],
        restart=False,
        max_channels=50,
        max_messages_per_second=5,
        max_frame_bytes=65536,
    )
    recorder = Recorder()
    async with running_board(tmp_path, hostile, recorder=recorder) as board:
        registered = await recorder.wait_kind(ChannelsRegistered)
        await recorder.wait_for(
            lambda e: (
                isinstance(e, MessagesAccepted)
                and any(m["messageId"] == "m-done" for m in e.messages)
            ),
            within=30,
        )
        assert board.registry.server_size("h") == 50
    assert registered.channel_ids == tuple(f"h:{i}" for i in range(50))
    steps = _steps(out)

    results = steps["register"]["result"]["results"]
    assert [r["accepted"] for r in results] == [True] * 50 + [False] * 150
    cap = CHANNEL_CAP_REASON.format(limit=50)
    assert {r["reason"] for r in results[50:]} == {cap}
    assert "at most 50 channels" in cap
    assert "max_channels" in cap
    # One counted log line for the 150, not 150 lines.
    (line,) = [e for e in logs if e["event"] == "connector_refused" and e["reason"] == cap]
    assert line["count"] == 150
    assert line["kind"] == "descriptor_rejected"

    # A message for a channel past the cap is refused: it was never registered.
    (unregistered,) = steps["unregistered"]["result"]["results"]
    assert unregistered["accepted"] is False
    assert "not registered" in unregistered["reason"]

    # A frame past max_frame_bytes: -32600 naming the limit; the link lives on.
    oversized = steps["oversized"]
    assert oversized["id"] is None
    assert oversized["error"] == {
        "code": -32600,
        "message": "Invalid Request: frame exceeds 65536 bytes",
    }

    # The burst: accepted while the bucket lasts, then one batch refused whole and unanswered
    # per message, with a retry time; resent after it, the same batch is accepted.
    *taken, refused = steps["burst"]
    assert all("result" in a for a in taken)
    error = refused["error"]
    assert error["code"] == -32603
    assert error["data"]["reason"] == "rate-limited"
    assert error["data"]["limit"] == 5
    assert 0 < error["data"]["retryAfterMs"] <= 1000
    assert "max_messages_per_second" in error["message"]
    resent = steps["resent"]["result"]["results"]
    assert [r["accepted"] for r in resent] == [True] * 4
    assert 0 <= steps["opens"] <= 50  # opens only for channels that were registered

    ids = await _stored_ids(tmp_path / "sb.sqlite")
    n = len(taken)
    assert n >= 1  # the first batch fitted the bucket (5 tokens, 1 spent on m-x)
    assert ids == [f"m-{i}-{k}" for i in range(n + 1) for k in range(4)] + ["m-done"]
    assert [
        e
        for e in logs
        if e["event"] == "connector_refused"
        and e["method"] == "channels/incoming"
        and "Rate limit" in e["reason"]
    ]
