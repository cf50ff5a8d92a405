"""The mcpl-cc-bridge toy server works with a default config, its inference answered by the
agent's own model through MCP sampling.

The scripted connector is ``toy_bridge`` (peers.md §6's wire behaviour, a real subprocess over
stdio). The agent is a real MCP SDK ``Client`` connected in memory (``mode="legacy"``: the
2025-11-25 handshake, the one with server-to-client requests) whose ``sampling_callback`` plays
the model. tests/clients/test_sampling_clients.py runs the same over ``switchboard
run`` with the SDK over stdio and streamable HTTP, and with the TypeScript SDK.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.session import SamplingFnT
from mcp.types import CreateMessageRequestParams, CreateMessageResult, ErrorData, TextContent
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from switchboard.app import build_server
from switchboard.app.board import Switchboard
from switchboard.events import ConnectorReady, MessagesAccepted
from switchboard.status.http import metrics_registry
from tests.helpers import Recorder, connector, running_board
from tests.integration.peers.support import (
    Agent,
    answer_to,
    named,
    policy_sent,
    received,
    script,
)

pytestmark = pytest.mark.anyio


class Model:
    """The agent's model, as its client's sampling callback: it answers each ask it is given
    (``gate`` set: only once the gate opens) and keeps what it was asked."""

    def __init__(self, *, gate: anyio.Event | None = None, error: str | None = None) -> None:
        self.asked: list[CreateMessageRequestParams] = []
        self.gate = gate
        self.error = error
        self.cancelled_seen = anyio.Event()

    async def __call__(
        self, context: Any, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        self.asked.append(params)
        if self.gate is not None:
            try:
                await self.gate.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled_seen.set()
                raise
        if self.error is not None:
            return ErrorData(code=-1, message=self.error)
        last = params.messages[-1].content
        text = last.text if isinstance(last, TextContent) else "?"
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=f"summary of {text!r}"),
            model="test-model-7",
            stop_reason="maxTokens",
        )


@asynccontextmanager
async def toy(
    tmp_path: Path,
    *,
    model: SamplingFnT | None,
    attach: bool = True,
    env: dict[str, str] | None = None,
    **config: Any,
) -> AsyncIterator[tuple[Switchboard, Agent | None, Recorder, Path]]:
    """A board running the toy with a default config (plus ``config``), and the agent attached
    over MCP with ``model`` as its sampling callback (None: a client that cannot sample)."""
    record = tmp_path / "toy.jsonl"
    recorder = Recorder()
    cc = connector("toy", script("toy_bridge", str(record)), env=env or {}, **config)
    async with running_board(tmp_path, cc, recorder=recorder) as board:
        if not attach:
            yield board, None, recorder, record
            return
        async with Client(
            build_server(board, agent="agent"), mode="legacy", sampling_callback=model
        ) as client:
            yield board, Agent(client), recorder, record


async def ask(agent: Agent, text: str) -> None:
    published = await agent.call("channel_publish", {"channel": "toy:lobby", "text": text})
    assert published["status"] == "delivered", published


FIRST_ASK = 109
"""The id of the toy's first inference/request on cue: its scenario used 101..108."""


async def test_the_toy_works_with_a_default_config_and_its_inference_is_answered_by_sampling(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    """H-36 (a stream: one chunk naming the request, then the answer), H-22, H-26, H-30..H-33."""
    model = Model()
    async with toy(tmp_path, model=model) as (board, agent, recorder, record):
        assert agent is not None
        await recorder.wait_kind(ConnectorReady)
        events = ["event:toy-beat", "event:toy-mcpl", "event:toy-native", "event:toy-dm"]
        await agent.inbox_until("toy-m1", "toy-m2", "toy-m3", *events)
        assert list(await agent.channels("toy")) == ["toy:lobby"]
        assert agent.message("toy-m1")["tags"] == ["chat:mention"]
        assert agent.message("event:toy-native")["channel_id"] == "toy:lobby"
        await ask(agent, "ask: the lobby today")
        await agent.inbox_until(f"toy-answer-{FIRST_ASK}", f"toy-model-{FIRST_ASK}")
        refusals = board.sessions["toy"].statistics()
    policy = policy_sent(record)["params"]
    assert policy["enabled"] == ["toy"]
    for leaf in ("inferenceRequest", "inferenceLifecycle", "contextHooks.beforeInference.observe"):
        assert leaf in policy["effectiveCapabilities"]
    # The mapping (docs/inference.md): the system message is the system prompt.
    (asked,) = model.asked
    assert asked.system_prompt == "You are the toy's summarizer."
    assert [(m.role, getattr(m.content, "text", None)) for m in asked.messages] == [
        ("user", "the lobby today")
    ]
    assert (asked.max_tokens, asked.temperature) == (64, 0.2)
    answer = answer_to(record, FIRST_ASK)
    assert answer["result"] == {
        "content": "summary of 'the lobby today'",
        "model": "test-model-7",
        "finishReason": "max_tokens",
        "usage": {"inputTokens": None, "outputTokens": None},
    }
    (chunk,) = named(record, "inference/chunk")
    assert chunk["params"] == {
        "requestId": FIRST_ASK,
        "index": 0,
        "delta": "summary of 'the lobby today'",
    }
    got = received(record)
    assert got.index(chunk) < got.index(answer), "the chunk precedes the complete answer"
    texts = {m["message_id"]: m["text"] for m in agent.seen}
    assert texts[f"toy-answer-{FIRST_ASK}"] == "answer summary of 'the lobby today'"
    # The toy advertises no modelInfo: never granted, so model/info is denied (H-18).
    assert texts[f"toy-model-{FIRST_ASK}"] == "model-error -32002 "
    assert refusals.inference_refused == 1  # that model/info, counted
    # The context hook: beforeUser kept, the never-granted afterUser dropped (H-26).
    assert named(record, "context/beforeInference")
    assert any(e["event"] == "injection_dropped" for e in logs)
    # Lifecycle: metadata only, exactly one terminal per started (H-30, H-32).
    phases = [m["params"] for m in named(record, "inference/lifecycle")]
    assert phases, "the agent's turns are told"
    allowed = {"inferenceId", "conversationId", "turnIndex", "phase", "model", "usage"}
    assert all(set(p) <= allowed for p in phases)
    started = [p["inferenceId"] for p in phases if p["phase"] == "started"]
    ended = [p["inferenceId"] for p in phases if p["phase"] != "started"]
    assert len(set(ended)) == len(ended)
    assert set(ended) <= set(started)
    assert set(ended) == set(started), "the host stopping ends the last turn too"
    assert phases[-1]["phase"] == "aborted"


SCENARIO_ASK = 105
"""The id of the toy's own inference/request with ``TOY_INFERENCE=1`` (after 101..104)."""


def _answer_text(agent: Agent, prefix: str) -> list[str]:
    return [m["text"] for m in agent.seen if m["message_id"].startswith(prefix)]


async def _read_until(agent: Agent, prefix: str, count: int, within: float = 30.0) -> list[str]:
    """Read the inbox until ``count`` messages whose id starts with ``prefix`` arrived."""
    with anyio.fail_after(within):
        while len(_answer_text(agent, prefix)) < count:
            read = await agent.call("inbox", {"wait_seconds": 5})
            assert not read["is_error"], read
            agent.seen.extend(read["messages"])
    return _answer_text(agent, prefix)


def _error(record: Path, rid: int) -> dict[str, Any]:
    error: dict[str, Any] = answer_to(record, rid)["error"]
    return error


async def test_with_no_session_attached_the_inference_is_refused_naming_the_agent_and_the_way_in(
    tmp_path: Path,
) -> None:
    """S→H requests are always answered (H-17): an error, never silence."""
    async with toy(tmp_path, model=None, attach=False, env={"TOY_INFERENCE": "1"}) as (
        board,
        _agent,
        recorder,
        record,
    ):
        await recorder.wait_for(
            lambda e: (
                isinstance(e, MessagesAccepted)
                and any(m["messageId"] == f"toy-answer-{SCENARIO_ASK}" for m in e.messages)
            )
        )
        statistics = board.sessions["toy"].statistics()
        snapshot = board.status.snapshot()
    error = _error(record, SCENARIO_ASK)
    assert error["code"] == -32603
    assert error["data"] == {"reason": "inference-unavailable", "agent": "@agent"}
    assert "@agent" in error["message"]
    assert "no session attached" in error["message"]
    assert "sampling capability" in error["message"]
    assert statistics.inference_refused == 1
    (row,) = [c for c in snapshot["connectors"] if c["id"] == "toy"]
    assert row["inference"] == {"answered": 0, "refused": 1, "in_flight": 0}
    assert [r["kind"] for r in snapshot["recent_refusals"]] == ["inference_refused"]


async def test_a_client_that_declared_no_sampling_is_named_in_the_refusal(tmp_path: Path) -> None:
    async with toy(tmp_path, model=None) as (_board, agent, _recorder, record):
        assert agent is not None
        await agent.inbox_until("toy-m3")
        await ask(agent, "ask: anything")
        (text,) = await _read_until(agent, "toy-answer-", 1)
    assert text.startswith("error -32603 inference-unavailable")
    error = _error(record, FIRST_ASK)
    assert "no attached session's client" in error["message"]
    assert "declared the sampling capability" in error["message"]


async def test_a_sampling_request_the_client_refuses_is_answered_sampling_failed(
    tmp_path: Path,
) -> None:
    model = Model(error="the user declined this sampling request")
    async with toy(tmp_path, model=model) as (_board, agent, _recorder, record):
        assert agent is not None
        await agent.inbox_until("toy-m3")
        await ask(agent, "ask: anything")
        (text,) = await _read_until(agent, "toy-answer-", 1)
    assert text.startswith("error -32603 sampling-failed")
    error = _error(record, FIRST_ASK)
    assert "the user declined this sampling request" in error["message"]
    assert error["data"]["agent"] == "@agent"
    assert named(record, "inference/chunk") == [], "no chunk for a request that failed"


async def test_a_sampling_request_past_inference_timeout_is_cancelled_and_answered_with_a_timeout(
    tmp_path: Path,
) -> None:
    model = Model(gate=anyio.Event())  # the model never answers
    async with toy(tmp_path, model=model, inference_timeout=0.5) as (_b, agent, _r, record):
        assert agent is not None
        await agent.inbox_until("toy-m3")
        await ask(agent, "ask: anything")
        (text,) = await _read_until(agent, "toy-answer-", 1)
        with anyio.fail_after(10):
            await model.cancelled_seen.wait()
    assert text.startswith("error -32603 inference-timeout")
    assert "0.5 s" in _error(record, FIRST_ASK)["message"]


async def test_past_max_inference_requests_more_asks_are_refused_at_once_and_the_agent_works_on(
    tmp_path: Path,
) -> None:
    """The cap: one in flight, two more refused at once (never queued); meanwhile the agent's
    own tool calls are answered; once the model answers, model/info tells its model."""
    gate = anyio.Event()
    model = Model(gate=gate)
    env = {"TOY_MODEL_INFO": "1"}
    async with toy(tmp_path, model=model, env=env, max_inference_requests=1) as (
        board,
        agent,
        _recorder,
        _record,
    ):
        assert agent is not None
        await agent.inbox_until("toy-m3")
        await ask(agent, "ask 3: the busy lobby")
        refused = await _read_until(agent, "toy-answer-", 2)
        assert all(t.startswith("error -32603 inference-busy") for t in refused), refused
        assert len(model.asked) == 1, "the refused asks never reached the model"
        assert board.sessions["toy"].inference.in_flight == 1
        listing = await agent.call("channel_list")  # the agent's own work is not held up
        assert not listing["is_error"]
        gate.set()
        answers = await _read_until(agent, "toy-answer-", 3)
        (model_text,) = await _read_until(agent, "toy-model-", 1)
        snapshot = board.status.snapshot()
        metrics = generate_latest(metrics_registry(board.status)).decode()
    assert "answer summary of 'the busy lobby'" in answers
    assert model_text == "model test-model-7"
    (row,) = [c for c in snapshot["connectors"] if c["id"] == "toy"]
    assert row["inference"] == {"answered": 1, "refused": 2, "in_flight": 0}
    samples = {
        (x.name, tuple(sorted(x.labels.items()))): x.value
        for family in text_string_to_metric_families(metrics)
        for x in family.samples
    }
    name = "switchboard_connector_inference_total"
    assert samples[(name, (("connector", "toy"), ("outcome", "answered")))] == 1
    assert samples[(name, (("connector", "toy"), ("outcome", "refused")))] == 2


async def test_a_second_request_under_an_id_in_flight_is_refused_and_chunks_echo_the_string_id(
    tmp_path: Path,
) -> None:
    """A chunk names its request by id, so an id is never shared by two in flight; the
    chunk's requestId is the request's id as sent, a string here (H-36, A-33)."""
    gate = anyio.Event()
    model = Model(gate=gate)
    async with toy(tmp_path, model=model) as (_board, agent, _recorder, record):
        assert agent is not None
        await agent.inbox_until("toy-m3")
        await ask(agent, "dup: twice")
        (first,) = await _read_until(agent, "toy-dup-", 1)
        gate.set()
        texts = await _read_until(agent, "toy-dup-", 2)
    assert first == "error -32600"
    assert texts[1] == "answer summary of 'twice'"
    assert len(model.asked) == 1
    (chunk,) = named(record, "inference/chunk")
    assert chunk["params"]["requestId"] == "dup-1"
