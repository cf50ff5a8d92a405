"""Three agents and one community on one Switchboard, end to end (issue #12, "Done when").

``switchboard run`` runs as a real subprocess with a real store file and the community connector
(tests/integration/community_connector.py) as its real stdio subprocess. The agents are real
``mcp`` SDK clients over streamable HTTP, each proving its identity with its own token: a
resident (home ``#general``, default delivery), a researcher (home ``#lab``, addressed by the
platform mention ``<@R123>``) and a task worker the researcher spawns. What people say is
published to the connector's control channel, which says it in the room named.

The test checks homes, mentions, untargeted routing, mail between agents, mail held for an agent
that has not attached yet, a task's result reaching its parent, and a SIGKILL of Switchboard in
the middle of a run of deposits: after the restart, every deposit the sender was told of is
delivered exactly once, numbered without gaps.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import Process
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent
TOKENS = {"resident": "resident-" + "r" * 24, "researcher": "researcher-" + "s" * 24}


def _config(tmp_path: Path) -> Path:
    community = [sys.executable, str(HERE / "community_connector.py")]
    path = tmp_path / "switchboard.toml"
    path.write_text(
        f'log_level = "INFO"\n'
        f'[store]\npath = "{tmp_path / "store.sqlite"}"\n'
        '[agent]\ntransport = "http"\nport = 0\n'
        "[[connectors]]\n"
        f'id = "community"\ncommand = {json.dumps(community)}\n'
        "[[agents]]\n"
        'handle = "@resident"\ntoken = "${RESIDENT_TOKEN}"\n'
        'home = "community:town:general"\nroles = ["default_delivery"]\n'
        "[[agents]]\n"
        'handle = "@researcher"\ntoken = "${RESEARCHER_TOKEN}"\n'
        'home = "community:town:lab"\nmentions = ["<@R123>"]\n'
    )
    return path


class Board:
    """One ``switchboard run`` process; its stderr is drained while it runs."""

    def __init__(self, process: Process, url: str) -> None:
        self.process = process
        self.url = url


@asynccontextmanager
async def _running(config: Path) -> AsyncIterator[Board]:
    env = {
        **os.environ,
        "RESIDENT_TOKEN": TOKENS["resident"],
        "RESEARCHER_TOKEN": TOKENS["researcher"],
    }
    command = [sys.executable, "-m", "switchboard", "run", "--config", str(config)]
    async with await anyio.open_process(command, env=env) as process:
        assert process.stderr is not None
        stderr = process.stderr
        seen = ""
        with anyio.fail_after(30):
            while (found := re.search(r"agent_endpoint .*url=(\S+)", seen)) is None:
                seen += (await stderr.receive()).decode()
        url = found.group(1)

        async def drain() -> None:
            async for _ in stderr:
                pass

        async with anyio.create_task_group() as group:
            group.start_soon(drain)
            try:
                yield Board(process, url)
            finally:
                if process.returncode is None:
                    process.terminate()
                with anyio.fail_after(30):
                    await process.wait()
                group.cancel_scope.cancel()


class Agent:
    """One agent's MCP client session, with the tool calls the test makes."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.cursor: int | None = None

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert not result.is_error, f"{tool} refused: {text}"
        content = result.structured_content
        assert isinstance(content, dict), text
        return content

    async def read(self, *, wait: float = 5.0) -> list[dict[str, Any]]:
        """One inbox read that acknowledges the previous one."""
        page = await self.call("inbox", wait_seconds=wait, after=self.cursor, limit=500)
        self.cursor = page["cursor"]
        return list(page["messages"])

    async def read_until(self, count: int) -> list[dict[str, Any]]:
        """Read until ``count`` messages came, then once more to see nothing else is owed."""
        got: list[dict[str, Any]] = []
        while len(got) < count:
            got += await self.read()
        got += await self.read(wait=0.3)
        return got


@asynccontextmanager
async def _agent(url: str, token: str, *, may_die: bool = False) -> AsyncIterator[Agent]:
    """An agent's client session; with ``may_die``, closing it after Switchboard was killed
    (its session can no longer be ended politely) is not an error."""
    stack = AsyncExitStack()
    http = await stack.enter_async_context(
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    )
    client = await stack.enter_async_context(
        Client(streamable_http_client(url, http_client=http), mode="legacy")
    )
    try:
        yield Agent(client)
    finally:
        try:
            await stack.aclose()
        except Exception:
            if not may_die:
                raise


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    return [m["text"] for m in messages]


async def _say(agent: Agent, *said: dict[str, str]) -> None:
    await agent.call("channel_publish", channel="community:town:control", text=json.dumps(said))


async def _channels_ready(agent: Agent) -> None:
    while True:
        listed = await agent.call("channel_list")
        if "town:lab" in json.dumps(listed):
            return
        await agent.read(wait=0.2)


async def test_three_agents_share_one_community_and_mail_each_other_across_a_crash(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    sent: list[str] = []
    with anyio.fail_after(240):
        async with (
            _running(config) as board,
            _agent(board.url, TOKENS["resident"], may_die=True) as resident,
            _agent(board.url, TOKENS["researcher"], may_die=True) as researcher,
        ):
            await _channels_ready(resident)
            # -- homes, mentions, untargeted
            await _say(
                resident,
                {"channel": "town:general", "author": "ada", "text": "hello all"},
                {"channel": "town:lab", "author": "bo", "text": "lab result"},
                {"channel": "town:general", "author": "ada", "text": "@researcher look"},
                {"channel": "town:random", "author": "cy", "text": "anyone around?"},
                {"channel": "town:random", "author": "cy", "text": "hey <@R123>"},
            )
            mine = _texts(await resident.read_until(3))
            assert mine == ["hello all", "@researcher look", "anyone around?"]
            theirs = _texts(await researcher.read_until(3))
            assert theirs == ["lab result", "@researcher look", "hey <@R123>"]
            # -- mail between agents
            sent_mail = await resident.call("agent_send", to="@researcher", text="summarize?")
            assert sent_mail["n"] == 1
            (mail,) = await researcher.read_until(1)
            assert mail["text"] == "summarize?"
            assert mail["metadata"]["from"] == "@resident"
            assert mail["metadata"]["n"] == 1
            # -- a task worker: mail held until it attaches, its result to its parent
            spawned = await researcher.call("agent_spawn", handle="@task-one", turn_limit=5)
            token = spawned["token"]
            await researcher.call("agent_send", to="@task-one", text="count the stars")
            async with _agent(board.url, token) as worker:
                (held,) = await worker.read_until(1)
                assert held["text"] == "count the stars"
                assert held["metadata"]["from"] == "@researcher"
                await worker.call("task_finish", result="there are 42")
            (result,) = await researcher.read_until(1)
            assert result["metadata"]["from"] == "@task-one"
            assert "there are 42" in result["text"]
            # -- a run of deposits, and Switchboard killed in the middle of it
            got_far = anyio.Event()

            async def deposit() -> None:
                for i in range(10_000):
                    try:
                        await resident.call("agent_send", to="@researcher", text=f"d{i}")
                    except Exception:
                        return
                    sent.append(f"d{i}")
                    if i == 40:
                        got_far.set()

            async with anyio.create_task_group() as group:
                group.start_soon(deposit)
                await got_far.wait()
                board.process.send_signal(signal.SIGKILL)
                await board.process.wait()
                group.cancel_scope.cancel()
        assert len(sent) > 40
        async with (
            _running(config) as board,
            _agent(board.url, TOKENS["researcher"]) as researcher,
        ):
            got: list[dict[str, Any]] = []
            while True:
                page = await researcher.read(wait=1.0)
                if not page:
                    break
                got += page
    deposits = [m for m in got if m["metadata"] and m["metadata"].get("from") == "@resident"]
    texts = _texts(deposits)
    assert len(texts) == len(set(texts)), "a deposit was delivered twice"
    assert set(sent) <= set(texts), "an acknowledged deposit was lost"
    numbers = [m["metadata"]["n"] for m in deposits]
    assert numbers == list(range(2, 2 + len(numbers))), "the numbering has a gap"
