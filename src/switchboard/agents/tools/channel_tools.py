"""The channel tools: channel_list, channel_publish, inbox, speak and think (docs/tools.md).

Each tool is a plain function of the agent's :class:`~switchboard.agents.port.AgentPort` and its
typed arguments, recorded in :data:`TOOLS`; the rules (turns, names, delivery) live behind the
port, and answers are bounded (:mod:`.results`).

What it deliberately does not know: the host behind the port.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, cast

import anyio
import structlog
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver.context import Context
from mcp.types import CallToolResult, CancelledNotificationParams, TextContent
from pydantic import AliasChoices, Field
from pydantic.json_schema import SkipJsonSchema
from starlette.types import Receive

from switchboard.agents.port.protocol import AgentPort, AgentRead, PageBudget
from switchboard.agents.tools.results import (
    INBOX_PAGE_BYTES,
    MAX_ANSWER_BYTES,
    ChannelInfo,
    ChannelListResult,
    DisabledSetInfo,
    InboxMessage,
    InboxResult,
    PublishResult,
    SpeakResult,
    ThinkResult,
    bounded_context,
    connecting_note,
    fitting,
    inbox_answer,
    inbox_message_size,
    json_bytes,
    ok,
    refusal_boundary,
)
from switchboard.agents.tools.toolset import READ_ONLY, ToolSet, writes
from switchboard.channels import ChannelRef
from switchboard.refusals.refusal import Refusal, RefusalKind, only_one
from switchboard.store import StoredMessage

__all__ = [
    "MAX_CHANNEL_PAGE",
    "MAX_WAIT_SECONDS",
    "SPEAK_DESCRIPTIONS",
    "THOUGHT_NOTED",
    "TOOLS",
    "call_of",
    "channel_list",
    "channel_publish",
    "connection_of",
    "inbox",
    "inbox_cancelled",
    "speak_tool",
    "think",
]

log = structlog.get_logger(__name__)

#: Longest an inbox call may wait for new messages, in seconds.
MAX_WAIT_SECONDS = 300.0

THOUGHT_NOTED = "Thought recorded privately: it was not sent anywhere."

CLIENT_GONE = "The client went away during the wait: nothing was read or acknowledged."


TOOLS = ToolSet()
"""The channel tools, in the order ``tools/list`` shows them."""

PUBLISH = "channel_publish"
"""The publish tool's name (its argument refusals' next steps name it)."""


#: Most channels one channel_list page shows (fewer when their bytes reach the bound).
MAX_CHANNEL_PAGE = 500


@TOOLS.tool(
    description="List the channels you can reach: for each, the name that picks it alone "
    "(pass it as channel), the target that reaches it in speak, and its state. Long lists "
    "come in pages: pass next_cursor as cursor for the next.",
    annotations=READ_ONLY,
)
async def channel_list(
    port: AgentPort,
    cursor: Annotated[
        int | None,
        Field(ge=0, description="The next_cursor of the previous page; omit for the first."),
    ] = None,
) -> Annotated[CallToolResult, ChannelListResult]:
    listing = port.channels()
    result = ChannelListResult(
        channels=[],
        servers=dict(listing.servers),
        note=connecting_note(listing.servers),
        disabled_feature_sets={
            sid: [DisabledSetInfo.of(d) for d in sets]
            for sid, sets in listing.disabled_feature_sets.items()
        },
        total=len(listing.rows),
    )
    room = MAX_ANSWER_BYTES - 2 * json_bytes(result.model_dump(mode="json")) - 4096
    start = cursor or 0
    shown = [ChannelInfo.of(r) for r in listing.rows[start : start + MAX_CHANNEL_PAGE]]
    result.channels = shown[: fitting(shown, room)]
    end = start + len(result.channels)
    result.next_cursor = end if end < len(listing.rows) else None
    return ok(result)


@TOOLS.tool(
    description="Write text into a channel. `channel` is a name from channel_list (an id, "
    "a qualified serverId:channelId, a raw id, a #label or an @person); without it the "
    "text goes where your plain speech goes (this turn's locus, see inbox). The result "
    "says whether the connector confirmed delivery.",
    annotations=writes(world=True, idempotent=False),
)
@refusal_boundary
async def channel_publish(
    port: AgentPort,
    text: Annotated[
        str, Field(validation_alias=AliasChoices("text", "content"), description="What to say.")
    ],
    channel: Annotated[
        str | None,
        Field(
            min_length=1,
            validation_alias=AliasChoices("channel", "channelId"),
            description="Which channel, as channel_list names it; omit for the locus.",
        ),
    ] = None,
    server_id: Annotated[
        str | None,
        Field(description="Look only on this server; empty or omitted: any server."),
    ] = None,
    # The reference's names, accepted but not shown: each is read into the shown argument
    # above too, and kept here only to refuse a call whose two spellings disagree.
    content: Annotated[str | None, SkipJsonSchema()] = None,
    channelId: Annotated[str | None, SkipJsonSchema()] = None,
) -> Annotated[CallToolResult, PublishResult]:
    if channelId is not None and channel != channelId:
        raise Refusal(
            RefusalKind.CONFLICTING_ARGUMENTS,
            "channel and channelId name different channels, so nothing was posted.",
            only_one(PUBLISH, "channel"),
            sent=False,
        )
    if content is not None and text != content:
        raise Refusal(
            RefusalKind.CONFLICTING_ARGUMENTS,
            "text and content differ, so nothing was posted.",
            only_one(PUBLISH, "text"),
            sent=False,
        )
    published = await port.publish(text, channel=channel, server_id=server_id or None)
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
    "wait for new ones when there are none yet. Pass the previous result's cursor as after "
    "to acknowledge it; messages not acknowledged come again (redelivered: true). A read "
    "that returns messages begins your next turn: `turn` numbers it and `locus` says where "
    "plain speech goes during it. The text shows one line per message; a message too large "
    "for a page is cut, and message_get fetches it whole.",
    annotations=READ_ONLY,
)
@refusal_boundary
async def inbox(
    port: AgentPort,
    wait_seconds: Annotated[
        float,
        Field(ge=0, le=MAX_WAIT_SECONDS, description="How long to wait for new messages."),
    ] = 0.0,
    limit: Annotated[int, Field(ge=1, le=500, description="At most this many messages.")] = 50,
    after: Annotated[
        int | None,
        Field(ge=0, description="The cursor of your previous inbox result: acknowledges it."),
    ] = None,
    ctx: Context[dict[str, Any], Any] | None = None,
) -> Annotated[CallToolResult, InboxResult]:
    reader = connection_of(ctx)
    request = call_of(ctx)
    receive = _http_receive(ctx) if wait_seconds > 0 else None
    budget = PageBudget(
        INBOX_PAGE_BYTES,
        lambda m: inbox_message_size(
            InboxMessage.of(m, channel=_channel_shown(port, m), redelivered=True)
        ),
    )
    if receive is None:
        read = await port.read_inbox(
            after=after,
            reader=reader,
            wait_seconds=wait_seconds,
            limit=limit,
            budget=budget,
            request=request,
        )
    else:
        gone = await _unless_gone(
            receive,
            lambda: port.read_inbox(
                after=after,
                reader=reader,
                wait_seconds=wait_seconds,
                limit=limit,
                budget=budget,
                request=request,
            ),
        )
        if gone is None:
            return CallToolResult(
                content=[TextContent(type="text", text=CLIENT_GONE)], is_error=True
            )
        read = gone
    context, left_out = bounded_context(read.context)
    return inbox_answer(
        InboxResult(
            messages=[
                InboxMessage.of(m, channel=_channel_shown(port, m), redelivered=again)
                for m, again in zip(read.messages, _flags(read), strict=True)
            ],
            cursor=read.cursor,
            more=read.more,
            redelivered=sum(_flags(read)),
            turn=port.turn,
            locus=port.locus_shown(),
            context=context,
            context_left_out=left_out,
        )
    )


def _flags(read: AgentRead) -> Sequence[bool]:
    return read.redelivered or [False] * len(read.messages)


def _channel_shown(port: AgentPort, m: StoredMessage) -> str:
    """The name of ``m``'s channel as channel_list shows it (a tune-out notice of an
    all-but scope has no channel: its server is shown)."""
    if not m.channel_id:
        return m.server_id
    return port.name_shown(ChannelRef(m.server_id, m.channel_id))


def _http_receive(ctx: Context[dict[str, Any], Any] | None) -> Receive | None:
    """The ASGI ``receive`` of the HTTP request a call came in, or None (stdio, in memory)."""
    if ctx is None:
        return None
    receive = getattr(ctx.request_context.request, "receive", None)
    return cast("Receive", receive) if callable(receive) else None


async def _unless_gone(
    receive: Receive, read: Callable[[], Awaitable[AgentRead]]
) -> AgentRead | None:
    """Run ``read`` until it ends or the HTTP client goes away; None when it went away.

    The SDK's stateful streamable HTTP transport does not cancel a call whose client
    disconnected, so a long poll would wait out its time for nobody, holding the agent's
    inbox. Cancelled here, it records nothing: nothing is acknowledged or consumed.
    """
    answer: list[AgentRead] = []
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            while (await receive()).get("type") != "http.disconnect":
                pass
            log.info("inbox_poll_abandoned", reason="the HTTP client went away")
            group.cancel_scope.cancel()

        group.start_soon(watch)
        answer.append(await read())
        group.cancel_scope.cancel()
    return answer[0] if answer else None


def connection_of(ctx: Context[dict[str, Any], Any] | None) -> object | None:
    """The MCP connection a call came over: the reader whose reads acknowledge each other.

    The SDK keeps the connection behind the request's session (a new session object per
    request); the session stands in when it has none. A modern (stateless) request is its own
    connection, so its reads acknowledge only with ``after``.
    """
    if ctx is None:
        return None
    return _connection(ctx.request_context.session)


def _connection(session: object) -> object:
    return getattr(session, "_connection", None) or session


def call_of(ctx: Context[dict[str, Any], Any] | None) -> str | None:
    """The id of the request a call came in, as :func:`inbox_cancelled` matches it: a
    JSON-RPC id as text (the SDK matches a ``notifications/cancelled`` whose id is the text
    of a number to that number)."""
    if ctx is None:
        return None
    request_id = ctx.request_context.request_id
    return None if request_id is None else str(request_id)


async def inbox_cancelled(
    port: AgentPort,
    ctx: ServerRequestContext[Any, Any],
    params: CancelledNotificationParams,
) -> None:
    """``notifications/cancelled``: when the call it cancels was an ``inbox`` read that already
    answered (the cancel lost its race with an arriving message, and the answer went into a
    stream nobody reads), the read is taken back while it is still the connection's latest,
    so the next read returns its page again, flagged ``redelivered``. A cancel that finds the
    read still running needs nothing: the SDK cancels it, and a cancelled read records
    nothing. Any other request's cancel changes nothing here.

    Nothing here awaits: the take-back is done before a read sent after the cancel runs.
    """
    if params.request_id is not None:
        port.take_back_read(_connection(ctx.session), str(params.request_id))


SPEAK_DESCRIPTIONS = {
    "hybrid": "Speak in prose. Plain text goes to this turn's locus (see inbox). A line "
    ">>>target (>>>#general, >>>@carol, a name from channel_list) sends the lines after it "
    "there instead; >>>skip_reply keeps them private. {{unsent}} brings back words that "
    "were not sent. The result says what became of each segment.",
    "explicit": "Speak in prose. A line >>target (>>#general, >>@carol, a name from "
    "channel_list) sends the lines after it there; plain text before any >> line is not "
    "sent (kept as a draft); >>skip_reply keeps words private. {{unsent}} brings back "
    "words that were not sent. The result says what became of each segment.",
    "locus": "Speak in prose: the text goes to this turn's locus (see inbox); use "
    "channel_publish to write elsewhere. {{unsent}} brings back words that were not sent. "
    "The result says what became of each segment.",
    "disabled": "Speech is turned off for you: nothing passed here is sent. Use "
    "channel_publish to write into a channel.",
}
"""``speak``'s description in each prose mode (config ``agent.prose``): its grammar differs."""


def _speak_description(port: AgentPort) -> str:
    return SPEAK_DESCRIPTIONS[port.prose_mode]


@TOOLS.tool(
    name="speak",
    description=_speak_description,
    annotations=writes(world=True, idempotent=False),
)
async def speak_tool(
    port: AgentPort,
    text: Annotated[str, Field(min_length=1, description="What to say, with >> lines.")],
) -> SpeakResult:
    return SpeakResult.of(port, await port.speak(text))


@TOOLS.tool(
    description="Think privately: the note is recorded for you and sent nowhere. It does "
    "not end your turn.",
    annotations=READ_ONLY,
)
async def think(
    port: AgentPort,
    content: Annotated[str | None, Field(description="The thought.")] = None,
) -> ThinkResult:
    log.debug("agent_thought", agent=port.agent, length=len(content or ""))
    return ThinkResult(noted=True, note=THOUGHT_NOTED)
