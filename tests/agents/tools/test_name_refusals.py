"""Every tool refuses a name the same way: one refusal per kind of name error, with the same
data (docs/tools.md, "Refusals"), whichever tool was called."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from switchboard.app import build_server
from tests.agents.tools.channel_support import call
from tests.fake import FakeConnector, board_of, descriptor, drop_server, message

pytestmark = pytest.mark.anyio

CANDIDATES = [
    {"server_id": "a", "channel_id": "general", "name": "a:general", "gone": False},
    {"server_id": "b", "channel_id": "general", "name": "b:general", "gone": False},
]
"""The channel both servers register, as each candidate is shown (``label`` aside)."""


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("channel_publish", {"channel": "general", "text": "hi"}),
        ("channel_open", {"channel": "general"}),
        ("channel_close", {"channel": "general"}),
        ("channel_decline", {"channel": "general", "message_id": "m1"}),
        ("tune_out", {"channel": "general"}),
        ("typing", {"channel": "#lobby"}),
    ],
)
async def test_a_name_several_channels_answer_to_is_refused_with_every_candidate(
    tmp_path: Path, tool: str, args: dict[str, Any]
) -> None:
    """The tune_out and typing refusals carry candidates too, and every candidate says whether
    it is gone."""
    fakes = {"a": FakeConnector(), "b": FakeConnector()}
    async with board_of(tmp_path, fakes) as board:
        for fake in fakes.values():
            await fake.call(
                "channels/register", {"channels": [descriptor("general", label="#lobby")]}
            )
        async with Client(build_server(board, agent="ann"), mode="legacy") as client:
            refused = await call(client, tool, args)
    assert refused["is_error"]
    assert refused["refusal"] == "ambiguous-channel"
    shown = sorted(refused["candidates"], key=lambda c: str(c["server_id"]))
    assert [{k: c[k] for k in ("server_id", "channel_id", "name", "gone")} for c in shown] == (
        CANDIDATES
    )
    assert all("label" in c for c in shown)
    assert tool in refused["next"] or tool == "typing"
    assert all(f.got("channels/publish") == [] for f in fakes.values())


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("channel_publish", {"channel": "g", "text": "hi"}),
        ("channel_open", {"channel": "g"}),
        ("tune_out", {"channel": "g"}),
    ],
)
async def test_the_turns_own_channel_whose_server_left_is_refused_as_gone(
    tmp_path: Path, tool: str, args: dict[str, Any]
) -> None:
    """The name stays bound to the turn's own channel, and every tool says it is gone."""
    fakes = {"a": FakeConnector(), "b": FakeConnector()}
    async with board_of(tmp_path, fakes) as board:
        for fake in fakes.values():
            await fake.call("channels/register", {"channels": [descriptor("g")]})
        await fakes["a"].call("channels/incoming", {"messages": [message("g", "m1")]})
        async with Client(build_server(board, agent="ann"), mode="legacy") as client:
            await call(client, "inbox")  # a turn whose own channel is a:g
            await drop_server(board, fakes["a"], "a")
            refused = await call(client, tool, args)
    assert refused["is_error"]
    assert refused["refusal"] == "unknown-channel"
    assert (refused["gone"], refused["server_id"], refused["channel_id"]) == (True, "a", "g")
    assert fakes["b"].got("channels/publish") == []
