"""What the peer tests share: spawning a scripted connector, an agent on the board, reading records.

An agent is a real MCP SDK ``Client`` connected in memory to ``build_server(board, agent=...)``;
every wait is bounded by ``anyio.fail_after`` (the inbox's own ``wait_seconds`` does the
waiting, never a sleep).

What it deliberately does not know: any one peer's behaviour (the scripts and their tests do).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import orjson
from mcp import Client

from switchboard.app import build_server
from switchboard.app.board import Switchboard
from switchboard.config import ConnectorConfig
from tests.helpers import Recorder, running_board

__all__ = [
    "Agent",
    "agent_on",
    "answer_to",
    "listening",
    "named",
    "policy_sent",
    "received",
    "script",
    "typing_before",
    "until",
]

HERE = Path(__file__).parent


def script(name: str, *args: str) -> list[str]:
    """The command that runs the scripted connector ``name`` (a module of this package)."""
    return [sys.executable, str(HERE / f"{name}.py"), *args]


def received(record: Path) -> list[dict[str, Any]]:
    """Every message the scripted connector read from the host, in order."""
    if not record.exists():
        return []
    return [orjson.loads(line) for line in record.read_bytes().splitlines() if line.strip()]


def named(record: Path, method: str) -> list[dict[str, Any]]:
    """The host's requests and notifications named ``method``, in order."""
    return [m for m in received(record) if m.get("method") == method]


def until(record: Path, method: str) -> list[dict[str, Any]]:
    """What the connector read before the first message named ``method`` (all, if none)."""
    got = received(record)
    ends = [i for i, m in enumerate(got) if m.get("method") == method]
    return got[: ends[0]] if ends else got


def typing_before(record: Path, method: str = "channels/publish") -> list[dict[str, Any]]:
    """The params of each ``channels/typing`` read before the first ``method``."""
    return [m["params"] for m in until(record, method) if m.get("method") == "channels/typing"]


def answer_to(record: Path, rid: Any) -> dict[str, Any]:
    """The host's answer to the connector's request ``rid`` (ids compared with their type)."""
    (found,) = [
        m
        for m in received(record)
        if "method" not in m and m.get("id") == rid and type(m.get("id")) is type(rid)
    ]
    return found


def policy_sent(record: Path) -> dict[str, Any]:
    """The first ``featureSets/update`` the connector got (Request or Notification)."""
    return named(record, "featureSets/update")[0]


class Agent:
    """One agent's MCP client, with the calls these tests make."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.seen: list[dict[str, Any]] = []

    async def call(self, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call ``tool``; its structured content with ``is_error`` added."""
        result = await self.client.call_tool(tool, args or {})
        data = dict(result.structured_content or {})
        data["is_error"] = bool(result.is_error)
        if not result.structured_content:
            data["text"] = " ".join(getattr(c, "text", "") for c in result.content)
        return data

    async def inbox_until(self, *message_ids: str, within: float = 30.0) -> list[dict[str, Any]]:
        """Read the inbox until every one of ``message_ids`` has arrived; all messages read."""
        with anyio.fail_after(within):
            while not set(message_ids) <= {m["message_id"] for m in self.seen}:
                read = await self.call("inbox", {"wait_seconds": 5})
                assert not read["is_error"], read
                self.seen.extend(read["messages"])
        return self.seen

    def message(self, message_id: str) -> dict[str, Any]:
        (found,) = [m for m in self.seen if m["message_id"] == message_id]
        return found

    async def channels(self, server_id: str) -> dict[str, dict[str, Any]]:
        """``channel_list``'s rows for ``server_id``, by channel id."""
        listing = await self.call("channel_list")
        return {c["channel_id"]: c for c in listing["channels"] if c["server_id"] == server_id}


@asynccontextmanager
async def listening(name: str, *args: str, within: float = 20.0) -> AsyncIterator[int]:
    """Run the scripted WebSocket connector ``name``; yield the loopback port it printed.

    The process is this test's own: it is terminated and reaped on exit.
    """
    async with await anyio.open_process(script(name, *args)) as process:
        try:
            assert process.stdout is not None
            line = b""
            with anyio.fail_after(within):
                while not line.endswith(b"\n"):
                    line += await process.stdout.receive(1)
            yield int(line)
        finally:
            process.terminate()
            with anyio.move_on_after(5, shield=True):
                await process.wait()


@asynccontextmanager
async def agent_on(
    tmp_path: Path, *connectors: ConnectorConfig, recorder: Recorder | None = None
) -> AsyncIterator[tuple[Switchboard, Agent]]:
    """A board running ``connectors`` and one agent (``agent``) connected to it over MCP."""
    async with (
        running_board(tmp_path, *connectors, recorder=recorder) as board,
        Client(build_server(board, agent="agent"), mode="legacy") as client,
    ):
        yield board, Agent(client)
