"""A fast acceptance check for the hot ``channels/incoming`` path.

Validating every incoming message with pydantic costs several microseconds per message on a
small machine (four model objects each), which alone would cap a host well below the message
rates connectors can send. :func:`incoming_is_valid` is a hand-written check of the common
shape (text content only) that answers ``True`` only for messages the
:class:`~switchboard.protocol.channel_messages.IncomingMessage` model would also accept; a
property test holds it to that. Anything else, including every message with non-text content,
takes the full pydantic path, which also gives the reason when a message is refused.

This is our own code rather than a library because it is a shortcut in front of one: the
model stays the single definition of what is valid.
"""

from __future__ import annotations

from typing import Any

__all__ = ["incoming_is_valid"]


def incoming_is_valid(m: Any) -> bool:
    """True only if ``m`` is a well-formed incoming message whose content is all text."""
    if type(m) is not dict:
        return False
    get = m.get
    cid = get("channelId")
    mid = get("messageId")
    ts = get("timestamp")
    if type(cid) is not str or type(mid) is not str or type(ts) is not str:
        return False
    if not cid or not mid or not ts:
        return False
    author = get("author")
    if type(author) is not dict:
        return False
    if type(author.get("id")) is not str or type(author.get("name")) is not str:
        return False
    content = get("content")
    if type(content) is not list:
        return False
    for block in content:
        if type(block) is not dict or block.get("type") != "text":
            return False
        if type(block.get("text")) is not str:
            return False
    thread = get("threadId")
    if thread is not None and type(thread) is not str:
        return False
    metadata = get("metadata")
    if metadata is not None and type(metadata) is not dict:
        return False
    tags = get("tags")
    if tags is not None:
        if type(tags) is not list:
            return False
        for tag in tags:
            if type(tag) is not str:
                return False
    return True
