"""``context/beforeInference``: the channel context each server is told, and its injections.

At the start of a turn every server granted the hook is asked, told only of its own channels
(channel-registry.md §10.3). What it answers is kept only where its grant allows *now*, each
injection checked alone, so a connector cannot inject where it may not.

What it deliberately does not know: MCP, when a turn begins (the port calls
:meth:`ContextHooks.gather` then), and what the agent does with the injections.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import structlog

from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.connections.inference import ModelSeen
from switchboard.connections.owner import ConnectorOwner, Owners, SessionState
from switchboard.transport import TransportError

if TYPE_CHECKING:
    from switchboard.agents.desk.defaults import DefaultChannel
    from switchboard.agents.desk.desk import AgentDesk

__all__ = [
    "BEFORE_INFERENCE_TIMEOUT",
    "POSITIONS",
    "UNKNOWN_MODEL",
    "ContextHooks",
    "ContextSource",
    "IncomingAnchor",
    "ModelInfo",
    "build_channel_context",
    "channel_context",
]

log = structlog.get_logger(__name__)

BEFORE_INFERENCE_TIMEOUT = 5.0
"""Seconds a server has to answer ``context/beforeInference``."""

POSITIONS = ("system", "beforeUser", "afterUser")
"""Where an injection may go, in the order injections are returned."""

_OBSERVE = "contextHooks.beforeInference.observe"
_INJECT = "contextHooks.beforeInference.inject."


class ContextSource(Protocol):
    """What the hooks read of the host (the host object has these three)."""

    @property
    def registry(self) -> ChannelRegistry:
        """What is registered now."""
        ...

    @property
    def default_channel(self) -> DefaultChannel:
        """The host's default channel and the latest inbound message on it."""
        ...

    @property
    def owners(self) -> Owners:
        """The owner of each connector, by server id."""
        ...


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """The ``model`` param: what the host knows of the model that will run."""

    id: str
    vendor: str
    context_window: int = 0
    capabilities: tuple[str, ...] = ()

    def wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "vendor": self.vendor,
            "contextWindow": self.context_window,
            "capabilities": list(self.capabilities),
        }


UNKNOWN_MODEL = ModelInfo("unknown", "unknown")
"""The model of an MCP agent: Switchboard is not told which one it is."""


@dataclass(frozen=True, slots=True)
class IncomingAnchor:
    """The latest inbound message an agent's speech would answer."""

    ref: ChannelRef
    message_id: str
    thread_id: str | None = None


def channel_context(
    registry: ChannelRegistry,
    server_id: str,
    *,
    outgoing: ChannelRef | None,
    incoming: IncomingAnchor | None,
) -> dict[str, Any] | None:
    """The ``channels`` context for ``server_id`` alone, or None when it would be empty.

    Args:
        registry: What is registered now.
        server_id: The server being told.
        outgoing: Where the agent's plain speech goes (its locus), if anywhere.
        incoming: The message the agent's speech would answer, if any.
    """
    context: dict[str, Any] = {}
    if incoming is not None and incoming.ref.server_id == server_id:
        anchor = {"channelId": incoming.ref.channel_id, "messageId": incoming.message_id}
        if incoming.thread_id is not None:
            anchor["threadId"] = incoming.thread_id
        context["incoming"] = anchor
    if outgoing is not None and outgoing.server_id == server_id:
        entry = registry.get(outgoing)
        if entry is not None and entry.descriptor.direction != "inbound":
            context["defaultOutgoing"] = {"channelId": outgoing.channel_id}
    candidates = [e.ref.channel_id for e in registry.server_entries(server_id) if e.transport_open]
    if candidates:
        context["candidates"] = candidates
    return context or None


def build_channel_context(
    host: ContextSource, desk: AgentDesk, server_id: str
) -> dict[str, Any] | None:
    """:func:`channel_context` for ``desk``'s agent as things stand on ``host`` now."""
    locus = desk.locus(host.registry, host.default_channel)
    default = host.default_channel
    incoming = None
    if locus.ref is not None and default.ref is not None and default.message_id is not None:
        incoming = IncomingAnchor(default.ref, default.message_id, default.thread_id)
    return channel_context(host.registry, server_id, outgoing=locus.ref, incoming=incoming)


class ContextHooks:
    """Asks the connectors for context at the start of a turn.

    What it knows (channel-registry.md §10.3; mcpl-protocol.md 2, 3.3, 3.9):

    - **Channel context, per server** (:func:`channel_context`). Each server hears only of its own
      channels: ``incoming`` (the latest inbound message's channel, message and thread) if that
      channel is on the server; ``defaultOutgoing`` (where the agent's plain speech goes) if that
      channel is on the server and not inbound-only; ``candidates``, the ids of the server's
      channels open now. An empty context is left out. The incoming anchor is process-global (the
      host's default channel), but a turn that deliberately has no channel gets none.
    - **Who is asked.** Every server that is ready (its initial policy exchange is complete, H-04)
      and whose grant holds ``contextHooks.beforeInference.observe`` or at least one
      ``…inject.<position>`` leaf. ``userMessage`` is filled only with ``observe`` (null for an
      inject-only server, H-24), and holds only the text of the turn's messages that came from
      that server (null when none did): a connector observes nothing another one said. All are
      asked in parallel, each with a timeout (5 s); an error, a
      timeout or a lost link means that server adds nothing and the turn goes on (H-29).
    - **What is kept.** Each returned injection alone: its ``position`` must be one of ``system``,
      ``beforeUser``, ``afterUser`` and its ``inject.<position>`` leaf must be in the grant *as it
      stands when the answer arrives* (H-26, H-27); the ``featureSet`` and ``namespace`` the server
      claims play no part (H-28). Injections are returned grouped by position, in server order
      within each group, each naming the ``serverId`` it came from.
    - **The model.** An MCP agent does not tell Switchboard which model it runs: ``model`` is the
      one its sampling client last reported (vendor ``"unknown"``), else :data:`UNKNOWN_MODEL`
      (id ``"unknown"``).

    It reads the host through exactly what it uses, given at construction: the registry, the
    default channel and the connectors' owners (so it is a :class:`ContextSource` itself).

    Attributes:
        timeout: Seconds each server has to answer.
        model: The ``model`` param sent while the agent's sampling client has reported none.
        model_seen: The model an agent's sampling client last reported (by agent name), sent
            as ``model`` once there is one.
    """

    def __init__(
        self,
        registry: ChannelRegistry,
        default_channel: DefaultChannel,
        owners: Owners,
        *,
        timeout: float = BEFORE_INFERENCE_TIMEOUT,
        model: ModelInfo = UNKNOWN_MODEL,
        model_seen: Callable[[str], ModelSeen | None] | None = None,
    ) -> None:
        self._registry = registry
        self._default_channel = default_channel
        self._owners = owners
        self.timeout = timeout
        self.model = model
        self._model_seen = model_seen

    @property
    def registry(self) -> ChannelRegistry:
        """What is registered now."""
        return self._registry

    @property
    def default_channel(self) -> DefaultChannel:
        """The host's default channel."""
        return self._default_channel

    @property
    def owners(self) -> Owners:
        """The owner of each connector, by server id."""
        return self._owners

    async def gather(
        self,
        desk: AgentDesk,
        *,
        user_message: str | None = None,
        said: Mapping[str, str] | None = None,
        inference_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """Send ``context/beforeInference`` to every server that takes it; keep what may stay.

        Args:
            desk: The agent whose turn begins.
            user_message: The text that began the turn; sent only to servers granted observe.
            said: Instead of ``user_message``, the text that began the turn by server id: a
                server granted observe is told only what came from it (None when nothing did).
            inference_id: The turn's id (shared with its ``inference/lifecycle``); a new one
                when None.

        Returns:
            The authorized injections, each ``{serverId, namespace, position, content,
            metadata?}`` with ``content`` as content blocks.
        """
        inference_id = inference_id or uuid.uuid4().hex
        answers: dict[str, list[dict[str, Any]]] = {}
        asked = [s for s in self._owners.values() if _takes_hook(s)]
        if not asked:
            return []
        seen = self._model_seen(desk.name) if self._model_seen is not None else None
        model = self.model if seen is None else ModelInfo(seen.model, "unknown")
        async with anyio.create_task_group() as tg:
            for session in asked:
                params = {
                    "inferenceId": inference_id,
                    "conversationId": desk.conversation_id,
                    "turnIndex": max(desk.turn.number - 1, 0),
                    "userMessage": (
                        (user_message if said is None else said.get(session.server_id))
                        if session.grant.allows(_OBSERVE)
                        else None
                    ),
                    "model": model.wire(),
                }
                channels = build_channel_context(self, desk, session.server_id)
                if channels is not None:
                    params["channels"] = channels
                answers[session.server_id] = []
                tg.start_soon(self._ask, session, params, answers[session.server_id])
        ordered: list[dict[str, Any]] = []
        for position in POSITIONS:
            for kept in answers.values():
                ordered.extend(i for i in kept if i["position"] == position)
        return ordered

    async def _ask(
        self, session: ConnectorOwner, params: dict[str, Any], into: list[dict[str, Any]]
    ) -> None:
        if not session.connected:
            return
        result: Any = None
        with anyio.move_on_after(self.timeout):
            try:
                result = await session.before_inference(params, self.timeout)
            except TransportError as exc:
                session.noted.note(
                    ("before_inference_failed",),
                    "before_inference_failed",
                    level="info",
                    error=str(exc),
                )
                return
        if result is None:
            session.noted.note(
                ("before_inference_unanswered",),
                "before_inference_unanswered",
                level="info",
                timeout=self.timeout,
            )
            return
        into.extend(_authorized(session, result))


def _takes_hook(session: ConnectorOwner) -> bool:
    if session.state is not SessionState.READY or not session.connected:
        return False
    grant = session.grant
    return grant.allows(_OBSERVE) or any(grant.allows(_INJECT + p) for p in POSITIONS)


def _authorized(session: ConnectorOwner, result: Any) -> list[dict[str, Any]]:
    """The injections of ``result`` the grant allows *now*, each checked alone."""
    raw = result.get("contextInjections") if isinstance(result, Mapping) else None
    if not isinstance(raw, list):
        if raw is not None or not isinstance(result, Mapping):
            session.noted.note(
                ("before_inference_malformed_answer",),
                "before_inference_malformed_answer",
                level="info",
            )
        return []
    ready = session.state is SessionState.READY
    kept: list[dict[str, Any]] = []
    for item in raw:
        injection = _injection(session.server_id, item)
        if injection is None:
            session.noted.note(
                ("injection_dropped",), "injection_dropped", level="info", reason="malformed"
            )
            continue
        position = injection["position"]
        if not ready or not session.grant.allows(_INJECT + position):
            session.noted.note(
                ("injection_dropped",),
                "injection_dropped",
                level="info",
                reason="not granted",
                position=position,
            )
            continue
        kept.append(injection)
    return kept


def _injection(server_id: str, item: Any) -> dict[str, Any] | None:
    if not isinstance(item, Mapping):
        return None
    namespace = item.get("namespace")
    position = item.get("position")
    content = item.get("content")
    if not isinstance(namespace, str) or position not in POSITIONS:
        return None
    if isinstance(content, str):
        blocks: list[dict[str, Any]] = [{"type": "text", "text": content}]
    elif isinstance(content, list) and all(
        isinstance(b, Mapping) and isinstance(b.get("type"), str) for b in content
    ):
        blocks = [dict(b) for b in content]
    else:
        return None
    injection: dict[str, Any] = {
        "serverId": server_id,
        "namespace": namespace,
        "position": position,
        "content": blocks,
    }
    metadata = item.get("metadata")
    if isinstance(metadata, Mapping):
        injection["metadata"] = dict(metadata)
    return injection
