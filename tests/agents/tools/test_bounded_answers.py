"""Every answer is bounded in bytes and pages with a cursor (issue #11, item 3; docs/tools.md,
"Bounded answers").

The tools are driven through the MCP SDK's client against ``build_server(board, agent=...)``
over a real SQLite store: in process, and over real loopback streamable HTTP where the client's
own 1 MiB event limit is what a page must fit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from switchboard.agents.tools.results import MAX_ANSWER_BYTES, MESSAGE_BYTES, answer_bytes
from switchboard.app import build_server
from tests.agents.tools.channel_support import answer, call
from tests.agents.tools.test_inbox_delivery import board_with_room, served_over_http
from tests.fake import (
    FakeConnector,
    board_with_log,
    descriptor,
    message,
    register_admitted,
    send_accepted,
)

pytestmark = pytest.mark.anyio


def ids(read: dict[str, Any]) -> list[str]:
    return [m["message_id"] for m in read["messages"]]


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def bounded_call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Call ``tool``; check its whole answer is below the bound; return what it says."""
    result = await client.call_tool(tool, args)
    size = answer_bytes(result)
    assert size < MAX_ANSWER_BYTES, (tool, size)
    data = answer(result)
    data["is_error"] = bool(result.is_error)
    data["bytes"] = size
    return data


async def test_channel_list_of_5000_channels_pages_under_the_byte_bound(tmp_path: Path) -> None:
    """5,000 channels with long labels take several pages; each answer stays below the bound
    and the pages, read with next_cursor, list every channel once, in order."""
    wanted = [f"channel-{i:04d}" for i in range(5000)]
    async with board_with_room(tmp_path) as (board, fake):
        await fake.call(
            "channels/register",
            {"channels": [descriptor(c, label=f"#{c} " + "long label " * 20) for c in wanted]},
        )
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            pages = [await bounded_call(client, "channel_list", {})]
            while pages[-1]["next_cursor"] is not None:
                pages.append(
                    await bounded_call(client, "channel_list", {"cursor": pages[-1]["next_cursor"]})
                )
            past_the_end = await bounded_call(client, "channel_list", {"cursor": 10_000})
    listed = [c["channel_id"] for page in pages for c in page["channels"]]
    assert listed == ["room", *wanted]
    assert len(pages) > 5  # a page holds at most 500, fewer when their bytes reach the bound
    assert all(page["total"] == 5001 for page in pages)
    assert all(page["servers"] == {"s": "ready"} for page in pages)
    assert past_the_end["channels"] == []
    assert past_the_end["next_cursor"] is None


async def test_an_oversize_inbox_backlog_arrives_whole_over_http_in_bounded_pages(
    tmp_path: Path,
) -> None:
    """Forty messages of 15,000 characters would make a page of more than 1 MiB, beyond the
    SDK client's event limit. Each page is cut at a message boundary below the bound, says
    more, and its cursor acknowledges only what it returned: with ``after``, all forty arrive,
    in order, whole, none twice, 0 lost."""
    big = "y" * 15_000
    sent = [f"b{i}" for i in range(40)]
    async with board_with_room(tmp_path) as (board, _fake), served_over_http(board) as url:
        await board.store.submit_wire("s", [message("room", mid, big) for mid in sent])
        with anyio.fail_after(60):
            async with (
                httpx2.AsyncClient(timeout=30) as http,
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
            ):
                pages = [await bounded_call(client, "inbox", {"limit": 500})]
                while pages[-1]["messages"]:
                    after = pages[-1]["cursor"]
                    pages.append(
                        await bounded_call(client, "inbox", {"after": after, "limit": 500})
                    )
    got = [m for page in pages for m in page["messages"]]
    assert [m["message_id"] for m in got] == sent
    assert all(m["text"] == big and m["truncated"] is None for m in got)
    assert not any(m["redelivered"] for m in got)
    assert len(pages) > 3
    assert all(page["more"] for page in pages[:-2])
    assert not pages[-1]["more"]


async def test_an_oversize_backlog_read_on_without_after_loses_nothing(tmp_path: Path) -> None:
    """Reading on over one connection acknowledges the previous page: a page cut by the bound
    acknowledges only what it returned, so the next read starts right after it."""
    big = "z" * 15_000
    sent = [f"c{i}" for i in range(40)]
    async with board_with_room(tmp_path) as (board, fake):
        await send_accepted(fake, *(message("room", mid, big) for mid in sent))
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            pages = [await bounded_call(client, "inbox", {"limit": 500})]
            while pages[-1]["more"]:
                pages.append(await bounded_call(client, "inbox", {"limit": 500}))
            empty = await bounded_call(client, "inbox", {})
    assert [i for page in pages for i in ids(page)] == sent
    assert len(pages) > 1
    assert ids(empty) == []


async def test_inbox_shows_one_chat_line_per_message_and_the_detail_once_in_structure(
    tmp_path: Path,
) -> None:
    """The text is a header and one line per message (time, channel as channel_list names
    it, author, text with newlines shown as \\n, message id); the structured content carries
    each message's text once (no content blocks when the message is only text)."""
    async with board_with_room(tmp_path) as (board, fake):
        await send_accepted(
            fake, message("room", "m1", "hello\nworld"), message("room", "m2", "bye")
        )
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            result = await client.call_tool("inbox", {})
    read = answer(result)
    cursor = read["cursor"]
    assert text_of(result).split("\n") == [
        f"2 messages (cursor {cursor}; more: no; turn 1; locus room). "
        f"Pass after={cursor} to acknowledge them.",
        "2026-11-29T12:00:00Z [room] Ann: hello\\nworld (id m1)",
        "2026-11-29T12:00:00Z [room] Ann: bye (id m2)",
    ]
    first = read["messages"][0]
    assert first["text"] == "hello\nworld"
    assert first["content"] is None
    assert first["channel"] == "room"


async def test_three_messages_take_a_few_hundred_characters_not_two_thousand(
    tmp_path: Path,
) -> None:
    """The issue measured 1,850 characters for 3 messages in the text (each carried as text and
    content, in JSON); as chat lines they take the header and ~45 characters each."""
    async with board_with_room(tmp_path) as (board, fake):
        await send_accepted(
            fake, *(message("room", f"m{i}", w) for i, w in enumerate(("hi", "how are you", "ok")))
        )
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            result = await client.call_tool("inbox", {})
    text = text_of(result)
    assert len(text) < 260


async def test_a_huge_message_is_cut_with_a_note_and_message_get_fetches_it_whole(
    tmp_path: Path,
) -> None:
    """A 1,000,000-character message is cut in its line and in the structured content, with
    a note naming message_get; message_get returns it in parts below the bound, which join to
    the whole text. Reading it acknowledges nothing."""
    huge = "".join(f"line {i} é\n" for i in range(100_000))[:1_000_000]
    async with board_with_room(tmp_path) as (board, fake):
        await send_accepted(fake, message("room", "huge", huge), message("room", "after", "ok"))
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            result = await client.call_tool("inbox", {})
            assert answer_bytes(result) < MAX_ANSWER_BYTES
            read = answer(result)
            seq = read["messages"][0]["seq"]
            parts = [await bounded_call(client, "message_get", {"seq": seq})]
            while parts[-1]["next_offset"] is not None:
                parts.append(
                    await bounded_call(
                        client, "message_get", {"seq": seq, "offset": parts[-1]["next_offset"]}
                    )
                )
            missing = await call(client, "message_get", {"seq": 999})
            again = await call(client, "inbox", {"after": 0})
    cut = read["messages"][0]
    note = f"message_get(seq={seq}) fetches it whole."
    assert cut["truncated"].startswith("Too large for a page: its text (")
    assert cut["truncated"].endswith(note)
    assert huge.startswith(cut["text"])
    assert len(cut["text"].encode()) <= MESSAGE_BYTES
    line = text_of(result).split("\n")[1]
    assert line.startswith("2026-11-29T12:00:00Z [room] Ann: line 0 é\\nline 1 é\\n")
    assert line.endswith(f"(id huge) {cut['truncated']}")
    assert ids(read) == ["huge", "after"]
    assert "".join(p["text"] for p in parts) == huge
    assert [p["offset"] for p in parts[1:]] == [p["next_offset"] for p in parts[:-1]]
    assert len(parts) > 1
    assert {p["total_chars"] for p in parts} == {len(huge)}
    assert parts[0]["message_id"] == "huge"
    assert missing["refusal"] == "unknown-message"
    assert ids(again) == ["huge", "after"]  # message_get acknowledged nothing


async def test_a_tune_out_backlog_and_the_traffic_after_it_page_under_the_bound_whole(
    tmp_path: Path,
) -> None:
    """A tune-out's backlog (its notice and messages, acknowledged together) comes as one unit
    at the head of a page; the traffic after it fills pages to the bound. Reading on, every
    message arrives once, in order, 0 lost, and the backlog is not carried again."""
    big = "w" * 15_000
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room", "other")
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            started = await call(client, "tune_out", {"channel": "room"})
            await send_accepted(fake, *(message("room", f"r{i}", big) for i in range(10)))
            await send_accepted(fake, *(message("other", f"o{i}", big) for i in range(30)))
            await call(client, "tune_out", {"channel": "room", "mode": "cancel"})
            pages = [await bounded_call(client, "inbox", {"limit": 500})]
            while pages[-1]["more"]:
                pages.append(await bounded_call(client, "inbox", {"limit": 500}))
            empty = await bounded_call(client, "inbox", {})
    notice = f"tuneout-ended:{started['tune_out']['epoch_id']}"
    got = [i for page in pages for i in ids(page)]
    assert got == [notice, *(f"r{i}" for i in range(10)), *(f"o{i}" for i in range(30))]
    assert len(pages) > 2
    assert ids(pages[0])[:11] == [notice, *(f"r{i}" for i in range(10))]
    assert ids(empty) == []
