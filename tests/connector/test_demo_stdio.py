"""Demo Town as a real subprocess over stdio, the way Switchboard spawns it."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import anyio
import pytest

from switchboard.transport import StdioLink, spawn_stdio
from tests.connector.hostkit import WAIT, ScriptedHost

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DEMO = [sys.executable, "-m", "switchboard.connectors.demo", "--log-level", "WARNING"]


@asynccontextmanager
async def demo_process(args: Sequence[str]) -> AsyncIterator[tuple[ScriptedHost, StdioLink]]:
    async with spawn_stdio([*DEMO, *args], name="demo") as link:
        host = ScriptedHost(link)
        async with anyio.create_task_group() as tg:
            tg.start_soon(host.peer.run)
            try:
                yield host, link
            finally:
                tg.cancel_scope.cancel()


async def test_the_demo_over_stdio_registers_greets_and_answers_despite_junk_lines() -> None:
    async with demo_process(["--hello", "--junk", "--interval", "0"]) as (host, _):
        result = await host.handshake()
        register = await host.next("channels/register")
        hello = await host.next("channels/incoming")
        answer_to = await host.peer.request(
            "channels/publish",
            {"channelId": "demo:#general", "content": [{"type": "text", "text": "hi all?"}]},
        )
        answer = await host.next("channels/incoming")
    assert result == {"accepted": True}
    assert len(register.params["channels"]) == 3
    assert hello.params["messages"][0]["content"][0]["text"] == "welcome!"
    assert answer_to == {"delivered": True, "messageId": "demo-m-1"}
    assert "demo-m-1" in answer.params["messages"][0]["content"][0]["text"]
    junk = [frame for frame in host.recorder.received if isinstance(frame, bytes)]
    assert len(junk) == 3  # two before the handshake, one after it; all skipped


async def test_the_demo_process_exits_with_code_3_after_fail_after_publishes() -> None:
    async with demo_process(["--interval", "0", "--fail-after", "1"]) as (host, link):
        await host.handshake()
        await host.next("channels/register")
        result = await host.peer.request(
            "channels/publish",
            {"channelId": "demo:#random", "content": [{"type": "text", "text": "bye"}]},
        )
        with anyio.fail_after(WAIT):
            code = await link.wait()
    assert result["delivered"] is True
    assert code == 3
