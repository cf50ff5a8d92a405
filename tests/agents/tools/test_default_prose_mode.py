"""The default prose mode is ``hybrid``: a model's natural first ``speak``, plain prose with no
target, goes to the turn's locus; ``>>>target`` envelopes route elsewhere; and ``speak``'s
description teaches the grammar of the agent's mode (issue #11 item 6; docs/configuration.md,
"The agent: home channel and prose routing")."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from switchboard.agents.tools.channel_tools import SPEAK_DESCRIPTIONS
from switchboard.app import build_server
from switchboard.config import AgentConfig
from tests.agents.tools.channel_support import call, lifecycle_fake
from tests.fake import board_of, descriptor, message

pytestmark = pytest.mark.anyio


def test_the_default_prose_mode_is_hybrid() -> None:
    assert AgentConfig().prose == "hybrid"


async def test_plain_speech_in_a_turn_goes_to_its_locus_and_an_envelope_goes_elsewhere(
    tmp_path: Path,
) -> None:
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}) as board:
        await fake.call("channels/register", {"channels": [descriptor("room"), descriptor("hall")]})
        await fake.call("channels/incoming", {"messages": [message("room", "m1")]})
        async with Client(build_server(board, agent="ann"), mode="legacy") as client:
            read = await call(client, "inbox")
            plain = await call(client, "speak", {"text": "hello there"})
            routed = await call(client, "speak", {"text": "back here\n>>>#hall over there"})
    assert read["locus"] == "room"
    assert plain["mode"] == "hybrid"
    assert [(s["status"], s["channel_id"]) for s in plain["segments"]] == [("delivered", "room")]
    assert [(s["status"], s["channel_id"]) for s in routed["segments"]] == [
        ("delivered", "room"),
        ("delivered", "hall"),
    ]
    sent = [(p["channelId"], p["content"][0]["text"]) for p in fake.got("channels/publish")]
    assert sent == [("room", "hello there"), ("room", "back here"), ("hall", "over there")]


@pytest.mark.parametrize("mode", ["hybrid", "explicit", "locus", "disabled"])
async def test_speaks_description_teaches_the_grammar_of_the_agents_prose_mode(
    tmp_path: Path, mode: str
) -> None:
    agent = AgentConfig.model_validate({"prose": mode})
    async with (
        board_of(tmp_path, {"s": lifecycle_fake()}, agent=agent) as board,
        Client(build_server(board, agent="ann"), mode="legacy") as client,
    ):
        tools = {t.name: t for t in (await client.list_tools()).tools}
    described = tools["speak"].description or ""
    assert described == SPEAK_DESCRIPTIONS[mode]
    assert (">>>" in described) is (mode == "hybrid")
    assert ("line >>target" in described) is (mode == "explicit")


README = Path(__file__).resolve().parents[3] / "README.md"
PROSE_DOC = Path(__file__).resolve().parents[3] / "docs" / "prose.md"


def _first_text_block(text: str, after: str = "") -> str:
    start = text.index("```text\n", text.index(after) if after else 0) + len("```text\n")
    return text[start : text.index("\n```", start)]


@pytest.mark.parametrize(
    ("doc", "after"),
    [(README, "<!-- snippet: speak -->"), (PROSE_DOC, "")],
    ids=["readme", "prose"],
)
async def test_the_speak_example_the_docs_teach_first_routes_as_they_say_in_the_default_mode(
    tmp_path: Path, doc: Path, after: str
) -> None:
    """The first speech example of README and of docs/prose.md, spoken as written by an agent
    in the default mode, in a turn that began in #general: its plain line goes there and its
    routing line goes to #random, without the arrows posted as text."""
    example = _first_text_block(await anyio.Path(doc).read_text(encoding="utf-8"), after)
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}) as board:
        general, random = descriptor("general"), descriptor("random")
        await fake.call("channels/register", {"channels": [general, random]})
        await fake.call("channels/incoming", {"messages": [message("general", "m1")]})
        async with Client(build_server(board, agent="ann"), mode="legacy") as client:
            await call(client, "inbox")
            spoken = await call(client, "speak", {"text": example})
    assert spoken["mode"] == "hybrid"
    sent = [(p["channelId"], p["content"][0]["text"]) for p in fake.got("channels/publish")]
    assert [channel for channel, _ in sent] == ["general", "random"], sent
    assert not any(">" in text for _, text in sent), sent
