"""The server's state/rollback result (MCPL §8.6, S-45).

A checkpoint only exists once the server hands one out, in the ``state`` of a tool result. The
kit never calls a tool that could act on the world: it lists the tools and calls only those
annotated ``readOnlyHint: true`` that need no arguments, looks for ``state.checkpoint`` in
their results, and rolls back to the first one it finds. A server that hands out no checkpoint
that way is *not exercised*, never passed.

What this module knows: tools/list, tools/call results, and the rollback result shape. What it
deliberately does not know: what a checkpoint's state means.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.outcomes import Verdict, fail, not_applicable, not_exercised, passed
from .context import SERVER_CHECKS, STATE, ServerContext
from .manifest import rollback_set
from .scenarios import ready
from .session import HostSession

#: At most this many read-only tools are called in search of a checkpoint.
_MAX_TOOLS = 3


def _safe_tools(listed: Any) -> list[str]:
    """Names of tools annotated read-only that take no required arguments."""
    tools = listed.get("tools") if isinstance(listed, Mapping) else None
    names: list[str] = []
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            continue
        hints = tool.get("annotations")
        schema = tool.get("inputSchema")
        required = schema.get("required") if isinstance(schema, Mapping) else None
        if isinstance(hints, Mapping) and hints.get("readOnlyHint") is True and not required:
            names.append(tool["name"])
    return names


async def _checkpoint(session: HostSession) -> str | None:
    """A checkpoint id from a read-only tool's result, or None when none hands one out."""
    listed = await session.call("tools/list", {})
    for name in _safe_tools(listed.result)[:_MAX_TOOLS]:
        reply = await session.call("tools/call", {"name": name, "arguments": {}})
        result = reply.result if isinstance(reply.result, Mapping) else {}
        state = result.get("state")
        checkpoint = state.get("checkpoint") if isinstance(state, Mapping) else None
        if isinstance(checkpoint, str) and checkpoint:
            return checkpoint
    return None


def result_shape_problem(result: Any, checkpoint: str) -> str | None:
    """Why a rollback result breaks S-45, or None when it holds."""
    if not isinstance(result, Mapping):
        return f"the result is not an object: {result!r}"
    if result.get("checkpoint") != checkpoint:
        return f"checkpoint is {result.get('checkpoint')!r}, expected {checkpoint!r}"
    success = result.get("success")
    if not isinstance(success, bool):
        return f"success is {success!r}, not a boolean"
    if success is False and not isinstance(result.get("reason"), str):
        return "success is false and there is no reason"
    return None


@SERVER_CHECKS.check(
    "server.state.rollback_result_shape",
    requirements=("S-45",),
    level="MUST",
    section=STATE,
    title="a rollback result holds checkpoint and success, and reason when success is false",
    applies=rollback_set,
)
async def rollback_result_shape(ctx: ServerContext) -> Verdict:
    async with ctx.connect() as session:
        await ready(session)
        name = next((n for n, d in session.feature_sets.items() if d.rollback), None)
        if name is None:
            return not_applicable("no feature set declares rollback: true")
        checkpoint = await _checkpoint(session)
        if checkpoint is None:
            return not_exercised(
                "no read-only tool without arguments returned a state checkpoint to roll back to"
            )
        reply = await session.call("state/rollback", {"featureSet": name, "checkpoint": checkpoint})
    if reply.code == -32005:
        return not_exercised(f"checkpoint {checkpoint!r} was already pruned (-32005)")
    if not reply.ok:
        fail(f"rollback to the server's own checkpoint {checkpoint!r} got {reply.describe()}")
    problem = result_shape_problem(reply.result, checkpoint)
    if problem is not None:
        fail(f"rollback result for {checkpoint!r}: {problem}")
    return passed(f"rolled back to {checkpoint!r}: {dict(reply.result)!r}")
