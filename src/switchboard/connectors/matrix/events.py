"""Matrix room events as MCPL incoming messages.

Which timeline events are messages to the host, their content as MCPL blocks, their relations
(replies, threads, edits, redactions, reactions), mentions, and the tags that say how a message
addresses the bridge (Matrix client-server spec, "Messaging"; MCPL §14.3, §16). Encrypted events
are never turned into text.

What it deliberately does not know: the network or the grant.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from mautrix.util.formatter import parse_html

from switchboard.connector import check_tags
from switchboard.protocol import (
    AudioContent,
    Author,
    ContentBlock,
    ImageContent,
    IncomingMessage,
    ResourceContent,
    TextContent,
)

from .rooms import Room

__all__ = [
    "MESSAGE_TYPES",
    "EventContext",
    "iso_timestamp",
    "reply_target",
    "to_incoming",
]

MESSAGE_TYPES: Final = frozenset({"m.room.message", "m.sticker", "m.reaction", "m.room.redaction"})
"""Timeline event types that become incoming messages."""

_HTML: Final = "org.matrix.custom.html"
_LINK: Final = re.compile(r"https?://", re.IGNORECASE)
_MATRIX_TO: Final = "https://matrix.to/#/"


@dataclass(frozen=True, slots=True)
class EventContext:
    """What converting one event needs beyond the event itself.

    Attributes:
        own_user_id: the bridge's user.
        room: the room the event is in.
        partner: the other person, when the room is a direct chat.
        reply_to_own: the event answers a message the bridge sent.
    """

    own_user_id: str
    room: Room
    partner: str | None = None
    reply_to_own: bool = False


def iso_timestamp(milliseconds: object) -> str:
    """``origin_server_ts`` as ISO 8601 UTC with milliseconds (now, if it is unusable)."""
    if isinstance(milliseconds, int) and not isinstance(milliseconds, bool):
        try:
            moment = datetime.fromtimestamp(milliseconds / 1000, UTC)
        except (OverflowError, OSError, ValueError):
            moment = datetime.now(UTC)
    else:
        moment = datetime.now(UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _string(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def reply_target(event: Mapping[str, Any]) -> str | None:
    """The event id a message replies to (a thread's fallback reply is not a reply)."""
    relates = _mapping(_mapping(event.get("content")).get("m.relates_to"))
    if relates.get("rel_type") == "m.thread" and relates.get("is_falling_back") is True:
        return None
    return _string(_mapping(relates.get("m.in_reply_to")).get("event_id"))


def _strip_plain_fallback(body: str) -> str:
    """Drop the ``> <@user> quoted`` lines a reply's plain body starts with."""
    lines = body.split("\n")
    if not lines or not lines[0].startswith("> "):
        return body
    index = 0
    while index < len(lines) and lines[index].startswith(">"):
        index += 1
    if index < len(lines) and lines[index] == "":
        index += 1
    return "\n".join(lines[index:])


async def _text(content: Mapping[str, Any], replying: bool) -> tuple[str, bool]:
    """The message's text, and whether it came from formatted HTML."""
    body = content.get("body")
    plain = body if isinstance(body, str) else ""
    html = content.get("formatted_body")
    if content.get("format") == _HTML and isinstance(html, str) and html:
        rendered = (await parse_html(html)).strip()
        if rendered:
            return rendered, True
    return (_strip_plain_fallback(plain) if replying else plain), False


def _mentions(content: Mapping[str, Any], text: str, ctx: EventContext) -> tuple[list[str], bool]:
    """The users the message mentions, and whether it mentions the whole room."""
    declared = content.get("m.mentions")
    if isinstance(declared, Mapping):
        users = declared.get("user_ids")
        found = [u for u in users if isinstance(u, str)] if isinstance(users, list) else []
        return list(dict.fromkeys(found)), declared.get("room") is True
    # A client without intentional mentions: look for the bridge's own user in the text.
    own = ctx.own_user_id
    html = content.get("formatted_body")
    haystack = text + ("\n" + html if isinstance(html, str) else "")
    mentioned = own in haystack or (_MATRIX_TO + own) in haystack
    name = ctx.room.names.get(own)
    if not mentioned and name:
        mentioned = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None
    return ([own] if mentioned else []), False


def _media(content: Mapping[str, Any], msgtype: str) -> tuple[ContentBlock | None, str | None]:
    """The media block of an image/audio/file/video message, and its ``chat:has-*`` tag."""
    uri = _string(content.get("url"))
    if uri is None:  # an encrypted file (``file``) cannot be shown: the bridge has no keys
        return None, None
    mime = _string(_mapping(content.get("info")).get("mimetype"))
    if msgtype in ("m.image", "sticker"):
        return ImageContent(uri=uri, mime_type=mime), "chat:has-image"
    if msgtype == "m.audio":
        return AudioContent(uri=uri, mime_type=mime), "chat:has-audio"
    return ResourceContent(uri=uri), "chat:has-file"


async def to_incoming(event: Mapping[str, Any], ctx: EventContext) -> IncomingMessage | None:
    """The incoming message for one timeline event, or ``None`` when it is not a message.

    What it knows (Matrix client-server spec, "Messaging"; MCPL §14.3 and §16):

    - which timeline events are messages to the host: ``m.room.message`` (text, notice, emote,
      image, file, audio, video, location), ``m.sticker``, ``m.reaction`` and ``m.room.redaction``;
      everything else (state, calls, polls...) is not, and ``m.room.encrypted`` is never turned into
      text (the bridge refuses encrypted rooms);
    - the content: formatted text (``org.matrix.custom.html``) is rendered to Markdown-like text by
      mautrix's HTML parser, which also drops the quoted reply fallback; plain text loses its ``> ``
      reply fallback; media become an ``image``/``audio``/``resource`` block with the ``mxc://`` URI
      beside a text block with the caption or file name;
    - relations: a reply's target in ``metadata.replyTo``, a thread's root as ``threadId``, an edit
      (``m.replace``) as a new message whose text is the edit's ``m.new_content``, tagged
      ``chat:edited`` with ``metadata.edits``, a redaction tagged ``chat:deleted`` with
      ``metadata.redacts``, a reaction tagged ``chat:reaction`` with ``metadata.reactsTo``;
    - mentions: ``m.mentions.user_ids`` (intentional mentions), or for a client that does not send
      them, the bridge's user id or a ``matrix.to`` link to it in the text, or its display name as a
      word; all become ``metadata.mentions``, and a mention of the bridge's own user adds
      ``chat:mention`` (``@room`` adds ``chat:broadcast``);
    - tags: ``chat:dm``/``chat:private`` in a direct chat, ``chat:group`` elsewhere;
      ``chat:addressed`` for a direct chat, a mention or a reply to the bridge's own message,
      ``chat:ambient`` otherwise (never both); ``chat:from-bot`` for a notice, ``chat:from-human``
      for the rest; ``chat:has-image``/``has-audio``/``has-file``/``has-link``;
    - the author (the sender's id and the room's display name for them) and the server's timestamp
      (``origin_server_ts``) in ISO 8601 UTC.
    """
    kind = event.get("type")
    event_id = _string(event.get("event_id"))
    sender = _string(event.get("sender"))
    if kind not in MESSAGE_TYPES or event_id is None or sender is None:
        return None
    if sender == ctx.own_user_id:
        return None  # the bridge's own messages are never echoed back
    content = _mapping(event.get("content"))
    relates = _mapping(content.get("m.relates_to"))
    metadata: dict[str, Any] = {}
    tags: list[str] = []
    blocks: list[ContentBlock] = []
    thread_id: str | None = None
    addressed = ctx.partner is not None or ctx.reply_to_own
    msgtype = "m.text"

    if kind == "m.room.redaction":
        redacts = _string(event.get("redacts")) or _string(content.get("redacts"))
        if redacts is None:
            return None
        metadata.update(redacts=redacts, eventType="delete")
        reason = _string(content.get("reason"))
        if reason is not None:
            metadata["reason"] = reason
        tags.append("chat:deleted")
        blocks.append(TextContent(text=f"(deleted message {redacts})"))
    elif kind == "m.reaction":
        target = _string(relates.get("event_id"))
        key = _string(relates.get("key"))
        if relates.get("rel_type") != "m.annotation" or target is None or key is None:
            return None
        metadata.update(reactsTo=target, eventType="reaction")
        tags.append("chat:reaction")
        blocks.append(TextContent(text=key))
    else:
        edited = relates.get("rel_type") == "m.replace"
        if edited:
            original = _string(relates.get("event_id"))
            new_content = content.get("m.new_content")
            if original is None or not isinstance(new_content, Mapping):
                return None
            metadata.update(edits=original, eventType="edit")
            tags.append("chat:edited")
            shown = new_content
        else:
            shown = content
        if relates.get("rel_type") == "m.thread":
            thread_id = _string(relates.get("event_id"))
            if thread_id is not None:
                tags.append("chat:thread")
        replied = None if edited else reply_target(event)
        if replied is not None:
            metadata["replyTo"] = replied
        msgtype = "sticker" if kind == "m.sticker" else str(shown.get("msgtype") or "m.text")
        text, formatted = await _text(shown, replied is not None)
        if formatted:
            metadata["format"] = "html"
        if msgtype == "m.emote":
            text = f"* {ctx.room.display_name(sender)} {text}"
        media, media_tag = _media(shown, msgtype)
        if text or media is None:
            blocks.append(TextContent(text=text))
        if media is not None:
            blocks.append(media)
        if media_tag is not None:
            tags.append(media_tag)
        if msgtype not in ("m.text", "m.emote"):
            metadata["msgtype"] = msgtype
        if _LINK.search(text):
            tags.append("chat:has-link")
        mentioned, everyone = _mentions(content, text, ctx)
        if mentioned:
            metadata["mentions"] = mentioned
        if ctx.own_user_id in mentioned:
            tags.append("chat:mention")
            addressed = True
        if everyone:
            tags.append("chat:broadcast")
        if replied is not None and ctx.reply_to_own:
            tags.append("chat:reply")

    if ctx.partner is not None:
        tags += ["chat:dm", "chat:private"]
    else:
        tags.append("chat:group")
    tags.append("chat:addressed" if addressed else "chat:ambient")
    tags.append("chat:from-bot" if msgtype == "m.notice" else "chat:from-human")
    return IncomingMessage(
        channel_id=ctx.room.room_id,
        message_id=event_id,
        thread_id=thread_id,
        author=Author(id=sender, name=ctx.room.display_name(sender)),
        timestamp=iso_timestamp(event.get("origin_server_ts")),
        content=blocks,
        metadata=metadata or None,
        tags=check_tags(tags),
    )
