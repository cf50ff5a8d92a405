"""The presence tools: ``typing``, ``speak_stream`` and ``speak_stream_end`` (docs/tools.md).

The MCP surface of typing indicators and streamed speech, reached through the agent's
:class:`~switchboard.agents.port.AgentPort`: an indicator stays up a bounded number of refreshes,
streamed text is shown live and published only when the stream ends.

What it deliberately does not know: how typing, streams or speech work inside the host.
"""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from switchboard.agents.port.protocol import AgentPort
from switchboard.agents.tools.results import SpeakResult, ok, refusal_boundary
from switchboard.agents.tools.toolset import ToolSet, writes
from switchboard.channels import ChannelRef
from switchboard.refusals.refusal import Refusal

__all__ = [
    "MANUAL_TYPING_REFRESHES",
    "TOOLS",
    "StreamEndResult",
    "StreamResult",
    "TypingResult",
    "speak_stream",
    "speak_stream_end",
    "typing_tool",
]

TOOLS = ToolSet()
"""The presence tools, in the order ``tools/list`` shows them."""

MANUAL_TYPING_REFRESHES = 17
"""Refreshes an agent's ``typing`` call buys (17 × 7 s, about two minutes)."""


class ChannelShown(BaseModel):
    channel: str = Field(description="The channel's name, as a >> target where one reaches it.")
    server_id: str
    channel_id: str


class TypingChannel(ChannelShown):
    shown: bool = Field(description="Whether its server may show typing (it is granted typing).")


class TypingResult(BaseModel):
    on: bool = Field(description="Whether typing is now on in these channels.")
    channels: list[TypingChannel]


class StreamedText(ChannelShown):
    text: str = Field(description="The text this call showed live in the channel.")


class StreamResult(BaseModel):
    inference_id: str = Field(description="Pass it to the next speak_stream and to the end call.")
    streamed: list[StreamedText] = Field(
        description="What was shown live, per channel; text whose destination is not decided "
        "yet (an unfinished >> line) is held back. Nothing is published until speak_stream_end."
    )


class StreamEndResult(BaseModel):
    inference_id: str
    aborted: bool = Field(description="True: nothing was published.")
    completed: list[ChannelShown] = Field(description="Channels whose live stream was ended.")
    speech: SpeakResult | None = Field(description="What became of each segment, as for speak.")


def _shown(port: AgentPort, ref: ChannelRef) -> ChannelShown:
    return ChannelShown(
        channel=port.target_shown(ref), server_id=ref.server_id, channel_id=ref.channel_id
    )


@TOOLS.tool(
    name="typing",
    description="Show (on=true) or stop (on=false) a typing indicator in a channel. It lasts "
    "about two minutes or until your speech lands there; a turn starts one by itself where "
    "plain speech goes.",
    annotations=writes(world=True, idempotent=True),
)
@refusal_boundary
async def typing_tool(
    port: AgentPort,
    channel: Annotated[
        str, Field(min_length=1, description="Which channel, as channel_list names it.")
    ],
    on: Annotated[bool, Field(description="true to start typing, false to stop.")] = True,
    server_id: Annotated[
        str | None, Field(description="The server, when a name is shared; empty: any server.")
    ] = None,
) -> Annotated[CallToolResult, TypingResult]:
    try:
        typed = await port.typing(
            channel, on=on, server_id=server_id or None, refreshes=MANUAL_TYPING_REFRESHES
        )
    except Refusal as exc:
        raise exc.adding(typing=False) from None
    channels = [TypingChannel(**_shown(port, t.ref).model_dump(), shown=t.shown) for t in typed]
    return ok(TypingResult(on=on, channels=channels))


@TOOLS.tool(
    description="Speak in prose, streamed: pass the next piece of your text; the first call "
    "(without inference_id) starts a stream and returns its id. Same grammar as speak. "
    "Connectors that can show text live see it as you write; nothing is posted until you "
    "call speak_stream_end.",
    annotations=writes(world=True, idempotent=False),
)
@refusal_boundary
async def speak_stream(
    port: AgentPort,
    text: Annotated[str, Field(description="The next piece of your text, as written.")],
    inference_id: Annotated[
        str | None, Field(min_length=1, description="The stream to continue.")
    ] = None,
) -> Annotated[CallToolResult, StreamResult]:
    fed = await port.stream(text, inference_id=inference_id)
    streamed = [StreamedText(**_shown(port, s.ref).model_dump(), text=s.text) for s in fed.streamed]
    return ok(StreamResult(inference_id=fed.inference_id, streamed=streamed))


@TOOLS.tool(
    description="End a stream started with speak_stream: post the whole text exactly as "
    "speak would (the result is speak's, per segment) and end the live previews. With "
    "abort=true nothing is posted.",
    annotations=writes(world=True, idempotent=False),
)
@refusal_boundary
async def speak_stream_end(
    port: AgentPort,
    inference_id: Annotated[str, Field(min_length=1, description="The stream to end.")],
    text: Annotated[str, Field(description="A last piece of text, if any.")] = "",
    abort: Annotated[bool, Field(description="true: post nothing.")] = False,
) -> Annotated[CallToolResult, StreamEndResult]:
    end = await port.end_stream(inference_id, text=text, abort=abort)
    result = StreamEndResult(
        inference_id=inference_id,
        aborted=end.aborted,
        completed=[_shown(port, r) for r in end.completed],
        speech=None if end.delivered is None else SpeakResult.of(port, end.delivered),
    )
    return ok(result)
