"""The lifecycle tools: channel_open, channel_close and channel_decline (docs/tools.md).

Each tool is a plain function of the agent's :class:`~switchboard.agents.port.AgentPort`; the
port resolves the channel as every tool does and asks the lifecycle as the agent (provenance
is the port's, never tool input), and a verb's refusal says the channel and the next step.

What it deliberately does not know: how names resolve and what the verbs decide.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from switchboard.agents.port.protocol import MAX_BACKSCROLL, AgentPort, LifecycleAnswer
from switchboard.agents.tools.results import ok, refusal_boundary
from switchboard.agents.tools.toolset import ToolSet, writes

__all__ = [
    "TOOLS",
    "CloseResult",
    "DeclineResult",
    "OpenResult",
    "channel_close",
    "channel_decline",
    "channel_open",
]

TOOLS = ToolSet()
"""The lifecycle tools, in the order ``tools/list`` shows them."""

_CHANNEL = Field(min_length=1, description="Which channel, as channel_list names it.")
_SERVER = Field(description="The channel's server, when a name is shared; empty: any server.")


class CloseResult(BaseModel):
    """What channel_close (and the shared fields of the other two) answers."""

    channel: str = Field(description="The channel's name as shown to you.")
    server_id: str
    channel_id: str
    status: str = Field(
        description="closed, already closed, recorded (its server is not connected: it happens "
        "when it is), not directed (its server keeps its channels as it chooses), or left "
        "(another agent's home: it stays open for them, and you stop hearing it)."
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


def _fields(port: AgentPort, answer: LifecycleAnswer) -> dict[str, Any]:
    ref = answer.ref
    return {
        "channel": port.name_shown(ref),
        "server_id": ref.server_id,
        "channel_id": ref.channel_id,
        "status": answer.status,
        "note": answer.text or None,
    }


@TOOLS.tool(
    description="Open a channel to receive its ongoing traffic (its connector subscribes or "
    "joins). backscroll returns earlier messages too.",
    annotations=writes(world=True, idempotent=True),
)
@refusal_boundary
async def channel_open(
    port: AgentPort,
    channel: Annotated[str, _CHANNEL],
    server_id: Annotated[str | None, _SERVER] = None,
    backscroll: Annotated[
        int,
        Field(description=f"Earlier messages to return (0-{MAX_BACKSCROLL}; more is clamped)."),
    ] = 0,
    before_message_id: Annotated[
        str | None,
        Field(description="History stops before this message (from a closed-channel notice)."),
    ] = None,
) -> Annotated[CallToolResult, OpenResult]:
    answer = await port.open(
        channel,
        server_id=server_id or None,
        backscroll=backscroll,
        before_message_id=before_message_id,
    )
    history = None if answer.history is None else [dict(m) for m in answer.history]
    return ok(
        OpenResult(
            **_fields(port, answer),
            history=history,
            history_truncated=answer.history_truncated,
        )
    )


@TOOLS.tool(
    description="Close a channel: its ordinary traffic stops (messages addressing you still "
    "come) until you call channel_open; speaking there does not reopen it.",
    annotations=writes(world=True, idempotent=True),
)
@refusal_boundary
async def channel_close(
    port: AgentPort,
    channel: Annotated[str, _CHANNEL],
    server_id: Annotated[str | None, _SERVER] = None,
) -> Annotated[CallToolResult, CloseResult]:
    answer = await port.close(channel, server_id=server_id or None)
    return ok(CloseResult(**_fields(port, answer)))


@TOOLS.tool(
    description="Stay closed after being addressed in a closed channel. acknowledge posts a "
    "public sign (such as an emoji); without it you decline silently.",
    annotations=writes(world=True, idempotent=False),
)
@refusal_boundary
async def channel_decline(
    port: AgentPort,
    channel: Annotated[str, _CHANNEL],
    message_id: Annotated[str, Field(min_length=1, description="The message that addressed you.")],
    server_id: Annotated[str | None, _SERVER] = None,
    acknowledge: Annotated[
        str | None,
        Field(
            min_length=1,
            description="A surface value to post, such as 👀; omit to decline silently.",
        ),
    ] = None,
) -> Annotated[CallToolResult, DeclineResult]:
    answer = await port.decline(
        channel, message_id=message_id, server_id=server_id or None, acknowledge=acknowledge
    )
    return ok(
        DeclineResult(
            **_fields(port, answer),
            acknowledged=answer.acknowledged,
            representation=answer.representation,
            acknowledgment_error=answer.acknowledgment_error,
        )
    )
