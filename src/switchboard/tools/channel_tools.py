"""The channel tools: channel_list, channel_publish and inbox.

Each tool is a typed ``MCPServer`` tool whose refusals say what to call instead (see
:mod:`switchboard.tools.server`).
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from switchboard.host import AgentDesk, PublishStatus, Refusal, Switchboard
from switchboard.tools.results import (
    ChannelInfo,
    ChannelListResult,
    InboxMessage,
    InboxResult,
    PublishResult,
    ok,
    refusal,
)

#: Longest an inbox call may wait for new messages, in seconds.
MAX_WAIT_SECONDS = 300.0

_NEXT_STEP: dict[Refusal, str] = {
    Refusal.UNKNOWN_CHANNEL: "call channel_list and pass one of the names it shows",
    Refusal.AMBIGUOUS_CHANNEL: "call channel_publish again with one of the candidate names, or "
    "pass server_id",
    Refusal.INBOUND_ONLY: "pick a channel whose direction is outbound or bidirectional "
    "(see channel_list)",
    Refusal.SERVER_GONE: "wait for the server to come back (channel_list shows its state), "
    "then retry",
    Refusal.SERVER_CONNECTING: "retry in a few seconds; channel_list shows when the server is "
    "ready",
    Refusal.NOT_GRANTED: "publish to a channel on another server; this one may not publish",
    Refusal.EMPTY_CONTENT: "call channel_publish with the text you want to send",
}


def register_channel_tools(mcp: MCPServer, board: Switchboard, desk: AgentDesk) -> None:
    """Add the channel tools for the agent ``desk`` serves to ``mcp``."""
    agent = desk.name

    @mcp.tool(description="List the channels you can reach, with the name that picks each one.")
    async def channel_list() -> ChannelListResult:
        servers = {c.id: "disconnected" for c in board.config.connectors}
        for sid, session in board.sessions.items():
            servers[sid] = session.state.value
        return ChannelListResult(
            channels=[ChannelInfo.of(v) for v in board.channel_views()], servers=servers
        )

    @mcp.tool(
        description="Write text into a channel. `channel` is a name from channel_list (an id, "
        "a qualified serverId:channelId, a #label or @person). The result says whether the "
        "connector confirmed delivery."
    )
    async def channel_publish(
        channel: Annotated[
            str, Field(min_length=1, description="Which channel, as channel_list names it.")
        ],
        text: Annotated[str, Field(description="What to say.")],
        server_id: Annotated[
            str | None, Field(description="The server, when a name is shared by several.")
        ] = None,
    ) -> Annotated[CallToolResult, PublishResult]:
        outcome = await board.publish(channel, text, server_id=server_id)
        if outcome.refusal is not None:
            return refusal(
                outcome.refusal.value,
                outcome.reason or "the publish was refused",
                _NEXT_STEP[outcome.refusal],
                sent=False,
                **outcome.detail,
            )
        result = PublishResult.of(outcome)
        if outcome.status is PublishStatus.FAILED:
            return refusal(
                "connector-failed",
                outcome.reason or "the connector did not deliver the message",
                "check the channel with channel_list; change the text or pick another channel",
                sent=False,
                **result.model_dump(mode="json"),
            )
        return ok(result)

    @mcp.tool(
        description="Read the messages that arrived since your last read. Pass wait_seconds to "
        "wait for new ones when there are none yet."
    )
    async def inbox(
        wait_seconds: Annotated[
            float,
            Field(ge=0, le=MAX_WAIT_SECONDS, description="How long to wait for new messages."),
        ] = 0.0,
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many messages.")] = 50,
    ) -> InboxResult:
        read = await board.read_inbox(agent, wait_seconds=wait_seconds, limit=limit)
        return InboxResult(
            messages=[InboxMessage.of(m) for m in read.messages], cursor=read.cursor, more=read.more
        )
