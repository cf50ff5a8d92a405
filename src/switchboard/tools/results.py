"""Typed results of the agent-facing tools, and the tool boundary where refusals become results.

Results are pydantic models, so every tool has an output schema and returns structured
content. A refusal is a :class:`~switchboard.host.refusal.Refusal`, raised wherever the
decision is made; :func:`refusal_boundary` wraps each tool that can refuse and turns it, once,
into a ``CallToolResult`` with ``isError: true`` (:func:`refused`): its text tells the agent
what happened and what to call instead, and its structured content carries the same facts as
data (``refusal``, ``message``, ``next``, plus details such as candidates).

Other tool modules put their own result models beside their tools; the helpers here
(:func:`refusal_boundary`, :func:`refused`, :func:`ok`) are for every tool.

What it deliberately does not know: why anything is refused, and the words of next steps (the
host's, :mod:`switchboard.host.refusal`).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, Literal, ParamSpec

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from switchboard.host import AgentPort, PublishOutcome, Refusal
from switchboard.host.port import (
    ChannelRow,
    DisabledFeatureSet,
    SegmentStatus,
    Speech,
    SpokenSegment,
    message_text,
)
from switchboard.store import StoredMessage

__all__ = [
    "ChannelInfo",
    "ChannelListResult",
    "DisabledSetInfo",
    "InboxMessage",
    "InboxResult",
    "PublishResult",
    "SegmentResult",
    "SpeakResult",
    "ThinkResult",
    "ok",
    "refusal_boundary",
    "refused",
]


class ChannelInfo(BaseModel):
    name: str | None = Field(
        description="The channel id or serverId:channelId that picks this channel alone; "
        "pass it as `channel`. null when no string does: then pass channel_id with server_id."
    )
    prose_target: str | None = Field(
        description="What to write after >> in speak to reach this channel; null when speech "
        "cannot go there (an inbound-only channel)."
    )
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
    def of(cls, row: ChannelRow) -> ChannelInfo:
        return cls(
            name=row.name,
            prose_target=row.prose_target,
            server_id=row.ref.server_id,
            channel_id=row.ref.channel_id,
            label=row.label,
            type=row.type,
            direction=row.direction,
            open=row.open,
            desired=row.desired,
        )


class DisabledSetInfo(BaseModel):
    """One feature set a server's policy exchange left disabled."""

    name: str
    reason: str = Field(
        description="invalid_uses, capability_denied, not_selected or disabled (MCPL §6)."
    )
    missing: list[str] = Field(description="The uses its grant does not cover.")
    enable_with: str | None = Field(
        description="The config line that would enable it, or null when none can."
    )
    why_not: str | None = Field(description="Why no config line enables it, when none can.")

    @classmethod
    def of(cls, disabled: DisabledFeatureSet) -> DisabledSetInfo:
        return cls(
            name=disabled.name,
            reason=disabled.reason,
            missing=list(disabled.missing),
            enable_with=disabled.enable_with,
            why_not=disabled.why_not,
        )


class ChannelListResult(BaseModel):
    channels: list[ChannelInfo]
    servers: dict[str, str] = Field(description="Each configured server and its state.")
    disabled_feature_sets: dict[str, list[DisabledSetInfo]] = Field(
        default_factory=dict,
        description="Per server, the feature sets its grant or selection left disabled "
        "(servers with none are left out).",
    )


class PublishResult(BaseModel):
    status: Literal["delivered", "failed", "unknown"]
    channel: str | None = Field(
        default=None, description="The channel it went to, named as channel_list names it."
    )
    server_id: str | None
    channel_id: str | None
    message_id: str | None = Field(default=None, description="The connector's id, if delivered.")
    reason: str | None = None
    defaulted: bool = Field(
        default=False,
        description="No channel was named: it went to the turn's locus (or the default).",
    )

    @classmethod
    def of(
        cls, outcome: PublishOutcome, *, channel: str | None = None, defaulted: bool = False
    ) -> PublishResult:
        return cls(
            status=outcome.status.value,
            channel=channel,
            server_id=outcome.server_id,
            channel_id=outcome.channel_id,
            message_id=outcome.message_id,
            reason=outcome.reason,
            defaulted=defaulted,
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
    metadata: dict[str, Any] | None = Field(
        default=None,
        description="The connector's metadata; Switchboard's own notices (a tune-out's end) "
        "carry their kind and reason here.",
    )

    @classmethod
    def of(cls, m: StoredMessage) -> InboxMessage:
        return cls(
            seq=m.seq,
            server_id=m.server_id,
            channel_id=m.channel_id,
            message_id=m.message_id,
            thread_id=m.thread_id,
            author_id=m.author_id,
            author_name=m.author_name,
            timestamp=m.timestamp,
            text=message_text(m),
            content=m.content,
            tags=m.tags,
            metadata=m.metadata,
        )


class InboxResult(BaseModel):
    messages: list[InboxMessage]
    cursor: int = Field(description="The sequence number of the last message returned.")
    more: bool = Field(description="True when more messages are waiting: call inbox again.")
    turn: int = Field(
        description="Your current turn: a read that returns messages begins the next one."
    )
    locus: str | None = Field(
        description="Where plain speech and channel_publish without a channel go now; null "
        "when this turn has no channel."
    )
    context: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Context the connectors add when this read begins a turn.",
    )


class SegmentResult(BaseModel):
    status: SegmentStatus = Field(
        description="delivered; failed (nothing was sent); unknown (sent, not confirmed: do "
        "not resend blindly); bounced (no target, or one that does not pick one channel); "
        "private (>>skip_reply); withheld (prose routing disabled); empty (a target line "
        "with no words)."
    )
    target: str | None = Field(description="The >> target as written; null for plain prose.")
    channel: str | None = Field(description="Where it went or was meant to go, as a >> target.")
    server_id: str | None = None
    channel_id: str | None = None
    message_id: str | None = None
    refusal: str | None = None
    reason: str | None = None
    kept_as_draft: bool = Field(
        default=False, description="Its words were kept: write {{unsent}} to send them later."
    )

    @classmethod
    def of(cls, s: SpokenSegment, channel: str | None) -> SegmentResult:
        """``s``, with ``channel`` the ``>>`` target (or name) shown for its channel."""
        return cls(
            status=s.status,
            target=s.target,
            channel=channel,
            server_id=None if s.ref is None else s.ref.server_id,
            channel_id=None if s.ref is None else s.ref.channel_id,
            message_id=s.message_id,
            refusal=None if s.refusal is None else s.refusal.kind.value,
            reason=s.reason,
            kept_as_draft=s.kept,
        )


class SpeakResult(BaseModel):
    segments: list[SegmentResult]
    mode: Literal["locus", "explicit", "hybrid", "disabled"]
    sticky: str | None = Field(
        description="The target plain prose goes to for the rest of this turn, if any."
    )
    turn: int
    locus: str | None

    @classmethod
    def of(cls, port: AgentPort, speech: Speech) -> SpeakResult:
        """What ``speech`` did, each channel named as a ``>>`` target in ``port``'s turn."""
        return cls(
            segments=[
                SegmentResult.of(s, None if s.ref is None else port.target_shown(s.ref))
                for s in speech.segments
            ],
            mode=speech.mode.value,
            sticky=speech.sticky,
            turn=port.turn,
            locus=port.locus_shown(),
        )


class ThinkResult(BaseModel):
    noted: bool
    note: str


def refused(refusal: Refusal) -> CallToolResult:
    """The ``isError`` tool result of ``refusal``: what happened and what to do next."""
    structured = {
        "refusal": refusal.kind.value,
        "message": refusal.message,
        "next": refusal.next_step,
        **refusal.data,
    }
    return CallToolResult(
        content=[TextContent(type="text", text=f"{refusal.message} Next: {refusal.next_step}")],
        structured_content=structured,
        is_error=True,
    )


_P = ParamSpec("_P")


def refusal_boundary(
    tool: Callable[_P, Awaitable[CallToolResult]],
) -> Callable[_P, Awaitable[CallToolResult]]:
    """The tool boundary: a :class:`Refusal` raised inside ``tool`` becomes its result."""

    @functools.wraps(tool)
    async def answering(*args: _P.args, **kwargs: _P.kwargs) -> CallToolResult:
        try:
            return await tool(*args, **kwargs)
        except Refusal as exc:
            return refused(exc)

    return answering


def ok(model: BaseModel) -> CallToolResult:
    """A successful result carrying ``model`` as structured content and as JSON text."""
    return CallToolResult(
        content=[TextContent(type="text", text=model.model_dump_json())],
        structured_content=model.model_dump(mode="json"),
    )
