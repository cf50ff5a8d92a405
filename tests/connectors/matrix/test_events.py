"""Matrix events as MCPL incoming messages: text and formatted text, media, replies, threads,
edits, redactions, reactions, mentions and tags; and, for any event at all, a message whose
tags follow §16 or no message (never an exception)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.connectors.matrix.events import (
    EventContext,
    iso_timestamp,
    reply_target,
    to_incoming,
)
from switchboard.connectors.matrix.rooms import Room
from switchboard.protocol import IncomingMessage

pytestmark = pytest.mark.anyio

BOT = "@bot:example.org"
ANN = "@ann:example.org"


def _room() -> Room:
    room = Room("!r:example.org")
    room.names.update({BOT: "Switchboard Bot", ANN: "Ann"})
    return room


def _event(content: dict[str, Any], kind: str = "m.room.message", **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "event_id": "$e1",
        "sender": ANN,
        "origin_server_ts": 1_790_000_000_123,
        "content": content,
        **extra,
    }


async def _convert(event: dict[str, Any], **context: Any) -> IncomingMessage:
    message = await to_incoming(event, EventContext(own_user_id=BOT, room=_room(), **context))
    assert message is not None
    return message


def _dump(message: IncomingMessage) -> dict[str, Any]:
    return message.model_dump(by_alias=True, exclude_none=True, mode="json")


async def test_a_text_message_carries_author_room_timestamp_and_ambient_group_tags() -> None:
    wire = _dump(await _convert(_event({"msgtype": "m.text", "body": "hello"})))
    assert wire == {
        "channelId": "!r:example.org",
        "messageId": "$e1",
        "author": {"id": ANN, "name": "Ann"},
        "timestamp": "2026-09-21T14:13:20.123Z",
        "content": [{"type": "text", "text": "hello"}],
        "tags": ["chat:group", "chat:ambient", "chat:from-human"],
    }


async def test_formatted_text_becomes_markdown_like_text() -> None:
    message = await _convert(
        _event(
            {
                "msgtype": "m.text",
                "body": "**bold** and a list",
                "format": "org.matrix.custom.html",
                "formatted_body": "<b>bold</b> and <code>code</code><ul><li>a</li></ul>",
            }
        )
    )
    assert [b.model_dump() for b in message.content] == [
        {"type": "text", "text": "**bold** and `code`\n● a"}
    ]
    assert message.metadata == {"format": "html"}


async def test_a_reply_in_plain_text_loses_its_quoted_fallback_and_names_its_target() -> None:
    event = _event(
        {
            "msgtype": "m.text",
            "body": "> <@bot:example.org> Which OS?\n> second line\n\nLinux",
            "m.relates_to": {"m.in_reply_to": {"event_id": "$q"}},
        }
    )
    message = await _convert(event, reply_to_own=True)
    assert message.content[0].model_dump() == {"type": "text", "text": "Linux"}
    assert message.metadata == {"replyTo": "$q"}
    assert message.tags is not None
    assert {"chat:reply", "chat:addressed"} <= set(message.tags)
    assert "chat:ambient" not in message.tags


async def test_a_thread_message_has_the_root_as_thread_id_and_its_fallback_is_no_reply() -> None:
    event = _event(
        {
            "msgtype": "m.text",
            "body": "in the thread",
            "m.relates_to": {
                "rel_type": "m.thread",
                "event_id": "$root",
                "is_falling_back": True,
                "m.in_reply_to": {"event_id": "$latest"},
            },
        }
    )
    assert reply_target(event) is None
    message = await _convert(event)
    assert message.thread_id == "$root"
    assert message.tags is not None
    assert "chat:thread" in message.tags
    assert message.metadata is None


async def test_an_edit_shows_the_new_text_and_points_at_the_original() -> None:
    message = await _convert(
        _event(
            {
                "msgtype": "m.text",
                "body": "* at 4",
                "m.new_content": {"msgtype": "m.text", "body": "at 4"},
                "m.relates_to": {"rel_type": "m.replace", "event_id": "$orig"},
            }
        )
    )
    assert message.content[0].model_dump() == {"type": "text", "text": "at 4"}
    assert message.metadata == {"edits": "$orig", "eventType": "edit"}
    assert message.tags is not None
    assert "chat:edited" in message.tags


async def test_a_redaction_and_a_reaction_are_markers_pointing_at_their_target() -> None:
    deleted = await _convert(
        _event({"reason": "typo"}, "m.room.redaction", redacts="$orig", event_id="$r")
    )
    assert deleted.metadata == {"redacts": "$orig", "eventType": "delete", "reason": "typo"}
    assert deleted.tags is not None
    assert "chat:deleted" in deleted.tags
    reaction = await _convert(
        _event(
            {"m.relates_to": {"rel_type": "m.annotation", "event_id": "$orig", "key": "👍"}},
            "m.reaction",
        )
    )
    assert reaction.content[0].model_dump() == {"type": "text", "text": "👍"}
    assert reaction.metadata == {"reactsTo": "$orig", "eventType": "reaction"}


async def test_media_becomes_a_block_with_its_mxc_uri_beside_the_caption() -> None:
    image = await _convert(
        _event(
            {
                "msgtype": "m.image",
                "body": "cat.png",
                "url": "mxc://example.org/abc",
                "info": {"mimetype": "image/png"},
            }
        )
    )
    assert [b.model_dump(by_alias=True, exclude_none=True) for b in image.content] == [
        {"type": "text", "text": "cat.png"},
        {"type": "image", "uri": "mxc://example.org/abc", "mimeType": "image/png"},
    ]
    assert image.tags is not None
    assert "chat:has-image" in image.tags
    assert image.metadata == {"msgtype": "m.image"}
    file = await _convert(
        _event({"msgtype": "m.file", "body": "notes.pdf", "url": "mxc://example.org/f"})
    )
    assert file.tags is not None
    assert "chat:has-file" in file.tags


@pytest.mark.parametrize(
    ("content", "mentioned"),
    [
        ({"msgtype": "m.text", "body": "hi", "m.mentions": {"user_ids": [BOT, ANN]}}, True),
        ({"msgtype": "m.text", "body": f"{BOT}: hi"}, True),
        ({"msgtype": "m.text", "body": "switchboard bot, hi"}, True),
        ({"msgtype": "m.text", "body": f"{BOT} hi", "m.mentions": {}}, False),
        ({"msgtype": "m.text", "body": "the switchboard botanist"}, False),
    ],
)
async def test_a_mention_of_the_bridge_user_is_metadata_and_a_tag(
    content: dict[str, Any], mentioned: bool
) -> None:
    message = await _convert(_event(content))
    tags = set(message.tags or ())
    assert ("chat:mention" in tags) is mentioned
    assert ("chat:addressed" in tags) is mentioned
    assert ("chat:ambient" in tags) is not mentioned
    assert (BOT in (message.metadata or {}).get("mentions", [])) is mentioned


async def test_a_direct_chat_message_is_addressed_and_private() -> None:
    message = await _convert(_event({"msgtype": "m.notice", "body": "beep"}), partner=ANN)
    assert message.tags == ["chat:dm", "chat:private", "chat:addressed", "chat:from-bot"]


async def test_the_bridges_own_events_and_non_messages_are_never_incoming() -> None:
    context = EventContext(own_user_id=BOT, room=_room())
    own = _event({"msgtype": "m.text", "body": "mine"}, sender=BOT)
    assert await to_incoming(own, context) is None
    encrypted = _event({"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "x"}, "m.room.encrypted")
    assert await to_incoming(encrypted, context) is None
    assert await to_incoming(_event({"name": "x"}, "m.room.name", state_key=""), context) is None


def test_a_timestamp_is_iso_8601_utc_and_an_unusable_one_is_now() -> None:
    assert iso_timestamp(0) == "1970-01-01T00:00:00.000Z"
    assert iso_timestamp("soon").endswith("Z")
    assert iso_timestamp(10**20).endswith("Z")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(
    [
        "msgtype",
        "body",
        "format",
        "formatted_body",
        "m.relates_to",
        "m.new_content",
        "m.mentions",
        "url",
        "info",
        "redacts",
    ]
)
CONTENT = st.dictionaries(KEYS, JSON | st.sampled_from(["m.text", "m.image", "m.replace"]))
EVENT = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["m.room.message", "m.reaction", "m.room.redaction", "m.sticker", "m.room.topic"]
        ),
        "event_id": st.text(min_size=1, max_size=8),
        "sender": st.sampled_from([ANN, BOT, "@x:y"]),
        "content": CONTENT,
    },
    optional={"origin_server_ts": JSON, "redacts": JSON},
)


@settings(max_examples=300, deadline=None)
@given(event=EVENT, partner=st.sampled_from([None, ANN]), reply_to_own=st.booleans())
def test_any_event_gives_a_well_tagged_message_or_none_never_an_error(
    event: dict[str, Any], partner: str | None, reply_to_own: bool
) -> None:
    context = EventContext(
        own_user_id=BOT, room=_room(), partner=partner, reply_to_own=reply_to_own
    )
    message = anyio.run(to_incoming, event, context)
    if message is None:
        return
    tags = message.tags or []
    assert all(":" in tag and not tag.startswith(":") for tag in tags)
    assert len(tags) == len(set(tags))
    assert ("chat:addressed" in tags) != ("chat:ambient" in tags)
    assert ("chat:dm" in tags) is (partner is not None)
    assert message.author.id != BOT
    assert message.message_id == event["event_id"]
