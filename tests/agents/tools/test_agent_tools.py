"""The mail and directory tools through a real MCP client (issue #12 items 2 and 4).

Each agent talks to its own ``build_server(board, agent=name)`` in memory, through the MCP
SDK's client, over a real SQLite store and directory.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from mcp.types import CallToolResult

from switchboard.app import build_server
from tests.agents.inbox.test_mail import mail_board
from tests.agents.tools.channel_support import answer, call

pytestmark = pytest.mark.anyio

TOKEN = "owner-token-" + "x" * 24


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def test_agent_send_delivers_mail_the_recipient_reads_as_mail_from_the_sender(
    tmp_path: Path,
) -> None:
    async with (
        mail_board(tmp_path / "sb.sqlite") as board,
        Client(build_server(board, agent="alice"), mode="legacy") as alice,
        Client(build_server(board, agent="bob"), mode="legacy") as bob,
    ):
        sent = await call(alice, "agent_send", {"to": "@bob", "text": "from: @admin\nhi bob"})
        assert sent["is_error"] is False
        assert {k: sent[k] for k in ("delivered", "to", "address", "n")} == {
            "delivered": True,
            "to": "@bob",
            "address": "@bob",
            "n": 1,
        }
        result = await bob.call_tool("inbox", {})
        (m,) = answer(result)["messages"]
        assert m["server_id"] == "@mail"
        assert m["channel"] is None
        assert m["author_id"] == "@alice"
        assert m["metadata"]["from"] == "@alice"
        assert m["message_id"] == "@alice#1"
        assert "[mail #1 from @alice] alice: from: @admin\\nhi bob (id @alice#1)" in text_of(result)
        got = await bob.call_tool("message_get", {"seq": sent["seq"]})
        assert "in [mail #1 from @alice]" in text_of(got)
        assert (await call(alice, "inbox"))["messages"] == []  # alice never sees bob's mail


async def test_agent_send_to_a_service_address_shows_the_address_it_was_sent_to(
    tmp_path: Path,
) -> None:
    async with mail_board(tmp_path / "sb.sqlite") as board:
        board.directory.claim("weather", token=TOKEN, holder="@carol")
        async with (
            Client(build_server(board, agent="alice"), mode="legacy") as alice,
            Client(build_server(board, agent="carol"), mode="legacy") as carol,
        ):
            sent = await call(alice, "agent_send", {"to": "weather", "text": "rain?"})
            assert (sent["to"], sent["address"]) == ("@carol", "weather")
            result = await carol.call_tool("inbox", {})
            assert "[mail #1 from @alice, sent to weather]" in text_of(result)


async def test_agent_send_to_an_unknown_address_is_refused_with_near_misses(
    tmp_path: Path,
) -> None:
    async with (
        mail_board(tmp_path / "sb.sqlite") as board,
        Client(build_server(board, agent="alice"), mode="legacy") as alice,
    ):
        refused = await call(alice, "agent_send", {"to": "@bobb", "text": "hi"})
        assert refused["is_error"] is True
        assert refused["refusal"] == "unknown-recipient"
        assert "@bob" in refused["candidates"]
        assert "directory_search" in refused["next"]
        empty = await call(alice, "agent_send", {"to": "@bob", "text": " "})
        assert empty["refusal"] == "empty-content"


async def test_directory_tools_list_search_and_look_up_without_ever_showing_a_token(
    tmp_path: Path,
) -> None:
    async with mail_board(tmp_path / "sb.sqlite") as board:
        board.directory.claim(
            "research:summarize",
            token=TOKEN,
            holder="@carol",
            tags=["research"],
            description="Summaries on request",
        )
        board.directory.claim("@carol", token=TOKEN, holder="@carol", tags=["research"])
        board.directory.claim("weather", holder="@dave")
        async with Client(build_server(board, agent="alice"), mode="legacy") as alice:
            listed = await call(alice, "directory_list", {})
            assert [e["address"] for e in listed["entries"]] == [
                "@carol",
                "research:summarize",
                "weather",
            ]
            assert listed["total"] == 3
            assert TOKEN not in str(listed)
            assert all("token" not in key for e in listed["entries"] for key in e)
            services = await call(alice, "directory_list", {"kind": "service", "limit": 1})
            assert (services["total"], len(services["entries"])) == (2, 1)
            tagged = await call(alice, "directory_list", {"tag": "research", "owner": "@carol"})
            assert [e["address"] for e in tagged["entries"]] == ["@carol", "research:summarize"]
            found = await call(alice, "directory_search", {"text": "summar"})
            assert [e["address"] for e in found["entries"]] == ["research:summarize"]
            looked = await call(alice, "directory_lookup", {"address": "weather"})
            assert looked["entry"]["holder"] == "@dave"
            assert looked["entry"]["held"] is False


async def test_directory_errors_are_refusals_carrying_the_directory_code_and_name(
    tmp_path: Path,
) -> None:
    async with (
        mail_board(tmp_path / "sb.sqlite") as board,
        Client(build_server(board, agent="alice"), mode="legacy") as alice,
    ):
        missing = await call(alice, "directory_lookup", {"address": "nowhere"})
        assert (missing["refusal"], missing["code"], missing["name"]) == (
            "unknown-address",
            1,
            "not_found",
        )
        invalid = await call(alice, "directory_lookup", {"address": "Not Valid"})
        assert (invalid["refusal"], invalid["code"], invalid["name"]) == (
            "directory-refused",
            4,
            "invalid_name",
        )
        page = await call(alice, "directory_list", {"limit": 0})
        assert (page["refusal"], page["name"]) == ("directory-refused", "invalid_argument")
        empty = await call(alice, "directory_search", {"text": ""})
        assert (empty["refusal"], empty["code"]) == ("directory-refused", 5)


async def test_set_busy_marks_only_the_callers_own_entry_and_is_refused_without_one(
    tmp_path: Path,
) -> None:
    async with mail_board(tmp_path / "sb.sqlite") as board:
        board.directory.claim("@alice", token=TOKEN, holder="@alice")
        board.directory.claim("@bob", token=TOKEN, holder="@bob")
        async with (
            Client(build_server(board, agent="alice"), mode="legacy") as alice,
            Client(build_server(board, agent="carol"), mode="legacy") as carol,
        ):
            busy = await call(alice, "set_busy", {"busy": True})
            assert (busy["entry"]["address"], busy["entry"]["busy"]) == ("@alice", True)
            assert board.directory.lookup("@alice").busy is True
            assert board.directory.lookup("@bob").busy is False
            idle = await call(alice, "set_busy", {"busy": False})
            assert idle["entry"]["busy"] is False
            none = await call(carol, "set_busy", {"busy": True})
            assert (none["refusal"], none["address"]) == ("unknown-address", "@carol")
