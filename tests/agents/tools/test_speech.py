"""The speak tool: `>>` prose routed segment by segment (issue #3; channel-registry.md §4,
§8.4, T17-T23, T36)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from switchboard.app import build_server
from switchboard.config import AgentConfig
from tests.agents.tools.channel_support import call, dm, lifecycle_fake
from tests.fake import FakeConnector, board_of, descriptor, message

pytestmark = pytest.mark.anyio

EXPLICIT = AgentConfig(prose="explicit")
"""These tests write the explicit grammar (``>>target`` lines, plain prose bounced)."""


def _sent(fake: FakeConnector) -> list[tuple[str, str]]:
    return [(p["channelId"], p["content"][0]["text"]) for p in fake.got("channels/publish")]


def _statuses(result: dict[str, Any]) -> list[str]:
    return [s["status"] for s in result["segments"]]


async def _rooms(fake: FakeConnector) -> None:
    await fake.call(
        "channels/register",
        {"channels": [descriptor("alpha"), descriptor("beta"), dm("dm-l", "laria", "7")]},
    )


async def test_each_prefixed_segment_goes_to_its_own_target(tmp_path: Path) -> None:
    """T17: two deliveries; a `>> quoted` line is body text."""
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}, agent=EXPLICIT) as board:
        await _rooms(fake)
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            text = ">>#alpha part one\n>>@laria part two\nline 2\n>> quoted"
            spoken = await call(client, "speak", {"text": text})
    assert _statuses(spoken) == ["delivered", "delivered"]
    assert [s["channel"] for s in spoken["segments"]] == ["#alpha", "@laria"]
    assert all(s["message_id"] for s in spoken["segments"])
    assert _sent(fake) == [("alpha", "part one"), ("dm-l", "part two\nline 2\n>> quoted")]


async def test_skip_reply_is_private_and_a_spaced_arrow_is_plain_prose(tmp_path: Path) -> None:
    """T18: `>>#ops ! done` routes `done`; `>>skip_reply` is private and not kept."""
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}, agent=EXPLICIT) as board:
        await _rooms(fake)
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            moved = await call(client, "speak", {"text": ">>#beta ! done"})
            private = await call(client, "speak", {"text": ">>skip_reply\nnotes to self"})
            plain = await call(client, "speak", {"text": ">> not a target"})
    assert _statuses(moved) == ["delivered"]
    assert (private["segments"][0]["status"], private["segments"][0]["kept_as_draft"]) == (
        "private",
        False,
    )
    assert private["sticky"] is None
    (bounced,) = plain["segments"]
    assert (bounced["status"], bounced["refusal"]) == ("bounced", "no-target")
    assert ">>" in bounced["reason"]
    assert _sent(fake) == [("beta", "done")]


async def test_the_target_is_sticky_within_a_turn_and_forgotten_in_the_next(
    tmp_path: Path,
) -> None:
    """T19."""
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}, agent=EXPLICIT) as board:
        await _rooms(fake)
        await fake.call("channels/incoming", {"messages": [message("beta", "m1")]})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            await call(client, "inbox")
            first = await call(client, "speak", {"text": ">>#alpha first"})
            second = await call(client, "speak", {"text": "second"})
            await fake.call("channels/incoming", {"messages": [message("beta", "m2")]})
            await call(client, "inbox")
            third = await call(client, "speak", {"text": "third"})
    assert first["sticky"] == "#alpha"
    assert second["segments"][0]["channel"] == "#alpha"
    assert _statuses(third) == ["bounced"]
    assert third["segments"][0]["kept_as_draft"] is True
    assert _sent(fake) == [("alpha", "first"), ("alpha", "second")]


async def test_bounced_words_are_kept_and_unsent_brings_the_latest_back_once(
    tmp_path: Path,
) -> None:
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}, agent=EXPLICIT) as board:
        await _rooms(fake)
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            bounced = await call(client, "speak", {"text": ">>#nowhere hello there"})
            restored = await call(client, "speak", {"text": ">>#alpha {{unsent}}!"})
            again = await call(client, "speak", {"text": ">>#alpha {{unsent}}"})
    (first,) = bounced["segments"]
    assert (first["status"], first["refusal"], first["kept_as_draft"]) == (
        "bounced",
        "unresolved-target",
        True,
    )
    assert '"#nowhere"' in first["reason"]
    assert _statuses(restored) == ["delivered"]
    assert (again["segments"][0]["status"], again["segments"][0]["refusal"]) == (
        "bounced",
        "no-unsent-draft",
    )
    assert _sent(fake) == [("alpha", "hello there!")]


async def test_in_locus_mode_plain_speech_goes_to_the_frozen_locus(tmp_path: Path) -> None:
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}, agent=AgentConfig(prose="locus")) as board:
        await _rooms(fake)
        await fake.call("channels/incoming", {"messages": [message("beta", "m1")]})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            read = await call(client, "inbox")
            await fake.call("channels/incoming", {"messages": [message("alpha", "m2")]})
            spoken = await call(client, "speak", {"text": "hello\n>>#alpha is plain here"})
    assert read["locus"] == "beta"
    assert spoken["mode"] == "locus"
    assert spoken["segments"][0]["channel"] == "#beta"
    assert _sent(fake) == [("beta", "hello\n>>#alpha is plain here")]


async def test_hybrid_mode_uses_envelopes_and_blocks_the_sticky_target_after_skip_reply(
    tmp_path: Path,
) -> None:
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}, agent=AgentConfig(prose="hybrid")) as board:
        await _rooms(fake)
        await fake.call("channels/incoming", {"messages": [message("alpha", "m1")]})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            await call(client, "inbox")
            text = "to the locus\n>>#beta still plain\n  >>> #beta enveloped"
            first = await call(client, "speak", {"text": text})
            sticky = await call(client, "speak", {"text": "follows the envelope"})
            await call(client, "speak", {"text": ">>>skip_reply private"})
            blocked = await call(client, "speak", {"text": "held back"})
    assert _statuses(first) == ["delivered", "delivered"]
    assert first["sticky"] == "#beta"
    assert sticky["segments"][0]["channel"] == "#beta"
    assert _statuses(blocked) == ["bounced"]
    assert _sent(fake) == [
        ("alpha", "to the locus\n>>#beta still plain"),
        ("beta", "enveloped"),
        ("beta", "follows the envelope"),
    ]


async def test_in_hybrid_mode_a_failed_delivery_blocks_the_sticky_target(tmp_path: Path) -> None:
    fake = lifecycle_fake()

    async def refuse_beta(method: str, params: Any) -> Any:
        if params["channelId"] == "beta":
            return {"delivered": False}
        return {"delivered": True, "messageId": "ok"}

    fake.extra["channels/publish"] = refuse_beta
    async with board_of(tmp_path, {"s": fake}, agent=AgentConfig(prose="hybrid")) as board:
        await _rooms(fake)
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            spoken = await call(client, "speak", {"text": ">>>#beta lost\nnot sent either"})
            later = await call(client, "speak", {"text": "nor this"})
    assert _statuses(spoken) == ["failed"]
    assert spoken["segments"][0]["kept_as_draft"] is True
    assert spoken["sticky"] is None
    assert _statuses(later) == ["bounced"]
    assert [c for c, _ in _sent(fake)] == ["beta"]


async def test_disabled_mode_withholds_prose_and_sends_nothing(tmp_path: Path) -> None:
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}, agent=AgentConfig(prose="disabled")) as board:
        await _rooms(fake)
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            spoken = await call(client, "speak", {"text": ">>#alpha hi\nthere"})
    assert _statuses(spoken) == ["withheld"]
    assert "channel_publish" in spoken["segments"][0]["reason"]
    assert _sent(fake) == []


async def test_skip_reply_as_a_channel_id_is_reached_only_by_its_qualified_name(
    tmp_path: Path,
) -> None:
    """T22: `>>skip_reply` stays private speech; `z:skip_reply` is the target shown."""
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"z": fake}, agent=EXPLICIT) as board:
        await fake.call(
            "channels/register", {"channels": [descriptor("skip_reply", label="skip reply")]}
        )
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            listed = await call(client, "channel_list")
            private = await call(client, "speak", {"text": ">>skip_reply hi"})
            reached = await call(client, "speak", {"text": ">>z:skip_reply hi"})
    (row,) = listed["channels"]
    assert (row["name"], row["prose_target"]) == ("skip_reply", "z:skip_reply")
    assert _statuses(private) == ["private"]
    assert _statuses(reached) == ["delivered"]
    assert _sent(fake) == [("skip_reply", "hi")]


async def test_two_servers_sharing_an_id_are_asked_which_unless_the_turn_owns_one(
    tmp_path: Path,
) -> None:
    a, b = lifecycle_fake(), lifecycle_fake()
    async with board_of(tmp_path, {"a": a, "b": b}, agent=EXPLICIT) as board:
        for fake in (a, b):
            await fake.call("channels/register", {"channels": [descriptor("general")]})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            refused = await call(client, "speak", {"text": ">>general hi"})
            await b.call("channels/incoming", {"messages": [message("general", "m1")]})
            await call(client, "inbox")
            owned = await call(client, "speak", {"text": ">>general hi again"})
    (bounced,) = refused["segments"]
    assert bounced["refusal"] == "unresolved-target"
    assert '"a:general"' in bounced["reason"]
    assert '"b:general"' in bounced["reason"]
    assert owned["segments"][0]["server_id"] == "b"
    assert (a.got("channels/publish"), _sent(b)) == ([], [("general", "hi again")])


async def test_speech_into_inbound_only_or_ambiguous_dms_is_bounced(tmp_path: Path) -> None:
    """T36 (speech) and T21: nothing goes into an inbound-only channel or a guessed DM."""
    a, b = lifecycle_fake(), lifecycle_fake()
    async with board_of(tmp_path, {"a": a, "b": b}, agent=EXPLICIT) as board:
        await a.call(
            "channels/register", {"channels": [descriptor("news", "inbound"), dm("d", "al", "1")]}
        )
        await b.call("channels/register", {"channels": [dm("d", "al", "1")]})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            spoken = await call(client, "speak", {"text": ">>#news hi\n>>@al hi\n>><@1> hi"})
    assert _statuses(spoken) == ["bounced", "bounced", "bounced"]
    assert "inbound-only" in spoken["segments"][0]["reason"]
    assert a.got("channels/publish") == b.got("channels/publish") == []


async def test_colon_ids_and_spaced_labels_are_reached_by_the_target_shown(
    tmp_path: Path,
) -> None:
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"discord": fake}, agent=EXPLICIT) as board:
        channels = [descriptor("discord:g:1"), descriptor("lounge", label="team room")]
        await fake.call("channels/register", {"channels": channels})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            listed = await call(client, "channel_list")
            targets = [c["prose_target"] for c in listed["channels"]]
            split = await call(client, "speak", {"text": ">>#team room hi"})
            spoken = await call(client, "speak", {"text": "\n".join(f">>{t} hi" for t in targets)})
    assert targets == ["#discord:g:1", "lounge"]
    assert _statuses(split) == ["bounced"]
    assert _statuses(spoken) == ["delivered", "delivered"]
    assert _sent(fake) == [("discord:g:1", "hi"), ("lounge", "hi")]


async def test_think_sends_nothing(tmp_path: Path) -> None:
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}, agent=EXPLICIT) as board:
        await _rooms(fake)
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            noted = await call(client, "think", {"content": ">>#alpha secret plan"})
    assert noted["noted"] is True
    assert "not sent" in noted["note"]
    assert fake.got("channels/publish") == []
