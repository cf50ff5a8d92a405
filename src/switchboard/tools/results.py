"""Typed results and refusals of the agent-facing tools.

Results are pydantic models, so every tool has an output schema and returns structured
content. A refusal is a ``CallToolResult`` with ``isError: true``: its text tells the agent what
happened and what to call instead, and its structured content carries the same facts as data
(``refusal``, ``message``, ``next``, plus details such as candidates).
"""

from __future__ import annotations

from typing import Any, Literal

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from switchboard.host import ChannelView, PublishOutcome
from switchboard.store import StoredMessage


class ChannelInfo(BaseModel):
    name: str = Field(description="The name that picks this channel alone; pass it to tools.")
    server_id: str
    channel_id: str
    label: str
    type: str
    direction: Literal["inbound", "outbound", "bidirectional"] | str
    open: bool = Field(description="Whether the connector confirmed the channel open.")
    desired: str = Field(
        description="The recorded desired state: open, closed, tuned-out, or unknown."
    )

    @classmethod
    def of(cls, view: ChannelView) -> ChannelInfo:
        return cls(
            name=view.name,
            server_id=view.server_id,
            channel_id=view.channel_id,
            label=view.label,
            type=view.type,
            direction=view.direction,
            open=view.open,
            desired=view.desired,
        )


class ChannelListResult(BaseModel):
    channels: list[ChannelInfo]
    servers: dict[str, str] = Field(description="Each configured server and its state.")


class PublishResult(BaseModel):
    status: Literal["delivered", "failed", "unknown"]
    server_id: str | None
    channel_id: str | None
    message_id: str | None = Field(default=None, description="The connector's id, if delivered.")
    reason: str | None = None

    @classmethod
    def of(cls, outcome: PublishOutcome) -> PublishResult:
        return cls(
            status=outcome.status.value,
            server_id=outcome.server_id,
            channel_id=outcome.channel_id,
            message_id=outcome.message_id,
            reason=outcome.reason,
        )


class InboxMessage(BaseModel):
    seq: int
    server_id: str
    channel_id: str
    message_id: str
    thread_id: str | None
    author_id: str
    author_name: str
    timestamp: str
    text: str = Field(description="The message's text blocks joined; other blocks are in content.")
    content: list[dict[str, Any]]
    tags: list[str] | None = None

    @classmethod
    def of(cls, m: StoredMessage) -> InboxMessage:
        text = "\n".join(
            str(b.get("text", ""))
            for b in m.content
            if isinstance(b, dict) and b.get("type") == "text"
        )
        return cls(
            seq=m.seq,
            server_id=m.server_id,
            channel_id=m.channel_id,
            message_id=m.message_id,
            thread_id=m.thread_id,
            author_id=m.author_id,
            author_name=m.author_name,
            timestamp=m.timestamp,
            text=text,
            content=m.content,
            tags=m.tags,
        )


class InboxResult(BaseModel):
    messages: list[InboxMessage]
    cursor: int = Field(description="The sequence number of the last message returned.")
    more: bool = Field(description="True when more messages are waiting: call inbox again.")


def refusal(kind: str, message: str, next_step: str, **data: Any) -> CallToolResult:
    """An ``isError`` tool result that says what happened and what to do next."""
    structured = {"refusal": kind, "message": message, "next": next_step, **data}
    return CallToolResult(
        content=[TextContent(type="text", text=f"{message} Next: {next_step}")],
        structured_content=structured,
        is_error=True,
    )


def ok(model: BaseModel) -> CallToolResult:
    """A successful result carrying ``model`` as structured content and as JSON text."""
    return CallToolResult(
        content=[TextContent(type="text", text=model.model_dump_json())],
        structured_content=model.model_dump(mode="json"),
    )
