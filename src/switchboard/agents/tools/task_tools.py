"""The task tools: ``agent_spawn``, ``task_finish`` and ``agent_end`` (docs/tools.md, "Task
agents").

Each is a plain function of the agent's :class:`~switchboard.agents.port.AgentPort`: a task is
started with the caller as its parent and its token handed out once; a task finishes itself, or
its parent ends it.

What it deliberately does not know: the directory, the roster, mail, and when tasks end.
"""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from switchboard.agents.port.protocol import AgentPort, EndedAgent
from switchboard.agents.tools.agent_tools import shared
from switchboard.agents.tools.results import ok, refusal_boundary
from switchboard.agents.tools.toolset import ToolSet, writes

__all__ = [
    "MAX_RESULT_CHARS",
    "TOOLS",
    "EndedResult",
    "SpawnResult",
    "agent_end",
    "agent_spawn",
    "task_finish",
]

TOOLS = ToolSet()


def _task(port: AgentPort) -> bool:
    return port.is_task


"""The task tools, in the order ``tools/list`` shows them."""

MAX_RESULT_CHARS = 64 * 1024
"""The longest result ``task_finish`` takes (it is mailed to the parent)."""


class SpawnResult(BaseModel):
    handle: str = Field(description="The task agent's address.")
    token: str = Field(description="Its bearer token; shown only now.")
    connect: str = Field(description="How the task agent connects.")
    parent: str = Field(description="Who gets its result (you).")
    deadline: float | None = Field(description="Unix seconds at which it ends, or null.")
    idle_timeout_seconds: float | None
    turn_limit: int | None


class EndedResult(BaseModel):
    handle: str = Field(description="The agent that ended; its address is released.")
    reason: str = Field(description="Why it ended.")
    told: str | None = Field(
        description="Who its result (or end reason) was mailed to; null when nobody was."
    )


def _ended(ended: EndedAgent) -> CallToolResult:
    return ok(EndedResult(handle=ended.handle, reason=ended.reason, told=ended.told))


@TOOLS.tool(
    description="Start a task agent whose results come to you as mail. Returns its token "
    "once. It ends at deadline_seconds, after idle_timeout_seconds idle, or after turn_limit "
    "turns.",
    annotations=writes(world=False, idempotent=False),
    when=shared,
)
@refusal_boundary
async def agent_spawn(
    port: AgentPort,
    handle: Annotated[str, Field(min_length=2, max_length=64, description="e.g. @task-1")],
    description: Annotated[str, Field(max_length=1000)] = "",
    deadline_seconds: Annotated[float | None, Field(gt=0)] = None,
    idle_timeout_seconds: Annotated[float | None, Field(gt=0)] = None,
    turn_limit: Annotated[int | None, Field(ge=1)] = None,
    home: Annotated[str | None, Field(description="Its home channel.")] = None,
) -> Annotated[CallToolResult, SpawnResult]:
    spawned = port.spawn_task(
        handle,
        description=description,
        deadline_seconds=deadline_seconds,
        idle_timeout_seconds=idle_timeout_seconds,
        turn_limit=turn_limit,
        home=home or None,
    )
    return ok(
        SpawnResult(
            handle=spawned.handle,
            token=spawned.token,
            connect="connect to the same endpoint with Authorization: Bearer <token>",
            parent=spawned.parent,
            deadline=spawned.deadline,
            idle_timeout_seconds=spawned.idle_timeout,
            turn_limit=spawned.turn_limit,
        )
    )


@TOOLS.tool(
    description="Task agents only: end yourself and mail result to the agent that started you.",
    annotations=writes(world=False, idempotent=False, destructive=True),
    when=_task,
)
@refusal_boundary
async def task_finish(
    port: AgentPort,
    result: Annotated[str, Field(max_length=MAX_RESULT_CHARS)] = "",
) -> Annotated[CallToolResult, EndedResult]:
    return _ended(await port.finish_task(result))


@TOOLS.tool(
    description="End a task agent you started.",
    annotations=writes(world=False, idempotent=False, destructive=True),
    when=shared,
)
@refusal_boundary
async def agent_end(
    port: AgentPort,
    handle: Annotated[str, Field(min_length=1, max_length=64)],
) -> Annotated[CallToolResult, EndedResult]:
    return _ended(await port.end_task(handle))
