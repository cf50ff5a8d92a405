"""The Matrix bridge end to end: a real Synapse, a person at a real Matrix client, the bridge
spawned by ``switchboard run`` from a config, and the agent at a real MCP client.

Each test registers its own bot and people, so the session's one homeserver serves them all.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mautrix.api import Method
from mautrix.api import Path as ApiPath
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from .support import (
    BRIDGE,
    Person,
    bridge_env,
    call,
    channel_until,
    inbox_until,
    signed_in,
    switchboard_run,
)
from .synapse import MatrixUser, Synapse

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@dataclass
class Cast:
    """A bot account for the bridge and a person, Ann, signed in at her own client."""

    synapse: Synapse
    bot: MatrixUser
    ann: Person
    state_dir: Path

    def env(self, **extra: str) -> dict[str, str]:
        return bridge_env(self.synapse, self.bot, self.state_dir, **extra)


@pytest.fixture
async def cast(synapse: Synapse, tmp_path: Path) -> AsyncIterator[Cast]:
    bot = await synapse.register(synapse.fresh_name("bot"), displayname="Switchboard Bot")
    ann = await synapse.register(synapse.fresh_name("ann"), displayname="Ann")
    async with signed_in(synapse, ann) as person:
        yield Cast(synapse, bot, person, tmp_path / "bridge-state")


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    return [m["text"] for m in messages]


async def test_a_persons_message_reaches_the_inbox_with_sender_and_room_and_the_answer_appears(
    cast: Cast, tmp_path: Path
) -> None:
    async with switchboard_run(tmp_path, cast.env()) as board:
        lobby = await cast.ann.create_room("Lobby", invite=[cast.bot.user_id])
        channels = await channel_until(board.client, lambda cs: lobby in cs)
        sent = await cast.ann.send(lobby, "hello, is the agent around?")
        seen = await inbox_until(board.client, lambda ms: any(m["message_id"] == sent for m in ms))
        message = next(m for m in seen if m["message_id"] == sent)
        published = await call(
            board.client, "channel_publish", {"channel": lobby, "text": "Hi Ann, I am here."}
        )
        answer = await cast.ann.wait_for(lambda e: e.get("event_id") == published["message_id"])
        thanks = await cast.ann.send(lobby, "thanks!")
        after = await inbox_until(
            board.client, lambda ms: any(m["message_id"] == thanks for m in ms)
        )

    assert channels[lobby]["label"] == "Lobby"
    assert channels[lobby]["server_id"] == "matrix"
    assert message["channel_id"] == lobby
    assert message["author_id"] == cast.ann.user_id
    assert message["author_name"] == "Ann"
    assert message["text"] == "hello, is the agent around?"
    assert message["timestamp"].endswith("Z")
    assert "chat:group" in message["tags"]
    assert "chat:from-human" in message["tags"]
    assert published["status"] == "delivered"
    assert answer["sender"] == cast.bot.user_id
    assert answer["room_id"] == lobby
    assert answer["content"]["body"] == "Hi Ann, I am here."
    # The bridge's own message is never echoed back to the agent as incoming.
    assert [m["message_id"] for m in after] == [thanks]


async def test_a_direct_chat_is_a_dm_channel_naming_the_other_person(
    cast: Cast, tmp_path: Path
) -> None:
    async with switchboard_run(tmp_path, cast.env()) as board:
        dm = await cast.ann.create_room(None, invite=[cast.bot.user_id], direct=True)
        channels = await channel_until(board.client, lambda cs: dm in cs)
        sent = await cast.ann.send(dm, "can I ask you something privately?")
        seen = await inbox_until(board.client, lambda ms: any(m["message_id"] == sent for m in ms))
        # The agent answers the person by name: the DM's @name picks the channel.
        published = await call(
            board.client, "channel_publish", {"channel": "@Ann", "text": "Sure."}
        )
        answer = await cast.ann.wait_for(lambda e: e.get("event_id") == published["message_id"])

    assert channels[dm]["label"] == "DM: Ann"
    assert channels[dm]["prose_target"] == "@Ann"
    message = next(m for m in seen if m["message_id"] == sent)
    assert {"chat:dm", "chat:private", "chat:addressed"} <= set(message["tags"])
    assert "chat:ambient" not in message["tags"]
    assert published["channel_id"] == dm
    assert answer["room_id"] == dm
    assert answer["content"]["body"] == "Sure."


async def test_a_reply_to_the_agent_carries_the_message_it_answers(
    cast: Cast, tmp_path: Path
) -> None:
    async with switchboard_run(tmp_path, cast.env()) as board:
        room = await cast.ann.create_room("Support", invite=[cast.bot.user_id])
        await channel_until(board.client, lambda cs: room in cs)
        asked = await call(board.client, "channel_publish", {"channel": room, "text": "Which OS?"})
        question = asked["message_id"]
        # A client's reply: the quoted fallback in both bodies, the relation beside them.
        reply = await cast.ann.reply(
            room,
            question,
            f"> <{cast.bot.user_id}> Which OS?\n\nLinux, mostly",
            format="org.matrix.custom.html",
            formatted_body=(
                f'<mx-reply><blockquote><a href="https://matrix.to/#/{room}/{question}">In reply '
                f"to</a> Which OS?</blockquote></mx-reply>Linux, <b>mostly</b>"
            ),
        )
        other = await cast.ann.send(room, "unrelated chatter")
        not_to_us = await cast.ann.reply(room, other, "replying to myself")
        seen = await inbox_until(
            board.client, lambda ms: any(m["message_id"] == not_to_us for m in ms)
        )

    by_id = {m["message_id"]: m for m in seen}
    answer = by_id[reply]
    assert answer["text"] == "Linux, **mostly**"
    assert answer["metadata"]["replyTo"] == question
    assert {"chat:reply", "chat:addressed"} <= set(answer["tags"])
    mine = by_id[not_to_us]
    assert mine["metadata"]["replyTo"] == other
    assert "chat:reply" not in mine["tags"]
    assert "chat:ambient" in mine["tags"]


async def test_an_edit_and_a_deletion_arrive_as_markers_pointing_at_the_original(
    cast: Cast, tmp_path: Path
) -> None:
    async with switchboard_run(tmp_path, cast.env()) as board:
        room = await cast.ann.create_room("Drafts", invite=[cast.bot.user_id])
        await channel_until(board.client, lambda cs: room in cs)
        original = await cast.ann.send(room, "the meeting is at 3")
        edit = await cast.ann.edit(room, original, "the meeting is at 4")
        redaction = await cast.ann.redact(room, original)
        seen = await inbox_until(
            board.client, lambda ms: any(m["message_id"] == redaction for m in ms)
        )

    by_id = {m["message_id"]: m for m in seen}
    assert [m["message_id"] for m in seen] == [original, edit, redaction]
    assert by_id[edit]["text"] == "the meeting is at 4"
    assert by_id[edit]["metadata"]["edits"] == original
    assert "chat:edited" in by_id[edit]["tags"]
    assert by_id[redaction]["metadata"]["redacts"] == original
    assert "chat:deleted" in by_id[redaction]["tags"]


async def test_a_mention_of_the_bridge_user_is_in_metadata_mentions_and_tagged(
    cast: Cast, tmp_path: Path
) -> None:
    bot = cast.bot.user_id
    async with switchboard_run(tmp_path, cast.env()) as board:
        room = await cast.ann.create_room("Team", invite=[bot])
        await channel_until(board.client, lambda cs: room in cs)
        plain = await cast.ann.send(room, "just chatting")
        mention = await cast.ann.send_html(
            room,
            "Switchboard Bot: can you summarise?",
            f'<a href="https://matrix.to/#/{bot}">Switchboard Bot</a>: can you summarise?',
            **{"m.mentions": {"user_ids": [bot]}},
        )
        # A client without intentional mentions, writing the bot's id in the text.
        legacy = await cast.ann.send(room, f"{bot} ping")
        seen = await inbox_until(
            board.client, lambda ms: any(m["message_id"] == legacy for m in ms)
        )

    by_id = {m["message_id"]: m for m in seen}
    assert by_id[mention]["metadata"]["mentions"] == [bot]
    assert {"chat:mention", "chat:addressed"} <= set(by_id[mention]["tags"])
    assert by_id[mention]["text"] == "Switchboard Bot: can you summarise?"
    assert by_id[legacy]["metadata"]["mentions"] == [bot]
    assert "chat:mention" in by_id[legacy]["tags"]
    assert "chat:mention" not in by_id[plain]["tags"]
    assert "chat:ambient" in by_id[plain]["tags"]


async def test_a_room_rename_reaches_the_host_as_a_changed_label(
    cast: Cast, tmp_path: Path
) -> None:
    async with switchboard_run(tmp_path, cast.env()) as board:
        room = await cast.ann.create_room("Old name", invite=[cast.bot.user_id])
        before = await channel_until(board.client, lambda cs: room in cs)
        await cast.ann.rename(room, "New name")
        after = await channel_until(board.client, lambda cs: cs[room]["label"] == "New name")

    assert before[room]["label"] == "Old name"
    assert after[room]["label"] == "New name"


async def test_being_kicked_or_leaving_a_room_removes_its_channel(
    cast: Cast, synapse: Synapse, tmp_path: Path
) -> None:
    async with switchboard_run(tmp_path, cast.env()) as board:
        kicked = await cast.ann.create_room("Kicked", invite=[cast.bot.user_id])
        left = await cast.ann.create_room("Left", invite=[cast.bot.user_id])
        await channel_until(board.client, lambda cs: kicked in cs and left in cs)
        await cast.ann.kick(kicked, cast.bot.user_id)
        await channel_until(board.client, lambda cs: kicked not in cs)
        # The bot's operator makes it leave from another session of the same account.
        async with signed_in(synapse, cast.bot) as operator:
            await operator.api.leave_room(left)  # type: ignore[arg-type]
        remaining = await channel_until(board.client, lambda cs: left not in cs)
        refused = await board.client.call_tool(
            "channel_publish", {"channel": kicked, "text": "anyone?"}
        )

    assert kicked not in remaining
    assert left not in remaining
    assert refused.is_error


async def test_the_person_sees_the_bridge_typing_while_the_agent_streams(
    cast: Cast, tmp_path: Path
) -> None:
    bot = cast.bot.user_id
    async with switchboard_run(tmp_path, cast.env()) as board:
        room = await cast.ann.create_room("Questions", invite=[bot])
        await channel_until(board.client, lambda cs: room in cs)
        asked = await cast.ann.send(room, "what is 6 times 7?")
        await inbox_until(board.client, lambda ms: any(m["message_id"] == asked for m in ms))
        cast.ann.typing.clear()
        stream = await call(board.client, "speak_stream", {"text": "Let me think"})
        await cast.ann.wait_typing(room, bot)
        typing_before_the_words = not cast.ann.messages_from(bot, room)
        ended = await call(
            board.client,
            "speak_stream_end",
            {"inference_id": stream["inference_id"], "text": "... it is 42."},
        )
        answer = await cast.ann.wait_for(
            lambda e: e.get("sender") == bot and e.get("type") == "m.room.message"
        )
        # Once the words are posted, the typing notification ends.
        with anyio.fail_after(30):
            while bot in (cast.ann.typing.get(room) or [[bot]])[-1]:
                await cast.ann.sync()

    assert stream["streamed"], stream
    assert typing_before_the_words
    assert ended["speech"] is not None
    assert answer["content"]["body"] == "Let me think... it is 42."


async def test_a_restart_of_the_bridge_mid_conversation_loses_nothing_and_doubles_nothing(
    cast: Cast, tmp_path: Path
) -> None:
    """The second run has a fresh message store, so the host cannot deduplicate anything:
    that each message arrives exactly once is the bridge's sync token alone. Six messages
    while it is down, with three per room per sync, also make it fill a gap by paging back."""
    env = cast.env(MATRIX_TIMELINE_LIMIT="3")
    async with switchboard_run(tmp_path, env, store=tmp_path / "first.sqlite") as board:
        room = await cast.ann.create_room("Ongoing", invite=[cast.bot.user_id])
        await channel_until(board.client, lambda cs: room in cs)
        before = [await cast.ann.send(room, f"before {i}") for i in range(2)]
        first = await inbox_until(board.client, lambda ms: len(ms) >= 2)
        asked = await call(board.client, "channel_publish", {"channel": room, "text": "Ready?"})
    while_down = [await cast.ann.send(room, f"while down {i}") for i in range(5)]
    while_down.append(await cast.ann.reply(room, asked["message_id"], "yes, ready"))
    async with switchboard_run(
        tmp_path, env, store=tmp_path / "second.sqlite", name="second"
    ) as board:
        after = await cast.ann.send(room, "after the restart")
        second = await inbox_until(
            board.client, lambda ms: any(m["message_id"] == after for m in ms)
        )
        await board.wait_log("matrix_gap_filled")

    assert [m["message_id"] for m in first] == before
    assert [m["message_id"] for m in second] == [*while_down, after]
    assert _texts(second)[:5] == [f"while down {i}" for i in range(5)]
    reply = second[5]
    assert reply["metadata"]["replyTo"] == asked["message_id"]
    assert "chat:reply" in reply["tags"]


async def test_synapse_stopped_and_started_again_the_bridge_reconnects_and_catches_up(
    private_synapse: Synapse, tmp_path: Path
) -> None:
    synapse = private_synapse
    await synapse.start_async()
    bot = await synapse.register("bot", displayname="Switchboard Bot")
    ann_user = await synapse.register("ann", displayname="Ann")
    env = bridge_env(synapse, bot, tmp_path / "bridge-state")
    async with signed_in(synapse, ann_user) as ann, switchboard_run(tmp_path, env) as board:
        room = await ann.create_room("Resilient", invite=[bot.user_id])
        await channel_until(board.client, lambda cs: room in cs)
        first = await ann.send(room, "before the outage")
        await inbox_until(board.client, lambda ms: any(m["message_id"] == first for m in ms))

        await anyio.to_thread.run_sync(synapse.stop)
        outcome: dict[str, Any] = {}

        async def publish_during_the_outage() -> None:
            outcome.update(
                await call(board.client, "channel_publish", {"channel": room, "text": "still here"})
            )

        async with anyio.create_task_group() as group:
            group.start_soon(publish_during_the_outage)
            await synapse.start_async()
        caught_up = await ann.send(room, "after the outage")
        seen = await inbox_until(
            board.client, lambda ms: any(m["message_id"] == caught_up for m in ms), within=60
        )
        await ann.wait_for(lambda e: e.get("event_id") == outcome.get("message_id"), within=60)
        again = await ann.send(room, "and once more")
        await inbox_until(board.client, lambda ms: any(m["message_id"] == again for m in ms))
        log = await board.wait_log("matrix_reconnected")

    assert outcome["status"] == "delivered"
    assert ann.messages_from(bot.user_id, room) == ["still here"]
    assert [m["message_id"] for m in seen] == [caught_up]
    assert "matrix_unreachable" in log


async def test_an_encrypted_room_is_refused_with_a_warning_and_never_registered(
    cast: Cast, tmp_path: Path
) -> None:
    bot = cast.bot.user_id
    async with switchboard_run(tmp_path, cast.env()) as board:
        secret = await cast.ann.create_room("Secret", invite=[bot], encrypted=True)
        declined = await cast.ann.wait_for(
            lambda e: (
                e.get("room_id") == secret
                and e.get("type") == "m.room.member"
                and e.get("state_key") == bot
                and e.get("content", {}).get("membership") == "leave"
            )
        )
        # A room that turns encryption on later is removed.
        turned = await cast.ann.create_room("Turning", invite=[bot])
        await channel_until(board.client, lambda cs: turned in cs)
        await cast.ann.api.api.request(
            Method.PUT,
            ApiPath.v3.rooms[turned].state["m.room.encryption"][""],
            {"algorithm": "m.megolm.v1.aes-sha2"},
        )
        channels = await channel_until(board.client, lambda cs: turned not in cs)
        log = await board.wait_log("matrix_room_encrypted_refused", times=2)

    assert secret not in channels
    assert "end-to-end encrypted" in declined["content"]["reason"]
    assert secret in log
    assert turned in log


EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "matrix-bridge.toml"


def _example_as_written(cast: Cast, tmp_path: Path) -> StdioServerParameters:
    """The example copied unchanged, its ``${...}`` values set in the environment of
    ``switchboard run``, the token in a file of mode 600."""
    config = tmp_path / "matrix-bridge.toml"
    config.write_text(EXAMPLE.read_text())
    token = tmp_path / "matrix-token"
    token.write_text(cast.bot.access_token + "\n")
    token.chmod(0o600)
    env = {
        **os.environ,
        "MATRIX_HOMESERVER": cast.synapse.url,
        "MATRIX_USER_ID": cast.bot.user_id,
        "MATRIX_ACCESS_TOKEN_FILE": str(token),
        "MATRIX_STATE_DIR": str(cast.state_dir),
        "MATRIX_ACCEPT_INVITES": "localhost",
    }
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "switchboard", "run", "--config", str(config)],
        env=env,
        cwd=str(tmp_path),
    )


async def test_the_example_config_as_written_bridges_a_room(cast: Cast, tmp_path: Path) -> None:
    params = _example_as_written(cast, tmp_path)
    with (tmp_path / "stderr.log").open("a") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            room = await cast.ann.create_room("From the example", invite=[cast.bot.user_id])
            channels = await channel_until(client, lambda cs: room in cs)
            sent = await cast.ann.send(room, "does the example work?")
            seen = await inbox_until(client, lambda ms: any(m["message_id"] == sent for m in ms))

    assert channels[room]["label"] == "From the example"
    assert [m["text"] for m in seen] == ["does the example work?"]
    assert await anyio.Path(tmp_path / "switchboard.sqlite").exists()


async def test_a_token_of_another_user_stops_the_bridge_with_a_clear_reason(
    cast: Cast, tmp_path: Path
) -> None:
    env = cast.env(MATRIX_ACCESS_TOKEN=cast.ann.user.access_token)
    async with switchboard_run(tmp_path, env) as board:
        await board.wait_log("matrix_credentials_refused")
        listed = await call(board.client, "channel_list", {})
    log = board.log_text()
    assert f"the access token belongs to {cast.ann.user_id}" in log
    assert f"not to MATRIX_USER_ID {cast.bot.user_id}" in log
    assert listed["channels"] == []


async def test_check_logs_in_and_says_what_the_bridge_would_bridge(cast: Cast) -> None:
    env = {**os.environ, **cast.env()}
    good = await anyio.run_process([BRIDGE, "--check"], env=env, check=False)
    env["MATRIX_ACCESS_TOKEN"] = "syt_not_a_token"
    bad = await anyio.run_process([BRIDGE, "--check"], env=env, check=False)

    assert good.returncode == 0, good.stderr
    assert f"ok: {cast.bot.user_id} on {cast.synapse.url}, in 0 rooms" in good.stdout.decode()
    assert "accepting invitations from: localhost" in good.stdout.decode()
    assert bad.returncode == 1
    assert "failed:" in bad.stderr.decode()
