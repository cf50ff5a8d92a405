"""How the kit, playing the host, answers what a server asks of it.

A conforming host's answers to every server→host method (mcpl-protocol.md 1.3, 2, 3.7,
4.3-4.8): privileged requests refused until the policy exchange completes, itemized
registration results (a check may refuse one or reorder them), incoming messages accepted only
for accepted channels, plausible answers to the rest, and ``-32601`` for anything else.

What it deliberately does not know: the wire, timing, or what a check concludes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from pydantic import ValidationError

from switchboard.protocol import CapabilityDenied, ChannelDescriptor, Grant
from switchboard.transport import ParamProblem, invalid_params, method_not_found

__all__ = ["KIT_MODEL", "PRIVILEGED_FROM_SERVER", "Answer", "HostAnswers"]

# Server→host methods that need a gate (mcpl-protocol.md 1.3 and the §2 table).
PRIVILEGED_FROM_SERVER: Final[Mapping[str, str]] = {
    "push/event": "pushEvents",
    "channels/register": "channels.register",
    "channels/changed": "channels.register",
    "channels/list": "channels.register",
    "channels/incoming": "channels.incoming",
    "inference/request": "inferenceRequest",
    "model/info": "modelInfo",
}

KIT_MODEL: Final[Mapping[str, Any]] = {
    "id": "kit-model",
    "vendor": "switchboard-conformance-kit",
    "contextWindow": 8192,
    "capabilities": ["text"],
}

Answer = Callable[[Any], Awaitable[Any]]
"""A check's override for one server→host method: params in, result out (raise to refuse)."""


def _object(params: Any, method: str) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise invalid_params(ParamProblem("", f"{method} params must be an object"))
    return params


class HostAnswers:
    """The host side's state for one connection and its default answers.

    What it knows (mcpl-protocol.md 1.3, 2, 3.7, 4.3-4.8): a conforming host's answers to every
    server→host method —

    - before the policy exchange completes, or without the gate in the grant the kit sent, a
      privileged request gets ``-32002`` with ``data.capability`` (never silence, never a result);
    - ``channels/register`` and the Request form of ``channels/changed`` get one itemized ``{id,
      accepted, reason?}`` per descriptor; a check can ask the kit to refuse the first valid
      descriptor (``capability_denied``) to see whether the server honours it, and to list the
      results in reverse order (they are matched by ``id``, never by position);
    - ``channels/incoming`` gets one ``{messageId, accepted, conversationId?}`` per message,
      accepting only messages for channels the kit accepted;
    - ``push/event``, ``inference/request``, ``model/info``, ``channels/list`` and ``ping`` get
      plausible results; anything else gets ``-32601``.

    It keeps the host's view of the connection's channels (accepted descriptors, in order).
    """

    def __init__(self) -> None:
        self.ready = False
        self.granted = Grant.empty()
        self.channels: dict[str, dict[str, Any]] = {}
        self.rejected: dict[str, str] = {}
        self.reject_first = False
        self.reverse_results = False
        self.overrides: dict[str, Answer] = {}

    def accepted_ids(self) -> list[str]:
        """Ids of the channels the kit accepted, publishable ones (not inbound-only) first."""
        return sorted(
            self.channels, key=lambda cid: self.channels[cid].get("direction") == "inbound"
        )

    async def answer(self, method: str, params: Any) -> Any:
        """The host's answer to one server request (raise to answer with an error)."""
        gate = PRIVILEGED_FROM_SERVER.get(method)
        if gate is not None and (not self.ready or not self.granted.allows(gate)):
            raise CapabilityDenied(gate)
        override = self.overrides.get(method)
        if override is not None:
            return await override(params)
        if method in ("channels/register", "channels/changed"):
            return self._register(method, _object(params, method))
        if method == "channels/incoming":
            return self._incoming(_object(params, method))
        if method == "push/event":
            return {"accepted": True}
        if method == "channels/list":
            return {"channels": list(self.channels.values())}
        if method == "inference/request":
            return {
                "content": "(the conformance kit does not run a model)",
                "model": KIT_MODEL["id"],
                "finishReason": "end_turn",
                "usage": {"inputTokens": 0, "outputTokens": 0},
            }
        if method == "model/info":
            return dict(KIT_MODEL)
        if method == "ping":
            return {}
        raise method_not_found(method)

    def _register(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        key = "channels" if method == "channels/register" else "added"
        items = params.get(key, [])
        updated = params.get("updated", []) if method == "channels/changed" else []
        if not isinstance(items, list) or not isinstance(updated, list):
            field = key if not isinstance(items, list) else "updated"
            raise invalid_params(ParamProblem(field, "must be an array of descriptors"))
        removed = params.get("removed", []) if method == "channels/changed" else []
        for channel_id in removed if isinstance(removed, list) else ():
            if isinstance(channel_id, str):
                self.channels.pop(channel_id, None)
        results = [self._descriptor(item) for item in [*items, *updated]]
        if self.reverse_results:
            results.reverse()
        return {"results": results}

    def _descriptor(self, item: Any) -> dict[str, Any]:
        item_id = item.get("id") if isinstance(item, dict) else None
        try:
            descriptor = ChannelDescriptor.model_validate(item)
        except ValidationError:
            return {"id": item_id, "accepted": False, "reason": "malformed"}
        if self.reject_first and not self.rejected:
            self.rejected[descriptor.id] = "capability_denied"
        if descriptor.id in self.rejected:
            return {"id": descriptor.id, "accepted": False, "reason": "capability_denied"}
        assert isinstance(item, dict)
        self.channels[descriptor.id] = item
        return {"id": descriptor.id, "accepted": True}

    def _incoming(self, params: dict[str, Any]) -> dict[str, Any]:
        messages = params.get("messages")
        if not isinstance(messages, list):
            raise invalid_params(ParamProblem("messages", "must be an array of messages"))
        results: list[dict[str, Any]] = []
        for message in messages:
            message_id = message.get("messageId") if isinstance(message, dict) else None
            channel_id = message.get("channelId") if isinstance(message, dict) else None
            if isinstance(channel_id, str) and channel_id in self.channels:
                results.append(
                    {
                        "messageId": message_id,
                        "accepted": True,
                        "conversationId": f"kit-conversation:{channel_id}",
                    }
                )
            else:
                results.append({"messageId": message_id, "accepted": False})
        return {"results": results}
