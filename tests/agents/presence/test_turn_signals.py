"""``inference/lifecycle`` for agents' turns: exactly one terminal per ``started`` on every exit
path Switchboard controls (mcpl-protocol.md 3.10; H-30..H-33).

Each test drives a board over memory links with scripted connectors (tests/fake.py); a turn
begins when the agent's inbox read returns messages (the port, as the ``inbox`` tool calls it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CreateMessageRequestParams, CreateMessageResult, TextContent

from switchboard.app import build_server
from switchboard.app.board import Switchboard
from switchboard.config import DEFAULT_GRANT
from switchboard.protocol import Grant
from switchboard.transport import Deferred
from tests.fake import ALL_CHANNELS, FakeConnector, board_of, descriptor, message

pytestmark = pytest.mark.anyio

LIFECYCLE = "inference/lifecycle"
ALLOWED = {"inferenceId", "conversationId", "turnIndex", "phase", "model", "usage"}


def lifecycle_connector(**extra: Any) -> FakeConnector:
    mcpl = {
        "version": "0.5",
        "channels": dict(ALL_CHANNELS),
        "pushEvents": True,
        "inferenceLifecycle": True,
        "inferenceRequest": True,
        "modelInfo": True,
        "featureSets": {"mem": {"description": "d", "uses": ["inferenceRequest"]}},
        **extra,
    }
    return FakeConnector(mcpl=mcpl)


def phases(fake: FakeConnector) -> list[dict[str, Any]]:
    return [p for m, p in fake.notifications if m == LIFECYCLE]


async def until(check: Callable[[], bool]) -> None:
    with anyio.fail_after(10):
        while not check():
            await anyio.lowlevel.checkpoint()


async def arrive(board: Switchboard, fake: FakeConnector, mid: str) -> None:
    """A message from ``fake`` on its channel ``room``, stored."""
    await fake.call("channels/incoming", {"messages": [message("room", mid)]})
    del board


def assert_paired(told: list[dict[str, Any]]) -> None:
    """H-30, H-32: metadata only; every terminal follows its started, one each."""
    assert all(set(p) <= ALLOWED for p in told)
    assert all("usage" not in p for p in told)
    started: list[str] = []
    ended: list[str] = []
    for p in told:
        (started if p["phase"] == "started" else ended).append(p["inferenceId"])
        if p["phase"] != "started":
            assert p["inferenceId"] in started, "a terminal with no started"
    assert len(ended) == len(set(ended)), "a second terminal"


HOOKS = {"beforeInference": {"observe": True}}


async def test_a_turn_completes_when_the_agent_comes_back_to_its_inbox(tmp_path: Path) -> None:
    fake = lifecycle_connector(contextHooks=HOOKS)

    async def no_context(method: str, params: Any) -> Any:
        return {"featureSet": "mem", "contextInjections": []}

    fake.extra["context/beforeInference"] = no_context
    async with board_of(tmp_path, {"s1": fake}) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        port = board.agents.port("agent")
        await arrive(board, fake, "m1")
        first = await port.read_inbox(wait_seconds=5)
        await until(lambda: len(phases(fake)) == 1)
        (hook,) = fake.got("context/beforeInference")
        await arrive(board, fake, "m2")
        await port.read_inbox(wait_seconds=5)
        await until(lambda: len(phases(fake)) == 3)
    assert [m.message_id for m in first.messages] == ["m1"]
    told = phases(fake)
    assert [p["phase"] for p in told] == ["started", "completed", "started"]
    assert told[0]["inferenceId"] == told[1]["inferenceId"] == hook["inferenceId"]
    assert [p["turnIndex"] for p in told] == [0, 0, 1]
    assert {p["conversationId"] for p in told} == {"agent"}
    assert "model" not in told[0], "no model is known before the agent's client samples"
    assert_paired(told)


async def test_a_read_cancelled_while_the_turn_begins_aborts_it(tmp_path: Path) -> None:
    """The hook never answers; the read is cancelled meanwhile: one ``aborted``."""
    stuck = anyio.Event()

    async def never(method: str, params: Any) -> Any:
        stuck.set()
        return Deferred(anyio.sleep_forever)  # the fake reads on; this is never answered

    fake = lifecycle_connector(contextHooks=HOOKS)
    fake.extra["context/beforeInference"] = never
    async with board_of(tmp_path, {"s1": fake}) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        await arrive(board, fake, "m1")
        port = board.agents.port("agent")
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: port.read_inbox(wait_seconds=5))
            with anyio.fail_after(10):
                await stuck.wait()
            tg.cancel_scope.cancel()
        await until(lambda: len(phases(fake)) == 2)
    assert [p["phase"] for p in phases(fake)] == ["started", "aborted"]
    assert_paired(phases(fake))


async def test_the_last_session_detaching_aborts_the_open_turn(tmp_path: Path) -> None:
    fake = lifecycle_connector()
    async with board_of(tmp_path, {"s1": fake}) as board, anyio.create_task_group() as tg:
        tg.start_soon(board.turns.run)
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        await arrive(board, fake, "m1")
        board.attachments.attach("agent")
        board.attachments.attach("agent")
        await board.agents.port("agent").read_inbox(wait_seconds=5)
        board.attachments.detach("agent")  # one session is still attached
        board.attachments.detach("agent")
        await until(lambda: len(phases(fake)) == 2)
        tg.cancel_scope.cancel()
    assert [p["phase"] for p in phases(fake)] == ["started", "aborted"]


async def test_the_host_stopping_aborts_every_open_turn(tmp_path: Path) -> None:
    fake = lifecycle_connector()
    async with board_of(tmp_path, {"s1": fake}) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        await arrive(board, fake, "m1")
        await board.agents.port("agent").read_inbox(wait_seconds=5)
        await board.turns.end_all("aborted")  # what Switchboard.started does when it stops
        await board.turns.end_all("aborted")  # a second stop sends nothing more
        await until(lambda: len(phases(fake)) == 2)
    assert [p["phase"] for p in phases(fake)] == ["started", "aborted"]
    assert_paired(phases(fake))


async def test_only_connectors_granted_the_lifecycle_hear_it_and_only_modelinfo_ones_the_model(
    tmp_path: Path,
) -> None:
    """H-33: none without ``inferenceLifecycle``; H-31: ``model`` only with ``modelInfo``, once
    the agent's sampling client reported one (``context/beforeInference`` tells it too)."""
    granted, bare, no_model = (
        lifecycle_connector(contextHooks=HOOKS),
        lifecycle_connector(),
        lifecycle_connector(),
    )

    async def no_context(method: str, params: Any) -> Any:
        return {"featureSet": "mem", "contextInjections": []}

    granted.extra["context/beforeInference"] = no_context

    async def model(context: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="ok"), model="m-9"
        )

    fakes = {"a": granted, "b": bare, "c": no_model}
    async with board_of(tmp_path, fakes) as board:
        board.sessions["b"].grant = Grant([p for p in DEFAULT_GRANT if p != "inferenceLifecycle"])
        board.sessions["c"].grant = Grant([p for p in DEFAULT_GRANT if p != "modelInfo"])
        async with Client(
            build_server(board, agent="agent"), mode="legacy", sampling_callback=model
        ):
            ask = {"featureSet": "mem", "messages": [{"role": "user", "content": "hi"}]}
            answer = await granted.call("inference/request", ask)
            await granted.call("channels/register", {"channels": [descriptor("room")]})
            await arrive(board, granted, "m1")
            await board.agents.port("agent").read_inbox(wait_seconds=5)
            await until(lambda: bool(phases(granted)) and bool(phases(no_model)))
    assert answer["model"] == "m-9"
    assert phases(bare) == []
    (to_granted,) = phases(granted)
    (to_no_model,) = phases(no_model)
    assert to_granted["model"] == {
        "id": "m-9",
        "vendor": "unknown",
        "contextWindow": 0,
        "capabilities": [],
    }
    assert "model" not in to_no_model
    (hook,) = granted.got("context/beforeInference")
    assert hook["model"]["id"] == "m-9", "the hook tells the model the client reported too"
