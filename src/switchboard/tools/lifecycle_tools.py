"""The lifecycle tools: channel_open, channel_close and channel_decline.

Each tool resolves its channel the way every lifecycle tool does (channel-registry.md §3.7: the
turn's own channels first when no server is given, an exact id or qualified name, never a guess
between several), then asks the host's lifecycle (:mod:`switchboard.host.lifecycle.verbs`,
:mod:`switchboard.host.lifecycle.decline`) as the agent: provenance comes from the desk this
server was built for, never from tool input, so an agent's close is always ``agent-tool`` and
the module-only close inputs (machine sources, idle leases) do not exist here.

Refusals are raised (a name the registry refused, through
:func:`~switchboard.host.refusal.name_refusal`, or a verb's own) and become ``isError`` results
at the tool boundary; a verb's refusal carries ``refusal`` (for example ``tuned-out``,
``not-recorded``, ``open-failed``), the channel as shown (``channel``), its ``server_id`` and
``channel_id``, the message, and the ``next`` step. Results say when a connector keeps its
channels as it chooses (``status: "not directed"``) or is not connected (``status:
"recorded"``).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from switchboard.channels import ChannelEntry, ChannelNameError, ChannelRef
from switchboard.host import AgentDesk, Refusal, Switchboard
from switchboard.host.lifecycle.answers import LifecycleAnswer
from switchboard.host.lifecycle.verbs import MAX_BACKSCROLL
from switchboard.host.refusal import name_refusal
from switchboard.tools.results import ok, refusal_boundary

__all__ = [
    "CloseResult",
    "DeclineResult",
    "OpenResult",
    "register_lifecycle_tools",
]

_CHANNEL = Field(
    min_length=1,
    description="Which channel: its id or a qualified serverId:channelId, as channel_list shows.",
)
_SERVER = Field(
    min_length=1, description="The channel's server; needed only when its id is shared."
)


class CloseResult(BaseModel):
    """What channel_close (and the shared fields of the other two) answers."""

    channel: str = Field(description="The channel's name as shown to you.")
    server_id: str
    channel_id: str
    status: str = Field(
        description="closed, already closed, recorded (its server is not connected: it happens "
        "when it is), or not directed (its server keeps its channels as it chooses)."
    )
    note: str | None = Field(default=None, description="What else to know, if anything.")


class OpenResult(CloseResult):
    """What channel_open answers."""

    history: list[dict[str, Any]] | None = Field(
        default=None, description="The earlier messages asked for with backscroll, oldest first."
    )
    history_truncated: bool | None = Field(
        default=None, description="True when the server had more history than it returned."
    )


class DeclineResult(CloseResult):
    """What channel_decline answers."""

    acknowledged: bool | None = Field(
        default=None, description="Whether the acknowledgment asked for was posted."
    )
    representation: str | None = Field(
        default=None, description="How the server represented the acknowledgment."
    )
    acknowledgment_error: str | None = Field(
        default=None, description="Why the acknowledgment was not posted."
    )


def _fields(board: Switchboard, desk: AgentDesk, answer: LifecycleAnswer) -> dict[str, Any]:
    ref = answer.ref
    return {
        "channel": board.registry.names.name_shown(ref, desk.own),
        "server_id": ref.server_id,
        "channel_id": ref.channel_id,
        "status": answer.status,
        "note": answer.text or None,
    }


def register_lifecycle_tools(mcp: MCPServer, board: Switchboard, desk: AgentDesk) -> None:
    """Add the lifecycle tools for the agent ``desk`` serves to ``mcp``."""
    agent = desk.name
    lifecycle = board.lifecycle

    def resolve(channel: str, server_id: str | None, tool: str) -> ChannelEntry:
        try:
            return board.registry.names.resolve_tool_channel(
                channel, server_id=server_id or None, own=desk.own
            )
        except ChannelNameError as exc:
            raise name_refusal(exc, tool) from None

    async def decided(ref: ChannelRef, verb: Awaitable[LifecycleAnswer]) -> LifecycleAnswer:
        """The verb's answer; its refusal names the channel as shown to this agent."""
        try:
            return await verb
        except Refusal as exc:
            shown = board.registry.names.name_shown(ref, desk.own)
            raise exc.adding(
                channel=shown, server_id=ref.server_id, channel_id=ref.channel_id
            ) from None

    @mcp.tool(
        description="Open a channel to start receiving its ordinary ongoing traffic: its "
        "connector subscribes, joins or attaches. Optionally ask for earlier messages with "
        "backscroll (0-500), before the message whose notice invited you (before_message_id)."
    )
    @refusal_boundary
    async def channel_open(
        channel: Annotated[str, _CHANNEL],
        server_id: Annotated[str | None, _SERVER] = None,
        backscroll: Annotated[
            int,
            Field(
                description=f"How many earlier messages to return while opening (0-"
                f"{MAX_BACKSCROLL}; larger asks are clamped; default 0)."
            ),
        ] = 0,
        before_message_id: Annotated[
            str | None,
            Field(
                description="The message from the closed-channel notice; history stops before it."
            ),
        ] = None,
    ) -> Annotated[CallToolResult, OpenResult]:
        entry = resolve(channel, server_id, "channel_open")
        answer = await decided(
            entry.ref,
            lifecycle.open(
                entry.ref,
                by_agent=agent,
                backscroll=max(0, min(MAX_BACKSCROLL, backscroll)),
                before_message_id=before_message_id,
            ),
        )
        history = None if answer.history is None else [dict(m) for m in answer.history]
        return ok(
            OpenResult(
                **_fields(board, desk, answer),
                history=history,
                history_truncated=answer.history_truncated,
            )
        )

    @mcp.tool(
        description="Close a channel. Messages that address you still reach you; what else "
        "stops reaching you depends on its server. You can still speak there. It stays closed "
        "until you open it with channel_open: neither speaking there nor a subscription policy "
        "reopens it."
    )
    @refusal_boundary
    async def channel_close(
        channel: Annotated[str, _CHANNEL],
        server_id: Annotated[str | None, _SERVER] = None,
    ) -> Annotated[CallToolResult, CloseResult]:
        entry = resolve(channel, server_id, "channel_close")
        answer = await decided(entry.ref, lifecycle.close(entry.ref, by_agent=agent))
        return ok(CloseResult(**_fields(board, desk, answer)))

    @mcp.tool(
        description="Deliberately remain closed after being addressed in a closed channel. "
        "Optionally post a public acknowledgment (such as an emoji) through the connector; "
        "acknowledgment is opt-in, and leaving it out declines silently."
    )
    @refusal_boundary
    async def channel_decline(
        channel: Annotated[str, _CHANNEL],
        message_id: Annotated[
            str, Field(min_length=1, description="The message that addressed you.")
        ],
        server_id: Annotated[str | None, _SERVER] = None,
        acknowledge: Annotated[
            str | None,
            Field(
                min_length=1,
                description="A surface value to post, such as 👀; omit to decline silently.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, DeclineResult]:
        entry = resolve(channel, server_id, "channel_decline")
        answer = await decided(
            entry.ref,
            lifecycle.decline(
                entry.ref, message_id=message_id, acknowledge=acknowledge, by_agent=agent
            ),
        )
        return ok(
            DeclineResult(
                **_fields(board, desk, answer),
                acknowledged=answer.acknowledged,
                representation=answer.representation,
                acknowledgment_error=answer.acknowledgment_error,
            )
        )
