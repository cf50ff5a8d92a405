"""The embedded default: the demo community, a scripted agent, and a readable terminal view.

``switchboard demo`` spawns the bundled demo connector over stdio, stores what arrives in a
SQLite file, and lets a scripted agent read its inbox and answer through the real MCP tools
(an in-process ``mcp.Client``). With ``--agent stdio`` the scripted agent steps aside and a real
MCP agent can attach on stdin/stdout instead (the terminal view then goes to stderr).

Ctrl-C or SIGTERM is a normal way to end it early: the agent stops, the host stops in order,
the closing line says what happened, and the command exits 0 (docs/operations.md).
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

import anyio
from mcp import Client

from switchboard.app.board import Switchboard, build_server
from switchboard.config import Config
from switchboard.events import (
    ChannelsRegistered,
    ConnectorExited,
    ConnectorMcpOnly,
    ConnectorReady,
    ConnectorRestartScheduled,
    HostEvent,
    MessagesAccepted,
    Published,
    PushAccepted,
)


class TerminalView:
    """Prints host events as short readable lines (a host event listener)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, event: HostEvent) -> None:
        line = self.render(event)
        if line:
            print(line, file=self.out, flush=True)

    @staticmethod
    def render(event: HostEvent) -> str | None:
        """The lines that show ``event``, or None for an event the view leaves out."""
        match event:
            case ConnectorReady(server_id=sid, grant=grant):
                return f"[{sid}] connected; granted: {', '.join(grant)}"
            case ChannelsRegistered(server_id=sid, channel_ids=accepted):
                return f"[{sid}] registered channels: {', '.join(accepted)}"
            case MessagesAccepted(server_id=sid, messages=messages):
                return "\n".join(_message_line(sid, m) for m in messages) or None
            case PushAccepted(server_id=sid, message=message):
                return _message_line(sid, message)
            case Published(server_id=sid, channel_id=cid, text=text, outcome=outcome):
                mid = outcome.message_id
                suffix = f" ({outcome.status.value}{', ' + mid if mid else ''})"
                return f"[{sid}] {cid} <agent> {text}{suffix}"
            case ConnectorExited(server_id=sid):
                return f"[{sid}] connector gone; dropped its channels"
            case ConnectorRestartScheduled(server_id=sid, delay=delay):
                return f"[{sid}] restarting in {delay:.1f} s"
            case ConnectorMcpOnly(server_id=sid):
                return f"[{sid}] speaks plain MCP only (no MCPL)"
            case _:
                return None


def _message_line(server_id: str, message: Mapping[str, Any]) -> str:
    text = " ".join(
        str(b.get("text", "")) for b in message.get("content", []) if b.get("type") == "text"
    )
    author = message.get("author", {}).get("name", "?")
    return f"[{server_id}] {message.get('channelId')} <{author}> {text}"


class _Tally:
    """What the scripted agent did, readable after it was cancelled."""

    __slots__ = ("replies",)

    def __init__(self) -> None:
        self.replies = 0


async def scripted_agent(
    board: Switchboard, agent: str, duration: float, out: TextIO, tally: _Tally | None = None
) -> int:
    """Read the inbox through MCP and answer people; returns the number of replies sent
    (also counted in ``tally``, which keeps the count when the agent is cancelled)."""
    server = build_server(board, agent=agent)
    tally = tally or _Tally()
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
                    tally.replies += 1
    return tally.replies


def _answer(author: str, text: str) -> str | None:
    lowered = text.lower()
    if "?" in text or "agent" in lowered or "welcome" in lowered or "hello" in lowered:
        return f"Hi {author}! I read: “{text[:60]}” — happy to help."
    return None


TRY_NEXT = (
    "Try next: `switchboard demo --agent stdio` lets your own MCP agent take the scripted "
    "agent's place (docs/clients.md);\n"
    "  `switchboard run --config examples/demo.toml` runs the same from a config file you can "
    "change (docs/configuration.md)."
)
"""What the scripted demo says last: where to go from here."""


def _counted(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


async def run_demo(
    config: Config, *, agent_mode: str, duration: float, out: TextIO, store_kept: bool = True
) -> int:
    """Run the demo: the host with ``config``, and the scripted agent (or a stdio agent).

    The closing line says where the store is kept when ``store_kept`` (``--store FILE``);
    otherwise that the temporary store is removed as the demo ends. SIGINT (Ctrl-C) or SIGTERM
    stops the agent at once and the host in order; the closing line then says which signal
    ended it and when, and the result is still 0 (a further signal while it stops is ignored:
    stopping takes well under a second).
    """
    view = TerminalView(out if agent_mode == "scripted" else sys.stderr)
    agent_scope = anyio.CancelScope()
    stopped_by: list[str] = []
    tally = _Tally()
    began = time.monotonic()

    async def watch(signals: Any) -> None:
        async for signum in signals:
            if not stopped_by:
                stopped_by.append("Ctrl-C" if signum == signal.SIGINT else "SIGTERM")
                agent_scope.cancel()

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as watching:
            watching.start_soon(watch, signals)
            try:
                async with Switchboard.started(config, listener=view) as board:
                    with agent_scope:
                        if agent_mode == "stdio":
                            await build_server(board, agent=config.agent.name).run_stdio_async()
                        else:
                            await scripted_agent(board, config.agent.name, duration, out, tally)
                    stored = board.store.latest_seq
            finally:
                watching.cancel_scope.cancel()
    where = (
        f"kept in {config.store.path}"
        if store_kept
        else "the temporary store is removed as the demo ends (--store FILE keeps one)"
    )
    done = (
        f"demo stopped by {stopped_by[0]} after {time.monotonic() - began:.1f} s"
        if stopped_by
        else "demo finished"
    )
    what = f"{_counted(stored, 'message', 'messages')} stored"
    if agent_mode == "scripted":
        what += f", {_counted(tally.replies, 'reply', 'replies')} sent"
    print(f"{done}: {what}; {where}", file=view.out, flush=True)
    if agent_mode == "scripted":
        print(TRY_NEXT, file=view.out, flush=True)
    return 0
