"""Every channel-taking tool accepts the same channel names, and an empty server_id is absent.

Issue #11 item 6: ``channel_open {"channel":"#random"}`` was refused while ``channel_publish``
took ``#general``. Each tool is called through the MCP SDK's ``Client`` with each kind of name
``channel_list`` documents (an id, a qualified ``serverId:channelId``, a raw platform id, a
``#label`` and an ``@person`` of a DM), and must act on that one channel; with
``server_id: ""`` it must act as if none was given (channel-registry.md §15 T12).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from switchboard.app import build_server
from tests.agents.tools.channel_support import call, dm
from tests.fake import FakeConnector, LifecycleScript, board_of, descriptor, register_settled
from tests.helpers import Recorder

pytestmark = pytest.mark.anyio

RANDOM = descriptor("random", label="#random", address={"channelId": "C0RANDOM"})
"""The channel most names pick: id ``random``, label ``#random``, raw id ``C0RANDOM``."""
CAROL = dm("dm-carol", "carol", "U0CAROL")
"""A DM channel, picked by ``@carol``."""

NAMES = {
    "random": "random",
    "s:random": "random",
    "C0RANDOM": "random",
    "#random": "random",
    "@carol": "dm-carol",
}
"""Each kind of name, and the channel id it picks."""


def _channel_id(tool: str, result: dict[str, Any]) -> str:
    """The channel id a tool's answer says it acted on."""
    if tool == "typing":
        return str(result["channels"][0]["channel_id"])
    if tool == "tune_out":
        return str(result["tune_out"]["channel_id"])
    return str(result["channel_id"])


TOOLS: dict[str, Callable[[str], dict[str, Any]]] = {
    "channel_publish": lambda name: {"channel": name, "text": "hi"},
    "channel_open": lambda name: {"channel": name},
    "channel_close": lambda name: {"channel": name},
    "channel_decline": lambda name: {"channel": name, "message_id": "m1"},
    "typing": lambda name: {"channel": name},
    "tune_out": lambda name: {"channel": name},
}
"""Each channel-taking tool, and its arguments for a channel name."""


async def _answer(tmp_path: Path, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """What ``tool`` answers to ``args``, on a server registering #random and a DM with
    carol; for channel_decline both are closed first (a decline needs a closed channel)."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_of(tmp_path, {"s": fake}, recorder=rec) as board:
        await register_settled(fake, rec, [RANDOM, CAROL])
        async with Client(build_server(board, agent="ann"), mode="legacy") as client:
            if tool == "channel_decline":
                for cid in set(NAMES.values()):
                    closed = await call(client, "channel_close", {"channel": cid})
                    assert not closed["is_error"], closed
            return await call(client, tool, args)


@pytest.mark.parametrize("name", list(NAMES))
@pytest.mark.parametrize("tool", list(TOOLS))
async def test_every_channel_tool_accepts_every_kind_of_name_publish_accepts(
    tmp_path: Path, tool: str, name: str
) -> None:
    """An id, a qualified name, a raw id, a #label and an @person each pick the channel, in
    every tool (issue #11 item 6)."""
    result = await _answer(tmp_path, tool, TOOLS[tool](name))
    assert not result["is_error"], result
    assert _channel_id(tool, result) == NAMES[name]


@pytest.mark.parametrize("tool", [t for t in TOOLS if t != "tune_out"])
async def test_an_empty_server_id_counts_as_absent_in_every_tool_that_takes_one(
    tmp_path: Path, tool: str
) -> None:
    """T12: ``server_id: ""`` is no server id, not a schema error and not an unknown server.
    (tune_out takes no server id.)"""
    result = await _answer(tmp_path, tool, {**TOOLS[tool]("#random"), "server_id": ""})
    assert not result["is_error"], result
    assert _channel_id(tool, result) == "random"


@pytest.mark.parametrize("tool", list(TOOLS))
async def test_a_name_nothing_answers_to_is_refused_the_same_way_by_every_tool(
    tmp_path: Path, tool: str
) -> None:
    """The refusal offers the near name that picks the channel alone, whatever the tool."""
    result = await _answer(tmp_path, tool, TOOLS[tool]("#randon"))
    assert result["is_error"]
    assert result["refusal"] == "unknown-channel"
    assert "#random" in result["suggestions"] or "random" in result["suggestions"]
