"""A soak of the inbox under traffic: agents read through the real ``inbox`` tool while a
connector sends thousands of messages a second (issue #11, item 1: "About 1 in 2,200 reads
fails with ``cursor ... is outside 0..``").

Messages arrive over the real connector path (``channels/incoming`` on an in-memory link, the
session's admission, the store's group commit). One agent reads over the MCP SDK's client,
another through the host's own read (the same delivery code, without the cost of rendering
pages, so that it reads far more often); each acknowledges every page with ``after``. Every
read must succeed and every agent must get every message exactly once.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from switchboard.app import build_server
from switchboard.app.board import Switchboard
from tests.fake import FakeConnector, board_of, descriptor, message

pytestmark = pytest.mark.anyio

TOTAL = 6_000
BATCH = 50
SENDERS = 4
MIN_READS_WHILE_ARRIVING = 3
"""Reads each agent must make while messages are still arriving (the soak overlaps them).

The arrival rate is printed, not asserted: the connector sends as fast as the host admits
(2,700-4,800 messages/s measured on the development VM, under 2,000/s only when the machine is
saturated by other work), and a timed assertion in a test would be flaky by design."""


async def _send(fake: FakeConnector, first: int, count: int) -> None:
    for start in range(first, first + count, BATCH):
        batch = [message("room", f"m{n}") for n in range(start, min(start + BATCH, first + count))]
        answer = await fake.call("channels/incoming", {"messages": batch})
        assert all(r["accepted"] for r in answer["results"]), answer


async def _read_on_host(board: Switchboard, agent: str, sent: anyio.Event) -> tuple[list[str], int]:
    """Read through the host until everything sent is read; the ids in order, and how many
    reads began while messages were still arriving."""
    got: list[str] = []
    cursor = 0
    reads = 0
    while True:
        finished = sent.is_set()
        read = await board.delivery.read(agent, after=cursor, limit=5)
        reads += not finished
        got += [m.message_id for m in read.messages]
        cursor = read.cursor
        if finished and not read.messages and cursor == board.store.latest_seq:
            return got, reads
        await anyio.lowlevel.checkpoint()


async def _read_over_mcp(
    board: Switchboard, agent: str, sent: anyio.Event
) -> tuple[list[str], int]:
    """Read over MCP until everything sent is read; the ids in order, and how many reads began
    while messages were still arriving."""
    got: list[str] = []
    cursor = 0
    reads = 0
    async with Client(build_server(board, agent=agent), mode="legacy") as client:
        while True:
            finished = sent.is_set()
            result = await client.call_tool("inbox", {"after": cursor, "limit": 200})
            reads += not finished
            assert not result.is_error, result.content
            data: dict[str, Any] = result.structured_content or {}
            got += [m["message_id"] for m in data["messages"]]
            cursor = data["cursor"]
            if finished and not data["messages"] and cursor == board.store.latest_seq:
                return got, reads


async def test_agents_read_without_an_error_while_two_thousand_messages_a_second_arrive(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_of(tmp_path, {"s": fake}) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        sent = anyio.Event()
        results: dict[str, tuple[list[str], int]] = {}

        async def over_mcp() -> None:
            results["mcp"] = await _read_over_mcp(board, "mcp", sent)

        async def on_host() -> None:
            results["host"] = await _read_on_host(board, "host", sent)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as readers:
                readers.start_soon(over_mcp)
                readers.start_soon(on_host)
                began = time.perf_counter()
                async with anyio.create_task_group() as senders:
                    share = TOTAL // SENDERS
                    for k in range(SENDERS):
                        senders.start_soon(_send, fake, k * share, share)
                rate = TOTAL / (time.perf_counter() - began)
                sent.set()

    expected = {f"m{n}" for n in range(TOTAL)}
    print(f"{rate:.0f} messages/s arrived while the agents read")  # noqa: T201
    for agent, (got, reads) in results.items():
        assert reads >= MIN_READS_WHILE_ARRIVING, (agent, reads)
        assert len(got) == TOTAL, (agent, len(got))
        assert set(got) == expected, agent
