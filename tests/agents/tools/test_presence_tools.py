"""The presence tools (typing, speak_stream, speak_stream_end), driven by a real MCP client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from switchboard.app import build_server
from switchboard.config import AgentConfig
from tests.agents.tools.channel_support import answer
from tests.fake import (
    FakeConnector,
    Ticker,
    barrier,
    board_of,
    board_with,
    descriptor,
    message,
    noted,
    notes,
    typing_running,
)

pytestmark = pytest.mark.anyio

EXPLICIT = AgentConfig(prose="explicit")
"""The streamed-speech tests write the explicit grammar (``>>target`` lines)."""

TYPING = "channels/typing"
CHUNK = "channels/outgoing/chunk"
COMPLETE = "channels/outgoing/complete"


async def register(fake: FakeConnector, *ids: str) -> None:
    await fake.call("channels/register", {"channels": [descriptor(i) for i in ids]})


async def opened(method: str, params: Any) -> Any:
    return {"channel": descriptor(params["channelId"])}


def fake_opening() -> FakeConnector:
    """A connector that also answers channels/open (speech may open a channel first)."""
    return FakeConnector(extra={"channels/open": opened})


def data(result: Any) -> dict[str, Any]:
    return answer(result)


async def test_the_presence_tools_have_typed_schemas(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with (
        board_with(tmp_path, fake) as board,
        Client(build_server(board, agent="ann"), mode="legacy") as client,
    ):
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["typing"].input_schema["required"] == ["channel"]
    assert tools["speak_stream"].input_schema["required"] == ["text"]
    assert tools["speak_stream_end"].input_schema["required"] == ["inference_id"]
    assert all(tools[n].output_schema is not None for n in ("typing", "speak_stream_end"))


async def test_the_typing_tool_starts_and_stops_an_indicator(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board, typing_running(board, Ticker()):
        await register(fake, "room")
        async with Client(build_server(board, agent="ann"), mode="legacy") as client:
            on = data(await client.call_tool("typing", {"channel": "room"}))
            await noted(fake, TYPING, 1)
            off = data(await client.call_tool("typing", {"channel": "room", "on": False}))
            got = await noted(fake, TYPING, 2)
    assert on == {
        "on": True,
        "channels": [{"channel": "#room", "server_id": "s1", "channel_id": "room", "shown": True}],
    }
    assert off["on"] is False
    assert [n["op"] for n in got] == ["start", "stop"]


async def test_the_typing_tool_fans_a_shared_id_out_unless_a_server_is_given(
    tmp_path: Path,
) -> None:
    fa, fb = FakeConnector(), FakeConnector()
    async with board_of(tmp_path, {"a": fa, "b": fb}) as board, typing_running(board, Ticker()):
        await register(fa, "general")
        await register(fb, "general")
        async with Client(build_server(board, agent="ann"), mode="legacy") as client:
            both = data(await client.call_tool("typing", {"channel": "general"}))
            one = data(
                await client.call_tool(
                    "typing", {"channel": "general", "server_id": "b", "on": False}
                )
            )
        assert {c["server_id"] for c in both["channels"]} == {"a", "b"}
        assert [c["server_id"] for c in one["channels"]] == ["b"]
        assert [n["op"] for n in await noted(fb, TYPING, 2)] == ["start", "stop"]
        await barrier(board, fa, "a")
        assert [n["op"] for n in notes(fa, TYPING)] == ["start"]


async def test_typing_in_a_channel_nobody_registered_is_refused(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board, typing_running(board, Ticker()):
        async with Client(build_server(board, agent="ann"), mode="legacy") as client:
            result = await client.call_tool("typing", {"channel": "#nowhere"})
        assert result.is_error
        assert data(result)["refusal"] == "unknown-channel"
        await barrier(board, fake)
        assert notes(fake, TYPING) == []


async def test_streamed_speech_is_shown_live_then_published_then_completed(
    tmp_path: Path,
) -> None:
    """H-49, H-50: the publish is the delivery; complete follows with the streamed text."""
    fake = fake_opening()
    completes_at_publish: list[int] = []

    async def publish(method: str, params: Any) -> Any:
        completes_at_publish.append(len(notes(fake, COMPLETE)))
        return {"delivered": True, "messageId": "m-1"}

    fake.extra["channels/publish"] = publish
    async with board_with(tmp_path, fake, agent=EXPLICIT) as board:
        await register(fake, "room")
        async with Client(build_server(board, agent="ann"), mode="legacy") as client:
            first = data(await client.call_tool("speak_stream", {"text": "aside\n>>#room hel"}))
            stream_id = first["inference_id"]
            more = data(
                await client.call_tool("speak_stream", {"text": "lo", "inference_id": stream_id})
            )
            end = data(
                await client.call_tool(
                    "speak_stream_end", {"inference_id": stream_id, "text": " all"}
                )
            )
        got = await noted(fake, COMPLETE, 1)
    assert first["streamed"] == [
        {"channel": "#room", "server_id": "s1", "channel_id": "room", "text": "hel"}
    ]
    assert [s["text"] for s in more["streamed"]] == ["lo"]
    assert "".join(c["delta"] for c in notes(fake, CHUNK)) == "hello all"
    assert [p["content"] for p in fake.got("channels/publish")] == [
        [{"type": "text", "text": "hello all"}]
    ]
    assert completes_at_publish == [0]
    assert got[0]["content"] == [{"type": "text", "text": "hello all"}]
    assert end["aborted"] is False
    assert [c["channel_id"] for c in end["completed"]] == ["room"]
    statuses = [(s["status"], s["channel_id"]) for s in end["speech"]["segments"]]
    assert statuses == [("bounced", None), ("delivered", "room")]


async def test_an_aborted_stream_publishes_nothing_and_is_completed(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake, agent=EXPLICIT) as board:
        await register(fake, "room")
        async with Client(build_server(board, agent="ann"), mode="legacy") as client:
            started = data(await client.call_tool("speak_stream", {"text": ">>#room draft"}))
            stream_id = started["inference_id"]
            end = data(
                await client.call_tool(
                    "speak_stream_end", {"inference_id": stream_id, "abort": True}
                )
            )
            again = await client.call_tool("speak_stream_end", {"inference_id": stream_id})
        await noted(fake, COMPLETE, 1)
    assert end["aborted"] is True
    assert end["speech"] is None
    assert fake.got("channels/publish") == []
    assert again.is_error
    assert data(again)["refusal"] == "no-stream"


async def test_another_agents_stream_cannot_be_continued(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await register(fake, "room")
        async with (
            Client(build_server(board, agent="ann"), mode="legacy") as ann,
            Client(build_server(board, agent="bob"), mode="legacy") as bob,
        ):
            started = data(await ann.call_tool("speak_stream", {"text": ">>#room hi"}))
            args = {"text": "x", "inference_id": started["inference_id"]}
            refused = await bob.call_tool("speak_stream", args)
        assert refused.is_error
        assert data(refused)["refusal"] == "no-stream"


async def test_a_turn_types_in_its_locus_until_the_agent_speaks_there(tmp_path: Path) -> None:
    fake = fake_opening()
    async with board_with(tmp_path, fake) as board, typing_running(board, Ticker()):
        await register(fake, "room")
        await fake.call("channels/incoming", {"messages": [message("room", "m1")]})
        async with Client(build_server(board, agent="ann"), mode="legacy") as client:
            read = data(await client.call_tool("inbox", {}))
            assert [m["message_id"] for m in read["messages"]] == ["m1"]
            [start] = await noted(fake, TYPING, 1)
            assert start == {"channelId": "room", "op": "start", "typing": True}
            await client.call_tool("channel_publish", {"text": "answer"})
            got = await noted(fake, TYPING, 2)
    assert got[1] == {"channelId": "room", "op": "stop", "typing": False}


async def test_a_stream_left_open_is_abandoned_when_the_next_turn_begins(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake, agent=EXPLICIT) as board:
        await register(fake, "room")
        async with Client(build_server(board, agent="ann"), mode="legacy") as client:
            started = data(await client.call_tool("speak_stream", {"text": ">>#room half"}))
            await fake.call("channels/incoming", {"messages": [message("room", "m1")]})
            await client.call_tool("inbox", {})
            [complete] = await noted(fake, COMPLETE, 1)
            late = await client.call_tool(
                "speak_stream_end", {"inference_id": started["inference_id"]}
            )
    assert complete["content"] == [{"type": "text", "text": "half"}]
    assert late.is_error
    assert fake.got("channels/publish") == []
