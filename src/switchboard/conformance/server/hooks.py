"""Server checks of the inference hooks: beforeInference answers and lifecycle tolerance.

What this module knows (mcpl-protocol.md 3.9-3.11; S-22, S-23, S-24):

- ``server.hooks.timely_valid_response``: ``context/beforeInference`` is answered within the
  hook timeout (5 s) with ``{featureSet, contextInjections}`` and valid positions (SHOULD);
- ``server.hooks.no_inference_request_while_pending``: no ``inference/request`` reaches the
  host while that hook is unanswered (judged by wire order);
- ``server.hooks.lifecycle_terminal_tolerance``: a ``started`` without a terminal, a repeated
  terminal and a terminal for an unknown inference leave the server answering (SHOULD).

What it deliberately does not know: how the report shows any of it.
"""

from __future__ import annotations

from typing import Any

from ..common.outcomes import Verdict, fail, passed
from ..common.shapes import injection_problems
from .answers import KIT_MODEL
from .context import HOOKS, SERVER_CHECKS, ServerContext
from .scenarios import needs, ready
from .session import HostSession, Reply

__all__: list[str] = []

_HOOK_LEAVES = (
    "contextHooks.beforeInference.observe",
    "contextHooks.beforeInference.inject.system",
    "contextHooks.beforeInference.inject.beforeUser",
    "contextHooks.beforeInference.inject.afterUser",
)


def _hook_params(session: HostSession, marker: str) -> dict[str, Any]:
    observe = session.granted.allows("contextHooks.beforeInference.observe")
    return {
        "inferenceId": f"{marker}-inference",
        "conversationId": f"{marker}-conversation",
        "turnIndex": 0,
        "userMessage": f"{marker}: hello" if observe else None,
        "model": dict(KIT_MODEL),
    }


async def _run_hook(ctx: ServerContext) -> tuple[Reply, HostSession, int, int]:
    """Send one hook on a ready connection; the reply and the wire positions around it."""
    marker = ctx.marker()
    async with ctx.connect() as session:
        await ready(session)
        await session.quiet()
        sent_at = session.link.received
        answered_at = 0

        def on_answer(_result: Any) -> None:
            nonlocal answered_at
            answered_at = session.link.received

        reply = await session.call(
            "context/beforeInference",
            _hook_params(session, marker),
            timeout=ctx.options.hook_timeout,
            on_response=on_answer,
        )
        if not answered_at:
            answered_at = session.link.received
    return reply, session, sent_at, answered_at


@SERVER_CHECKS.check(
    "server.hooks.timely_valid_response",
    requirements=("S-23",),
    level="SHOULD",
    section=HOOKS,
    title="context/beforeInference is answered in time, with well-formed injections",
    applies=needs(*_HOOK_LEAVES),
)
async def timely_valid_response(ctx: ServerContext) -> Verdict:
    reply, _session, _sent, _answered = await _run_hook(ctx)
    if not reply.ok:
        fail(f"context/beforeInference got {reply.describe()}")
    problems = injection_problems(reply.result)
    if problems:
        fail("; ".join(problems))
    count = len(reply.result.get("contextInjections", []))
    return passed(f"answered within {ctx.options.hook_timeout:g} s with {count} injections")


@SERVER_CHECKS.check(
    "server.hooks.no_inference_request_while_pending",
    requirements=("S-22",),
    level="MUST",
    section=HOOKS,
    title="no inference/request is sent while a context/beforeInference is pending",
    applies=needs(*_HOOK_LEAVES),
)
async def no_inference_request_while_pending(ctx: ServerContext) -> Verdict:
    reply, session, sent_at, answered_at = await _run_hook(ctx)
    during = [
        m
        for m in session.messages
        if m.method == "inference/request" and sent_at < m.position < answered_at
    ]
    if during:
        fail(f"{len(during)} inference/request sent while the hook was pending")
    return passed(f"nothing sent while the hook was pending ({reply.describe()})")


@SERVER_CHECKS.check(
    "server.hooks.lifecycle_terminal_tolerance",
    requirements=("S-24",),
    level="SHOULD",
    section=HOOKS,
    title="a missing or repeated lifecycle terminal does not wedge the server",
    applies=needs("inferenceLifecycle"),
)
async def lifecycle_terminal_tolerance(ctx: ServerContext) -> Verdict:
    marker = ctx.marker()
    async with ctx.connect() as session:
        await ready(session)
        base = {"conversationId": f"{marker}-conversation", "turnIndex": 0}
        notes = [
            {**base, "inferenceId": f"{marker}-a", "phase": "started"},
            {**base, "inferenceId": f"{marker}-b", "phase": "started"},
            {**base, "inferenceId": f"{marker}-b", "phase": "completed"},
            {**base, "inferenceId": f"{marker}-b", "phase": "completed"},
            {"inferenceId": f"{marker}-c", "phase": "failed"},
        ]
        for params in notes:
            await session.notify("inference/lifecycle", params)
        reply = await session.barrier()
    if reply.failure is not None:
        fail(f"after odd lifecycle terminals the server stopped answering: {reply.failure}")
    return passed("still answering after a missing, a repeated and an orphan terminal")
