"""The channel tools: channel_list, channel_publish, inbox, speak and think.

Each tool is a plain function of the agent's :class:`~switchboard.host.AgentPort` and its typed
arguments, recorded in :data:`TOOLS` and added to the server with the port bound (see
:mod:`switchboard.tools.server`). The rules live in the host behind the port (turns and the
locus, which channel a publish means, how speech is routed, what a read begins); this module
turns arguments into port calls and what they return into results. A refused publish raises
its :class:`~switchboard.host.refusal.Refusal` with the facts of the call (``sent``,
``server_id``, ``channel_id``, ``defaulted``), and
:func:`~switchboard.tools.results.refusal_boundary` turns it into the result. Who is calling,
and which channels are the turn's own, come from the port the server was built with, never
from tool input.

What it deliberately does not know: the host behind the port (its sessions, registry and
config), and why a publish or a segment was refused.
"""

from __future__ import annotations

from typing import Annotated

import structlog
from mcp.types import CallToolResult
from pydantic import Field

from switchboard.channels import ChannelRef
from switchboard.host import AgentPort, Refusal, RefusalKind
from switchboard.host.refusal import only_one
from switchboard.tools.results import (
    ChannelInfo,
    ChannelListResult,
    DisabledSetInfo,
    InboxMessage,
    InboxResult,
    PublishResult,
    SpeakResult,
    ThinkResult,
    ok,
    refusal_boundary,
)
from switchboard.tools.toolset import ToolSet

__all__ = [
    "MAX_WAIT_SECONDS",
    "THOUGHT_NOTED",
    "TOOLS",
    "channel_list",
    "channel_publish",
    "inbox",
    "speak_tool",
    "think",
]

log = structlog.get_logger(__name__)

#: Longest an inbox call may wait for new messages, in seconds.
MAX_WAIT_SECONDS = 300.0

THOUGHT_NOTED = "Thought recorded privately: it was not sent anywhere."


TOOLS = ToolSet()
"""The channel tools, in the order ``tools/list`` shows them."""

PUBLISH = "channel_publish"
"""The publish tool's name (its argument refusals' next steps name it)."""


@TOOLS.tool(
    description="List the channels you can reach: for each, the name that picks it alone "
    "(pass it as channel), the >> target that reaches it in speak, and its state."
)
async def channel_list(port: AgentPort) -> ChannelListResult:
    listing = port.channels()
    return ChannelListResult(
        channels=[ChannelInfo.of(r) for r in listing.rows],
        servers=dict(listing.servers),
        disabled_feature_sets={
            sid: [DisabledSetInfo.of(d) for d in sets]
            for sid, sets in listing.disabled_feature_sets.items()
        },
    )


@TOOLS.tool(
    description="Write text into a channel. `channel` is a name from channel_list (an id, "
    "a qualified serverId:channelId, a raw id, a #label or an @person); without it the "
    "text goes where your plain speech goes (this turn's locus, see inbox). The result "
    "says whether the connector confirmed delivery."
)
@refusal_boundary
async def channel_publish(
    port: AgentPort,
    channel: Annotated[
        str | None,
        Field(min_length=1, description="Which channel, as channel_list names it."),
    ] = None,
    text: Annotated[str | None, Field(description="What to say.")] = None,
    content: Annotated[str | None, Field(description="Alias for text.")] = None,
    server_id: Annotated[
        str | None,
        Field(min_length=1, description="The server, when a channel id is shared."),
    ] = None,
    channelId: Annotated[  # the reference's name, accepted as an alias
        str | None, Field(min_length=1, description="Alias for channel.")
    ] = None,
) -> Annotated[CallToolResult, PublishResult]:
    if channel is not None and channelId is not None and channel != channelId:
        raise Refusal(
            RefusalKind.CONFLICTING_ARGUMENTS,
            "channel and channelId name different channels, so nothing was posted.",
            only_one(PUBLISH, "channel"),
            sent=False,
        )
    if text is not None and content is not None and text != content:
        raise Refusal(
            RefusalKind.CONFLICTING_ARGUMENTS,
            "text and content differ, so nothing was posted.",
            only_one(PUBLISH, "text"),
            sent=False,
        )
    words = text if text is not None else (content or "")
    published = await port.publish(words, channel=channel or channelId, server_id=server_id)
    outcome = published.outcome
    shown = None
    if outcome.server_id is not None and outcome.channel_id is not None:
        shown = port.name_shown(ChannelRef(outcome.server_id, outcome.channel_id))
    result = PublishResult.of(outcome, channel=shown, defaulted=published.defaulted)
    refused = outcome.refusal
    if refused is not None and refused.kind is RefusalKind.CONNECTOR_FAILED:
        raise refused.adding(sent=False, **result.model_dump(mode="json"))
    if refused is not None:
        raise refused.adding(
            sent=False,
            server_id=outcome.server_id,
            channel_id=outcome.channel_id,
            defaulted=published.defaulted,
        )
    return ok(result)


@TOOLS.tool(
    description="Read the messages that arrived since your last read. Pass wait_seconds to "
    "wait for new ones when there are none yet. A read that returns messages begins your "
    "next turn: `turn` numbers it and `locus` says where plain speech goes during it."
)
async def inbox(
    port: AgentPort,
    wait_seconds: Annotated[
        float,
        Field(ge=0, le=MAX_WAIT_SECONDS, description="How long to wait for new messages."),
    ] = 0.0,
    limit: Annotated[int, Field(ge=1, le=500, description="At most this many messages.")] = 50,
) -> InboxResult:
    read = await port.read_inbox(wait_seconds=wait_seconds, limit=limit)
    return InboxResult(
        messages=[InboxMessage.of(m) for m in read.messages],
        cursor=read.cursor,
        more=read.more,
        turn=port.turn,
        locus=port.locus_shown(),
        context=[dict(c) for c in read.context],
    )


@TOOLS.tool(
    name="speak",
    description="Speak in prose. A line starting with >> and a target (>>#general, "
    ">>@carol, a name from channel_list) sends the lines after it there; >>skip_reply "
    "keeps words private; {{unsent}} brings back words that were not sent. The result "
    "says what became of each segment.",
)
async def speak_tool(
    port: AgentPort,
    text: Annotated[str, Field(min_length=1, description="What to say, with >> lines.")],
) -> SpeakResult:
    return SpeakResult.of(port, await port.speak(text))


@TOOLS.tool(
    description="Think privately: the note is recorded for you and sent nowhere. It does "
    "not end your turn."
)
async def think(
    port: AgentPort,
    content: Annotated[str | None, Field(description="The thought.")] = None,
) -> ThinkResult:
    log.debug("agent_thought", agent=port.agent, length=len(content or ""))
    return ThinkResult(noted=True, note=THOUGHT_NOTED)
