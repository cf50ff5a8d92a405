"""The channel tools: channel_list, channel_publish, inbox, speak and think.

Each tool is a typed ``MCPServer`` tool whose refusals say what to call instead (see
:mod:`switchboard.tools.server`). The rules live in the host (:mod:`switchboard.host.agent.desk`
for turns and the locus, :mod:`~switchboard.host.agent.publishing`,
:mod:`~switchboard.host.agent.speech`,
:mod:`~switchboard.host.agent.views`); this module turns arguments into calls and outcomes into
results. A refused publish raises its :class:`~switchboard.host.refusal.Refusal` with the facts
of the call (``sent``, ``server_id``, ``channel_id``, ``defaulted``), and
:func:`~switchboard.tools.results.refusal_boundary` turns it into the result. Who is calling,
and which channels are the turn's own, come from the desk the server was built for, never from
tool input.
"""

from __future__ import annotations

from typing import Annotated, Any

import structlog
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from switchboard.channels import ChannelRef
from switchboard.host import AgentDesk, Refusal, RefusalKind, Switchboard
from switchboard.host.agent.publishing import TOOL as PUBLISH
from switchboard.host.agent.publishing import publish_for_agent
from switchboard.host.agent.speech import SpokenSegment, speak
from switchboard.host.agent.views import channel_rows
from switchboard.host.refusal import only_one
from switchboard.tools.results import (
    ChannelInfo,
    ChannelListResult,
    InboxMessage,
    InboxResult,
    PublishResult,
    SegmentResult,
    SpeakResult,
    ThinkResult,
    ok,
    refusal_boundary,
)

log = structlog.get_logger(__name__)

#: Longest an inbox call may wait for new messages, in seconds.
MAX_WAIT_SECONDS = 300.0

THOUGHT_NOTED = "Thought recorded privately: it was not sent anywhere."


def _shown(board: Switchboard, desk: AgentDesk, ref: ChannelRef | None) -> str | None:
    """The name shown for ``ref`` in the agent's current turn."""
    return None if ref is None else board.registry.names.name_shown(ref, desk.own)


def _locus_shown(board: Switchboard, desk: AgentDesk) -> str | None:
    return _shown(board, desk, desk.locus(board.registry, board.default_channel).ref)


def _segment(board: Switchboard, desk: AgentDesk, s: SpokenSegment) -> SegmentResult:
    channel = None
    if s.ref is not None:
        names = board.registry.names
        channel = names.prose_target_for(s.ref, desk.own) or names.name_shown(s.ref, desk.own)
    return SegmentResult.of(s, channel)


def register_channel_tools(mcp: MCPServer, board: Switchboard, desk: AgentDesk) -> None:
    """Add the channel tools for the agent ``desk`` serves to ``mcp``."""
    agent = desk.name

    @mcp.tool(
        description="List the channels you can reach: for each, the name that picks it alone "
        "(pass it as channel), the >> target that reaches it in speak, and its state."
    )
    async def channel_list() -> ChannelListResult:
        servers = {c.id: "disconnected" for c in board.config.connectors}
        for sid, session in board.sessions.items():
            servers[sid] = session.state.value
        rows = channel_rows(board.registry, desk.own, board.desired_state)
        return ChannelListResult(channels=[ChannelInfo.of(r) for r in rows], servers=servers)

    @mcp.tool(
        description="Write text into a channel. `channel` is a name from channel_list (an id, "
        "a qualified serverId:channelId, a raw id, a #label or an @person); without it the "
        "text goes where your plain speech goes (this turn's locus, see inbox). The result "
        "says whether the connector confirmed delivery."
    )
    @refusal_boundary
    async def channel_publish(
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
        published = await publish_for_agent(
            board, desk, words, channel=channel or channelId, server_id=server_id
        )
        outcome = published.outcome
        shown = None
        if outcome.server_id is not None and outcome.channel_id is not None:
            shown = _shown(board, desk, ChannelRef(outcome.server_id, outcome.channel_id))
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

    @mcp.tool(
        description="Read the messages that arrived since your last read. Pass wait_seconds to "
        "wait for new ones when there are none yet. A read that returns messages begins your "
        "next turn: `turn` numbers it and `locus` says where plain speech goes during it."
    )
    async def inbox(
        wait_seconds: Annotated[
            float,
            Field(ge=0, le=MAX_WAIT_SECONDS, description="How long to wait for new messages."),
        ] = 0.0,
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many messages.")] = 50,
    ) -> InboxResult:
        context: list[dict[str, Any]] = []
        async with desk.reading:
            read = await board.read_inbox(agent, wait_seconds=wait_seconds, limit=limit)
            messages = [InboxMessage.of(m) for m in read.messages]
            if read.messages:
                turn = desk.begin_turn(read.messages, board.registry)
                log.debug("turn_began", agent=agent, turn=turn.number, locus=turn.locus.source)
                said = "\n".join(m.text for m in messages if m.text)
                context = await board.before_inference(desk, user_message=said or None)
        return InboxResult(
            messages=messages,
            cursor=read.cursor,
            more=read.more,
            turn=desk.turn.number,
            locus=_locus_shown(board, desk),
            context=context,
        )

    @mcp.tool(
        name="speak",
        description="Speak in prose. A line starting with >> and a target (>>#general, "
        ">>@carol, a name from channel_list) sends the lines after it there; >>skip_reply "
        "keeps words private; {{unsent}} brings back words that were not sent. The result "
        "says what became of each segment.",
    )
    async def speak_tool(
        text: Annotated[str, Field(min_length=1, description="What to say, with >> lines.")],
    ) -> SpeakResult:
        speech = await speak(board, desk, text)
        return SpeakResult(
            segments=[_segment(board, desk, s) for s in speech.segments],
            mode=speech.mode.value,
            sticky=speech.sticky,
            turn=desk.turn.number,
            locus=_locus_shown(board, desk),
        )

    @mcp.tool(
        description="Think privately: the note is recorded for you and sent nowhere. It does "
        "not end your turn."
    )
    async def think(
        content: Annotated[str | None, Field(description="The thought.")] = None,
    ) -> ThinkResult:
        log.debug("agent_thought", agent=agent, length=len(content or ""))
        return ThinkResult(noted=True, note=THOUGHT_NOTED)
