"""How often a cancelled long poll that lost its race with an arriving message loses it.

Run: ``python bench/bench_cancel_race.py [--races N] [--timeout T]``.

A real host (``Switchboard.started``, a real store in a temporary folder) serves one agent on a
loopback streamable HTTP endpoint; the agent is the MCP Python SDK's client. Each trial calls
``inbox(wait_seconds=20)`` with the client's read timeout at ``T`` seconds, and commits one
message to the store a little before that timeout (0 to 20 ms, cycling). When the message is
committed just before the timeout fires, the host hands it to the long poll and answers, the
client has already given up (its timeout fired) and sends ``notifications/cancelled``: the
race of issue #26, item 2. The trial counts as a race when the client's call timed out and the
host had handed the message out (its delivered mark passed it); the client then reads again
over the same connection, without ``after``, as the SDK leaves it to do, and again after that.
The message is **lost** when neither read returns it (the read after the race acknowledged the
page the client never saw).

It runs until ``N`` races were seen (or 40 times as many trials), and prints the trials, the
races and how many of them lost their message.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from switchboard.agents.http import bind_endpoint, plan_endpoint, serve_endpoint
from switchboard.app import build_server
from switchboard.app.board import Switchboard
from switchboard.config import AgentConfig, Config, StoreConfig
from switchboard.runtime.logs import configure

LEADS_MS = tuple(range(0, 21, 2))
"""How long before the client's timeout the message is committed, cycling per trial."""


def _message(n: int) -> dict[str, Any]:
    return {
        "channelId": "room",
        "messageId": f"race-{n}",
        "author": {"id": "u1", "name": "Ann"},
        "timestamp": "2026-12-05T12:00:00Z",
        "content": [{"type": "text", "text": f"message {n}"}],
    }


def _ids(result: Any) -> list[str]:
    data = result.structured_content or {}
    return [m["message_id"] for m in data.get("messages", [])]


async def _trial(client: Client, board: Switchboard, n: int, timeout: float) -> str:
    """One trial: ``answered`` (the client got it in time), ``missed`` (the poll was cancelled
    before the message came; it comes next), ``kept`` or ``lost`` (a race)."""
    lead = LEADS_MS[n % len(LEADS_MS)] / 1000
    seq: list[int] = []

    async def commit_later() -> None:
        await anyio.sleep(max(0.0, timeout - lead))
        results = await board.store.submit_wire("s", [_message(n)])
        seq.append(results[0].seq)

    async with anyio.create_task_group() as group:
        group.start_soon(commit_later)
        try:
            first = await client.call_tool(
                "inbox", {"wait_seconds": 20}, read_timeout_seconds=timeout
            )
        except MCPError as exc:
            if "timed out" not in str(exc):
                raise
            first = None
    if first is not None:
        return "answered" if f"race-{n}" in _ids(first) else "missed"
    await anyio.sleep(0.2)  # the host has answered the abandoned poll, or cancelled it
    raced = await board.store.get_delivered("a") >= seq[0]
    seen: list[str] = []
    for _ in range(2):
        seen += _ids(await client.call_tool("inbox", {}))
    if not raced:
        return "missed"
    return "kept" if f"race-{n}" in seen else "lost"


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--races", type=int, default=20)
    p.add_argument("--timeout", type=float, default=0.5, help="the client's read timeout")
    args = p.parse_args()
    configure("WARNING")
    with tempfile.TemporaryDirectory() as tmp:
        config = Config(
            store=StoreConfig(path=str(Path(tmp) / "store.sqlite")),
            agent=AgentConfig(name="a", transport="http", port=0),
        )
        plan = plan_endpoint(config.agent)
        sock = bind_endpoint(plan)
        url = plan.url(sock.getsockname()[1])
        counts = {"answered": 0, "missed": 0, "kept": 0, "lost": 0}
        async with Switchboard.started(config) as board, anyio.create_task_group() as group:
            group.start_soon(serve_endpoint, build_server(board, agent="a"), plan, sock)
            async with (
                httpx2.AsyncClient(timeout=60) as http,
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
            ):
                trials = 0
                while counts["kept"] + counts["lost"] < args.races and trials < 40 * args.races:
                    counts[await _trial(client, board, trials, args.timeout)] += 1
                    trials += 1
            group.cancel_scope.cancel()
    races = counts["kept"] + counts["lost"]
    print(
        f"{trials} trials (client read timeout {args.timeout} s, message committed 0-20 ms "
        f"before it): {races} races; lost {counts['lost']} of {races} "
        f"(kept {counts['kept']}); not races: {counts['answered']} answered in time, "
        f"{counts['missed']} polls cancelled before the message came"
    )


if __name__ == "__main__":
    anyio.run(main)
