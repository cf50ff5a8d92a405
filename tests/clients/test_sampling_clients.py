"""The toy connector's inference answered by real MCP clients' sampling, over the real transports.

``switchboard run`` runs with a default config (no ``grant``, no ``inference_agent``) and the
scripted mcpl-cc-bridge toy server (tests/integration/peers/toy_bridge.py, a real subprocess over
stdio). The agent's client declares the sampling capability and plays the model: the Python SDK
over stdio (it spawns ``switchboard run``) and over streamable HTTP (bearer token, ephemeral
loopback port), and the pinned TypeScript SDK over both (tests/clients/ts_sampling.mjs). Each
reads the toy's scenario, publishes ``ask: ...`` to its lobby and reads the toy's answer, which
carries the text the client's model returned (H-36's chunk and answer shape are checked in
tests/integration/peers/test_toy_bridge.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CreateMessageRequestParams, CreateMessageResult, TextContent

from tests.clients.test_ts_clients import CLIENTS, http_switchboard, run_node, switchboard_run
from tests.integration.peers.support import Agent, script

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TS_SAMPLING = CLIENTS / "ts_sampling.mjs"
PROMPT = "what happened in the lobby"


def toy_config(tmp_path: Path, transport: str) -> Path:
    """A default config running the toy: only how to reach it, the store and the endpoint."""
    endpoint = f'transport = "{transport}"\n'
    if transport == "http":
        endpoint += 'host = "127.0.0.1"\nport = 0\ntoken = "${SWITCHBOARD_AGENT_TOKEN}"\n'
    command = script("toy_bridge", str(tmp_path / f"toy-{transport}.jsonl"))
    path = tmp_path / f"toy-{transport}.toml"
    path.write_text(
        f"[store]\npath = {json.dumps(str(tmp_path / f'{transport}.sqlite'))}\n"
        f"[agent]\n{endpoint}"
        f'[[connectors]]\nid = "toy"\ncommand = {json.dumps(command)}\n'
    )
    return path


class Model:
    """The Python client's model: it answers every ask and keeps what it was asked."""

    def __init__(self) -> None:
        self.asked: list[CreateMessageRequestParams] = []

    async def __call__(
        self, context: Any, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        self.asked.append(params)
        last = params.messages[-1].content
        text = last.text if isinstance(last, TextContent) else "?"
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=f"python says: {text}"),
            model="py-model-1",
            stop_reason="endTurn",
        )


async def ask_the_toy(agent: Agent) -> str:
    """Read the toy's scenario, ask it for inference on cue, return its answer's text."""
    await agent.inbox_until("toy-m3", within=60)
    published = await agent.call(
        "channel_publish", {"channel": "toy:lobby", "text": f"ask: {PROMPT}"}
    )
    assert published["status"] == "delivered", published
    with anyio.fail_after(60):
        while True:
            answers = [m for m in agent.seen if m["message_id"].startswith("toy-answer-")]
            if answers:
                return str(answers[0]["text"])
            read = await agent.call("inbox", {"wait_seconds": 5})
            assert not read["is_error"], read
            agent.seen.extend(read["messages"])


def assert_asked_once(model: Model) -> None:
    (asked,) = model.asked
    assert asked.system_prompt == "You are the toy's summarizer."
    assert [getattr(m.content, "text", None) for m in asked.messages] == [PROMPT]
    assert (asked.max_tokens, asked.temperature) == (64, 0.2)


async def test_the_python_sdk_over_stdio_answers_the_toys_inference(tmp_path: Path) -> None:
    model = Model()
    config = toy_config(tmp_path, "stdio")
    argv = switchboard_run(config)
    server = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with Client(server, mode="legacy", sampling_callback=model) as client:
        text = await ask_the_toy(Agent(client))
    assert text == f"answer python says: {PROMPT}"
    assert_asked_once(model)


@asynccontextmanager
async def http_agent(url: str, token: str, model: Model) -> AsyncIterator[Agent]:
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        )
        client = await stack.enter_async_context(
            Client(
                streamable_http_client(url, http_client=http),
                mode="legacy",
                sampling_callback=model,
            )
        )
        yield Agent(client)


async def test_the_python_sdk_over_streamable_http_answers_the_toys_inference(
    tmp_path: Path,
) -> None:
    model = Model()
    async with (
        http_switchboard(tmp_path, toy_config(tmp_path, "http")) as (url, token),
        http_agent(url, token, model) as agent,
    ):
        text = await ask_the_toy(agent)
    assert text == f"answer python says: {PROMPT}"
    assert_asked_once(model)


async def ts_sampling(target: list[str]) -> dict[str, Any]:
    code, out, err = await run_node([str(TS_SAMPLING), "--prompt", PROMPT, *target])
    assert code == 0, f"the TypeScript client failed:\n{err}"
    report: dict[str, Any] = json.loads(out)
    return report


def assert_ts_answered(report: dict[str, Any]) -> None:
    assert report["answer"] == f"answer ts says: {PROMPT}"
    (asked,) = report["asked"]
    assert asked["systemPrompt"] == "You are the toy's summarizer."
    assert asked["messages"] == [{"role": "user", "content": {"type": "text", "text": PROMPT}}]
    assert (asked["maxTokens"], asked["temperature"]) == (64, 0.2)


async def test_the_typescript_sdk_over_stdio_answers_the_toys_inference(tmp_path: Path) -> None:
    report = await ts_sampling(["--", *switchboard_run(toy_config(tmp_path, "stdio"))])
    assert_ts_answered(report)


async def test_the_typescript_sdk_over_streamable_http_answers_the_toys_inference(
    tmp_path: Path,
) -> None:
    async with http_switchboard(tmp_path, toy_config(tmp_path, "http")) as (url, token):
        report = await ts_sampling(["--url", url, "--token", token])
    assert_ts_answered(report)


async def test_a_session_that_ended_is_passed_over_for_the_next_one_that_can_sample(
    tmp_path: Path,
) -> None:
    """The newest session is asked first; one whose connection ended is forgotten and the
    next newest answers (no timeout waited out)."""
    first, gone = Model(), Model()
    async with (
        http_switchboard(tmp_path, toy_config(tmp_path, "http")) as (url, token),
        http_agent(url, token, first) as agent,
    ):
        async with http_agent(url, token, gone) as newest:
            await newest.inbox_until("toy-m3", within=60)
        text = await ask_the_toy(agent)
    assert text == f"answer python says: {PROMPT}"
    assert (len(first.asked), len(gone.asked)) == (1, 0)
