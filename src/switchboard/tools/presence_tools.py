"""The presence tools: ``typing``, ``speak_stream`` and ``speak_stream_end`` (§10).

What this module knows: the MCP surface of the host's typing keeper
(:class:`~switchboard.host.agent.typing_keeper.TypingKeeper`) and streamed speech
(:class:`~switchboard.host.agent.streams.StreamedSpeech`), as docs/tools.md describes them:

- ``typing`` turns an indicator on or off. A channel id or qualified name fans out to every
  channel it names (typing posts nothing, so a shared id types in each); other names (a
  label, a DM name) must pick one channel; ``server_id`` narrows to one server. An agent's
  indicator stays up at most :data:`MANUAL_TYPING_REFRESHES` refreshes (about two minutes)
  unless the agent calls ``typing`` again, and ends when the agent's speech lands there.
- ``speak_stream`` feeds the next piece of a speech; the first call (without
  ``inference_id``) opens the stream and returns its id. Text whose destination is decided
  is shown live to connectors granted ``channels.streaming``; nothing is published yet.
  ``speak_stream_end`` delivers the whole text exactly as ``speak`` would (same grammar,
  sticky target, drafts) and completes every stream; with ``abort`` it publishes nothing. A
  stream still open when the agent's next turn begins is abandoned (completed, not sent).

Refusals (a name the registry refused, through :func:`~switchboard.host.refusal.name_refusal`;
``no-stream``) are raised and become results at the tool boundary.

What it deliberately does not know: how typing, streams or speech work inside the host.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from switchboard.channels import ChannelNameError, ChannelRef
from switchboard.host import AgentDesk, Refusal, RefusalKind, Switchboard
from switchboard.host.agent.speech import Speech, SpokenSegment, speak
from switchboard.host.agent.streams import Streamed, StreamedSpeech
from switchboard.host.refusal import name_refusal
from switchboard.tools.results import SegmentResult, SpeakResult, ok, refusal_boundary

__all__ = [
    "MANUAL_TYPING_REFRESHES",
    "StreamEndResult",
    "StreamResult",
    "TypingResult",
    "register_presence_tools",
]

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


def register_presence_tools(mcp: MCPServer, board: Switchboard, desk: AgentDesk) -> None:
    """Add the presence tools for the agent ``desk`` serves to ``mcp``."""
    agent = desk.name
    names = board.registry.names

    def shown(ref: ChannelRef) -> ChannelShown:
        channel = names.prose_target_for(ref, desk.own) or names.name_shown(ref, desk.own)
        return ChannelShown(channel=channel, server_id=ref.server_id, channel_id=ref.channel_id)

    def typing_shown(ref: ChannelRef) -> TypingChannel:
        session = board.sessions.get(ref.server_id)
        granted = session is not None and session.grant.allows("channels.typing")
        return TypingChannel(**shown(ref).model_dump(), shown=granted)

    def pick(channel: str, server_id: str | None) -> list[ChannelRef]:
        if server_id is not None:
            return [names.resolve_tool_channel(channel, server_id=server_id, own=desk.own).ref]
        fanned = names.channels_named(channel)
        return list(fanned) if fanned else [names.resolve(channel, own=desk.own).ref]

    @mcp.tool(
        name="typing",
        description="Show (on=true) or stop (on=false) a typing indicator in a channel. It "
        "refreshes itself for about two minutes, and stops when your speech lands there. When "
        "a turn begins, typing starts by itself where your plain speech goes.",
    )
    @refusal_boundary
    async def typing_tool(
        channel: Annotated[
            str, Field(min_length=1, description="Which channel, as channel_list names it.")
        ],
        on: Annotated[bool, Field(description="true to start typing, false to stop.")] = True,
        server_id: Annotated[
            str | None, Field(min_length=1, description="The server, when an id is shared.")
        ] = None,
    ) -> Annotated[CallToolResult, TypingResult]:
        try:
            refs = pick(channel, server_id)
        except ChannelNameError as exc:
            raise name_refusal(exc, "typing").adding(typing=False) from None
        typing: list[ChannelRef] = []
        for ref in refs:
            if on:
                typing += await board.typing.start(ref, refreshes=MANUAL_TYPING_REFRESHES)
            else:
                await board.typing.stop(ref)
                typing.append(ref)
        return ok(TypingResult(on=on, channels=[typing_shown(r) for r in typing]))

    def streamed(items: tuple[Streamed, ...]) -> list[StreamedText]:
        return [StreamedText(**shown(s.ref).model_dump(), text=s.text) for s in items]

    def no_stream(inference_id: str) -> Refusal:
        return Refusal(
            RefusalKind.NO_STREAM,
            f"there is no open stream {inference_id!r} of yours: it ended, was abandoned when "
            "your next turn began, or never existed; nothing was published by this call.",
        )

    @mcp.tool(
        description="Speak in prose, streamed: pass the next piece of your text; the first call "
        "(without inference_id) starts a stream and returns its id. Same >> grammar as speak. "
        "Connectors that can show text live see it as you write; nothing is posted until you "
        "call speak_stream_end."
    )
    @refusal_boundary
    async def speak_stream(
        text: Annotated[str, Field(description="The next piece of your text, as written.")],
        inference_id: Annotated[
            str | None, Field(min_length=1, description="The stream to continue.")
        ] = None,
    ) -> Annotated[CallToolResult, StreamResult]:
        if inference_id is None:
            speech = begin()
        else:
            found = board.streams.get(agent, inference_id)
            if found is None:
                raise no_stream(inference_id)
            speech = found
        async with speech.lock:
            if board.streams.get(agent, speech.inference_id) is not speech:
                raise no_stream(speech.inference_id)
            sent = await speech.feed(text)
        return ok(StreamResult(inference_id=speech.inference_id, streamed=streamed(sent)))

    def begin() -> StreamedSpeech:
        sticky = desk.sticky
        bound = None
        if sticky.target is not None and desk.sticky_ref is not None:
            bound = {sticky.target: desk.sticky_ref}
        return board.streams.begin(
            agent,
            conversation_id=desk.conversation_id,
            mode=desk.prose,
            locus=desk.locus(board.registry, board.default_channel).ref,
            own=desk.own,
            sticky=sticky,
            bound=bound,
        )

    @mcp.tool(
        description="End a stream started with speak_stream: post the whole text exactly as "
        "speak would (the result is speak's, per segment) and end the live previews. With "
        "abort=true nothing is posted."
    )
    @refusal_boundary
    async def speak_stream_end(
        inference_id: Annotated[str, Field(min_length=1, description="The stream to end.")],
        text: Annotated[str, Field(description="A last piece of text, if any.")] = "",
        abort: Annotated[bool, Field(description="true: post nothing.")] = False,
    ) -> Annotated[CallToolResult, StreamEndResult]:
        speech = board.streams.get(agent, inference_id)
        if speech is None:
            raise no_stream(inference_id)
        async with speech.lock:
            if board.streams.get(agent, inference_id) is not speech:
                raise no_stream(inference_id)
            board.streams.release(speech)
            if abort:
                end = await speech.abort()
            else:
                if text:
                    await speech.feed(text)
                end = await speech.finish(lambda whole: speak(board, desk, whole))
        result = StreamEndResult(
            inference_id=inference_id,
            aborted=end.aborted,
            completed=[shown(r) for r in end.completed],
            speech=None if end.delivered is None else speak_result(end.delivered),
        )
        return ok(result)

    def speak_result(speech: Speech) -> SpeakResult:
        locus = desk.locus(board.registry, board.default_channel).ref
        return SpeakResult(
            segments=[segment(s) for s in speech.segments],
            mode=speech.mode.value,
            sticky=speech.sticky,
            turn=desk.turn.number,
            locus=None if locus is None else names.name_shown(locus, desk.own),
        )

    def segment(s: SpokenSegment) -> SegmentResult:
        return SegmentResult.of(s, None if s.ref is None else shown(s.ref).channel)
