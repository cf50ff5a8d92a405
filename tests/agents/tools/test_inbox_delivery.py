"""At-least-once delivery of the inbox, exactly once with ``after`` (issue #11, item 1;
docs/tools.md, "Delivery").

Every test drives the real ``inbox`` tool through the MCP SDK's client, against
``build_server(board, agent=...)`` over a real SQLite store: in process, or over real loopback
HTTP to an agent that runs in its own process and is killed mid-poll.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from mcp import Client
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

from switchboard.agents.http import bind_endpoint, plan_endpoint, serve_endpoint
from switchboard.agents.inbox.delivery import Reader
from switchboard.app import build_server
from switchboard.app.board import Switchboard
from switchboard.config import AgentConfig
from tests.agents.tools.channel_support import call
from tests.fake import FakeConnector, board_of, descriptor, message, send_accepted

pytestmark = pytest.mark.anyio

AGENT_SCRIPT = Path(__file__).with_name("inbox_agent.py")


def ids(read: dict[str, Any]) -> list[str]:
    return [m["message_id"] for m in read["messages"]]


def flags(read: dict[str, Any]) -> list[bool]:
    return [m["redelivered"] for m in read["messages"]]


async def polling(board: Switchboard, state: bool) -> None:
    """Return once a long poll is waiting on ``board``'s store (``state``), or none is."""
    while board.store.waiting is not state:
        await anyio.lowlevel.checkpoint()


@asynccontextmanager
async def board_with_room(tmp_path: Path) -> AsyncIterator[tuple[Switchboard, FakeConnector]]:
    fake = FakeConnector()
    async with board_of(tmp_path, {"s": fake}) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        yield board, fake


async def test_a_read_not_acknowledged_comes_again_on_the_next_connection_with_the_same_ids(
    tmp_path: Path,
) -> None:
    async with board_with_room(tmp_path) as (board, fake):
        await send_accepted(fake, *(message("room", f"m{i}") for i in range(3)))
        async with Client(build_server(board, agent="a"), mode="legacy") as lost:
            first = await call(lost, "inbox")
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            again = await call(client, "inbox")
            after_it = await call(client, "inbox")
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            later = await call(client, "inbox")
    assert ids(first) == ids(again) == ["m0", "m1", "m2"]
    assert flags(first) == [False, False, False]
    assert first["redelivered"] == 0
    assert flags(again) == [True, True, True]
    assert again["redelivered"] == 3
    assert again["cursor"] == first["cursor"]
    assert ids(after_it) == []  # reading on over one connection acknowledged the page
    assert ids(later) == []  # ... durably


async def test_reading_on_over_one_connection_never_returns_a_page_twice(tmp_path: Path) -> None:
    async with (
        board_with_room(tmp_path) as (board, fake),
        Client(build_server(board, agent="a"), mode="legacy") as client,
    ):
        await send_accepted(fake, message("room", "m1"))
        first = await call(client, "inbox")
        await send_accepted(fake, message("room", "m2"))
        second = await call(client, "inbox")
        empty = await call(client, "inbox")
    assert (ids(first), ids(second), ids(empty)) == (["m1"], ["m2"], [])
    assert flags(second) == [False]


async def test_after_acknowledges_what_another_connection_read_and_an_old_cursor_adds_nothing(
    tmp_path: Path,
) -> None:
    """Exactly once with cooperation: ``after`` carries the acknowledgement across
    connections; a cursor below the acknowledged position acknowledges nothing new."""
    async with board_with_room(tmp_path) as (board, fake):
        await send_accepted(fake, message("room", "m1"), message("room", "m2"))
        async with Client(build_server(board, agent="a"), mode="legacy") as lost:
            first = await call(lost, "inbox", {"limit": 1})
        await send_accepted(fake, message("room", "m3"))
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            second = await call(client, "inbox", {"after": first["cursor"]})
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            third = await call(client, "inbox", {"after": second["cursor"]})
            stale = await call(client, "inbox", {"after": first["cursor"]})
    assert ids(first) == ["m1"]
    assert ids(second) == ["m2", "m3"]
    assert flags(second) == [False, False]
    assert ids(third) == []
    assert ids(stale) == []


async def test_a_cursor_no_read_handed_out_is_refused_and_acknowledges_nothing(
    tmp_path: Path,
) -> None:
    async with board_with_room(tmp_path) as (board, fake):
        await send_accepted(fake, message("room", "m1"))
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            first = await call(client, "inbox")
            refused = await client.call_tool("inbox", {"after": first["cursor"] + 5})
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            again = await call(client, "inbox")
    assert refused.is_error
    text = " ".join(getattr(block, "text", "") for block in refused.content)
    assert "unknown-cursor" in text or "no inbox read handed out the cursor" in text
    assert "after" in text
    assert ids(again) == ["m1"]  # the refused call acknowledged nothing
    assert flags(again) == [True]


async def test_a_client_that_times_out_mid_poll_cancels_the_poll_and_loses_nothing(
    tmp_path: Path,
) -> None:
    """The SDK client gives up on the call and sends ``notifications/cancelled``: the long
    poll is cancelled, and the message that arrives next is not consumed by it."""
    async with (
        board_with_room(tmp_path) as (board, fake),
        Client(build_server(board, agent="a"), mode="legacy") as client,
    ):
        with anyio.fail_after(20):
            with pytest.raises(MCPError, match="timed out"):
                await client.call_tool("inbox", {"wait_seconds": 60}, read_timeout_seconds=0.3)
            await polling(board, False)  # the abandoned poll is cancelled, not left waiting
            await send_accepted(fake, message("room", "m1"))
            read = await call(client, "inbox")
    assert ids(read) == ["m1"]


async def test_a_redelivery_begins_a_turn_whose_locus_is_the_channel_the_messages_led_to(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_of(tmp_path, {"s": fake}) as board:
        await fake.call("channels/register", {"channels": [descriptor("one"), descriptor("two")]})
        await send_accepted(fake, message("two", "t1"), message("one", "o1"))
        async with Client(build_server(board, agent="a"), mode="legacy") as lost:
            first = await call(lost, "inbox")
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            again = await call(client, "inbox")
            empty = await call(client, "inbox")
    assert (first["turn"], first["locus"]) == (1, "one")
    assert (again["turn"], again["locus"]) == (2, "one")
    assert flags(again) == [True, True]
    assert (empty["turn"], empty["locus"]) == (2, "one")


# -- over real HTTP, an agent in its own process ---------------------------------------------


@asynccontextmanager
async def served_over_http(board: Switchboard) -> AsyncIterator[str]:
    """``board``'s agent ``a`` on a loopback streamable HTTP endpoint; yields its URL."""
    plan = plan_endpoint(AgentConfig(name="a", transport="http", port=0))
    sock = bind_endpoint(plan)
    port = sock.getsockname()[1]
    async with anyio.create_task_group() as group:
        group.start_soon(serve_endpoint, build_server(board, agent="a"), plan, sock)
        try:
            yield plan.url(port)
        finally:
            group.cancel_scope.cancel()


async def _line(lines: AsyncIterator[str], buffer: list[str]) -> str:
    """The next whole line of ``lines``; ``buffer`` holds what was read past it."""
    text = "".join(buffer)
    while "\n" not in text:
        text += await lines.__anext__()
    line, rest = text.split("\n", 1)
    buffer[:] = [rest]
    return line


async def _killed(process: Process) -> None:
    process.send_signal(signal.SIGKILL)
    await process.wait()


async def test_an_agent_killed_mid_long_poll_loses_nothing(tmp_path: Path) -> None:
    """The agent process reads one message, long polls over the same connection (which
    acknowledges the message it has), and is killed with SIGKILL while it waits; three messages
    arrive after. The next agent gets those three, and nothing twice."""
    async with board_with_room(tmp_path) as (board, fake), served_over_http(board) as url:
        await send_accepted(fake, message("room", "m1"))
        with anyio.fail_after(60):
            process = await anyio.open_process([sys.executable, str(AGENT_SCRIPT), url])
            try:
                assert process.stdout is not None
                lines = TextReceiveStream(process.stdout)
                buffer: list[str] = []
                assert await _line(lines, buffer) == "read m1"
                assert await _line(lines, buffer) == "polling"
                await polling(board, True)  # its long poll is waiting on the host
            finally:
                await _killed(process)
            with anyio.fail_after(10):
                await polling(board, False)  # the host noticed and cancelled the poll
            await send_accepted(fake, *(message("room", f"m{i}") for i in (2, 3, 4)))
            async with (
                httpx2.AsyncClient(timeout=30) as http,
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
            ):
                read = await call(client, "inbox")
                done = await call(client, "inbox", {"after": read["cursor"]})
    assert ids(read) == ["m2", "m3", "m4"]
    assert ids(done) == []


async def test_a_page_the_client_could_not_take_is_lost_to_nobody_who_passes_after(
    tmp_path: Path,
) -> None:
    """Twenty messages of 30 kB would make a page beyond the SDK client's 1 MiB event limit;
    the page is cut below the answer bound instead (docs/tools.md, "Bounded answers"), so the
    client takes it. Had it not arrived, nothing is lost: the same client, passing the last
    cursor it did receive, gets all twenty in pages it can take, the ones handed out marked
    redelivered."""
    big = "x" * 30_000
    async with board_with_room(tmp_path) as (board, _fake), served_over_http(board) as url:
        await board.store.submit_wire("s", [message("room", f"b{i}", big) for i in range(20)])
        with anyio.fail_after(60):
            async with (
                httpx2.AsyncClient(timeout=30) as http,
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
            ):
                first = await call(client, "inbox", {})
                pages = [await call(client, "inbox", {"after": 0, "limit": 5})]
                while pages[-1]["messages"]:
                    cursor = pages[-1]["cursor"]
                    pages.append(await call(client, "inbox", {"after": cursor, "limit": 5}))
    handed = len(ids(first))
    assert first["more"]
    assert 0 < handed < 20
    assert [i for page in pages for i in ids(page)] == [f"b{i}" for i in range(20)]
    assert [f for page in pages for f in flags(page)] == [True] * handed + [False] * (20 - handed)


# -- a cancel that loses its race with the answer ---------------------------------------------


@dataclass
class Withheld:
    """The long polls whose answers a client never takes: their request ids, and the answers
    kept from the client (``arrived`` once one came)."""

    ids: set[Any] = field(default_factory=set)
    answers: list[Any] = field(default_factory=list)
    arrived: anyio.Event = field(default_factory=anyio.Event)


@asynccontextmanager
async def withholding_long_polls(
    inner: AbstractAsyncContextManager[TransportStreams], withheld: Withheld
) -> AsyncIterator[TransportStreams]:
    """The client's side of the transport ``inner``, except that the answer to a long poll (a
    ``tools/call`` with ``wait_seconds``) never reaches the client: the host answered into a
    stream nobody reads, as when a message arrives just as the client's read timeout fires."""
    async with inner as (read, write):
        down_send, down_receive = anyio.create_memory_object_stream[SessionMessage | Exception](64)
        up_send, up_receive = anyio.create_memory_object_stream[SessionMessage](64)

        async def down() -> None:
            async with down_send:
                async for item in read:
                    message = getattr(item, "message", None)
                    if isinstance(message, JSONRPCResponse | JSONRPCError) and (
                        message.id in withheld.ids
                    ):
                        withheld.answers.append(message)
                        withheld.arrived.set()
                        continue
                    await down_send.send(item)

        async def up() -> None:
            async with up_receive:
                async for item in up_receive:
                    message = item.message
                    if isinstance(message, JSONRPCRequest) and message.method == "tools/call":
                        arguments = (message.params or {}).get("arguments") or {}
                        if arguments.get("wait_seconds"):
                            withheld.ids.add(message.id)
                    await write.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(down)
            group.start_soon(up)
            try:
                yield down_receive, up_send
            finally:
                group.cancel_scope.cancel()


async def test_a_cancel_that_loses_its_race_with_the_answer_loses_no_message(
    tmp_path: Path,
) -> None:
    """A message arrives while a long poll waits; the host hands it out and answers, but the
    answer goes into a stream nobody reads, and the client, having given up, cancels the call
    (``notifications/cancelled``, which now finds no call running). Over the same connection
    and without ``after``, the next read gets the message again, flagged ``redelivered``, and
    acknowledges it only then.

    Deterministic: the answer is held back from the client until the cancel was sent (a real
    SDK client over real loopback HTTP, its transport wrapped), so the cancel always comes
    after the host answered."""
    withheld = Withheld()
    async with board_with_room(tmp_path) as (board, fake), served_over_http(board) as url:
        with anyio.fail_after(60):
            async with (
                httpx2.AsyncClient(timeout=30) as http,
                Client(
                    withholding_long_polls(streamable_http_client(url, http_client=http), withheld),
                    mode="legacy",
                ) as client,
            ):
                await client.list_tools()
                async with anyio.create_task_group() as group:
                    group.start_soon(client.call_tool, "inbox", {"wait_seconds": 30})
                    await polling(board, True)
                    await send_accepted(fake, message("room", "m1"))
                    await withheld.arrived.wait()  # the host answered, nobody read it
                    group.cancel_scope.cancel()  # the client gives up: notifications/cancelled
                again = await call(client, "inbox")
                after_it = await call(client, "inbox")
    (lost,) = withheld.answers
    assert [m["message_id"] for m in lost.result["structuredContent"]["messages"]] == ["m1"]
    assert ids(again) == ["m1"]
    assert flags(again) == [True]
    assert ids(after_it) == []  # the redelivered page was acknowledged by the read after it


async def test_a_cancel_of_a_read_a_later_read_acknowledged_takes_nothing_back(
    tmp_path: Path,
) -> None:
    """A cancel takes back only the connection's latest read: once a later read went by, the
    page it acknowledged stays acknowledged (``after`` closes that window too)."""
    async with board_with_room(tmp_path) as (board, fake):
        await send_accepted(fake, message("room", "m1"))
        port = board.agents.port("a")
        reader = Reader("one connection")
        first = await port.read_inbox(reader=reader, request="1")
        second = await port.read_inbox(reader=reader, request="2")
        took_back_first = port.take_back_read(reader, "1")
        took_back_second = port.take_back_read(reader, "2")
        third = await port.read_inbox(reader=reader, request="3")
    assert [m.message_id for m in first.messages] == ["m1"]
    assert second.messages == []
    assert (took_back_first, took_back_second) == (False, False)
    assert third.messages == []
