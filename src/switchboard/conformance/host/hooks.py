"""Host checks of hooks, the inference lifecycle and inference requests (mcpl-protocol.md
3.9-3.11; H-04, H-24, H-25, H-29..H-32, H-36).

What a host that runs inference sends around a turn the kit provokes: ``context/beforeInference``
only after the policy receipt and with ``userMessage`` only for an observer, lifecycle
notifications with metadata only, a turn not stopped by an unanswered hook, and streamed
``inference/request`` chunks. A host that runs no inference (Switchboard hands turns to an
outside agent) sends none of this, and every check then reports "not exercised", never a pass.

What it deliberately does not know: how the host is started or how results are reported.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any, Final

from switchboard.protocol import MCPL_VERSION, Grant

from ..common.outcomes import Verdict, failed, not_exercised, passed
from .context import HOOKS, HOST_CHECKS, HostContext
from .probes import effective
from .session import HostMessage, KitConnector
from .streaming import provoke

__all__: list[str] = []

_HOOK: Final = "context/beforeInference"
_LIFECYCLE: Final = "inference/lifecycle"
_TERMINAL: Final = frozenset({"completed", "aborted", "failed"})
_LIFECYCLE_FIELDS: Final = frozenset(
    {"inferenceId", "conversationId", "turnIndex", "phase", "model", "usage"}
)
_CHANNELS: Final = {"register": True, "incoming": True, "publish": True}
_INJECT_ONLY: Final[Mapping[str, Any]] = {
    "version": MCPL_VERSION,
    "channels": _CHANNELS,
    "inferenceLifecycle": True,
    "contextHooks": {"beforeInference": {"inject": {"beforeUser": True}}},
}
_OBSERVE: Final[Mapping[str, Any]] = {
    "version": MCPL_VERSION,
    "channels": _CHANNELS,
    "contextHooks": {"beforeInference": {"observe": True}},
}
_TEXT: Final = "kit asks: what is seven times six?"


def _params(message: HostMessage) -> Mapping[str, Any]:
    return message.params if isinstance(message.params, Mapping) else {}


def _lifecycle_problems(messages: list[HostMessage]) -> list[str]:
    problems: list[str] = []
    started: set[str] = set()
    terminals: dict[str, int] = defaultdict(int)
    for m in messages:
        p = _params(m)
        extra = sorted(set(p) - _LIFECYCLE_FIELDS)
        if extra:
            problems.append(f"inference/lifecycle carries {extra!r} (H-30)")
        if "model" in p:
            problems.append("inference/lifecycle carries model without modelInfo (H-31)")
        if "usage" in p and p.get("phase") != "completed":
            problems.append(f"usage on phase {p.get('phase')!r} (H-31)")
        inference = str(p.get("inferenceId"))
        if p.get("phase") == "started":
            started.add(inference)
        elif p.get("phase") in _TERMINAL:
            terminals[inference] += 1
            if inference not in started:
                problems.append(f"a terminal for {inference} without started (H-32)")
            if terminals[inference] == 2:
                problems.append(f"a second terminal for {inference} (H-32)")
    return problems


async def _turn(ctx: HostContext, kit: KitConnector) -> tuple[list[HostMessage], list[HostMessage]]:
    await provoke(kit, text=_TEXT)
    await kit.wait_for(lambda m: False, within=ctx.options.silence)

    def settled(_: HostMessage | None = None) -> bool:
        """Every started inference has had its terminal (give in-flight turns time)."""
        phases = [_params(m).get("phase") for m in kit.sent(_LIFECYCLE)]
        return phases.count("started") <= sum(1 for p in phases if p in _TERMINAL)

    if not settled():
        await kit.wait_for(settled)
    return kit.sent(_HOOK), kit.sent(_LIFECYCLE)


@HOST_CHECKS.check(
    "host.hooks.inference_traffic_shape",
    requirements=("H-04", "H-24", "H-30", "H-31", "H-32"),
    level="MUST",
    section=HOOKS,
    title="hooks follow the receipt with userMessage null when inject-only; lifecycle is metadata",
)
async def inference_traffic_shape(ctx: HostContext) -> Verdict:
    async with ctx.launch(_INJECT_ONLY) as kit:
        hooks, lifecycle = await _turn(ctx, kit)
        if not hooks and not lifecycle:
            return not_exercised("the host sent no context/beforeInference or inference/lifecycle")
        early = [m for m in hooks if not m.after_receipt]
        problems = [f"{_HOOK} before the policy receipt (H-04)" for _ in early]
        for m in hooks:
            p = _params(m)
            if "userMessage" not in p or p["userMessage"] is not None:
                problems.append(
                    f"inject-only hook has userMessage {p.get('userMessage', '(absent)')!r} (H-24)"
                )
        problems.extend(_lifecycle_problems(lifecycle))
        if problems:
            return failed("; ".join(problems))
        return passed(f"{len(hooks)} hook(s), {len(lifecycle)} lifecycle notification(s) conform")


@HOST_CHECKS.check(
    "host.hooks.observe_gets_user_text",
    requirements=("H-25",),
    level="MUST",
    section=HOOKS,
    title="a connector granted observe gets the user's text as userMessage",
)
async def observe_gets_user_text(ctx: HostContext) -> Verdict:
    async with ctx.launch(_OBSERVE) as kit:
        grant, _ = await provoke(kit, text=_TEXT)
        if not grant.allows("contextHooks.beforeInference.observe"):
            return not_exercised("the host does not grant contextHooks.beforeInference.observe")
        hook = await kit.wait_for(lambda m: m.method == _HOOK, within=ctx.options.silence)
        if hook is None:
            return not_exercised("the host sent no context/beforeInference")
        message = _params(hook).get("userMessage")
        if not isinstance(message, str):
            return failed(f"an observing connector got userMessage {message!r}")
        return passed(f"userMessage {message[:60]!r}")


@HOST_CHECKS.check(
    "host.hooks.timeout_proceeds",
    requirements=("H-29",),
    level="SHOULD",
    section=HOOKS,
    title="a context/beforeInference never answered does not stop the turn (about 5 s)",
)
async def timeout_proceeds(ctx: HostContext) -> Verdict:
    async with ctx.launch(_INJECT_ONLY, hold_hooks=True) as kit:
        await provoke(kit, text=_TEXT)
        hook = await kit.wait_for(lambda m: m.method == _HOOK, within=ctx.options.silence)
        if hook is None:
            return not_exercised("the host sent no context/beforeInference")

        def turn_went_on(m: HostMessage) -> bool:
            if m.position <= hook.position:
                return False
            phase = _params(m).get("phase") if m.method == _LIFECYCLE else None
            return phase in _TERMINAL or m.method == "channels/publish"

        later = await kit.wait_for(turn_went_on, within=2 * ctx.options.hook_timeout)
        if later is None:
            return failed(
                f"nothing followed the unanswered hook within {2 * ctx.options.hook_timeout:g} s"
            )
        return passed(f"the turn went on without the hook's answer ({later.method})")


_INFERENCE: Final[Mapping[str, Any]] = {
    "version": MCPL_VERSION,
    "inferenceRequest": {"streaming": True},
    "featureSets": {
        "kit.infer": {
            "description": "the kit asks for a completion",
            "uses": ["inferenceRequest", "inferenceRequest.streaming"],
        }
    },
}
_FINISH: Final = frozenset({"end_turn", "max_tokens", "stop_sequence"})


def _sent_request_id(ctx: HostContext, method: str) -> Any:
    """The JSON-RPC id the kit gave its last ``method`` request (read from the transcript)."""
    found: Any = None
    for frame in ctx.transcript.frames:
        if frame.direction != "sent":
            continue
        try:
            decoded = json.loads(frame.text)
        except ValueError:
            continue
        if isinstance(decoded, dict) and decoded.get("method") == method:
            found = decoded.get("id")
    return found


def _completion_problem(result: Any) -> str | None:
    if not isinstance(result, Mapping):
        return f"the result {result!r} is not an object"
    usage = result.get("usage")
    if not isinstance(result.get("content"), str) or not isinstance(result.get("model"), str):
        return f"the result lacks string content and model: {result!r}"
    if result.get("finishReason") not in _FINISH:
        return f"finishReason {result.get('finishReason')!r} is not one of {sorted(_FINISH)!r}"
    if not isinstance(usage, Mapping) or not all(
        isinstance(usage.get(k), int) for k in ("inputTokens", "outputTokens")
    ):
        return f"usage {usage!r} lacks integer inputTokens and outputTokens"
    return None


@HOST_CHECKS.check(
    "host.hooks.inference_request_streaming",
    requirements=("H-36",),
    level="MUST",
    section=HOOKS,
    title="a streamed inference/request gets inference/chunk by request id, then a full result",
)
async def inference_request_streaming(ctx: HostContext) -> Verdict:
    async with ctx.launch(_INFERENCE) as kit:
        policy = await kit.require_ready()
        if not Grant(effective(policy)).allows("inferenceRequest.streaming"):
            return not_exercised("the host does not grant inferenceRequest.streaming")
        params = {
            "featureSet": "kit.infer",
            "stream": True,
            "messages": [{"role": "user", "content": "Reply with the single word: ready"}],
            "preferences": {"maxTokens": 16},
        }
        reply = await kit.call("inference/request", params)
        if not reply.ok:
            return not_exercised(f"the host ran no inference for the kit: {reply.describe()}")
        problem = _completion_problem(reply.result)
        if problem is not None:
            return failed(problem)
        request_id = _sent_request_id(ctx, "inference/request")
        chunks = [_params(m) for m in kit.sent("inference/chunk")]
        wrong = [c.get("requestId") for c in chunks if c.get("requestId") != request_id]
        if wrong:
            return failed(f"chunks name requestId {wrong!r}, not the request's id {request_id!r}")
        indices = [c.get("index") for c in chunks]
        if indices != list(range(len(chunks))):
            return failed(f"chunk indices {indices!r} do not count up from 0")
        return passed(f"{len(chunks)} chunk(s) by request id, then a complete result")
