"""The ``message_get`` tool: one stored message, whole, in byte-bounded parts.

An inbox page cuts a message too large for it
(:data:`~switchboard.agents.tools.results.MESSAGE_BYTES`)
and says so; ``message_get(seq)`` fetches it whole: its text in parts of at most
:data:`PART_BYTES` (``offset`` in characters, ``next_offset`` to read on), and, with the first
part, its other content blocks and metadata. Every answer stays below
:data:`~switchboard.agents.tools.results.MAX_ANSWER_BYTES`: the part is carried as text and in the
structured content, and the first part's blocks and metadata share one more :data:`PART_BYTES`
(a block that does not fit is described by its type and ``omitted_bytes``).

Reading a message acknowledges nothing and begins no turn: it is not an inbox read.

What it deliberately does not know: the inbox's delivery state, and how the store keeps rows.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from switchboard.agents.port.protocol import AgentPort, message_text
from switchboard.agents.tools.results import (
    bounded,
    cut_text,
    json_bytes,
    mail_label,
    message_fields,
    refusal_boundary,
)
from switchboard.agents.tools.toolset import READ_ONLY, ToolSet
from switchboard.channels import ChannelRef
from switchboard.refusals.refusal import Refusal, RefusalKind

__all__ = ["PART_BYTES", "TOOLS", "MessagePart", "message_get"]

PART_BYTES = 128 * 1024
"""The most bytes of text one ``message_get`` part carries (as a JSON string)."""

TOOLS = ToolSet()
"""The message tools, in the order ``tools/list`` shows them."""


class MessagePart(BaseModel):
    seq: int
    channel: str = Field(description="Its channel, named as channel_list names it.")
    server_id: str
    channel_id: str
    message_id: str
    thread_id: str | None
    author_id: str
    author_name: str
    timestamp: str
    text: str = Field(description="This part of the message's text (text blocks joined).")
    offset: int = Field(description="Where this part starts in the text, in characters.")
    next_offset: int | None = Field(
        description="Pass it as offset for the next part; null when this part is the last."
    )
    total_chars: int = Field(description="The length of the whole text, in characters.")
    blocks: list[dict[str, Any]] | None = Field(
        default=None,
        description="With the first part: the content blocks that are not text, in order (a "
        "block larger than a part is given as its type and omitted_bytes).",
    )
    metadata: dict[str, Any] | None = Field(
        default=None, description="With the first part: the connector's metadata, if it fits."
    )


@TOOLS.tool(
    description="Fetch one message whole, by the seq an inbox result gave it: its text in "
    "parts (pass next_offset as offset to read on). Use it when inbox says a message was too "
    "large and was cut. Acknowledges nothing.",
    annotations=READ_ONLY,
)
@refusal_boundary
async def message_get(
    port: AgentPort,
    seq: Annotated[int, Field(ge=1, description="The message's seq, from an inbox result.")],
    offset: Annotated[
        int, Field(ge=0, description="Where to start in its text, in characters.")
    ] = 0,
) -> Annotated[CallToolResult, MessagePart]:
    m = await port.stored_message(seq)
    if m is None:
        raise Refusal(
            RefusalKind.UNKNOWN_MESSAGE,
            f"no stored message has seq {seq}, so nothing was read.",
            seq=seq,
        )
    text = message_text(m)
    part = cut_text(text[offset:], PART_BYTES)
    end = offset + len(part)
    first = offset == 0
    blocks: list[dict[str, Any]] | None = None
    metadata: dict[str, Any] | None = None
    if first:
        room = PART_BYTES
        if m.metadata is not None and json_bytes(m.metadata) <= room:
            metadata = m.metadata
            room -= json_bytes(metadata)
        others = [b for b in m.content if isinstance(b, dict) and b.get("type") != "text"]
        kept: list[dict[str, Any]] = []
        for block in others:
            size = json_bytes(block)
            fits = size <= room
            kept.append(block if fits else {"type": block.get("type"), "omitted_bytes": size})
            room -= size if fits else 64
        blocks = kept or None
    result = MessagePart(
        **message_fields(m, port.name_shown(ChannelRef(m.server_id, m.channel_id))),
        text=part,
        offset=offset,
        next_offset=end if end < len(text) else None,
        total_chars=len(text),
        blocks=blocks,
        metadata=metadata,
    )
    more = f"; next part: offset {end}" if result.next_offset is not None else "; last part"
    head = (
        f"Message {m.message_id} (seq {m.seq}) by {m.author_name} in "
        f"[{mail_label(m.server_id, m.metadata) or result.channel}], "
        f"characters {offset}..{end} of {len(text)}{more}:"
    )
    return bounded(
        CallToolResult(
            content=[TextContent(type="text", text=f"{head}\n{part}")],
            structured_content=result.model_dump(mode="json"),
        )
    )
