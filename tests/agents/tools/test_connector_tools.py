"""A connector's own MCP tools reach the agent: named, listed, called, refused, followed.

The connector is a real subprocess over stdio (tests/integration/tools_connector.py): a 0.4
connector with MCP tools that answers the policy Request with -32601, as heartbeat-mcpl and
dog_events_mcpl do (peers.md §4, §7). The agent is the MCP SDK's ``Client`` on Switchboard's
server (issue #10, item 3; docs/tools.md, "Connector tools").
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.types import CallToolResult, ToolListChangedNotification

from switchboard.agents.port.protocol import ConnectorTool
from switchboard.agents.tools.connector_passthrough import (
    NAME_LIMIT,
    agent_names,
    hashed_name,
    plain_name,
)
from switchboard.agents.tools.results import MAX_ANSWER_BYTES
from switchboard.agents.tools.server import OWN_TOOLS
from switchboard.app import build_server
from switchboard.app.board import Switchboard
from switchboard.events import ConnectorReady, ConnectorToolsChanged
from switchboard.refusals.refusal import Refusal, RefusalKind
from tests.agents.tools.channel_support import answer as refusal_of
from tests.helpers import Recorder, connector, running_board

pytestmark = pytest.mark.anyio

TOOLS_CONNECTOR = str(Path(__file__).parents[2] / "integration" / "tools_connector.py")
SID = "dog.events"
"""A server id with a character tool names may not carry: it is shown as ``dog_events``."""
ALL = {"echo", "push_first", "sorry", "broken", "grow", "exit_now", "huge"}


def tool_of(server_id: str, name: str) -> ConnectorTool:
    return ConnectorTool(server_id, name, None, None, {"type": "object"})


def structured(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None
    return dict(result.structured_content)


class AgentInbox:
    """The agent's MCP messages from the server: counts ``tools/list_changed`` notices."""

    def __init__(self) -> None:
        self.list_changed = 0
        self._seen = anyio.Event()

    async def __call__(self, message: IncomingMessage) -> None:
        if isinstance(message, ToolListChangedNotification):
            self.list_changed += 1
            self._seen.set()
            self._seen = anyio.Event()

    async def wait_list_changed(self, at_least: int) -> None:
        with anyio.fail_after(20):
            while self.list_changed < at_least:
                await self._seen.wait()


@asynccontextmanager
async def agent_on_tools_connector(
    tmp_path: Path, mode: str = "normal", **kw: Any
) -> AsyncIterator[tuple[Switchboard, Client, Recorder, AgentInbox]]:
    recorder = Recorder()
    inbox = AgentInbox()
    cfg = connector(SID, [sys.executable, TOOLS_CONNECTOR, mode], restart=False, **kw)
    async with (
        running_board(tmp_path, cfg, recorder=recorder) as board,
        Client(build_server(board, agent="agent"), mode="legacy", message_handler=inbox) as client,
    ):
        yield board, client, recorder, inbox


async def listed(client: Client) -> dict[str, Any]:
    return {t.name: t for t in (await client.list_tools()).tools}


# -- names ------------------------------------------------------------------------------------


def test_a_tool_is_named_server_then_tool_with_characters_clients_refuse_replaced() -> None:
    assert plain_name("dog.events", "get status") == "dog_events__get_status"
    named = agent_names([tool_of("dog.events", "get status")], OWN_TOOLS)
    assert list(named) == ["dog_events__get_status"]


def test_tools_whose_names_would_collide_all_get_distinct_hashed_names_whatever_the_order() -> None:
    dotted, underscored = tool_of("a", "x.y"), tool_of("a", "x_y")
    nested, flat = tool_of("s__t", "u"), tool_of("s", "t__u")
    one = agent_names([dotted, underscored, nested, flat], OWN_TOOLS)
    other = agent_names([flat, nested, underscored, dotted], OWN_TOOLS)
    assert sorted(one) == sorted(other)
    assert len(one) == 4
    assert {(t.server_id, t.name): n for n, t in one.items()} == {
        (t.server_id, t.name): n for n, t in other.items()
    }
    assert "a__x_y" not in one
    assert "s__t__u" not in one
    assert all(len(n) <= NAME_LIMIT for n in one)


def test_a_name_too_long_or_taken_by_switchboard_is_hashed_within_64_characters() -> None:
    long = tool_of("server", "t" * 80)
    name = hashed_name("server", "t" * 80)
    assert len(name) == NAME_LIMIT
    assert list(agent_names([long], OWN_TOOLS)) == [name]
    reserved = frozenset({"s__inbox"})
    assert list(agent_names([tool_of("s", "inbox")], reserved)) == [hashed_name("s", "inbox")]


# -- through the agent's MCP server -----------------------------------------------------------


async def test_a_connectors_tools_are_listed_namespaced_with_their_schemas_after_switchboards(
    tmp_path: Path,
) -> None:
    async with agent_on_tools_connector(tmp_path) as (_board, client, recorder, _inbox):
        changed = await recorder.wait_kind(ConnectorToolsChanged)
        assert set(changed.tools) == ALL  # every page of tools/list was followed
        tools = (await client.list_tools()).tools
        names = [t.name for t in tools]
        own = [n for n in names if n in OWN_TOOLS]
        assert set(names[: len(own)]) == set(own)
        assert "inbox" in own
        assert set(names[len(own) :]) == {f"dog_events__{n}" for n in ALL}
        echo = next(t for t in tools if t.name == "dog_events__echo")
        assert echo.input_schema["required"] == ["text"]
        assert echo.output_schema is not None
        assert echo.output_schema["required"] == ["echoed"]
        assert echo.annotations is not None
        assert echo.annotations.read_only_hint is True
        assert echo.title == "Echo"
        assert (
            echo.description == "From connector 'dog.events' (its tool 'echo'). Say the text back."
        )


async def test_calling_a_connector_tool_forwards_it_and_passes_its_result_back(
    tmp_path: Path,
) -> None:
    async with agent_on_tools_connector(tmp_path) as (_board, client, recorder, _inbox):
        await recorder.wait_kind(ConnectorToolsChanged)
        echoed = await client.call_tool("dog_events__echo", {"text": "hello"})
        assert not echoed.is_error
        assert structured(echoed) == {"echoed": "hello"}
        assert [c.model_dump(exclude_none=True) for c in echoed.content] == [
            {"type": "text", "text": "hello"}
        ]
        sorry = await client.call_tool("dog_events__sorry", {})
        assert sorry.is_error
        assert sorry.structured_content is None  # the connector's own error, not a refusal
        assert sorry.content[0].model_dump()["text"] == "the tool could not do it"


async def test_a_connector_answer_over_the_answer_bound_is_refused_and_says_the_tool_ran(
    tmp_path: Path,
) -> None:
    """docs/tools.md, "Bounded answers": a connector tool's answer is bounded like any other."""
    async with agent_on_tools_connector(tmp_path) as (_board, client, recorder, _inbox):
        await recorder.wait_kind(ConnectorToolsChanged)
        result = await client.call_tool("dog_events__huge", {})
    assert result.is_error
    facts = refusal_of(result)
    assert facts["refusal"] == "connector-failed"
    assert facts["bytes"] > MAX_ANSWER_BYTES
    assert "it ran" in facts["message"]


async def test_the_host_serves_a_push_sent_before_the_answer_to_the_tool_call(
    tmp_path: Path,
) -> None:
    """heartbeat-mcpl and dog_events_mcpl push before answering (peers.md §4, §7)."""
    async with agent_on_tools_connector(tmp_path) as (_board, client, recorder, _inbox):
        await recorder.wait_kind(ConnectorToolsChanged)
        with anyio.fail_after(20):
            result = await client.call_tool("dog_events__push_first", {})
        assert not result.is_error
        answer = structured(result)["push_answer"]
        # The host answered the push while the call was outstanding, accepting it by 0.4 rules
        # (its set lists only `tools`; pushEvents is granted); then the call's result came back.
        assert answer["id"] == "s1"
        assert answer["result"] == {"accepted": True}


async def test_a_tool_list_change_is_fetched_again_and_the_agent_is_told(tmp_path: Path) -> None:
    async with agent_on_tools_connector(tmp_path) as (_board, client, recorder, inbox):
        tools_capability = client.server_capabilities.tools
        assert tools_capability is not None
        assert tools_capability.list_changed is True
        await recorder.wait_kind(ConnectorToolsChanged)
        assert "dog_events__late" not in await listed(client)
        told = inbox.list_changed
        await client.call_tool("dog_events__grow", {})
        grown = await recorder.wait_kind(ConnectorToolsChanged, nth=2)
        assert "late" in grown.tools
        await inbox.wait_list_changed(told + 1)
        assert "dog_events__late" in await listed(client)
        late = await client.call_tool("dog_events__late", {})
        assert late.is_error  # forwarded: the connector lists it but does not serve it
        assert refusal_of(late)["refusal"] == "connector-failed"


async def test_an_unknown_tool_and_a_connector_error_are_refused_with_what_to_do_next(
    tmp_path: Path,
) -> None:
    async with agent_on_tools_connector(tmp_path) as (_board, client, recorder, _inbox):
        await recorder.wait_kind(ConnectorToolsChanged)
        unknown = await client.call_tool("dog_events__nope", {})
        assert unknown.is_error
        assert refusal_of(unknown)["refusal"] == "unknown-tool"
        assert refusal_of(unknown)["tool"] == "dog_events__nope"
        assert "list the tools again" in refusal_of(unknown)["next"]
        broken = await client.call_tool("dog_events__broken", {})
        facts = refusal_of(broken)
        assert broken.is_error
        assert facts["refusal"] == "connector-failed"
        assert (facts["server_id"], facts["tool"], facts["code"]) == (SID, "broken", -32000)
        assert "the toolbox is on fire" in facts["message"]


async def test_tools_disappear_when_the_connector_exits_and_a_call_is_then_server_gone(
    tmp_path: Path,
) -> None:
    async with agent_on_tools_connector(tmp_path) as (_board, client, recorder, inbox):
        await recorder.wait_kind(ConnectorToolsChanged)
        told = inbox.list_changed
        died = await client.call_tool("dog_events__exit_now", {})
        assert died.is_error
        assert refusal_of(died)["refusal"] == "unconfirmed"  # it may have run
        gone = await recorder.wait_kind(ConnectorToolsChanged, nth=2)
        assert gone.tools == ()
        await inbox.wait_list_changed(told + 1)
        assert not any(name.startswith("dog_events__") for name in await listed(client))
        after = await client.call_tool("dog_events__echo", {"text": "anyone?"})
        assert after.is_error
        assert refusal_of(after)["refusal"] == "server-gone"
        assert refusal_of(after)["server_id"] == SID


async def test_a_connector_not_granted_tools_has_none_passed_through(tmp_path: Path) -> None:
    grant = ["channels.*", "pushEvents"]
    async with agent_on_tools_connector(tmp_path, grant=grant) as (board, client, recorder, _):
        await recorder.wait_kind(ConnectorReady)
        assert not any(name.startswith("dog_events__") for name in await listed(client))
        port = board.agents.port("agent")
        assert port.connector_tools() == []
        with pytest.raises(Refusal) as refused:
            await port.call_connector_tool(SID, "echo", {"text": "x"})
        assert refused.value.kind is RefusalKind.NOT_GRANTED
        assert '"tools"' in refused.value.next_step


async def test_a_call_while_the_connector_is_still_connecting_is_refused_and_nothing_is_sent(
    tmp_path: Path,
) -> None:
    async with agent_on_tools_connector(tmp_path, "mute") as (board, client, _recorder, _inbox):
        with anyio.fail_after(20):
            while SID not in board.sessions or board.sessions[SID].peer is None:
                await anyio.lowlevel.checkpoint()  # until the supervisor spawned it
        assert board.sessions[SID].state.value == "connecting"
        with pytest.raises(Refusal) as refused:
            await board.agents.port("agent").call_connector_tool(SID, "echo", {"text": "x"})
        assert refused.value.kind is RefusalKind.SERVER_CONNECTING
        assert refused.value.data == {"server_id": SID, "tool": "echo"}
        assert not any(name.startswith("dog_events__") for name in await listed(client))


async def test_a_tools_list_whose_cursor_repeats_is_ended_and_its_tools_kept(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    async with agent_on_tools_connector(tmp_path, "cursor-loop") as (_b, client, recorder, _i):
        changed = await recorder.wait_kind(ConnectorToolsChanged)
        assert changed.tools == ("echo", "push_first")
        assert {"dog_events__echo", "dog_events__push_first"} <= set(await listed(client))
    repeated = [e for e in logs if e["event"] == "connector_tools_cursor_repeated"]
    assert [e["cursor"] for e in repeated] == ["again"]
