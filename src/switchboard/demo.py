"""The embedded default: the demo community, a scripted agent, and a readable terminal view.

``switchboard demo`` spawns the bundled demo connector over stdio, stores what arrives in a
SQLite file, and lets a scripted agent read its inbox and answer through the real MCP tools
(an in-process ``mcp.Client``). With ``--agent stdio`` the scripted agent steps aside and a real
MCP agent can attach on stdin/stdout instead (the terminal view then goes to stderr).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, TextIO

import anyio
from mcp import Client

from switchboard.config import Config
from switchboard.host import PublishOutcome, Switchboard
from switchboard.tools import build_server


class TerminalView:
    """Prints host events as short readable lines."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, kind: str, server_id: str, detail: Mapping[str, Any]) -> None:
        line = self.render(kind, server_id, detail)
        if line:
            print(line, file=self.out, flush=True)

    @staticmethod
    def render(kind: str, server_id: str, detail: Mapping[str, Any]) -> str | None:
        if kind == "ready":
            return f"[{server_id}] connected; granted: {', '.join(detail.get('grant', []))}"
        if kind == "register":
            return f"[{server_id}] registered channels: {', '.join(detail.get('accepted', []))}"
        if kind in ("incoming", "push"):
            lines = []
            for m in detail.get("messages", []):
                text = " ".join(
                    str(b.get("text", "")) for b in m.get("content", []) if b.get("type") == "text"
                )
                author = m.get("author", {}).get("name", "?")
                lines.append(f"[{server_id}] {m.get('channelId')} <{author}> {text}")
            return "\n".join(lines) or None
        if kind == "publish":
            outcome = detail.get("outcome")
            status = outcome.status.value if isinstance(outcome, PublishOutcome) else "?"
            mid = outcome.message_id if isinstance(outcome, PublishOutcome) else None
            suffix = f" ({status}{', ' + mid if mid else ''})"
            return f"[{server_id}] {detail.get('channel_id')} <agent> {detail.get('text')}{suffix}"
        if kind == "connector-exit":
            return f"[{server_id}] connector gone; dropped its channels"
        if kind == "connector-restart":
            return f"[{server_id}] restarting in {detail.get('delay', 0):.1f} s"
        if kind == "mcp-only":
            return f"[{server_id}] speaks plain MCP only (no MCPL)"
        return None


async def scripted_agent(board: Switchboard, agent: str, duration: float, out: TextIO) -> int:
    """Read the inbox through MCP and answer people; returns the number of replies sent."""
    server = build_server(board, agent=agent)
    replies = 0
    async with Client(server, mode="legacy") as client:
        with anyio.move_on_after(duration):
            while True:
                result = await client.call_tool("inbox", {"wait_seconds": 2.0})
                data = result.structured_content or {}
                for m in data.get("messages", []):
                    if m["author_id"] == "agent":
                        continue
                    text = m["text"]
                    answer = _answer(m["author_name"], text)
                    if answer is None:
                        continue
                    res = await client.call_tool(
                        "channel_publish",
                        {"channel": m["channel_id"], "server_id": m["server_id"], "text": answer},
                    )
                    if res.is_error:
                        print(f"(agent) publish refused: {res.content}", file=out, flush=True)
                    replies += 1
    return replies


def _answer(author: str, text: str) -> str | None:
    lowered = text.lower()
    if "?" in text or "agent" in lowered or "welcome" in lowered or "hello" in lowered:
        return f"Hi {author}! I read: “{text[:60]}” — happy to help."
    return None


async def run_demo(config: Config, *, agent_mode: str, duration: float, out: TextIO) -> int:
    view = TerminalView(out if agent_mode == "scripted" else sys.stderr)
    async with Switchboard.started(config, observer=view) as board:
        if agent_mode == "stdio":
            await build_server(board, agent=config.agent.name).run_stdio_async()
            return 0
        replies = await scripted_agent(board, config.agent.name, duration, out)
        print(
            f"demo finished: {board.store.latest_seq} messages stored in {config.store.path}, "
            f"{replies} replies sent",
            file=out,
            flush=True,
        )
        return 0
