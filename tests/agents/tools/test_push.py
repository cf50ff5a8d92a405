"""New messages are pushed to the agent: Claude Code channel notifications and the inbox
resource, neither of which acknowledges anything (issue #11, item 4; docs/tools.md, "Push").

The agent is the MCP SDK's ``Client`` on Switchboard's server, in process or over real
loopback streamable HTTP; messages arrive through a connector's ``channels/incoming`` (the
fake connector of tests/fake.py over the host's real session code).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.extension import ClientExtension, NotificationBinding
from mcp.client.session import IncomingMessage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import ResourceUpdatedNotification, TextResourceContents
from pydantic import BaseModel

from switchboard.agents.http import bind_endpoint, plan_endpoint, serve_endpoint
from switchboard.agents.port.protocol import Arrival
from switchboard.agents.tools.connector_passthrough import ListenedBus
from switchboard.agents.tools.push import CHANNEL_CAPABILITY, CHANNEL_NOTIFICATION, INBOX_URI
from switchboard.app import build_server
from switchboard.app.board import Switchboard
from switchboard.config import AgentConfig
from tests.agents.tools.channel_support import call
from tests.fake import FakeConnector, board_of, descriptor, message, send_accepted

pytestmark = pytest.mark.anyio


class ChannelParams(BaseModel):
    """The ``params`` of ``notifications/claude/channel`` as Claude Code reads them."""

    content: str
    meta: dict[str, str]


class ClaudeChannels(ClientExtension):
    """A client that takes ``notifications/claude/channel``, as Claude Code does."""

    identifier = "com.example/claude-channel-test"

    def __init__(self) -> None:
        self.pushed: list[ChannelParams] = []
        self._arrived = anyio.Event()

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        return (
            NotificationBinding(
                method=CHANNEL_NOTIFICATION, params_type=ChannelParams, handler=self._take
            ),
        )

    async def _take(self, params: ChannelParams) -> None:
        self.pushed.append(params)
        self._arrived.set()
        self._arrived = anyio.Event()

    async def wait_for(self, count: int) -> list[ChannelParams]:
        with anyio.fail_after(20):
            while len(self.pushed) < count:
                await self._arrived.wait()
        return self.pushed


class Updates:
    """The agent's ``notifications/resources/updated``, counted."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._seen = anyio.Event()

    async def __call__(self, message: IncomingMessage) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self._seen.set()
            self._seen = anyio.Event()

    async def wait_for(self, count: int) -> list[str]:
        with anyio.fail_after(20):
            while len(self.uris) < count:
                await self._seen.wait()
        return self.uris


@asynccontextmanager
async def board_with_rooms(tmp_path: Path) -> AsyncIterator[tuple[Switchboard, FakeConnector]]:
    fake = FakeConnector()
    async with board_of(tmp_path, {"s": fake}) as board:
        await fake.call(
            "channels/register", {"channels": [descriptor("room"), descriptor("other")]}
        )
        yield board, fake


def authored(cid: str, mid: str, text: str, author: str) -> dict[str, Any]:
    return message(cid, mid, text) | {"author": {"id": author.lower(), "name": author}}


async def test_the_server_declares_claude_channel_and_inbox_subscriptions(tmp_path: Path) -> None:
    async with (
        board_with_rooms(tmp_path) as (board, _fake),
        Client(build_server(board, agent="a"), mode="legacy") as client,
    ):
        caps = client.server_capabilities
        resources = (await client.list_resources()).resources
        instructions = client.instructions or ""
    assert caps.experimental is not None
    assert caps.experimental[CHANNEL_CAPABILITY] == {}
    assert caps.resources is not None
    assert caps.resources.subscribe is True
    assert [str(r.uri) for r in resources] == [INBOX_URI]
    assert "channel_publish" in instructions
    assert "not an acknowledgement" in instructions


async def test_each_new_message_is_pushed_once_in_order_with_the_name_to_reply_with(
    tmp_path: Path,
) -> None:
    channels = ClaudeChannels()
    async with (
        board_with_rooms(tmp_path) as (board, fake),
        Client(build_server(board, agent="a"), mode="legacy", extensions=[channels]) as client,
    ):
        await send_accepted(
            fake, authored("room", "m1", "hello", "Ann"), authored("other", "m2", "yo", "Bob")
        )
        await send_accepted(fake, authored("room", "m3", "again", "Ann"))
        pushed = await channels.wait_for(3)
        listed = {row["name"] for row in (await call(client, "channel_list"))["channels"]}
        reply = await call(
            client, "channel_publish", {"channel": pushed[0].meta["channel"], "text": "hi Ann"}
        )
    assert [p.content for p in pushed] == ["hello", "yo", "again"]
    assert [p.meta["message_id"] for p in pushed] == ["m1", "m2", "m3"]
    assert [p.meta["author"] for p in pushed] == ["Ann", "Bob", "Ann"]
    assert {p.meta["time"] for p in pushed} == {"2026-11-29T12:00:00Z"}
    assert {p.meta["server_id"] for p in pushed} == {"s"}
    assert pushed[0].meta["channel"] == pushed[2].meta["channel"] != pushed[1].meta["channel"]
    assert {p.meta["channel"] for p in pushed} <= listed
    assert all(key.isidentifier() for p in pushed for key in p.meta)
    assert reply["is_error"] is False
    assert fake.got("channels/publish")[-1]["channelId"] == "room"


async def test_a_push_acknowledges_nothing_the_next_inbox_read_still_returns_the_messages(
    tmp_path: Path,
) -> None:
    channels = ClaudeChannels()
    async with (
        board_with_rooms(tmp_path) as (board, fake),
        Client(build_server(board, agent="a"), mode="legacy", extensions=[channels]) as client,
    ):
        await send_accepted(fake, message("room", "m1"), message("room", "m2"))
        await channels.wait_for(2)
        read = await call(client, "inbox")
        again = await call(client, "inbox")
    assert [m["message_id"] for m in read["messages"]] == ["m1", "m2"]
    assert [m["redelivered"] for m in read["messages"]] == [False, False]
    assert again["messages"] == []


async def test_reading_the_inbox_resource_shows_what_is_owed_and_acknowledges_nothing(
    tmp_path: Path,
) -> None:
    async with (
        board_with_rooms(tmp_path) as (board, fake),
        Client(build_server(board, agent="a"), mode="legacy") as client,
    ):
        await send_accepted(fake, authored("room", "m1", "hello", "Ann"))
        first = (await client.read_resource(INBOX_URI)).contents
        second = (await client.read_resource(INBOX_URI)).contents
        read = await call(client, "inbox")
        after = (await client.read_resource(INBOX_URI)).contents
    assert isinstance(first[0], TextResourceContents)
    assert first == second
    assert "1 message owed" in first[0].text
    assert "Ann: hello (id m1)" in first[0].text
    assert [m["message_id"] for m in read["messages"]] == ["m1"]
    assert isinstance(after[0], TextResourceContents)
    # The inbox read above is acknowledged only by the next read (or `after`): still owed.
    assert "(id m1)" in after[0].text


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_subscribed_agent_is_told_the_inbox_changed_and_an_unsubscribed_one_is_not(
    tmp_path: Path,
) -> None:
    updates = Updates()
    channels = ClaudeChannels()
    async with (
        board_with_rooms(tmp_path) as (board, fake),
        Client(
            build_server(board, agent="a"),
            mode="legacy",
            message_handler=updates,
            extensions=[channels],
        ) as client,
    ):
        await client.subscribe_resource(INBOX_URI)
        await send_accepted(fake, message("room", "m1"))
        assert await updates.wait_for(1) == [INBOX_URI]
        await client.unsubscribe_resource(INBOX_URI)
        await send_accepted(fake, message("room", "m2"))
        await channels.wait_for(2)  # the second arrival was handled: no update followed it
        with pytest.raises(MCPError, match="switchboard://inbox"):
            await client.subscribe_resource("switchboard://elsewhere")
    assert updates.uris == [INBOX_URI]


async def test_messages_are_pushed_over_real_streamable_http(tmp_path: Path) -> None:
    """Pushes ride the connection's standalone SSE stream (the client's GET), so the message is
    sent once that stream is open: one sent before would be left to the inbox alone."""
    channels = ClaudeChannels()
    listening = anyio.Event()

    async def on_response(response: httpx2.Response) -> None:
        if response.request.method == "GET" and response.status_code == 200:
            listening.set()

    plan = plan_endpoint(AgentConfig(name="a", transport="http", port=0))
    sock = bind_endpoint(plan)
    url = plan.url(sock.getsockname()[1])
    async with board_with_rooms(tmp_path) as (board, fake), anyio.create_task_group() as group:
        group.start_soon(serve_endpoint, build_server(board, agent="a"), plan, sock)
        async with (
            httpx2.AsyncClient(timeout=30, event_hooks={"response": [on_response]}) as http,
            Client(
                streamable_http_client(url, http_client=http), mode="legacy", extensions=[channels]
            ) as client,
        ):
            assert client.server_capabilities.experimental == {CHANNEL_CAPABILITY: {}}
            with anyio.fail_after(20):
                await listening.wait()
            await send_accepted(fake, message("room", "m1", "over http"))
            (pushed,) = await channels.wait_for(1)
            read = await call(client, "inbox")
        group.cancel_scope.cancel()
    assert pushed.content == "over http"
    assert pushed.meta["message_id"] == "m1"
    assert [m["message_id"] for m in read["messages"]] == ["m1"]


async def test_a_watch_owed_only_that_something_arrived_hears_of_batches_no_tune_out_diverts(
    tmp_path: Path,
) -> None:
    # What the push owes a server no connection takes channel notifications from (no message
    # is read for it, issue #14): a batch on a tuned-out channel owes nothing, one with a
    # message elsewhere owes one "something arrived".
    told: list[Sequence[Arrival]] = []
    async with (
        board_with_rooms(tmp_path) as (board, fake),
        Client(build_server(board, agent="a"), mode="legacy") as client,
    ):
        board.agents.port("a").watch_inbox(told.append, details=lambda: False)
        await call(client, "tune_out", {"channel": "room"})
        await send_accepted(fake, message("room", "m1"), message("room", "m2"))
        assert told == []
        await send_accepted(fake, message("room", "m3"), message("other", "m4"))
        assert told == [()]
        await send_accepted(fake, message("other", "m5"))
        assert told == [(), ()]


async def test_an_agent_listening_for_the_inbox_resource_hears_each_batch_that_reaches_it(
    tmp_path: Path,
) -> None:
    # A 2026-07-28 client: no channel notifications, a `subscriptions/listen` stream on the
    # inbox resource. The push publishes "the inbox changed" only while someone listens.
    async with (
        board_with_rooms(tmp_path) as (board, fake),
        Client(build_server(board, agent="a")) as client,
    ):
        await send_accepted(fake, message("room", "m1"))  # no one listens: nothing owed
        async with client.listen(resource_subscriptions=[INBOX_URI]) as subscription:
            await send_accepted(fake, message("room", "m2"))
            with anyio.fail_after(20):
                event = await anext(aiter(subscription))
        inbox = await call(client, "inbox", {})
    assert getattr(event, "uri", None) == INBOX_URI
    assert [m["message_id"] for m in inbox["messages"]] == ["m1", "m2"]


def test_the_bus_says_it_is_listened_to_while_any_listener_is_subscribed() -> None:
    bus = ListenedBus()
    counts = [bus.listened]
    first = bus.subscribe(lambda event: None)
    second = bus.subscribe(lambda event: None)
    first()
    first()  # idempotent: counted once
    counts.append(bus.listened)
    second()
    counts.append(bus.listened)
    assert counts == [False, True, False]
