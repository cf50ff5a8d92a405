"""Small builders for what a connector sends: incoming messages, push events, timestamps.

What this module knows: the required members of a ``channels/incoming`` message and of
``push/event`` params (S-16, S-28), ISO-8601 UTC timestamps, and that tags must be
namespaced (``ns:value``, S-18) — a bare tag is a programming error and raises
``ValueError`` here rather than reaching the host.

What it deliberately does not know: the grant, the wire, or which channels exist.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from switchboard.protocol import (
    Author,
    ContentBlock,
    IncomingMessage,
    PushEventParams,
    TextContent,
)

__all__ = ["check_tags", "incoming_text", "new_id", "push_event_params", "utc_now"]


def utc_now() -> str:
    """The current time as ISO 8601 in UTC with milliseconds (``2026-01-02T03:04:05.678Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id(prefix: str = "") -> str:
    """A fresh unique id (a UUID4 in hex), optionally prefixed."""
    return prefix + uuid.uuid4().hex


def check_tags(tags: Sequence[str] | None) -> list[str] | None:
    """Return the tags deduplicated in order, or ``None``; refuse bare (un-namespaced) tags.

    Raises:
        ValueError: a tag without a namespace (``"mention"`` instead of ``"chat:mention"``).
    """
    if tags is None:
        return None
    bare = [tag for tag in tags if ":" not in tag or tag.startswith(":") or tag.endswith(":")]
    if bare:
        raise ValueError(f"tags must be namespaced as 'ns:value': {bare!r}")
    return list(dict.fromkeys(tags))


def incoming_text(
    channel_id: str,
    text: str,
    *,
    author_id: str,
    author_name: str,
    message_id: str | None = None,
    thread_id: str | None = None,
    tags: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    timestamp: str | None = None,
) -> IncomingMessage:
    """Build one text message for :meth:`Connector.send_incoming`.

    Args:
        channel_id: a channel the host accepted.
        text: the message text.
        author_id: the platform's id of the author.
        author_name: the author's display name.
        message_id: the platform's message id; a fresh one when omitted.
        thread_id: the thread it belongs to, if any.
        tags: namespaced event tags (``chat:mention`` ...).
        metadata: free-form platform detail.
        timestamp: ISO 8601; now when omitted.
    """
    return IncomingMessage(
        channel_id=channel_id,
        message_id=message_id or new_id("m-"),
        thread_id=thread_id,
        author=Author(id=author_id, name=author_name),
        timestamp=timestamp or utc_now(),
        content=[TextContent(text=text)],
        metadata=dict(metadata) if metadata is not None else None,
        tags=check_tags(tags),
    )


def push_event_params(
    feature_set: str,
    content: Sequence[ContentBlock | Mapping[str, Any]] | str,
    *,
    event_id: str | None = None,
    timestamp: str | None = None,
    origin: Mapping[str, Any] | None = None,
    tags: Sequence[str] | None = None,
) -> PushEventParams:
    """Build ``push/event`` params; ``content`` may be plain text (one text block).

    ``event_id`` should be stable across retries of the same event (S-17); a fresh one is
    made when omitted.
    """
    blocks: list[Any] = (
        [{"type": "text", "text": content}]
        if isinstance(content, str)
        else [
            block
            if isinstance(block, Mapping)
            else block.model_dump(by_alias=True, exclude_none=True)
            for block in content
        ]
    )
    return PushEventParams.model_validate(
        {
            "featureSet": feature_set,
            "eventId": event_id or new_id("ev-"),
            "timestamp": timestamp or utc_now(),
            **({"origin": dict(origin)} if origin is not None else {}),
            **({"tags": check_tags(tags)} if tags is not None else {}),
            "payload": {"content": blocks},
        }
    )
